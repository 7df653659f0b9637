#!/usr/bin/env bash
# Sanitizer runs: the ASan+UBSan and TSan builds of the server, in every lock mode, under a
# concurrent mixed load (get/set/delete/incr) with a small -m so that eviction runs all along.
# Passes when the load generator saw no wrong reply and the sanitizer printed nothing.
#   tests/stress.sh BUILD_DIR [SECONDS]      (STRESS_MODES="sharded ..." narrows the lock modes;
#   MODE+io_uring runs that mode on the io_uring backend)
set -euo pipefail
build=$1 secs=${2:-3}
tmp=$(mktemp -d)
spid=""
cleanup() { if [[ -n $spid ]]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi; rm -rf "$tmp"; }
trap cleanup EXIT

stat_of() {  # port name
  local tag name value
  exec 3<> "/dev/tcp/127.0.0.1/$1"
  printf 'stats\r\n' >&3
  while IFS=$' \r' read -r -t 5 tag name value; do
    [[ $tag == END ]] && break
    [[ $name == "$2" ]] && echo "$value"
  done <&3
  exec 3>&-
}

fails=0
for san in asan tsan; do
  for mode in ${STRESS_MODES:-global striped rwlock optimistic sharded global+io_uring optimistic+io_uring sharded+io_uring}; do
    lock=${mode%%+*} io=(); [[ $mode == *+* ]] && io=(--io-backend "${mode#*+}")
    rm -f "$tmp/port"
    # TSan wants a low-entropy address space on recent kernels: setarch -R where available
    run=(); [[ $san == tsan ]] && command -v setarch > /dev/null && run=(setarch "$(uname -m)" -R)
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 TSAN_OPTIONS=halt_on_error=0 \
      "${run[@]}" "$build/cache-server-$san" -t 4 -m 2 -p 0 --port-file "$tmp/port" --lock-mode "$lock" "${io[@]}" \
      2> "$tmp/server.log" &
    spid=$!
    for _ in $(seq 200); do [[ -s $tmp/port ]] && break; sleep 0.05; done
    port=$(cat "$tmp/port" 2>/dev/null || echo 0)
    out=$("$build/loadgen" -p "$port" -t 2 -c 4 -k 20000 -V 200 --mix 600,250,75,75 -d "$secs" -w 0.5 \
          2> "$tmp/loadgen.log") || true
    errors=$(awk -F, '$1 == "errors" { print $2 }' <<< "$out")
    ops=$(awk -F, '$1 == "ops" { print $2 }' <<< "$out")
    evictions=$(stat_of "$port" evictions || echo "?")
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    spid=""
    if [[ $errors == 0 && ${ops:-0} != 0 && $evictions != 0 && $evictions != "?" ]] &&
       ! grep -qE 'Sanitizer|runtime error' "$tmp/server.log"; then
      echo "ok - stress $san $mode: $ops ops, 0 errors, $evictions evictions, no sanitizer report"
    else
      fails=$((fails + 1))
      echo "FAIL - stress $san $mode: ops=${ops:-none} errors=${errors:-none} evictions=$evictions"
      head -n 40 "$tmp/server.log" "$tmp/loadgen.log" | sed 's/^/    /'
    fi
  done
done
exit $((fails > 0))
