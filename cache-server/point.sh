#!/usr/bin/env bash
# One measured point of the cache experiment (the sweep's per-point driver): start a server (ours in a lock mode, or real
# memcached) pinned to the placement's CPUs, drive it with loadgen from the other CPUs, print
# tidy CSV (metric,value,unit) on stdout. With --perf=1, `perf record -g` covers the server
# during the measured window only. The server is always stopped (trap).
#
#   cache-server/point.sh --variant=global|striped|rwlock|optimistic|sharded|memcached --threads=N \
#       --cpus=LIST --other-cpus=LIST --pinned=0|1 --perf=0|1 --raw=DIR [--driver=loadgen|mcperf]
#       [--clients=DEST[,DEST…]] [knobs]
#   knobs: --duration=S --warmup=S --conns=N (per client thread) --client-threads=N
#          --pipeline=N (loadgen: requests outstanding per connection, default 1)
#          --keys=N --value-size=B --get-ratio=F --memory=MB; with mcperf: --requests=N (GETs in all)
#          --io-backend=epoll|io_uring (our server's event backend; memcached has only its own)
#
# --driver=mcperf is the cross-check with twemperf (on PATH in the Nix shell): one single-threaded
# mcperf process with as many connections as loadgen would open, closed loop; a `set` pass stores
# the keys (its warm-up), then a `get` pass of --requests GETs is the measured window. mcperf counts
# requests, not seconds, so --duration does not apply to it.
# --clients (the spec key `clients`, $LAB_CLIENTS) puts the load generators on other hosts: the server
# listens on this host's address toward them and scripts/lab/cli/loadclients.py runs loadgen on each over ssh;
# their rows (and each one's own, labelled client.<host>.<metric>, guard readings included) are the
# point's, and the network path goes to raw/network.txt and env/network.txt. Without it, as before.
# Every option defaults to the sweep engine's LAB_* variable of the same meaning.
# Exit: 0 a measured point; 1 a failed point (the server did not start, or the load generator
# reported a failed run: dead connections, errors or timeouts, an incomplete load phase); 2 bad
# arguments (ours, or ones loadgen refused).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# the lab's Python package (scripts/lab/), for the programs run below as python3 -m lab.cli.X
export PYTHONPATH="$here/../scripts${PYTHONPATH:+:$PYTHONPATH}"
build=${CACHE_BUILD:-$here/build}

variant=${LAB_VARIANT:-striped} threads=${LAB_THREADS:-1} cpus=${LAB_CPUS:-}
other=${LAB_OTHER_CPUS:-} pinned=${LAB_PINNED:-1} perf=${LAB_PERF:-0} raw=${LAB_RAW:-}
duration=5 warmup=1 conns=4 pipeline=1 client_threads="" keys=10000 vsize=100 get_ratio=1 memory=64
driver=loadgen requests=200000 clients=${LAB_CLIENTS:-} io_backend=epoll

die() { echo "point.sh: $*" >&2; exit 2; }
fail() { echo "point.sh: $*" >&2; exit 1; }
note() { echo "point.sh: $*" >&2; }

for arg in "$@"; do
  case $arg in
    --variant=*) variant=${arg#*=} ;;
    --threads=*) threads=${arg#*=} ;;
    --cpus=*) cpus=${arg#*=} ;;
    --other-cpus=*) other=${arg#*=} ;;
    --pinned=*) pinned=${arg#*=} ;;
    --perf=*) perf=${arg#*=} ;;
    --raw=*) raw=${arg#*=} ;;
    --duration=*) duration=${arg#*=} ;;
    --warmup=*) warmup=${arg#*=} ;;
    --conns=*) conns=${arg#*=} ;;
    --pipeline=*) pipeline=${arg#*=} ;;
    --client-threads=*) client_threads=${arg#*=} ;;
    --keys=*) keys=${arg#*=} ;;
    --value-size=*) vsize=${arg#*=} ;;
    --get-ratio=*) get_ratio=${arg#*=} ;;
    --memory=*) memory=${arg#*=} ;;
    --driver=*) driver=${arg#*=} ;;
    --requests=*) requests=${arg#*=} ;;
    --clients=*) clients=${arg#*=} ;;
    --io-backend=*) io_backend=${arg#*=} ;;
    *) die "unknown argument '$arg'" ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive number, not '$threads'"
[[ $pinned == 0 || $pinned == 1 ]] || die "--pinned must be 0 or 1"
[[ $perf == 0 || $perf == 1 ]] || die "--perf must be 0 or 1"
[[ $pinned == 0 || -n $cpus ]] || die "--cpus is required when pinned"
[[ $requests =~ ^[1-9][0-9]*$ ]] || die "--requests must be a positive number, not '$requests'"
[[ $pipeline =~ ^[1-9][0-9]{0,4}$ ]] && ((pipeline <= 65536)) || die "--pipeline must be a whole number from 1 to 65536 (loadgen's bound), not '$pipeline'"
[[ $pipeline == 1 || $driver == loadgen ]] || die "--pipeline is loadgen's; mcperf keeps one request outstanding per connection"
case $driver in
  loadgen) [[ -x $build/loadgen ]] || die "$build/loadgen missing: run 'just build-cache'" ;;
  mcperf) command -v mcperf > /dev/null || die "mcperf is not on PATH (the Nix shell has it: nix develop)" ;;
  *) die "unknown driver '$driver' (loadgen or mcperf)" ;;
esac
[[ $io_backend == epoll || $io_backend == io_uring ]] || die "--io-backend must be epoll or io_uring, not '$io_backend'"
[[ $io_backend == epoll || $variant != memcached ]] || die "--io-backend=$io_backend is our server's; memcached has its own"
[[ -z $clients || $driver == loadgen ]] || die "--clients runs loadgen on the client hosts; --driver=$driver runs here only"

tmp=$(mktemp -d)
raw=${raw:-$tmp/raw}
mkdir -p "$raw"
spid="" ppid_perf=""
cleanup() {
  if [[ -n $ppid_perf ]]; then kill -INT "$ppid_perf" 2>/dev/null || true; wait "$ppid_perf" 2>/dev/null || true; fi
  if [[ -n $spid ]]; then
    kill "$spid" 2>/dev/null || true
    # memcached takes about a second to honour SIGTERM; nothing of it needs to survive
    for _ in 1 2 3 4 5 6; do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The address the server listens on: loopback, or this host's address toward the client hosts
addr=127.0.0.1
if [[ -n $clients ]]; then
  addr=$(python3 -m lab.cli.loadclients address --clients="$clients") || exit
fi

free_port() {
  python3 -c 'import socket, sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$addr"
}

# Placement: the server on {cpus}; the load generator on {other_cpus}, or on the same CPUs when
# the host has none left (said on stderr and in the cpus_shared row).
pin=() client_cpus="" shared=1
if [[ $pinned == 1 ]]; then
  pin=(taskset -c "$cpus")
  if [[ -n $clients ]]; then
    :    # no CPU of this host is the load generators': they run on the client hosts
  elif [[ -n $other ]]; then
    client_cpus=$other shared=0
  else
    client_cpus=$cpus
    note "no CPU left for the load generator: it shares CPUs $cpus with the server"
  fi
fi
[[ -z $clients ]] || shared=0
if [[ -z $client_threads ]]; then
  n=$(taskset -c "${client_cpus:-0-$(($(nproc --all) - 1))}" nproc 2>/dev/null || nproc)
  client_threads=$(( n > 4 ? 4 : n ))
fi

port="" mode=""
case $variant in
  memcached)
    command -v memcached > /dev/null || die "memcached is not installed"
    user=(); [[ $(id -u) == 0 ]] && user=(-u root)   # memcached refuses to run as root otherwise
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      port=$(free_port)
      "${pin[@]}" memcached "${user[@]}" -t "$threads" -p "$port" -l "$addr" -U 0 -m "$memory" -c 4096 &
      spid=$!
      sleep 0.2
      kill -0 "$spid" 2> /dev/null && break
      wait "$spid" || true
      spid=""
    done
    [[ -n $spid ]] || fail "memcached did not start"
    ;;
  global|striped|rwlock|optimistic|sharded)
    mode=$variant
    [[ -x $build/cache-server ]] || die "$build/cache-server missing: run 'just build-cache'"
    # the default backend is not named, so that an older build (CACHE_BUILD) still runs
    io=(); [[ $io_backend == epoll ]] || io=(--io-backend "$io_backend")
    "${pin[@]}" "$build/cache-server" -t "$threads" -l "$addr" -p 0 --port-file "$tmp/port" -m "$memory" \
      -c 4096 --lock-mode "$mode" "${io[@]}" &
    spid=$!
    for _ in $(seq 100); do [[ -s $tmp/port ]] && break; sleep 0.05; done
    [[ -s $tmp/port ]] || fail "cache-server did not start"
    port=$(< "$tmp/port")
    ;;
  *) die "unknown variant '$variant' (global, striped, rwlock, optimistic, sharded, memcached)" ;;
esac
note "variant=$variant io_backend=$io_backend driver=$driver threads=$threads server cpus=${cpus:-any} client cpus=${client_cpus:-any} x$client_threads port=$port${clients:+ clients=$clients address=$addr}"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# nanoseconds the process's threads spent runnable but waiting for a CPU (schedstat run_delay, summed
# over threads; 0 where the kernel keeps no schedstat): a server starved by other load waits here,
# one that sleeps on its own does not, which tells the two apart when GET/s collapses
run_delay() {
  local sum=0 f d
  for f in /proc/"$1"/task/*/schedstat; do
    read -r _ d _ 2> /dev/null < "$f" && sum=$((sum + d))
  done
  echo "$sum"
}

if [[ $driver == mcperf ]]; then
  nconns=$((client_threads * conns))
  mc=(mcperf --server=127.0.0.1 --port="$port" --num-conns="$nconns" --conn-rate=1000000
      --num-calls=$(((requests + nconns - 1) / nconns)) --call-rate=0 --sizes="d$vsize" --prefix=lab:
      --timeout=5 --linger=0)
  cpin=(); [[ -n $client_cpus ]] && cpin=(taskset -c "$client_cpus")
  # the get pass asks for the same key ids as the set pass before it: every GET should hit
  { "${cpin[@]}" "${mc[@]}" --method=set > "$raw/mcperf-set.txt" 2>&1 \
      && touch "$tmp/measuring" \
      && "${cpin[@]}" "${mc[@]}" --method=get > "$raw/mcperf-get.txt" 2>&1 \
      && python3 "$here/mcperf_csv.py" --method get < "$raw/mcperf-get.txt"; } > "$tmp/loadgen.csv" &
elif [[ -n $clients ]]; then
  # loadgen's own arguments, the same on every client; the client's CPUs are its own
  lg=(python3 -m lab.cli.loadclients run --clients="$clients" --server="$addr" --port="$port"
      --measure-file="$tmp/measuring" --raw="$raw" --timeout="$(awk -v d="$duration" -v w="$warmup" 'BEGIN { print d + w + 120 }')"
      -- -t "$client_threads" -c "$conns" -P "$pipeline" -d "$duration" -w "$warmup" -k "$keys" -V "$vsize" -g "$get_ratio")
  "${lg[@]}" > "$tmp/loadgen.csv" &
else
  lg=("$build/loadgen" -p "$port" -t "$client_threads" -c "$conns" -P "$pipeline" -d "$duration" -w "$warmup"
      -k "$keys" -V "$vsize" -g "$get_ratio" --measure-file "$tmp/measuring" --raw "$raw")
  [[ -n $client_cpus ]] && lg+=(--cpus "$client_cpus")
  "${lg[@]}" > "$tmp/loadgen.csv" &
fi
lpid=$!

# the measured window starts when loadgen creates the file (after loading and warm-up); loadgen
# bounds its load phase (--load-timeout) and fails when it does not finish, so wait as long as it
# runs: a point never measures a window that did not start
while [[ ! -e $tmp/measuring ]] && kill -0 "$lpid" 2> /dev/null; do
  sleep 0.05
done
t0=$(cpu_ticks "$spid") s0=$(date +%s.%N) q0=$(run_delay "$spid")
if [[ $mode != "" ]]; then
  exec 3<> "/dev/tcp/$addr/$port" && printf 'stats reset\r\n' >&3 && read -r -t 2 _ <&3 || true
  exec 3>&- || true
fi
# loadgen's window is --duration; mcperf's is a count of requests, so its profile lasts as long as it
window=(sleep "$duration") && [[ $driver == mcperf ]] && window=(tail --pid="$lpid" -f /dev/null)
if [[ $perf == 1 && -e $tmp/measuring ]]; then
  perf record -q -g -e "${LAB_PERF_EVENT:-cpu-clock}" -p "$spid" -o "$raw/perf.data" -- "${window[@]}" \
    2> "$raw/perf-record.log" &
  ppid_perf=$!
fi
rc=0
wait "$lpid" || rc=$?
t1=$(cpu_ticks "$spid") s1=$(date +%s.%N) q1=$(run_delay "$spid")
if [[ -n $ppid_perf ]]; then wait "$ppid_perf" || note "perf record failed (see $raw/perf-record.log)"; ppid_perf=""; fi
# loadgen exits 2 on arguments it refuses (ours to fix), 1 on a failed run (a failed point)
[[ $rc == 2 && $driver == loadgen ]] && die "loadgen refused its arguments (exit 2)"
[[ $rc == 0 ]] || fail "$driver failed (exit $rc): not a measured point"

cat "$tmp/loadgen.csv"
hz=$(getconf CLK_TCK)
# the server's CPU per request: comparable across hosts and variants even when other work steals CPU
awk -F, -v a="$t0" -v b="$t1" -v s="$s0" -v e="$s1" -v hz="$hz" -v q0="$q0" -v q1="$q1" '
  $1 == "ops_per_s" { ops = $2 }
  END { share = (b - a) / hz / (e - s); printf "server_cpu_share,%.2f,%%\n", 100 * share
        printf "server_cpu_wait_pct,%.2f,%%\n", 100 * (q1 - q0) / 1e9 / (e - s)
        if (ops > 0) printf "server_cpu_us_per_req,%.3f,us\n", share * 1e6 / ops }' "$tmp/loadgen.csv"
echo "cpus_shared,$shared,flag"
if [[ $mode != "" ]]; then
  # contention counters of our server over the measured window (stats were reset at its start)
  exec 3<> "/dev/tcp/$addr/$port"
  printf 'stats\r\n' >&3
  while IFS=$' \r' read -r -t 5 tag name value _; do
    [[ $tag == END ]] && break
    case $name in
      lock_acquires|lock_waits|lru_lock_waits|shard_rpc_calls) echo "$name,$value,count" ;;
      lock_wait_time|lru_lock_wait_time|shard_rpc_wait_time) echo "${name}_s,$value,s" ;;
    esac
  done <&3
  exec 3>&-
  # where its memory is, at the end of the window (`stats numa`: the pages of its recent items and of
  # a connection's buffers): a ran-on.csv row per node holding any, which the engine's guard checks
  # against the point's membind (docs/instruments.md); the server binds nothing itself (mem_want -1)
  ranon=$raw/ran-on.csv
  [[ -s $ranon ]] || echo "probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want" > "$ranon"
  exec 3<> "/dev/tcp/$addr/$port"
  printf 'stats numa\r\n' >&3
  while IFS=$' \r' read -r -t 5 tag name value _; do
    [[ $tag == END ]] && break
    if [[ $value =~ ^[0-9]+$ && $name =~ ^numa_(item|conn)_pages_node([0-9]+)$ ]]; then
      echo "cache-server,$variant ${BASH_REMATCH[1]}s,\"${cpus:-any}\",-1,-1,-1,-1,${BASH_REMATCH[2]},-1" >> "$ranon"
    fi
  done <&3
  exec 3>&-
fi
