#!/usr/bin/env bash
# `just bench-cache`: a measured comparison on this host, printed as markdown (no assertions).
#  1. every variant (our lock modes, memcached) at each thread count, compact placement, the
#     load generator on the remaining CPUs (or sharing them when none remain: flagged);
#  2. the load generator itself: memcached -t 1 on the first CPU, loadgen on the second, closed
#     loop with 4 and with 16 connections: GET/s and the client's CPU use.
#   cache-server/bench-report.sh [threads="1 2"] [duration=S] [variants="..."]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
threads="" duration=5 variants="global striped rwlock optimistic sharded memcached"
for arg in "$@"; do
  case $arg in
    threads=*) threads=${arg#*=} ;;
    duration=*) duration=${arg#*=} ;;
    variants=*) variants=${arg#*=} ;;
    *) echo "bench-report.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
pus=$("$root/scripts/topo.py" summary | sed -n 's/^pus=//p')
if [[ -z $threads ]]; then
  threads="1"; [[ $pus -ge 2 ]] && threads="1 2"
fi
metric() { awk -F, -v m="$1" '$1 == m { print $2 }' <<< "$2"; }
ms_to_us() { awk -v v="$1" 'BEGIN { printf "%.1f", v * 1000 }'; }
per_get() { awk -v c="$1" -v g="$2" 'BEGIN { if (g > 0) printf "%.2f", c * 1e4 / g; else print "-" }'; }

echo "## cache-get on $(hostname -s): ${pus} CPUs, ${duration}s per point, 100 B GET hits, closed loop"
echo
# other work on the host skews everything below: say how busy it was
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)."
echo
echo "CPU µs/GET = CPU time per request (CPU % × 10^4 / GET/s): comparable even when other work steals CPU."
echo
echo "| variant | server threads | server CPUs | client CPUs | GET/s | p50 µs | p99 µs | p99.9 µs | server CPU % | server CPU µs/GET | client CPU % | client CPU µs/GET | errors | note |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for t in $threads; do
  cpus=$("$root/scripts/topo.py" plan compact "$t")
  other=$("$root/scripts/topo.py" others "$cpus")
  for v in $variants; do
    out=$("$here/point.sh" --variant="$v" --threads="$t" --cpus="$cpus" --other-cpus="$other" --pinned=1 \
          --duration="$duration" --warmup=1 2> /dev/null) || { echo "| $v | $t | $cpus | | failed | | | | | | | | | |"; continue; }
    note=""; [[ $(metric cpus_shared "$out") == 1 ]] && note="client shares the server's CPUs"
    gets=$(metric get_per_s "$out") scpu=$(metric server_cpu_share "$out") ccpu=$(metric client_cpu_share "$out")
    printf '| %s | %s | %s | %s | %.0f | %s | %s | %s | %.0f | %s | %.0f | %s | %s | %s |\n' "$v" "$t" "$cpus" "${other:-$cpus}" \
      "$gets" "$(ms_to_us "$(metric latency_p50 "$out")")" \
      "$(ms_to_us "$(metric latency_p99 "$out")")" "$(ms_to_us "$(metric latency_p999 "$out")")" \
      "$scpu" "$(per_get "$scpu" "$gets")" "$ccpu" "$(per_get "$ccpu" "$gets")" "$(metric errors "$out")" "$note"
  done
done
echo
if [[ $pus -ge 2 ]]; then
  cpu0=$("$root/scripts/topo.py" plan compact 1)
  cpu1=$("$root/scripts/topo.py" others "$cpu0" | cut -d, -f1)
  echo "## load generator: memcached -t 1 on CPU $cpu0, loadgen (1 thread) on CPU $cpu1"
  echo
  echo "| connections | GET/s | p50 µs | p99 µs | loadgen CPU % of one core | loadgen CPU µs/GET | memcached CPU % |"
  echo "|---|---|---|---|---|---|---|"
  for c in 4 16; do
    out=$("$here/point.sh" --variant=memcached --threads=1 --cpus="$cpu0" --other-cpus="$cpu1" --pinned=1 \
          --client-threads=1 --conns="$c" --duration="$duration" --warmup=1 2> /dev/null) || { echo "| $c | failed | | | | | |"; continue; }
    gets=$(metric get_per_s "$out") ccpu=$(metric client_cpu_share "$out")
    printf '| %s | %.0f | %s | %s | %.0f | %s | %s |\n' "$c" "$gets" \
      "$(ms_to_us "$(metric latency_p50 "$out")")" "$(ms_to_us "$(metric latency_p99 "$out")")" \
      "$ccpu" "$(per_get "$ccpu" "$gets")" "$(metric server_cpu_share "$out")"
  done
  echo
  echo "A loadgen CPU share under 100 % with the server near 100 % means the server, not the generator, is the limit."
  echo
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
fi
