#!/usr/bin/env bash
# bench.sh [RUNS]: the runner's numbers on this host, all measured now (issue 5's benchmark):
#  - empty workload, 1 pinned thread: calls/s (median of RUNS runs)
#  - empty workload, 2 threads on two CPUs: --program-sharing shared vs per-thread (median of RUNS each,
#    interleaved so that background load hits both alike)
#  - 200k single-row CQL inserts at concurrency 128 on 1 thread: client CPU per insert and peak RSS
#    (starts the lab's Cassandra if it is not up, and stops it again if it started it)
# Reports go to rust-runner/target/bench/. Reference points from the issue: Latte 0.29 here does 3.3M/s
# (1 thread), 6.5M/s (2 threads), 4.7 us CPU per insert and 27 MB peak RSS.
set -euo pipefail
runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cargo build --release --locked --quiet --manifest-path rust-runner/Cargo.toml
runner=rust-runner/target/release/runner
out=rust-runner/target/bench
rm -rf "$out" && mkdir -p "$out"
one=$(lscpu -p=CPU | grep -v '^#' | head -n 1)
pair=$(lscpu -p=CPU | grep -v '^#' | head -n 2 | paste -sd,)

# json FILE EXPR: a value from a runner report (EXPR indexes the parsed JSON as `r`).
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
median() { sort -g | awk '{ x[NR] = $1 } END { print (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2) }'; }
mega() { awk -v v="$1" 'BEGIN { printf "%.2fM", v / 1e6 }'; }

empty() { # NAME CPUS SHARING
  "$runner" run workloads/empty.rn --cpus "$2" --program-sharing "$3" --duration 5s --warmup 1s \
    --output "$out/$1.json" --quiet --no-csv
  json "$out/$1.json" "r['result']['calls_per_s']['value']"
}

one_t=() shared=() private=()
for ((i = 1; i <= runs; i++)); do
  one_t+=("$(empty "one-$i" "$one" per-thread)")
  shared+=("$(empty "shared-$i" "$pair" shared)")
  private+=("$(empty "per-thread-$i" "$pair" per-thread)")
done
m1=$(printf '%s\n' "${one_t[@]}" | median)
ms=$(printf '%s\n' "${shared[@]}" | median)
mp=$(printf '%s\n' "${private[@]}" | median)

started=0
if ! cassandra/cassandra.sh status > /dev/null 2>&1; then
  cassandra/cassandra.sh up
  started=1
fi
stop() { if [[ $started == 1 ]]; then cassandra/cassandra.sh down; fi; }
trap stop EXIT
"$runner" schema workloads/basic_write.rn
"$runner" run workloads/basic_write.rn -f run --cpus "$one" --concurrency 128 --duration 200000 --warmup 20000 \
  -P rows=200000 --output "$out/insert.json" --quiet --no-csv
cpu_us=$(json "$out/insert.json" "round(r['result']['client_cpu_per_op_us'], 2)")
rss_mb=$(json "$out/insert.json" "round(r['result']['peak_rss_bytes'] / 1e6, 1)")
ins_s=$(json "$out/insert.json" "round(r['result']['calls_per_s']['value'])")
ins_err=$(json "$out/insert.json" "r['result']['errors']")

cat << EOT
| measurement (this host, $(nproc) CPUs) | measured | reference |
|---|---|---|
| empty workload, 1 thread (CPU $one), calls/s | $(mega "$m1") | goal >= 4M; Latte 0.29: 3.3M |
| empty workload, 2 threads (CPUs $pair), shared-arc, calls/s | $(mega "$ms") | probe: 2.2M |
| empty workload, 2 threads (CPUs $pair), per-thread, calls/s | $(mega "$mp") | probe: 8M; Latte 0.29: 6.5M |
| per-thread / shared-arc at 2 threads | $(awk -v a="$mp" -v b="$ms" 'BEGIN { printf "%.2fx", a / b }') | probe: 3.6x |
| 200k CQL inserts, concurrency 128, 1 thread: client CPU per insert | ${cpu_us} us | Latte 0.29: 4.7 us |
| same run: peak RSS | ${rss_mb} MB | Latte 0.29: 27 MB |
| same run: inserts/s (errors) | ${ins_s} (${ins_err}) | |
EOT
echo "runs per empty-workload point: $runs (all values: $out/*.json)"
