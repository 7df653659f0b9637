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
result() {  # name, exit status: one ok/FAIL line for steps without their own
  if [[ $2 == 0 ]]; then echo "ok - $1"; pass=$((pass + 1)); else echo "FAIL - $1"; fail=$((fail + 1)); fi
}

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

tally < <(python3 tests/callgraph.py 2>&1)
tally < <(python3 tests/test_mcperf_csv.py 2>&1)
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
tally < <(python3 tests/diff.py build/cache-server global striped rwlock optimistic sharded "${uring[@]}" 2>&1)
tally < <(timeout 300 python3 tests/difffuzz.py build/cache-server "$fuzz_secs" global striped rwlock optimistic sharded "${uring[@]}" 2>&1)
tally < <(timeout 120 python3 tests/backend.py build/cache-server global sharded 2>&1)
tally < <(tests/stress.sh build 3 2>&1)
tally < <(timeout 300 python3 tests/sockets.py build/cache-server global striped rwlock optimistic sharded "${uring[@]}" 2>&1)
tally < <(timeout 60 python3 tests/options.py build/cache-server 2>&1)
tally < <(timeout 120 python3 tests/loadgen.py build 2>&1)
for mode in global striped rwlock optimistic sharded "${uring[@]}"; do
  tally < <(python3 tests/badinput.py build/cache-server-asan "$mode" 2>&1 | sed "s/bad input:/bad input ($mode):/")
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
