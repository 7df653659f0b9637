#!/usr/bin/env bash
# The lab's Cassandra: one Apache Cassandra 5.0.9 node, run from the jars of Maven Central. By default the
# single node on 127.0.0.1; cassandra/cluster.sh runs several through this same script (address, seeds, ports,
# work folder and NUMA node are its settings).
#
#   cassandra/cassandra.sh up | down | status | wipe | lock | jars | nodetool ARGS…
#
#   up        fetch the jars if needed, verify each against jars.lock, generate the config in the work folder,
#             start the node and wait until it answers CQL (on failure: the log's tail, exit 1)
#   down      stop the node by its PID (SIGTERM, then SIGKILL after CASSANDRA_STOP_TIMEOUT seconds)
#   status    running or not, PID, ports, whether CQL answers (exit 0 only when it does)
#   wipe      delete the node's data (only when stopped)
#   lock      resolve the jar set with Maven and rewrite jars.lock (sha256 + Maven coordinates per jar)
#   jars      fetch and verify the jars only (what `up` does first)
#   nodetool  run Cassandra's nodetool (from cassandra-all) against the node's JMX port
#
# Settings (environment): CASSANDRA_WORK (work folder, default .work/cassandra), CASSANDRA_HEAP (1G),
# CASSANDRA_PORT (CQL, 9042), CASSANDRA_STORAGE_PORT (7000), CASSANDRA_JMX_PORT (7199), CASSANDRA_CPUS
# (taskset CPU list to pin the server to; default unpinned), CASSANDRA_NUMA_NODE (numactl --cpunodebind and
# --membind to this node instead), CASSANDRA_ADDRESS (listen and CQL address, 127.0.0.1), CASSANDRA_SEEDS
# (ADDR:STORAGE_PORT,…; default this node), CASSANDRA_AUTO_BOOTSTRAP (true; false for a node of a new, empty
# cluster), CASSANDRA_LIB (a ready jar folder, e.g. the Nix store path: not fetched, still verified),
# CASSANDRA_UP_TIMEOUT (120 s), JAVA (java 17; default $JAVA_HOME/bin/java or java).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
work=${CASSANDRA_WORK:-$root/.work/cassandra}
heap=${CASSANDRA_HEAP:-1G}
port=${CASSANDRA_PORT:-9042}
storage_port=${CASSANDRA_STORAGE_PORT:-7000}
jmx_port=${CASSANDRA_JMX_PORT:-7199}
address=${CASSANDRA_ADDRESS:-127.0.0.1}
seeds=${CASSANDRA_SEEDS:-$address:$storage_port}
auto_bootstrap=${CASSANDRA_AUTO_BOOTSTRAP:-true}
numa_node=${CASSANDRA_NUMA_NODE:-}
up_timeout=${CASSANDRA_UP_TIMEOUT:-120}
stop_timeout=${CASSANDRA_STOP_TIMEOUT:-30}
lockfile=$here/jars.lock
pidfile=$work/cassandra.pid
logdir=$work/logs
if [[ -n ${JAVA:-} ]]; then java=$JAVA
elif [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then java=$JAVA_HOME/bin/java
else java=java; fi

say() { printf 'cassandra: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# These settings go into cassandra.yaml and numactl's argv (from an inventory, too): only the characters
# an address, a port list or a number needs, so that no value can add YAML or options of its own.
check_settings() {
  local k v
  for k in port storage_port jmx_port; do
    v=${!k}
    [[ $v =~ ^[1-9][0-9]{0,4}$ ]] && ((v <= 65535)) || { say "$k=$v: a port from 1 to 65535"; exit 2; }
  done
  [[ $heap =~ ^[1-9][0-9]{0,5}[MG]$ ]] || { say "CASSANDRA_HEAP=$heap: a size such as 512M or 4G"; exit 2; }
  [[ $address =~ ^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$ ]] || { say "CASSANDRA_ADDRESS=$address: an IPv4 address or host name"; exit 2; }
  local seeds_re='^[A-Za-z0-9.-]+:[0-9]{1,5}(,[A-Za-z0-9.-]+:[0-9]{1,5}){0,31}$'
  [[ $seeds =~ $seeds_re ]] ||
    { say "CASSANDRA_SEEDS=$seeds: ADDRESS:PORT[,ADDRESS:PORT…]"; exit 2; }
  [[ $auto_bootstrap == true || $auto_bootstrap == false ]] ||
    { say "CASSANDRA_AUTO_BOOTSTRAP=$auto_bootstrap: true or false"; exit 2; }
  [[ -z $numa_node || $numa_node =~ ^[0-9]{1,4}$ ]] || { say "CASSANDRA_NUMA_NODE=$numa_node: a node number"; exit 2; }
  [[ -z $numa_node || -z ${CASSANDRA_CPUS:-} ]] || { say "CASSANDRA_NUMA_NODE and CASSANDRA_CPUS: give one"; exit 2; }
}

pid_alive() {
  local pid
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# Sends a CQL OPTIONS frame (protocol v4) and expects a SUPPORTED reply: the node really speaks CQL,
# which an open port alone does not prove.
cql_answers() {
  local reply
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf "\x04\x00\x00\x00\x05\x00\x00\x00\x00" >&3
    head -c 5 <&3 | od -An -tx1' _ "$address" "$port" 2>/dev/null) || return 1
  # byte 0 = 0x84 (response, v4), byte 4 = opcode 0x06 (SUPPORTED)
  [[ $(echo "$reply" | awk '{print $1, $5}') == "84 06" ]]
}

lib_dir() { echo "${CASSANDRA_LIB:-$work/lib}"; }

# Checks every jar in the folder against jars.lock, and that the folder holds exactly the locked set.
# Returns 1 with a message (does not exit: `up` uses it as a test before fetching).
verify_jars() {
  local lib=$1 sum coords file n=0
  [[ -s $lockfile ]] || { say "no $lockfile: run 'cassandra/cassandra.sh lock' first"; return 1; }
  [[ -d $lib ]] || { say "no jar folder $lib"; return 1; }
  while read -r sum coords file; do
    [[ -z $sum || $sum == \#* ]] && continue
    n=$((n + 1))
    [[ -f $lib/$file ]] || { say "missing jar $file ($coords) in $lib"; return 1; }
    [[ $(sha256sum "$lib/$file" | cut -d' ' -f1) == "$sum" ]] ||
      { say "sha256 mismatch for $lib/$file ($coords): not the locked jar"; return 1; }
  done < "$lockfile"
  local present
  present=$(find "$lib" -maxdepth 1 -name '*.jar' | wc -l)
  [[ $present -eq $n ]] ||
    { say "$lib holds $present jars but jars.lock lists $n (stale folder? delete it and retry)"; return 1; }
}

fetch_jars() {
  local lib
  lib=$(lib_dir)
  if [[ -z ${CASSANDRA_LIB:-} ]] && ! verify_jars "$lib" 2>/dev/null; then
    command -v mvn > /dev/null || die "mvn not found (needed once to fetch the jars from Maven Central)"
    say "fetching the jar set with Maven into $lib"
    rm -rf "$lib"
    mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$lib" >&2 || die "mvn could not fetch the jars"
  fi
  verify_jars "$lib" || exit 1
}

cmd_lock() {
  command -v mvn > /dev/null || die "mvn not found"
  local tmp list
  tmp=$(mktemp -d)
  list=$tmp/deps.txt
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >&2
  mvn -q -B -f "$here/pom.xml" dependency:list -DincludeScope=runtime -DoutputFile="$list" >&2
  {
    echo "# Cassandra's runtime jar set, from cassandra/pom.xml via 'cassandra/cassandra.sh lock'. Do not edit."
    echo "# sha256  group:artifact:version[:classifier]  file (Maven Central layout; cassandra/jars.nix reads this)"
    # Lines look like: group:artifact:jar[:classifier]:version:scope[ -- module …]
    sed -n 's/^ *\([^ ]*:[^ ]*\).*/\1/p' "$list" | grep ':jar:' | sort -u | while IFS=: read -r g a _ c v s; do
      if [[ -z $s ]]; then s=$v v=$c c=""; fi   # no classifier: the fields shift by one
      local file=$a-$v${c:+-$c}.jar
      [[ -f $tmp/lib/$file ]] || die "resolved $g:$a:$v${c:+:$c} but Maven did not copy $file"
      printf '%s %s %s\n' "$(sha256sum "$tmp/lib/$file" | cut -d' ' -f1)" "$g:$a:$v${c:+:$c}" "$file"
    done
  } > "$tmp/jars.lock"
  local n
  n=$(grep -vc '^#' "$tmp/jars.lock")
  [[ $n -eq $(find "$tmp/lib" -name '*.jar' | wc -l) ]] || die "lock lists $n jars but Maven copied a different number"
  mv "$tmp/jars.lock" "$lockfile"
  rm -rf "$tmp"
  say "wrote $lockfile ($n jars)"
}

# Java options: Cassandra's Java 17 list, heap, jamm agent, config and logging as file:// URLs.
jvm_args() {
  local lib=$1 line
  while IFS= read -r line; do
    [[ -z $line || $line == \#* ]] && continue
    printf '%s\n' "$line"
  done < "$here/jvm17.options"
  local jamm
  jamm=$(find "$lib" -maxdepth 1 -name 'jamm-*.jar' | head -n 1)
  [[ -n $jamm ]] || die "no jamm jar in $lib"
  printf '%s\n' "-Xms$heap" "-Xmx$heap" "-javaagent:$jamm" \
    "-Dcassandra.config=file://$work/conf/cassandra.yaml" \
    "-Dlogback.configurationFile=file://$work/conf/logback.xml" \
    "-Dcassandra.logdir=$logdir" "-Dcassandra.storagedir=$work" \
    "-Dcassandra.libjemalloc=-" "-Dcassandra.jmx.local.port=$jmx_port" \
    "-Dcassandra.skip_wait_for_gossip_to_settle=0" \
    "-XX:ErrorFile=$logdir/hs_err_%p.log" "-XX:HeapDumpPath=$work/heapdump"
}

classpath() {
  local lib=$1
  find "$lib" -maxdepth 1 -name '*.jar' | sort | paste -sd: -
}

cmd_up() {
  if pid_alive; then
    cql_answers && { say "already running (PID $(<"$pidfile")), CQL on $address:$port"; return 0; }
    die "a node is running (PID $(<"$pidfile")) but CQL does not answer on port $port; try 'down'"
  fi
  cql_answers && die "something else already answers CQL on $address:$port (not ours: no PID in $pidfile)"
  "$java" -version 2>&1 | grep -q 'version "17' || say "warning: $java is not Java 17 (Cassandra 5.0 is run on 17 here)"
  fetch_jars
  local lib
  lib=$(lib_dir)
  mkdir -p "$work/conf" "$logdir" "$work/data" "$work/commitlog" "$work/saved_caches" "$work/hints" "$work/cdc_raw"
  sed -e "s|@DIR@|$work|g" -e "s|@PORT@|$port|g" -e "s|@STORAGE_PORT@|$storage_port|g" \
    -e "s|@ADDRESS@|$address|g" -e "s|@SEEDS@|$seeds|g" -e "s|@AUTO_BOOTSTRAP@|$auto_bootstrap|g" \
    "$here/cassandra.yaml.in" > "$work/conf/cassandra.yaml"
  cp "$here/logback.xml" "$work/conf/logback.xml"
  local args=()
  mapfile -t args < <(jvm_args "$lib")
  local pin=()
  [[ -n ${CASSANDRA_CPUS:-} ]] && pin=(taskset -c "$CASSANDRA_CPUS")
  # Bound to one node, CPUs and memory (Cassandra's own scripts interleave memory over all nodes).
  [[ -n $numa_node ]] && pin=(numactl "--cpunodebind=$numa_node" "--membind=$numa_node")
  say "starting Cassandra (heap $heap, CQL $address:$port${CASSANDRA_CPUS:+, CPUs $CASSANDRA_CPUS}${numa_node:+, NUMA node $numa_node}), logs in $logdir"
  : > "$logdir/stdout.log"
  # setsid: the node must not die with the shell (or the test) that started it; `down` stops it.
  setsid "${pin[@]}" "$java" "${args[@]}" -cp "$(classpath "$lib")" \
    org.apache.cassandra.service.CassandraDaemon >> "$logdir/stdout.log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  local t0=$SECONDS
  while ! cql_answers; do
    if ! pid_alive; then
      say "Cassandra exited during start-up; last lines of its logs:"
      tail -n 30 "$logdir/stdout.log" >&2 || true
      tail -n 30 "$logdir/system.log" >&2 2>/dev/null || true
      rm -f "$pidfile"
      exit 1
    fi
    if ((SECONDS - t0 > up_timeout)); then
      say "no CQL answer after $up_timeout s; last lines of system.log:"
      tail -n 30 "$logdir/system.log" >&2 || true
      cmd_down || true
      exit 1
    fi
    sleep 0.5
  done
  say "up in $((SECONDS - t0)) s (PID $(<"$pidfile"))"
}

cmd_down() {
  if ! pid_alive; then
    rm -f "$pidfile"
    say "not running"
    return 0
  fi
  local pid
  pid=$(<"$pidfile")
  kill -TERM "$pid"
  local t0=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - t0 > stop_timeout)); then
      say "still running after $stop_timeout s: SIGKILL (the commit log is replayed at the next start)"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$pidfile"
  say "stopped (PID $pid) in $((SECONDS - t0)) s"
}

cmd_status() {
  if pid_alive; then
    local state="CQL not answering"
    cql_answers && state="CQL answers on $address:$port"
    echo "running: PID $(<"$pidfile"), $state, work folder $work"
    cql_answers
  else
    echo "stopped (work folder $work)"
    return 3
  fi
}

cmd_nodetool() {
  local lib
  lib=$(lib_dir)
  verify_jars "$lib" || exit 1
  local opts=()
  mapfile -t opts < <(grep -E '^--add-(exports|opens)|^-Djdk' "$here/jvm17.options")
  "$java" "${opts[@]}" -Xmx256m -cp "$(classpath "$lib")" org.apache.cassandra.tools.NodeTool \
    -h 127.0.0.1 -p "$jmx_port" "$@"
}

check_settings
case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  wipe)
    pid_alive && die "running: stop it first ('down')"
    rm -rf "$work/data" "$work/commitlog" "$work/saved_caches" "$work/hints" "$work/cdc_raw"
    say "data deleted" ;;
  lock) cmd_lock ;;
  jars) fetch_jars; say "$(lib_dir): every jar matches jars.lock" ;;
  nodetool) shift; cmd_nodetool "$@" ;;
  *) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
