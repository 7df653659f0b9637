#!/usr/bin/env bash
# Run every test suite: the linters (shell, Python), the lab's own tests, then each instrument's test-* recipe
# (test-fast is a subset of lint and test-lab, so it is not a suite of its own).
# Goes on after a failing suite so that one run shows every failure; exits non-zero if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2

mapfile -t suites < <(just --summary | tr ' ' '\n' | grep -E '^test-' | grep -vx -e 'test-lab' -e 'test-fast' | sort)
suites=(lint-shell lint-python test-lab "${suites[@]}")
passed=0 failed=0 failures=()
for s in "${suites[@]}"; do
  printf '\n=== %s\n' "$s"
  start=$SECONDS
  if just "$s"; then
    passed=$((passed + 1))
    printf '=== %s: ok (%ss)\n' "$s" $((SECONDS - start))
  else
    failed=$((failed + 1))
    failures+=("$s")
    printf '=== %s: FAILED (%ss)\n' "$s" $((SECONDS - start))
  fi
done
echo
[[ $failed -gt 0 ]] && echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
