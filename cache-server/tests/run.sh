#!/usr/bin/env bash
# All cache-server tests (`just test-cache`): builds, no cycle between src/*.c, protocol unit tests, the optimistic race
# replay, differential test and differential fuzz against real memcached, sanitizer stress in
# every lock mode, real-socket tests (deep pipelines, large values, stalled values, start-up
# options), the load generator's failure exits, bad input, bounded libFuzzer runs (parser and
# socket layer). Ends with "cache: N passed, M failed"; exit 1 if anything failed.
#   tests/run.sh [FUZZ_SECONDS]      (each fuzzer, and the differential fuzz, runs this long)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here" || exit 1
fuzz_secs=${1:-20}
jobs=$(( $(nproc) > 2 ? 2 : 1 ))   # the test host is shared: keep builds modest
pass=0 fail=0
shopt -s lastpipe   # the last stage of a pipeline runs in this shell: tally's counts stay
tally() {  # reads ok/FAIL lines from a test's output, echoes them, counts them
  local line
  while IFS= read -r line; do
    echo "$line"
    case $line in
      "ok - "*) pass=$((pass + 1)) ;;
      FAIL*) fail=$((fail + 1)) ;;
    esac
  done
}
# A test program's ok/FAIL lines, counted. A program that exits non-zero without a FAIL line of its own
# (a Python exception, a timeout's kill) is a failure too, not silence.
run_test() {  # name, command...
  local name=$1 before=$fail rc
  shift
  "$@" 2>&1 | tally
  rc=${PIPESTATUS[0]}
  if [[ $rc != 0 && $fail == "$before" ]]; then
    echo "FAIL - $name: exit $rc without a FAIL line"
    fail=$((fail + 1))
  fi
}
result() {  # name, exit status: one ok/FAIL line for steps without their own
  if [[ $2 == 0 ]]; then echo "ok - $1"; pass=$((pass + 1)); else echo "FAIL - $1"; fail=$((fail + 1)); fi
}

# The runner's own rule, checked first: a program that dies without a word is a failure.
(pass=0 fail=0; run_test self-check python3 -c 'raise SystemExit(3)' > /dev/null; [[ $fail == 1 ]])
result "a test program that exits non-zero without a FAIL line counts as a failure" $?

if ! make -s -j"$jobs" all asan tsan race; then
  result "build (gcc)" 1
  echo "cache: $pass passed, $fail failed"
  exit 1
fi
result "build (gcc, -Wall -Wextra -Werror; release, ASan+UBSan, TSan, race replay)" 0
if command -v clang > /dev/null; then
  tmpd=$(mktemp -d)
  make -s B="$tmpd" CC=clang "$tmpd/cache-server" "$tmpd/loadgen" > /dev/null 2>&1
  result "build (clang, -Werror)" $?
  rm -rf "$tmpd"
fi

for mode in global striped rwlock optimistic sharded; do
  out=$(build/test-proto "$mode" 2>&1); rc=$?
  [[ $rc == 0 ]] || echo "$out" | grep FAIL
  result "protocol unit tests ($mode): $(tail -n 1 <<< "$out")" $rc
done

out=$(build/test-hist 2>&1); rc=$?
result "loadgen histogram: $out" $rc

out=$(timeout 60 build/test-race 2>&1); rc=$?
[[ $rc == 0 ]] || echo "$out" | head -n 30
result "optimistic unlink/bump race replayed under ASan: $(tail -n 1 <<< "$out")" $rc

run_test callgraph python3 tests/callgraph.py
run_test mcperf_csv python3 tests/test_mcperf_csv.py
# every lock mode on the default epoll backend; the io_uring backend (uring.c) in the mode without
# locks, the lock-free one and the global lock
uring=(global+io_uring optimistic+io_uring sharded+io_uring)
# A kernel or container that refuses io_uring_setup (syscall 425 on every architecture; Docker's default
# seccomp profile refuses it) cannot run that backend: say so once, test epoll alone.
if ! python3 -c 'import ctypes, sys; p = ctypes.create_string_buffer(120)
sys.exit(ctypes.CDLL(None, use_errno=True).syscall(425, 4, p) < 0)'; then
  echo "note: io_uring_setup is refused here: the io_uring backend is not tested (epoll only)"
  uring=()
fi
run_test diff python3 tests/diff.py build/cache-server global striped rwlock optimistic sharded "${uring[@]}"
run_test difffuzz timeout 300 python3 tests/difffuzz.py build/cache-server "$fuzz_secs" global striped rwlock optimistic sharded "${uring[@]}"
run_test backend timeout 120 python3 tests/backend.py build/cache-server global sharded
run_test stress tests/stress.sh build 3
run_test sockets timeout 300 python3 tests/sockets.py build/cache-server global striped rwlock optimistic sharded "${uring[@]}"
run_test options timeout 60 python3 tests/options.py build/cache-server
run_test loadgen timeout 120 python3 tests/loadgen.py build
for mode in global striped rwlock optimistic sharded "${uring[@]}"; do
  run_test "bad input ($mode)" python3 tests/badinput.py build/cache-server-asan "$mode"
done

if command -v clang > /dev/null && make -s fuzz > /dev/null 2>&1; then
  mkdir -p build/fuzz-corpus && cp fuzz/corpus/* build/fuzz-corpus/
  build/fuzz-proto -max_total_time="$fuzz_secs" -max_len=4096 -print_final_stats=1 build/fuzz-corpus \
    > build/fuzz.log 2>&1
  rc=$?
  result "fuzz parser ${fuzz_secs}s: $(grep -o 'Done [0-9]* runs' build/fuzz.log | tail -n 1)" $rc
  [[ $rc == 0 ]] || tail -n 30 build/fuzz.log
  mkdir -p build/fuzz-conn-corpus && cp fuzz/corpus/* build/fuzz-conn-corpus/
  build/fuzz-conn -max_total_time="$fuzz_secs" -max_len=4096 -print_final_stats=1 build/fuzz-conn-corpus \
    > build/fuzz-conn.log 2>&1
  rc=$?
  result "fuzz socket layer ${fuzz_secs}s (every request answered without more input): $(grep -o 'Done [0-9]* runs' build/fuzz-conn.log | tail -n 1)" $rc
  [[ $rc == 0 ]] || tail -n 30 build/fuzz-conn.log
else
  result "fuzz targets build (clang -fsanitize=fuzzer)" 1
fi

echo "cache: $pass passed, $fail failed"
[[ $fail == 0 ]]
