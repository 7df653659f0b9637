#!/usr/bin/env bash
# One run of a workload by the runner or by its peer Latte 0.29, for the bench-runner-latte specs:
#   rust-runner/bench/peer.sh runner|latte RAW empty|insert DURATION WARMUP
#   empty:  workloads/empty.rn, each tool's default concurrency (bench-runner-latte.spec)
#   insert: rust-runner/bench/insert.rn, concurrency 128 (bench-runner-latte-insert.spec); DURATION
#           and WARMUP are call counts there, so that the engine's CPU time per call is like for like
# Same script, one thread, same duration and warm-up; the engine pins the whole process (taskset), as
# Latte has no pinning of its own. Each writes its JSON report into RAW; this prints the lab's tidy CSV
# (calls_per_s) from it, so both tools' numbers come from their own reports, read the same way.
# Latte connects to Cassandra even for a workload that sends nothing ($LAB_NODES, else the lab's node).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
usage() { echo "usage: $0 runner|latte RAW empty|insert DURATION WARMUP" >&2; exit 2; }
[[ $# -eq 5 && -d $2 ]] || usage
tool=$1 raw=$2 duration=$4 warmup=$5
report=$raw/report.json
case $3 in
  empty) script=workloads/empty.rn flags=() ;;
  insert) script=rust-runner/bench/insert.rn flags=(--concurrency 128) ;;
  *) usage ;;
esac
case $tool in
  runner)
    rust-runner/target/release/runner run "$script" --threads 1 "${flags[@]}" --duration "$duration" \
      --warmup "$warmup" --output "$report" --quiet --no-csv
    key=calls_per_s ;;
  latte)
    # Latte writes a log file into LATTE_LOG_DIR (by default the working folder: the project)
    IFS=, read -ra nodes <<< "${LAB_NODES:-127.0.0.1:${CASSANDRA_PORT:-9042}}"
    LATTE_LOG_DIR=$raw latte run "$script" --threads 1 "${flags[@]}" --duration "$duration" \
      --warmup "$warmup" --output "$report" --quiet "${nodes[@]}" > "$raw/latte.txt"
    key=cycle_throughput ;;
  *) usage ;;
esac
python3 - "$report" "$key" <<'PY'
import json, sys
value = json.load(open(sys.argv[1]))["result"][sys.argv[2]]["value"]
print(f"metric,value,unit\ncalls_per_s,{float(value):.0f},1/s")
PY
