#!/usr/bin/env bash
# bench.sh [ROUNDS]: the runner's numbers on this host, all measured now (issues 5 and 11), against
# Latte 0.29 and an earlier build of the runner when they are given:
#   LATTE=path          Latte 0.29's binary (else `latte` on PATH, else no Latte runs)
#   RUNNER_BEFORE=path  another build of the runner (e.g. main before a change) for before/after figures
# Each round runs every tool once per measurement, the tools in a rotated order (round 1: A B C,
# round 2: B C A, …; for two tools ABBA), so that neither always follows the other:
#  - empty workload: calls/s with 1 pinned thread, and with 2 threads on two CPUs, one program shared by
#    the threads (`--program-sharing shared`, the runner only) and a program per thread;
#  - client CPU per CQL insert and peak RSS: bench/insert.rn (200k single-row inserts after 20k warmup,
#    concurrency 128, 1 thread, the process pinned to one CPU with taskset), every tool on the same file,
#    table and Cassandra. Measured from outside, all tools alike: bench/rusage.py takes the child's
#    user+system CPU and peak RSS from wait4(2), so the CPU per insert is the whole process (start,
#    connect, warmup included) over all 220k calls. Cassandra's threads are moved off the client's CPU
#    for these runs (and put back after), so the server never runs on the CPU being measured.
# Every run also records the host's noise (CPU time stolen by the hypervisor, and used by processes other
# than the benchmark and its Cassandra). bench/summary.py prints medians, the per-round ratios between
# tools with a distribution-free 95% interval, and whether the goals (≤ 0.85× Latte's CPU per insert,
# peak RSS ≤ 27 MB) are met, not met, or cannot be told apart from the noise.
# Starts the lab's Cassandra if it is not up (and stops it again if it started it): Latte connects even
# to run the empty workload. Runs, logs and reports go to rust-runner/target/bench/.
set -euo pipefail
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cargo build --release --locked --quiet --manifest-path rust-runner/Cargo.toml
out=rust-runner/target/bench
rm -rf "$out" && mkdir -p "$out"
one=$(lscpu -p=CPU | grep -v '^#' | head -n 1)
pair=$(lscpu -p=CPU | grep -v '^#' | head -n 2 | paste -sd,)

declare -A bin_of=([runner]=rust-runner/target/release/runner)
tools=(runner)
if [[ -n ${RUNNER_BEFORE:-} ]]; then
  [[ -x $RUNNER_BEFORE && -f $RUNNER_BEFORE ]] || { echo "RUNNER_BEFORE=$RUNNER_BEFORE is not an executable file" >&2; exit 2; }
  bin_of[before]=$RUNNER_BEFORE
  tools+=(before)
fi
latte=${LATTE:-$(command -v latte || true)}
if [[ -n $latte ]]; then
  [[ -x $latte && -f $latte ]] || { echo "LATTE=$latte is not an executable file" >&2; exit 2; }
  bin_of[latte]=$latte
  tools+=(latte)
  echo "Latte: $latte ($("$latte" --version 2>&1 | head -n 1))" >&2
else
  echo "Latte not found: install it with \`cargo install latte-cli --version 0.29.0 --locked --root DIR\` and pass LATTE=DIR/bin/latte" >&2
fi

started=0
if ! cassandra/cassandra.sh status > /dev/null 2>&1; then
  cassandra/cassandra.sh up
  started=1
fi
cass_pid=$(cassandra/cassandra.sh status 2> /dev/null | sed -n 's/.*PID \([0-9][0-9]*\).*/\1/p')
[[ -n $cass_pid ]] || { echo "bench: Cassandra answers but its PID is unknown (not the lab's Cassandra?)" >&2; exit 1; }
cass_mask=""
stop() {
  if [[ -n $cass_mask ]]; then taskset -a -p "$cass_mask" "$cass_pid" > /dev/null || true; fi
  if [[ $started == 1 ]]; then cassandra/cassandra.sh down; fi
}
trap stop EXIT

runs_csv=$out/runs.csv
echo "round,tool,metric,value" > "$runs_csv"
put() { printf '%s,%s,%s,%s\n' "$1" "$2" "$3" "$4" >> "$runs_csv"; }
# json FILE EXPR: a value from a JSON report (EXPR indexes the parsed JSON as `r`).
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

# measure ROUND TOOL LOG CMD...: runs CMD under rusage.py, records the noise of that run (unless ROUND
# is 0, the unmeasured runs) and sets cpu, rss_kb and wall. A failed run ends the script.
cpu="" rss_kb="" wall=""
measure() {
  local round=$1 tool=$2 log=$3 line steal foreign code
  shift 3
  line=$(python3 rust-runner/bench/rusage.py --server "$cass_pid" "$log" "$@")
  read -r cpu rss_kb wall steal foreign code <<< "$line"
  if [[ $code != 0 ]]; then
    echo "$tool run (round $round) failed (exit $code), log: $log" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
  if [[ $round != 0 ]]; then
    put "$round" "$tool" noise_steal_pct "$steal"
    put "$round" "$tool" noise_foreign_pct "$foreign"
  fi
}

# empty ROUND TOOL: the empty workload's calls/s, 1 thread and 2 threads (and, for the runner, a shared program).
empty() {
  local i=$1 t=$2 bin=${bin_of[$2]} name sharing cpus threads r
  if [[ $t == latte ]]; then
    for threads in 1 2; do
      cpus=$([[ $threads == 1 ]] && echo "$one" || echo "$pair")
      r=$out/empty-$t-${threads}t-$i.json
      measure "$i" "$t" "$out/empty-$t.log" taskset -c "$cpus" env "LATTE_LOG_DIR=$out" "$bin" run workloads/empty.rn \
        --threads "$threads" --duration 5s --warmup 1s --output "$r" --quiet 127.0.0.1:9042
      put "$i" "$t" "empty_${threads}t_calls_per_s" "$(json "$r" "r['result']['cycle_throughput']['value']")"
    done
    return
  fi
  for name in 1t 2t_shared 2t; do
    case $name in
      1t) cpus=$one sharing=per-thread ;;
      2t_shared) cpus=$pair sharing=shared ;;
      2t) cpus=$pair sharing=per-thread ;;
    esac
    r=$out/empty-$t-$name-$i.json
    measure "$i" "$t" "$out/empty-$t.log" "$bin" run workloads/empty.rn --cpus "$cpus" --program-sharing "$sharing" \
      --duration 5s --warmup 1s --output "$r" --quiet --no-csv
    put "$i" "$t" "empty_${name}_calls_per_s" "$(json "$r" "r['result']['calls_per_s']['value']")"
  done
}

script=rust-runner/bench/insert.rn
warmup=20000 measured=200000
calls=$((warmup + measured))
# insert ROUND TOOL: one pinned run of the insert workload (round 0: unmeasured).
insert() {
  local i=$1 t=$2 bin=${bin_of[$2]} cmd per mib
  if [[ $t == latte ]]; then
    # (Latte writes a log file into LATTE_LOG_DIR, by default the working directory: the repo)
    cmd=(env "LATTE_LOG_DIR=$out" "$bin" run "$script" --threads 1 --concurrency 128 --duration "$measured" --warmup "$warmup"
      --output "$out/insert-$t-$i.json" --quiet 127.0.0.1:9042)
  else
    cmd=("$bin" run "$script" --threads 1 --concurrency 128 --duration "$measured" --warmup "$warmup"
      --output "$out/insert-$t-$i.json" --quiet --no-csv)
  fi
  measure "$i" "$t" "$out/insert-$t.log" taskset -c "$one" "${cmd[@]}"
  if [[ $i != 0 ]]; then
    per=$(awk -v c="$cpu" -v n="$calls" 'BEGIN { printf "%.3f", c / n * 1e6 }')
    mib=$(awk -v r="$rss_kb" 'BEGIN { printf "%.1f", r / 1024 }')
    put "$i" "$t" insert_cpu_us "$per"
    put "$i" "$t" insert_rss_mib "$mib"
    put "$i" "$t" insert_wall_s "$wall"
    echo "insert round $i $t: $per us CPU/insert, peak RSS $mib MiB, $wall s wall" >&2
  fi
}

# rotated ROUND: sets `order`, the tools in this round's order.
order=()
rotated() {
  local n=${#tools[@]} j
  order=()
  for ((j = 0; j < n; j++)); do order+=("${tools[(j + $1) % n]}"); done
}

echo "== empty workload: $rounds rounds of ${tools[*]}" >&2
for ((i = 1; i <= rounds; i++)); do
  rotated "$i"
  for t in "${order[@]}"; do empty "$i" "$t"; done
done

echo "== inserts: $rounds rounds of ${tools[*]}" >&2
"${bin_of[runner]}" schema "$script" > /dev/null
others=$(lscpu -p=CPU | grep -v '^#' | grep -vx "$one" | paste -sd, || true)
if [[ -n $others ]]; then
  cass_mask=$(taskset -p "$cass_pid" | awk '{ print $NF }')
  taskset -a -p -c "$others" "$cass_pid" > /dev/null
  echo "Cassandra (PID $cass_pid) moved to CPUs $others for the insert runs; the clients run on CPU $one" >&2
fi
# Unmeasured runs first, until two in a row take about as long (within 15%, at most 8 runs): a Cassandra
# just started ran these inserts 5x slower for its first few minutes here (its JIT on its own CPU),
# which weighs on the first rounds whichever tool runs in them.
prev=""
for ((w = 1; w <= 8; w++)); do
  insert 0 runner
  if [[ -n $prev ]] && awk -v a="$wall" -v b="$prev" 'BEGIN { exit !(a > 0.85 * b && a < 1.15 * b) }'; then
    break
  fi
  prev=$wall
done
echo "Cassandra warmed up: $((w > 8 ? 8 : w)) unmeasured runs, the last ${wall} s" >&2
for ((i = 1; i <= rounds; i++)); do
  rotated "$i"
  for t in "${order[@]}"; do insert "$i" "$t"; done
done

# VM or bare metal: systemd-detect-virt where there is one (not in the Nix shell), else the CPU's flag.
vm=""
if command -v systemd-detect-virt > /dev/null; then vm=$(systemd-detect-virt --vm 2> /dev/null || true); fi
if [[ -z $vm ]]; then vm=$(grep -qw hypervisor /proc/cpuinfo && echo "yes (hypervisor flag)" || echo "none"); fi
echo "host: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), virtual machine: $vm; runs and logs: $out/"
if [[ -n ${RUNNER_BEFORE:-} ]]; then echo "runner before: $RUNNER_BEFORE"; fi
python3 rust-runner/bench/summary.py "$runs_csv" --one "$one" --pair "$pair"
