#!/usr/bin/env bash
# The simulated multi-socket hosts (issue 13): boot each shape of vm/shapes.sh under QEMU TCG, run
# the C instruments' sweeps in the guest profile inside (vm/guest.sh), then check the run from the
# host (vm/check.py). Ends with "multisocket: N passed, M failed" (one per shape).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
# shellcheck source=vm/shapes.sh
. vm/shapes.sh
shapes=${*:-$SHAPES}
for shape in $shapes; do shape_args "$shape" > /dev/null || exit 2; done
out=$root/.work/vm/runs
pass=0 fail=0
# The guest builds nothing: compiling under TCG takes minutes.
just build-probes || { echo "multisocket: build-probes failed"; exit 1; }
just build-cache || { echo "multisocket: build-cache failed"; exit 1; }   # vm/wrong-membind-cache.spec
# vm/numa_evidence.py's program (where first touch puts a buffer) and vm/groups_evidence.py's (which
# threads wait longer, by package)
mkdir -p tests/fixtures/why/build
for fixture in remote farside; do
  gcc -O2 -g -fno-omit-frame-pointer -pthread -o "tests/fixtures/why/build/$fixture" "tests/fixtures/why/$fixture.c" ||
    { echo "multisocket: building $fixture.c failed"; exit 1; }
done
# The job sees this checkout at the same path (the host root is the guest's root).
job=$(mktemp)
trap 'rm -f "$job"' EXIT
printf 'exec %q/vm/guest.sh\n' "$root" > "$job"
for shape in $shapes; do
  rm -rf "${out:?}/$shape"
  t0=$SECONDS
  if vm/boot.sh "$shape" "$out/$shape" "$job" "${GUEST_TIMEOUT_S:-600}"; then
    echo "multisocket: $shape: guest sweep done in $((SECONDS - t0)) s"
  else
    echo "multisocket: $shape: guest sweep failed after $((SECONDS - t0)) s; last lines of its log:"
    tail -n 15 "$out/$shape/job.log" 2> /dev/null | sed 's/^/     /'
  fi
  # the guest measured with draw=0: the charts and report come from its run folder (its env/, its
  # topology), drawn here
  if [[ -d $out/$shape/run ]] && just report "$out/$shape/run" > /dev/null &&
    python3 vm/check.py "$shape" "$out/$shape/run"; then
    pass=$((pass + 1)); echo "ok   $shape"
  else
    fail=$((fail + 1)); echo "FAIL $shape (run folder: $out/$shape/run)"
  fi
done
echo "multisocket: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
