#!/usr/bin/env bash
# Runs inside the test guest (vm/boot.sh): the C instruments' sweeps in the light `guest` profile,
# through the lab's own CLI, into /vmout/run. Timings in here are meaningless (TCG); what matters is
# where threads and memory went, which the checker (vm/check.py) reads afterwards on the host.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
# just from the lab's tool folder (./lab made it on the host): ./lab's apt checks would only cost
# process starts, which are 16-50x slower under TCG.
export PATH=$root/.work/tools/bin:$PATH
echo "guest: $(nproc) CPUs, kernel $(uname -r), $(date -u +%H:%M:%S)"
# draw=0: the host draws the charts and report from the run folder afterwards (vm/test.sh), in seconds
# where gnuplot and the report's Python took half a minute here
just sweep profile=guest run=/vmout/run draw=0 \
  experiments/c2c.spec experiments/c2c-matrix.spec experiments/counters.spec \
  experiments/channel.spec experiments/channel-pipeline.spec experiments/numa-mem.spec vm/wrong-membind.spec \
  vm/wrong-membind-cache.spec
rc=$?
echo "guest: sweep exit $rc at $(date -u +%H:%M:%S)"
# where the memory lives (issue 56): the main thread's first touch on node 0 read from node 1, per-thread
# first touch, interleaved; the host checks the words (vm/check.py). The program was built on the host.
# Automatic NUMA balancing migrates pages toward the threads that read them (seen on CI: the main thread's
# buffer moved to the workers' node mid-run, "spread, not claimed"): off for these fixed cases, a disposable guest.
{ echo 0 > /proc/sys/kernel/numa_balancing; } 2>/dev/null || echo "guest: kernel.numa_balancing stays on"
python3 vm/numa_evidence.py /vmout/numa-evidence.json tests/fixtures/why/build/remote ||
  echo "guest: numa evidence exit $?"
echo "guest: numa evidence done at $(date -u +%H:%M:%S)"
# which threads paid, by where they ran (issue 53 item 6): farside's workers on package 1 wait ×10 longer
python3 vm/groups_evidence.py /vmout/groups-evidence.json tests/fixtures/why/build/farside ||
  echo "guest: groups evidence exit $?"
echo "guest: groups evidence done at $(date -u +%H:%M:%S)"
exit "$rc"
