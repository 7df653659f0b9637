#!/usr/bin/env bash
# A multi-node Cassandra on this host: N nodes of cassandra/cassandra.sh on 127.0.0.2 … 127.0.0.(N+1), each
# in its own work folder, each bound to one NUMA node (round-robin) where the host has several.
#
#   cassandra/cluster.sh up [nodes=N] [inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [plan=1]]
#                          start N nodes (default 3, at most 16) and wait until the ring shows N nodes UN;
#                          with inventory=FILE: a node per `cassandra` host of an Ansible inventory instead
#                          (started by lab.cli.fleet cluster-up; plan=1: what would run where, nothing started)
#   cassandra/cluster.sh down      stop exactly the nodes `up` started (each by its PID)
#   cassandra/cluster.sh status    the cluster record and each node's state (exit 0 only when all answer CQL)
#   cassandra/cluster.sh nodes     the CQL contact points, comma-separated (for runner-cql nodes=…)
#
# This script owns the cluster record, $CLUSTER_WORK/cluster.txt, for a cluster of this host and of an
# inventory alike: it refuses a second cluster, writes the record and removes it.
# Settings (environment): CLUSTER_WORK (folder of the nodes and the record, default .work/cluster),
# CLUSTER_PORT (CQL, 9042 on each node's address), CLUSTER_STORAGE_PORT (7000), CLUSTER_JMX_PORT (7300: node i
# listens on 7300+i, JMX is on 127.0.0.1 for every node), CASSANDRA_HEAP (512M here: three nodes fit on a
# small host), CLUSTER_RING_TIMEOUT (180 s); CASSANDRA_LIB, JAVA and CASSANDRA_UP_TIMEOUT go to cassandra.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# the lab's Python package (scripts/lab/), for the programs run below as python3 -m lab.cli.X
export PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}"
work=${CLUSTER_WORK:-$root/.work/cluster}
port=${CLUSTER_PORT:-9042}
storage_port=${CLUSTER_STORAGE_PORT:-7000}
jmx_base=${CLUSTER_JMX_PORT:-7300}
ring_timeout=${CLUSTER_RING_TIMEOUT:-180}
record=$work/cluster.txt
export CASSANDRA_HEAP=${CASSANDRA_HEAP:-512M}
# A running cluster's ports are the ones it was started with (status and down need them, not today's env).
if [[ -f $record ]] && grep -q '^ports=' "$record"; then
  IFS=' ' read -r port storage_port jmx_base < <(sed -n 's/^ports=//p' "$record" | head -n 1)
fi

say() { printf 'cluster: %s\n' "$*" >&2; }
bad() { say "$*"; exit 2; }

# Every number below reaches bash arithmetic, where text such as `x[$(cmd)]` runs cmd: checked first,
# whether it came from the environment or from the record.
for v in "port=$port" "storage_port=$storage_port" "jmx_base=$jmx_base" "ring_timeout=$ring_timeout"; do
  [[ ${v#*=} =~ ^[0-9]{1,5}$ ]] || bad "${v%%=*} ${v#*=}: a whole number of at most 5 digits (from the environment or $record)"
done
[[ $CASSANDRA_HEAP =~ ^[1-9][0-9]{0,5}[MG]$ ]] || bad "CASSANDRA_HEAP=$CASSANDRA_HEAP: a size such as 512M or 4G"

# node I's settings for cassandra.sh: one script runs every node, only these differ.
node() {
  local i=$1; shift
  CASSANDRA_WORK=$work/node$i CASSANDRA_ADDRESS=127.0.0.$((i + 1)) CASSANDRA_PORT=$port \
    CASSANDRA_STORAGE_PORT=$storage_port CASSANDRA_JMX_PORT=$((jmx_base + i)) \
    CASSANDRA_SEEDS=127.0.0.2:$storage_port "$@"
}

# The nodes of the record (their numbers), in order.
recorded() { [[ -f $record ]] && sed -n 's/^node=\([0-9]*\) .*/\1/p' "$record"; }

# NUMA nodes with CPUs (memory-only nodes cannot run a JVM's threads).
numa_nodes() {
  local list=0 part lo hi n
  [[ -r /sys/devices/system/node/has_cpu ]] && list=$(< /sys/devices/system/node/has_cpu)
  for part in ${list//,/ }; do
    lo=${part%-*} hi=${part#*-}
    for ((n = lo; n <= hi; n++)); do echo "$n"; done
  done
}

ring_up() {   # how many nodes nodetool status shows Up and Normal
  node 1 "$here/cassandra.sh" nodetool status 2>/dev/null | grep -c '^UN ' || true
}

# A path as the record keeps it: from / (cluster-down may run from another folder).
absolute() { if [[ $1 == /* ]]; then printf '%s\n' "$1"; else printf '%s\n' "$PWD/$1"; fi; }

# A cluster on an inventory's hosts: Ansible starts a node on each (python3 -m lab.cli.fleet cluster-up, which
# leaves one node= line per node it started in $work/nodes.txt); the record is written here, as for this host's.
up_inventory() {
  local inventory=$1 known="" plan=0 a rc=0 t0=$SECONDS hosts
  shift
  for a in "$@"; do
    case $a in
      known_hosts=*) known=$(absolute "${a#known_hosts=}") ;;
      plan=1) plan=1 ;;
    esac
  done
  ((plan)) || [[ ! -f $record ]] || bad "a cluster is recorded in $record: cluster-down first"
  mkdir -p "$work"
  rm -f "$work/nodes.txt"
  python3 -m lab.cli.fleet cluster-up "$@" "work=$work" || rc=$?
  if ((plan == 0)) && [[ -s $work/nodes.txt ]]; then
    # recorded whenever a node runs, also after a failure: cluster-down must find and stop it
    hosts=$(sed -n 's/^node=[0-9]* host=\([^ ]*\) .*/\1/p' "$work/nodes.txt" | paste -sd, - | sed 's/,/, /g')
    { echo "# The lab's Cassandra cluster (cassandra/cluster.sh up inventory=…), started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
      echo "where=hosts $hosts of $(absolute "$inventory")"
      echo "inventory=$(absolute "$inventory")"
      echo "known_hosts=$known"
      cat "$work/nodes.txt"
      echo "up_seconds=$((SECONDS - t0))"; } > "$record.tmp"
    mv "$record.tmp" "$record"
    rm -f "$work/nodes.txt"
    say "record: $record"
  fi
  return "$rc"
}

cmd_up() {
  local n=3 inventory="" a fleet=() other=""
  for a in "$@"; do
    case $a in
      nodes=*) n=${a#nodes=} fleet+=("$a") ;;
      inventory=*) inventory=${a#inventory=} fleet+=("$a") ;;
      hosts=* | known_hosts=* | plan=*) fleet+=("$a") other=$a ;;
      *) bad "unknown argument '$a' (nodes=N, inventory=FILE [hosts=PATTERN known_hosts=FILE plan=1])" ;;
    esac
  done
  # with an inventory: every host of the group unless nodes= is given (lab.cli.fleet checks the arguments)
  if [[ -n $inventory ]]; then
    up_inventory "$inventory" "${fleet[@]}"
    return
  fi
  [[ -z $other ]] || bad "$other: hosts=, known_hosts= and plan= are for a cluster on an inventory's hosts (inventory=FILE)"
  [[ $n =~ ^[1-9][0-9]?$ ]] && ((n <= 16)) || bad "nodes=$n: a whole number from 1 to 16"
  [[ -f $record ]] && grep -q '^inventory=' "$record" &&
    bad "a cluster on an inventory's hosts is recorded in $record: 'cluster-down' first"
  if [[ -n $(recorded) ]]; then
    local have
    have=$(recorded | wc -l)
    ((have == n)) || bad "a cluster of $have nodes is recorded in $record: 'cluster-down' first"
  fi
  local numa=() i t0=$SECONDS
  mapfile -t numa < <(numa_nodes)
  if ((${#numa[@]} > 1)); then
    say "${#numa[@]} NUMA nodes: node i runs on NUMA node ${numa[*]} in turn (CPUs and memory bound)"
  else
    say "this host has one NUMA node: the nodes are not bound (nothing to bind them apart)"
  fi
  mkdir -p "$work"
  { echo "# The lab's Cassandra cluster (cassandra/cluster.sh up), started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "where=this host ($(hostname -s)), loopback addresses"
    echo "heap=$CASSANDRA_HEAP"
    echo "ports=$port $storage_port $jmx_base"; } > "$record.tmp"
  # The seed first; the others join it at once (a new cluster: no data to stream, so no bootstrap).
  local pids=() failed=0 bind
  for ((i = 1; i <= n; i++)); do
    bind=""
    ((${#numa[@]} > 1)) && bind=${numa[$(((i - 1) % ${#numa[@]}))]}
    echo "node=$i address=127.0.0.$((i + 1)) cql=127.0.0.$((i + 1)):$port jmx=127.0.0.1:$((jmx_base + i))" \
      "numa=${bind:-unbound} work=$work/node$i" >> "$record.tmp"
    if ((i == 1)); then
      node 1 env CASSANDRA_NUMA_NODE="$bind" "$here/cassandra.sh" up || { mv "$record.tmp" "$record"; cmd_down; exit 1; }
    else
      node "$i" env CASSANDRA_NUMA_NODE="$bind" CASSANDRA_AUTO_BOOTSTRAP=false "$here/cassandra.sh" up &
      pids+=($!)
    fi
  done
  mv "$record.tmp" "$record"
  for a in "${pids[@]}"; do wait "$a" || failed=1; done
  ((failed == 0)) || { say "a node did not start (its log's tail is above): stopping the others"; cmd_down; exit 1; }
  local up=0
  while up=$(ring_up); ((up < n)); do
    if ((SECONDS - t0 > ring_timeout)); then
      say "the ring shows $up of $n nodes UN after $ring_timeout s: stopping the cluster"
      node 1 "$here/cassandra.sh" nodetool status >&2 || true
      cmd_down
      exit 1
    fi
    sleep 2
  done
  say "$n nodes UN in $((SECONDS - t0)) s; contact points: $(cmd_nodes)"
  echo "up_seconds=$((SECONDS - t0))" >> "$record"
}

cmd_down() {
  local i
  [[ -n $(recorded) ]] || { say "no cluster recorded in $record"; return 0; }
  # a cluster of an inventory's hosts: Ansible stops each node on its host, the record goes here
  if grep -q '^inventory=' "$record"; then
    python3 -m lab.cli.fleet cluster-down "record=$record" ||
      { say "not every node could be stopped; the record stays ($record): run cluster-down again"; return 1; }
    rm -f "$record"
    return 0
  fi
  # all at once: each waits for its own JVM to flush and exit (seconds each on a loaded host)
  local pids=() p failed=0
  for i in $(recorded); do node "$i" "$here/cassandra.sh" down & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  ((failed == 0)) || { say "a node could not be stopped: the record stays ($record)"; return 1; }
  rm -f "$record"
}

cmd_status() {
  local i rc=0
  [[ -f $record ]] || { echo "no cluster (no $record)"; return 3; }
  grep -v '^#' "$record"
  grep -q '^inventory=' "$record" && { echo "(nodes on other hosts: see above; cluster-down stops them)"; return 0; }
  for i in $(recorded); do
    printf 'node %s: ' "$i"
    node "$i" "$here/cassandra.sh" status || rc=1
  done
  return $rc
}

cmd_nodes() {
  [[ -f $record ]] || { say "no cluster recorded in $record ('cluster-up' first)"; return 1; }
  sed -n 's/^node=[0-9]* .*cql=\([^ ]*\) .*/\1/p' "$record" | paste -sd, -
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  nodes) cmd_nodes ;;
  *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
