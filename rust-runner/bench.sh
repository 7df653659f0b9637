#!/usr/bin/env bash
# bench.sh [RUNS]: the runner's numbers on this host, all measured now (issues 5 and 11):
#  - empty workload, 1 pinned thread: calls/s (median of RUNS runs)
#  - empty workload, 2 threads on two CPUs: --program-sharing shared vs per-thread (median of RUNS each,
#    interleaved so that background load hits both alike)
#  - client CPU per CQL insert and peak RSS: bench/insert.rn (200k single-row inserts after 20k warmup,
#    concurrency 128, 1 thread, the process pinned to one CPU with taskset), run by the runner and, when a
#    Latte 0.29 binary is found (LATTE=path, else `latte` on PATH), by Latte on the same file, table and
#    Cassandra: RUNS rounds after one unmeasured run, interleaved ABBA (runner, Latte, Latte, runner…).
#    Both are measured the same way, from outside: bench/rusage.py takes the child's user+system CPU and
#    peak RSS from wait4(2), so the CPU per insert is the whole process (start, connect, warmup
#    included) over all 220k calls. The host's noise during each run (steal %, 1-minute load) is printed.
#    During the insert runs Cassandra's threads are moved off the client's CPU (to all the others; put
#    back after), so that the server never runs on the CPU being measured. Both the ratio of the medians
#    and the median of each round's own ratio are printed: a round's two runs are minutes apart at
#    most, so a slow phase of the server (its client CPU per insert follows the server's pace) weighs
#    on both sides of that round.
# Starts the lab's Cassandra if it is not up (and stops it again if it started it).
# Reports and logs go to rust-runner/target/bench/.
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
latte=${LATTE:-$(command -v latte || true)}
if [[ -n $latte && ! -x $latte ]]; then
  echo "LATTE=$latte is not an executable file" >&2
  exit 2
fi

# json FILE EXPR: a value from a runner report (EXPR indexes the parsed JSON as `r`).
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
median() { sort -g | awk '{ x[NR] = $1 } END { print (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2) }'; }
mega() { awk -v v="$1" 'BEGIN { printf "%.2fM", v / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

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
cass_pid=$(cassandra/cassandra.sh status 2> /dev/null | sed -n 's/.*PID \([0-9][0-9]*\).*/\1/p')
others=$(lscpu -p=CPU | grep -v '^#' | grep -vx "$one" | paste -sd, || true)
cass_mask=""
if [[ -n $cass_pid && -n $others ]]; then
  cass_mask=$(taskset -p "$cass_pid" | awk '{ print $NF }')
  taskset -a -p -c "$others" "$cass_pid" > /dev/null
  echo "Cassandra (PID $cass_pid) moved to CPUs $others for the insert runs; the client runs on CPU $one" >&2
fi
stop() {
  if [[ -n $cass_mask ]]; then taskset -a -p "$cass_mask" "$cass_pid" > /dev/null || true; fi
  if [[ $started == 1 ]]; then cassandra/cassandra.sh down; fi
}
trap stop EXIT

script=rust-runner/bench/insert.rn
warmup=20000 measured=200000
calls=$((warmup + measured))
"$runner" schema "$script" > /dev/null
# insert TOOL I: one pinned run; prints "cpu_us_per_insert rss_mb wall_s steal_pct load1".
insert() {
  local tool=$1 i=$2 cmd line cpu rss wall steal load code
  if [[ $tool == runner ]]; then
    cmd=("$runner" run "$script" --threads 1 --concurrency 128 --duration "$measured" --warmup "$warmup"
      --output "$out/insert-runner-$i.json" --quiet --no-csv)
  else
    # (Latte writes a log file into LATTE_LOG_DIR, by default the working directory: the repo)
    cmd=(env "LATTE_LOG_DIR=$out" "$latte" run "$script" --threads 1 --concurrency 128 --duration "$measured" --warmup "$warmup"
      --output "$out/insert-latte-$i.json" --quiet 127.0.0.1:9042)
  fi
  line=$(python3 rust-runner/bench/rusage.py "$out/insert-$tool-$i.log" taskset -c "$one" "${cmd[@]}")
  read -r cpu rss wall steal load code <<< "$line"
  if [[ $code != 0 ]]; then
    echo "$tool run $i failed (exit $code), log: $out/insert-$tool-$i.log" >&2
    tail -n 5 "$out/insert-$tool-$i.log" >&2
    exit 1
  fi
  awk -v c="$cpu" -v n="$calls" -v r="$rss" -v w="$wall" -v s="$steal" -v l="$load" \
    'BEGIN { printf "%.2f %.1f %.1f %.1f %.2f\n", c / n * 1e6, r / 1024, w, s, l }'
}

tools=(runner)
if [[ -n $latte ]]; then
  tools+=(latte)
  echo "Latte: $latte ($("$latte" --version 2>&1 | head -n 1))" >&2
fi
declare -A cpu_of rss_of
for t in "${tools[@]}"; do cpu_of[$t]="" rss_of[$t]=""; done
# Unmeasured runs first, until two in a row take about as long (within 15%, at most 8 runs): a Cassandra
# just started ran these inserts 5x slower for its first few minutes here (its JIT on its own CPU),
# which weighs on the first rounds whichever tool runs in them.
prev="" wall=""
for ((w = 1; w <= 8; w++)); do
  line=$(insert runner 0) # a failed run ends the script
  read -r _ _ wall _ _ <<< "$line"
  if [[ -n $prev ]] && awk -v a="$wall" -v b="$prev" 'BEGIN { exit !(a > 0.85 * b && a < 1.15 * b) }'; then
    break
  fi
  prev=$wall
done
echo "Cassandra warmed up: $((w > 8 ? 8 : w)) unmeasured runs, the last ${wall} s" >&2
noise=()
for ((i = 1; i <= runs; i++)); do
  order=("${tools[@]}")
  # ABBA: each tool goes first in every other round, so neither always follows the other.
  if ((i % 2 == 0 && ${#tools[@]} == 2)); then order=("${tools[1]}" "${tools[0]}"); fi
  for t in "${order[@]}"; do
    line=$(insert "$t" "$i") # a failed run ends the script (a process substitution would hide it)
    read -r cpu rss wall steal load <<< "$line"
    echo "insert run $i $t: ${cpu} us CPU/insert, peak RSS ${rss} MiB, ${wall} s wall, steal ${steal}%, load ${load}" >&2
    cpu_of[$t]+="$cpu "
    rss_of[$t]+="$rss "
    noise+=("$steal $load")
  done
done
med() { local xs; read -ra xs <<< "$1"; printf '%s\n' "${xs[@]}" | median; }
rc=$(med "${cpu_of[runner]}")
rr=$(med "${rss_of[runner]}")
steal_range=$(printf '%s\n' "${noise[@]}" | awk 'NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { printf "%.1f-%.1f%%", lo, hi }')
load_range=$(printf '%s\n' "${noise[@]}" | awk 'NR == 1 { lo = hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { printf "%.2f-%.2f", lo, hi }')
if [[ -n $latte ]]; then
  lc=$(med "${cpu_of[latte]}")
  lr=$(med "${rss_of[latte]}")
  # each round's runner/Latte, then their median and range
  paired=$(paste -d' ' <(tr ' ' '\n' <<< "${cpu_of[runner]}" | grep .) <(tr ' ' '\n' <<< "${cpu_of[latte]}" | grep .) |
    awk '{ printf "%.3f\n", $1 / $2 }' | sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.2fx (rounds %.2f-%.2fx)", m, x[1], x[NR] }')
  latte_cpu="Latte 0.29: $lc us (runner/Latte $(ratio "$rc" "$lc"), per round $paired; goal <= 0.85x)"
  latte_rss="Latte 0.29: $lr MiB (goal <= 27 MB)"
else
  latte_cpu="Latte not found: install it with \`cargo install latte-cli --version 0.29.0 --locked --root DIR\` and pass LATTE=DIR/bin/latte"
  latte_rss="(no Latte run)"
fi

cat << EOT
| measurement (this host, $(nproc) CPUs) | measured | reference |
|---|---|---|
| empty workload, 1 thread (CPU $one), calls/s | $(mega "$m1") | goal >= 4M; Latte 0.29: 3.3M |
| empty workload, 2 threads (CPUs $pair), shared-arc, calls/s | $(mega "$ms") | probe: 2.2M |
| empty workload, 2 threads (CPUs $pair), per-thread, calls/s | $(mega "$mp") | probe: 8M; Latte 0.29: 6.5M |
| per-thread / shared-arc at 2 threads | $(ratio "$mp" "$ms") | probe: 3.6x |
| $measured inserts + $warmup warmup, concurrency 128, 1 thread on CPU $one: process CPU per insert (median of $runs) | ${rc} us | $latte_cpu |
| same runs: peak RSS (median) | ${rr} MiB | $latte_rss |
EOT
echo "noise during the insert runs: steal $steal_range, 1-minute load $load_range (runs and logs: $out/)"
echo "runs per point: $runs"
