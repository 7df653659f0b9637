#!/usr/bin/env bash
# bench-mem.sh [ROUNDS]: the memory probe (mem) on one node beside an established tool, in one session,
# interleaved round by round (odd rounds ours first, even rounds theirs first, so drift hits both):
#  - bandwidth: mem's read_gbps and rw_gbps beside likwid-bench's `load` and `update` kernels (their AVX
#    forms where this CPU has them, else the scalar ones), one thread and every CPU of node 0, each over
#    a 256 MiB buffer on node 0 for 1 s;
#  - latency: mem's latency_ns alone: Debian ships no pointer-chase tool (no lmbench, so no lat_mem_rd).
# Every round records the 1-minute load average and the steal share of CPU time during the round.
# Raw outputs are kept in c-probes/build/bench-mem/.
set -euo pipefail
rounds=${1:-5}
[[ $rounds =~ ^[1-9][0-9]*$ && $rounds -le 50 ]] || { echo "usage: $0 [ROUNDS 1..50]" >&2; exit 2; }
command -v likwid-bench > /dev/null || { echo "bench-mem: likwid-bench is not installed (./lab installs it)" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
make -s -C "$here"
bin=$here/build out=$here/build/bench-mem
rm -rf "$out" && mkdir -p "$out"
ncpu=$(numactl --hardware 2> /dev/null | awk '/^node 0 cpus:/ { print NF - 3 }')
[[ ${ncpu:-0} -ge 1 ]] || ncpu=$(nproc)

# steal and total jiffies of the whole machine, from /proc/stat's first line
stat() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }
# (a quoted cpus field holds commas: it is blanked before splitting)
val() { awk -F, -v m="$2" -v t="$3" '{ gsub(/"[^"]*"/, "-") } $4 == m && $2 == t { print $5 }' "$1"; }
likwid() {  # likwid-bench KERNEL THREADS: MByte/s → GB/s
  likwid-bench -t "$1" -w "M0:256MB:$2" -s 1 > "$out/likwid-$1-$2-$r.txt" 2>&1
  awk '/^MByte\/s:/ { printf "%.4g", $2 / 1000 }' "$out/likwid-$1-$2-$r.txt"
}
ours() { "$bin/mem" --cpu-nodes 0 --mem-nodes 0 --size-mib 256 --seconds 1 > "$out/mem-$r.csv" 2> "$out/mem-$r.err"; }
# likwid-bench's kernels: the AVX forms where listed (a vectorised loop, as gcc makes of mem's at -O2)
kload=load kupdate=update
kernels=$(likwid-bench -a 2> /dev/null || true)   # whole, not piped into grep -q (SIGPIPE under pipefail)
if grep -q '^load_avx ' <<< "$kernels" && grep -q '^update_avx ' <<< "$kernels"; then kload=load_avx kupdate=update_avx; fi
theirs() { for k in "$kload" "$kupdate"; do echo "$k 1 $(likwid $k 1)"; echo "$k $ncpu $(likwid $k "$ncpu")"; done > "$out/likwid-$r.txt"; }

printf 'round,first,loadavg1,steal_pct,lat_ns,l1_ns,read1,load1_likwid,read_n,load_n_likwid,rw1,update1_likwid,rw_n,update_n_likwid\n' > "$out/rounds.csv"
for ((r = 1; r <= rounds; r++)); do
  read -r s0 t0 < <(stat)
  if (( r % 2 )); then ours; theirs; first=mem; else theirs; ours; first=likwid; fi
  read -r s1 t1 < <(stat)
  ds=$((s1 - s0)) dt=$((t1 - t0))
  lk() { awk -v k="$1" -v n="$2" '$1 == k && $2 == n { print $3 }' "$out/likwid-$r.txt"; }
  m=$out/mem-$r.csv
  printf '%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$r" "$first" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(awk -v s="$ds" -v t="$dt" 'BEGIN { printf "%.1f", t ? 100 * s / t : 0 }')" \
    "$(val "$m" latency_ns 1)" "$(val "$m" latency_l1_ns 1)" \
    "$(val "$m" read_gbps 1)" "$(lk "$kload" 1)" "$(val "$m" read_gbps "$ncpu")" "$(lk "$kload" "$ncpu")" \
    "$(val "$m" rw_gbps 1)" "$(lk "$kupdate" 1)" "$(val "$m" rw_gbps "$ncpu")" "$(lk "$kupdate" "$ncpu")" >> "$out/rounds.csv"
done
ver="not known here: no dpkg"
if command -v dpkg-query > /dev/null; then ver=$(dpkg-query -W -f='${Version}' likwid 2> /dev/null || true); fi
echo "likwid-bench kernels: $kload, $kupdate; CPUs on node 0: $ncpu; likwid $ver"
# (aligned by awk: column(1) is not in every Debian base system)
awk -F, '{ for (i = 1; i <= NF; i++) printf "%-16s", $i; print "" }' "$out/rounds.csv"
# Medians over rounds, and per round ours ÷ likwid's (median, min–max). With one CPU on node 0 the
# all-CPU columns are empty (mem prints no separate row then).
awk -F, 'NR > 1 { for (i = 3; i <= NF; i++) col[i, NR] = $i; n = NR - 1 }
  NR == 1 { for (i = 1; i <= NF; i++) name[i] = $i }
  function med(a, k,   i, j, t, m) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  END {
    printf "medians over %d rounds:", n
    for (i = 3; i <= 14; i++) { k = 0; for (r = 2; r <= n + 1; r++) if (col[i, r] != "") x[++k] = col[i, r]; if (k) printf " %s %.4g;", name[i], med(x, k); delete x }
    print ""
    split("7 9 11 13", ours, " ")
    for (j = 1; j <= 4; j++) { i = ours[j]; k = 0; lo = ""; hi = ""
      for (r = 2; r <= n + 1; r++) if (col[i, r] != "" && col[i + 1, r] > 0) { q = col[i, r] / col[i + 1, r]; x[++k] = q; if (lo == "" || q < lo) lo = q; if (hi == "" || q > hi) hi = q }
      if (k) printf "%s / %s: median %.3f (min %.3f, max %.3f, %d rounds)\n", name[i], name[i + 1], med(x, k), lo, hi, k; delete x } }' "$out/rounds.csv"
