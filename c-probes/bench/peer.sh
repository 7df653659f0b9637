#!/usr/bin/env bash
# One run of the memory probe or of its peer likwid-bench, for experiments/bench-mem.spec:
#   c-probes/bench/peer.sh mem|likwid RAW SIZE_MIB SECONDS
# Both measure sequential read, and read with write back, over a SIZE_MIB buffer on NUMA node 0, by one
# thread and by every CPU of node 0, each for SECONDS, and print the lab's tidy CSV with the same
# metrics (read_gbps, rw_gbps in GB/s; threads and cpus on each row), so that the engine sets them side
# by side as the spec's two variants:
#  - mem: c-probes/build/mem on node 0 (its latency rows too: Debian has no pointer-chase tool to set
#    beside them). Its cell column (cpu0-mem0) is dropped, so that its rows carry the engine's variant.
#  - likwid: likwid-bench's `load` and `update` kernels (their AVX forms where this CPU and likwid have
#    them: a vectorised loop, as gcc makes of mem's at -O2), `-w M0:SIZE:T` for T = 1 and every CPU of
#    node 0; MByte/s (10^6 B/s) / 1000 = GB/s, as mem counts (an update's bytes both ways, like mem's rw);
#    cpus = the hwthreads likwid says it ran on. Its outputs are kept in RAW.
# The engine runs the two in rounds, reads steal and the rest of the noise around each run, and reports
# medians and intervals; this script measures once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
usage() { echo "usage: $0 mem|likwid RAW SIZE_MIB SECONDS (SIZE_MIB 1..65536, SECONDS 0.01..60)" >&2; exit 2; }
[[ $# -eq 4 && -d $2 && $3 =~ ^[1-9][0-9]{0,4}$ && $3 -le 65536 && $4 =~ ^[0-9]{1,2}(\.[0-9]{1,3})?$ ]] || usage
tool=$1 raw=$2 mib=$3 secs=$4
# every CPU of node 0 (a kernel without NUMA: every CPU, as mem reads it then)
ncpu=$(numactl --hardware 2> /dev/null | awk '/^node 0 cpus:/ { print NF - 3 }')
[[ ${ncpu:-0} -ge 1 ]] || ncpu=$(nproc)
case $tool in
  mem)
    nodes=()
    [[ -d /sys/devices/system/node/node0 ]] && nodes=(--cpu-nodes 0 --mem-nodes 0)
    # (cut keeps mem's exit status under pipefail; the first field, the cell, holds no comma)
    c-probes/build/mem "${nodes[@]}" --size-mib "$mib" --seconds "$secs" --raw "$raw" | cut -d, -f2- ;;
  likwid)
    command -v likwid-bench > /dev/null || { echo "$0: likwid-bench is not installed (./lab installs it)" >&2; exit 1; }
    kernels=$(likwid-bench -a 2> /dev/null || true)   # whole, not piped into grep -q (SIGPIPE under pipefail)
    load=load update=update
    if grep -qw avx /proc/cpuinfo && grep -q '^load_avx ' <<< "$kernels" && grep -q '^update_avx ' <<< "$kernels"; then
      load=load_avx update=update_avx
    fi
    echo "likwid-bench kernels $load and $update on $ncpu CPU(s) of node 0: $(likwid-bench -h 2>&1 | grep -m1 -o 'Version *[0-9.]*' || echo 'version not printed')" >&2
    threads=(1)
    ((ncpu > 1)) && threads+=("$ncpu")   # as mem: with one CPU the node's figure is the one-thread one
    echo "threads,cpus,metric,value,unit"
    for km in "$load:read_gbps" "$update:rw_gbps"; do
      for t in "${threads[@]}"; do
        out=$raw/likwid-${km%%:*}-$t.txt
        if ! likwid-bench -t "${km%%:*}" -w "M0:${mib}MB:$t" -s "$secs" > "$out" 2>&1; then
          tail -n 5 "$out" >&2; exit 1
        fi
        mbs=$(awk '/^MByte\/s:/ { print $2 }' "$out")
        cpus=$(sed -n 's/^Group: .* running on hwthread \([0-9]*\) .*/\1/p' "$out" | paste -sd, -)
        [[ $mbs =~ ^[0-9.]+$ && -n $cpus ]] || { echo "$0: no MByte/s or hwthread in $out" >&2; exit 1; }
        awk -v t="$t" -v c="$cpus" -v m="${km#*:}" -v v="$mbs" 'BEGIN { printf "%s,\"%s\",%s,%.4g,GB/s\n", t, c, m, v / 1000 }'
      done
    done ;;
  *) usage ;;
esac
