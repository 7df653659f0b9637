#!/usr/bin/env bash
# bench.sh [RUNS]: benchmark the probes on this host. Every number printed is measured now:
#  - wall time of a full c2c matrix (hyperfine, read from its JSON export)
#  - repeat-to-repeat spread of the first pair's c2c median over RUNS runs (goal: < 5%)
#  - counters ratios (shared/padded, packed/padded, arc-shared/arc-private) and channel ratios
#    (unpadded/padded, 2 stages pinned and the 3-stage pipeline), each measured interleaved in one run
# Raw outputs are kept in c-probes/build/bench/.
set -euo pipefail
runs=${1:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
make -s -C "$here"
bin=$here/build out=$here/build/bench
rm -rf "$out" && mkdir -p "$out"
# nviennot's core-to-core-latency, when installed (`cargo install core-to-core-latency`), runs
# interleaved with ours on the same pair: same protocols, so the numbers should agree.
ref=${C2C_REFERENCE:-$(command -v core-to-core-latency || true)}

# The first two online CPUs: on most hosts (0,1), the pair the issue names.
pair=$(lscpu -p=CPU | grep -v '^#' | head -n 2 | paste -sd,)
[[ -n $pair ]] || { echo "bench: need two CPUs" >&2; exit 2; }

# CSV helpers: value of metric (and variant) from a probe's tidy output.
val() { awk -F, -v v="$2" -v m="$3" '$1 == v && $(NF - 2) == m { print $(NF - 1) }' "$1"; }
spread() { sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.1f", 100 * (x[NR] - x[1]) / m }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "== c2c: full matrix wall time ($(nproc) CPUs, cas), hyperfine"
hyperfine -N --runs 3 --warmup 1 --export-json "$out/c2c-matrix.json" \
  "$bin/c2c --mode cas --matrix" > "$out/hyperfine.txt" 2>&1
python3 - "$out/c2c-matrix.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"   mean {r['mean']:.3f} s ± {r['stddev']:.3f} s (min {r['min']:.3f}, max {r['max']:.3f}, {len(r['times'])} runs)")
PY

echo "== c2c: ($pair) median over $runs runs, each an independent process"
for ((i = 1; i <= runs; i++)); do
  "$bin/c2c" --mode cas,rw --cpus "$pair" > "$out/c2c-$i.csv" 2> /dev/null
  if [[ -n $ref ]]; then  # its --csv prints, per bench, the lower triangle of mean one-way ns
    "$ref" 1000 300 -b 1,2 -c "$pair" --csv 2> /dev/null | grep -o '^[0-9.][0-9.]*' | paste -sd' ' >> "$out/reference.txt"
  fi
done
for m in cas rw; do
  for ((i = 1; i <= runs; i++)); do val "$out/c2c-$i.csv" "$m" one_way_ns; done > "$out/c2c-$m.txt"
  sort -g "$out/c2c-$m.txt" | awk -v m="$m" '
    { x[NR] = $1 }
    END { med = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2
          printf "   %-3s one-way median of medians %.1f ns, min %.1f, max %.1f, spread (max-min)/median %.1f%%  [", m, med, x[1], x[NR], 100 * (x[NR] - x[1]) / med
          for (i = 1; i <= NR; i++) printf "%s%.1f", (i > 1 ? " " : ""), x[i]; print "] (sorted)" }'
done
if [[ -n $ref && -s $out/reference.txt ]]; then
  echo "   beside $ref (1000 round trips x 300 samples, mean), interleaved run by run:"
  for ((i = 1; i <= runs; i++)); do
    read -r rc rr < <(sed -n "${i}p" "$out/reference.txt")
    printf '   run %d: cas ours %s  theirs %.1f | rw ours %s  theirs %.1f\n' "$i" \
      "$(val "$out/c2c-$i.csv" cas one_way_ns)" "$rc" "$(val "$out/c2c-$i.csv" rw one_way_ns)" "$rr"
  done
  printf '   theirs: cas spread (max-min)/median %s%%, rw %s%%\n' \
    "$(cut -d' ' -f1 "$out/reference.txt" | spread)" "$(cut -d' ' -f2 "$out/reference.txt" | spread)"
else
  echo "   (install core-to-core-latency, or set C2C_REFERENCE, to compare with it here)"
fi
# Within a run the samples are tight; a large spread across runs means the pair itself changed
# (a VM's vCPUs moved between physical cores), which no sampling plan can remove.
for ((i = 1; i <= runs; i++)); do
  printf '   run %d: cas p10-p90 %s-%s ns, rw p10-p90 %s-%s ns\n' "$i" \
    "$(val "$out/c2c-$i.csv" cas one_way_ns_p10)" "$(val "$out/c2c-$i.csv" cas one_way_ns_p90)" \
    "$(val "$out/c2c-$i.csv" rw one_way_ns_p10)" "$(val "$out/c2c-$i.csv" rw one_way_ns_p90)"
done

echo "== counters: 2 threads on $pair, 5 interleaved rounds, median (ns per op per thread)"
"$bin/counters" --cpus "$pair" --threads 2 --rounds 5 --ops 2000000 > "$out/counters.csv"
for v in shared-atomic padded packed arc-shared arc-private; do
  printf '   %-14s %8.2f ns/op\n' "$v" "$(val "$out/counters.csv" "$v" ns_per_op)"
done
ns() { val "$out/counters.csv" "$1" ns_per_op; }
echo "   shared-atomic / padded = $(ratio "$(ns shared-atomic)" "$(ns padded)")x;" \
  "packed / padded = $(ratio "$(ns packed)" "$(ns padded)")x;" \
  "arc-shared / arc-private = $(ratio "$(ns arc-shared)" "$(ns arc-private)")x"

echo "== channel: unpadded vs padded slots, 5 interleaved rounds, median (ns per message)"
"$bin/channel" --cpus "$pair" --rounds 5 --messages 2000000 > "$out/channel.csv"
"$bin/channel" --stages 3 --pinned 0 --rounds 5 --messages 1000000 > "$out/pipeline.csv" 2> /dev/null
for f in channel pipeline; do
  p=$(val "$out/$f.csv" padded ns_per_msg) u=$(val "$out/$f.csv" unpadded ns_per_msg)
  label=$([[ $f == channel ]] && echo "2 stages pinned to $pair" || echo "3 stages unpinned")
  printf '   %-24s padded %8.1f  unpadded %8.1f  unpadded / padded = %sx\n' "$label" "$p" "$u" "$(ratio "$u" "$p")"
done
echo "(raw outputs: $out)"
