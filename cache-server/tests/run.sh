#!/usr/bin/env bash
# All cache-server tests (`just test-cache`): builds, protocol unit tests, differential test
# against real memcached, sanitizer stress in every lock mode, bad input, a bounded fuzz run.
# Ends with "cache: N passed, M failed"; exit 1 if anything failed.
#   tests/run.sh [FUZZ_SECONDS]
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

if ! make -s -j"$jobs" all asan tsan; then
  result "build (gcc)" 1
  echo "cache: $pass passed, $fail failed"
  exit 1
fi
result "build (gcc, -Wall -Wextra -Werror; release, ASan+UBSan, TSan)" 0
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

tally < <(python3 tests/test_mcperf_csv.py 2>&1)
tally < <(python3 tests/diff.py build/cache-server global striped rwlock optimistic sharded 2>&1)
tally < <(tests/stress.sh build 3 2>&1)
for mode in global striped rwlock optimistic sharded; do
  tally < <(python3 tests/badinput.py build/cache-server-asan "$mode" 2>&1 | sed "s/bad input:/bad input ($mode):/")
done

if command -v clang > /dev/null && make -s fuzz > /dev/null 2>&1; then
  mkdir -p build/fuzz-corpus && cp fuzz/corpus/* build/fuzz-corpus/
  build/fuzz-proto -max_total_time="$fuzz_secs" -max_len=4096 -print_final_stats=1 build/fuzz-corpus \
    > build/fuzz.log 2>&1
  rc=$?
  result "fuzz parser ${fuzz_secs}s: $(grep -o 'Done [0-9]* runs' build/fuzz.log | tail -n 1)" $rc
  [[ $rc == 0 ]] || tail -n 30 build/fuzz.log
else
  result "fuzz target builds (clang -fsanitize=fuzzer)" 1
fi

echo "cache: $pass passed, $fail failed"
[[ $fail == 0 ]]
