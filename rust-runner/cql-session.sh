#!/usr/bin/env bash
# Cassandra for a sweep of experiments/runner-cql.spec or bench-runner-insert.spec (their setup and teardown):
#   rust-runner/cql-session.sh up ROWS [SCRIPT]   start Cassandra unless it already answers, then the
#                      script's schema, and load ROWS rows unless ROWS is 0 (`runner load` first runs the
#                      script's erase(), as Latte's); SCRIPT defaults to workloads/basic_write.rn
#   rust-runner/cql-session.sh down [SCRIPT]      stop Cassandra if `up` started it; else erase what the
#                      script wrote (its erase(), where it defines one), leaving the node running
# With LAB_NODES (the spec key nodes=, e.g. a cluster of cassandra/cluster.sh), the nodes are the user's:
# nothing is started or stopped, `up` loads into them and `down` erases.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
marker=${CASSANDRA_WORK:-$root/.work/cassandra}/started-by-sweep
runner=rust-runner/target/release/runner
script=workloads/basic_write.rn
usage() { echo "usage: $0 up ROWS [SCRIPT] | down [SCRIPT]" >&2; exit 2; }
nodes=${LAB_NODES:-127.0.0.1:${CASSANDRA_PORT:-9042}}
case ${1:-} in
  up)
    rows=${2:-100000} script=${3:-$script}
    [[ $rows =~ ^[0-9]+$ && -f $script ]] || usage
    if [[ -n ${LAB_NODES:-} ]]; then
      echo "cql-session: against the given nodes $LAB_NODES (not started or stopped here)" >&2
    elif cassandra/cassandra.sh status > /dev/null 2>&1; then
      echo "cql-session: Cassandra already up; leaving it running afterwards" >&2
    else
      cassandra/cassandra.sh up
      mkdir -p "$(dirname "$marker")" && touch "$marker"
    fi
    "$runner" schema "$script" --nodes "$nodes"
    if [[ $rows != 0 ]]; then
      "$runner" load "$script" -P rows="$rows" --nodes "$nodes" --threads 1 --no-csv --quiet \
        --output "${LAB_RAW:-$root/.work}/runner-cql-load.json"
    fi
    ;;
  down)
    script=${2:-$script}
    [[ -f $script ]] || usage
    if [[ -z ${LAB_NODES:-} && -f $marker ]]; then
      rm -f "$marker"
      cassandra/cassandra.sh down
    elif [[ -n ${LAB_NODES:-} ]] || cassandra/cassandra.sh status > /dev/null 2>&1; then
      "$runner" erase "$script" --if-defined --nodes "$nodes"
    fi
    ;;
  *) usage ;;
esac
