#!/usr/bin/env bash
# The probes' test suite: strict builds with gcc and clang, ASan+UBSan and TSan builds, unit tests,
# input validation, and the probes on this host. Ends with "probes: N passed, M failed".
# No timed thresholds: only directions measured in the same run, with the ratio printed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here" || exit 1
root=$(cd .. && pwd)
# the lab's Python package (scripts/lab/), for the programs run below as python3 -m lab.cli.X
export PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$1"; [[ -z ${2:-} ]] || sed 's/^/     /' "$2" | tail -n 15; }
# check NAME CMD…: passes when CMD exits 0; its output is shown on failure.
check() { local n=$1; shift; if "$@" > "$out/log" 2>&1; then ok "$n"; else bad "$n" "$out/log"; fi; }

asan="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
jobs=-j2
check "build gcc -Wall -Wextra -Werror" make -s $jobs BUILD=build/gcc CC=gcc all tests
if command -v clang > /dev/null; then
  check "build clang -Wall -Wextra -Werror" make -s $jobs BUILD=build/clang CC=clang all tests
  tsan_cc=clang
else
  printf 'skip build clang (not installed)\n'
  tsan_cc=gcc
fi
check "build ASan+UBSan" make -s $jobs BUILD=build/asan CC=gcc CFLAGS="-O1 -g" SAN="$asan" all tests
check "build TSan ($tsan_cc)" make -s $jobs BUILD=build/tsan CC=$tsan_cc CFLAGS="-O1 -g" SAN="-fsanitize=thread" all tests
b=build/gcc

check "stats: percentiles" $b/test_stats
check "stats: percentiles (ASan+UBSan)" build/asan/test_stats
check "corun: share of a run threads ran together, on hand-made timelines" $b/test_corun
check "corun: under ASan+UBSan" build/asan/test_corun
check "chase: one random cycle through every line" $b/test_chase
check "chase: under ASan+UBSan" build/asan/test_chase
# Message counts are bounded for a busy host: a stage whose CPU a busy process shares gets one turn per
# scheduler slice (ring.h's backoff yields, and the slice goes to the other process), so a chain moves
# only a ring's capacity (2 to 64 slots) per ~2 ms. Under a busy loop on one of two CPUs (2026-11-26)
# 1M messages took 8 minutes, 100k 28-39 s; a ring that small still wraps around thousands of times.
check "ring: 100k messages once, in order" $b/test_ring 100000
check "ring: under ASan+UBSan" build/asan/test_ring 50000
check "ring: under TSan, 50k messages per chain" build/tsan/test_ring 50000
check "channel 3-stage pipeline under TSan" build/tsan/channel --stages 3 --messages 50000
check "c2c under ASan+UBSan" build/asan/c2c --mode cas,rw --cpus 0,1 --extra-pairs 1:0 --min-samples 10 --max-samples 40 --preheat-ms 10
check "counters under ASan+UBSan" build/asan/counters --ops 100000
check "channel under ASan+UBSan" build/asan/channel --messages 100000
check "mem under ASan+UBSan" build/asan/mem --size-mib 64 --seconds 0.02
check "mem under TSan ($tsan_cc)" build/tsan/mem --size-mib 16 --seconds 0.01
check "capacity under ASan+UBSan" build/asan/capacity --core-steps 100000 --loads 1000
check "capacity --watch under ASan+UBSan" build/asan/capacity --core-steps 100000 --loads 1000 --watch $$
check "capacity under TSan ($tsan_cc)" build/tsan/capacity --core-steps 100000 --loads 1000 --bytes 1048576
# --serve: two probes in one process (the buffers and the watched threads' files kept between).
serve2() { printf 'probe\nprobe\n' | "$@" > "$out/serve.csv" && [[ $(grep -c '^cpu,' "$out/serve.csv") == 2 ]]; }
check "capacity --serve --watch under ASan+UBSan" serve2 build/asan/capacity --core-steps 100000 --loads 1000 --watch $$ --serve
check "capacity --serve under TSan ($tsan_cc)" serve2 build/tsan/capacity --core-steps 100000 --loads 1000 --bytes 1048576 --serve

# Bad input: exit code 2 and a message that says what is wrong.
rejects() {
  local name=$1 want=$2; shift 2
  "$@" > "$out/stdout" 2> "$out/stderr"
  local rc=$?
  if [[ $rc -eq 2 ]] && grep -qe "$want" "$out/stderr"; then ok "rejects $name"
  else echo "exit $rc" >> "$out/stderr"; bad "rejects $name (want exit 2 and '$want')" "$out/stderr"; fi
}
offline=$(( $(getconf _NPROCESSORS_CONF) + 7 ))
for p in c2c counters channel capacity; do
  check "$p --help" $b/$p --help
  rejects "$p: CPU $offline not online" "CPU $offline is not online" $b/$p --cpus 0,$offline
  rejects "$p: cpu list 0-" "cannot parse" $b/$p --cpus 0-
  rejects "$p: unknown flag" "unknown option" $b/$p --frobnicate
done
check "mem --help" $b/mem --help
rejects "mem: unknown flag" "unknown option" $b/mem --frobnicate
rejects "mem: --size-mib 0" "--size-mib: 0 is out of range" $b/mem --size-mib 0
rejects "mem: --size-mib 65537" "--size-mib: 65537 is out of range" $b/mem --size-mib 65537
rejects "mem: --seconds 0" "--seconds: 0 is out of range" $b/mem --seconds 0
rejects "mem: --seconds 61" "--seconds: 61 is out of range" $b/mem --seconds 61
rejects "mem: --cpu-nodes 1023" "--cpu-nodes: NUMA node 1023 does not exist" $b/mem --cpu-nodes 1023
rejects "mem: --mem-nodes 0-" "--mem-nodes: cannot parse" $b/mem --mem-nodes 0-
rejects "mem: an operand" "unexpected argument" $b/mem 0
# More than half of node 0's free memory is refused before anything is allocated.
free_kb=$(awk '/MemFree/ { print $4 }' /sys/devices/system/node/node0/meminfo 2> /dev/null)
if [[ -n $free_kb ]] && (( free_kb / 2048 + 64 <= 65536 )); then
  rejects "mem: --size-mib over half the node's free memory" "more than half of node 0's free memory" \
    $b/mem --mem-nodes 0 --size-mib $(( free_kb / 2048 + 64 ))
else printf 'skip mem --size-mib over half the free memory (node 0 has more than 128 GiB free, or no meminfo)\n'; fi
rejects "c2c: --round-trips 0" "out of range" $b/c2c --round-trips 0
rejects "c2c: --max-samples 0" "out of range" $b/c2c --max-samples 0
rejects "c2c: --budget 0" "out of range" $b/c2c --budget 0
rejects "c2c: pair list 0-1" "cannot parse" $b/c2c --pairs 0-1
rejects "c2c: pair list 0:0" "cannot parse" $b/c2c --pairs 0:0
rejects "c2c: pair list 0:1," "cannot parse" $b/c2c --pairs 0:1,
rejects "c2c: pair with offline CPU" "not online" $b/c2c --pairs 0:$offline
rejects "c2c: one CPU" "at least two" $b/c2c --cpus 0
rejects "c2c: --extra-pairs with --pairs" "goes with --cpus or --matrix" $b/c2c --pairs 0:1 --extra-pairs 1:0
rejects "c2c: --extra-pairs 0:x" "cannot parse" $b/c2c --cpus 0,1 --extra-pairs 0:x
rejects "c2c: mode" "--mode" $b/c2c --mode xchg
rejects "c2c: --home x" "want a, b, a NUMA node number or none" $b/c2c --cpus 0,1 --home x
rejects "c2c: --home a,a" "given twice" $b/c2c --cpus 0,1 --home a,a
rejects "c2c: --home on a node that does not exist" "NUMA node 1023 does not exist" $b/c2c --cpus 0,1 --home 1023
rejects "counters: --ops 0" "out of range" $b/counters --ops 0
rejects "counters: --threads 0" "out of range" $b/counters --threads 0
rejects "counters: variant" "unknown variant" $b/counters --variant shared
rejects "channel: --messages 0" "out of range" $b/channel --messages 0
rejects "channel: --capacity 3" "power of two" $b/channel --capacity 3
rejects "channel: --stages 1" "out of range" $b/channel --stages 1
rejects "capacity: --loads 0" "out of range" $b/capacity --loads 0
rejects "capacity: --bytes 64" "out of range" $b/capacity --bytes 64
rejects "capacity: an operand" "unexpected argument" $b/capacity 0
rejects "capacity: --watch 0" "out of range" $b/capacity --watch 0
rejects "capacity --serve: a line other than probe" "expected a line 'probe'" $b/capacity --serve --core-steps 1000 --cpus 0 <<< 'probe?'
# The capacity probe: one line per usable CPU, core and memory ns per step positive.
if $b/capacity > "$out/capacity.csv" 2> "$out/capacity.err" &&
   awk -F, -v n="$(nproc)" 'NR == 1 { if ($0 != "cpu,core_ns,memory_ns") exit 1; next }
       { rows++; if ($2 + 0 <= 0 || $3 + 0 <= 0) exit 1 } END { if (rows != n) exit 1 }' "$out/capacity.csv"; then
  ok "capacity: a line per CPU, positive ns per step"
else bad "capacity: a line per CPU" "$out/capacity.err"; fi
# --watch: a fourth column, each CPU's share of the probe's time the watched process (this shell) ran.
if $b/capacity --core-steps 100000 --loads 1000 --watch $$ > "$out/capacity-watch.csv" 2> "$out/capacity.err" &&
   awk -F, -v n="$(nproc)" 'NR == 1 { if ($0 != "cpu,core_ns,memory_ns,watched_share") exit 1; next }
       { rows++; if ($4 == "" || $4 + 0 < 0 || $4 + 0 > 1) exit 1 } END { if (rows != n) exit 1 }' "$out/capacity-watch.csv"; then
  ok "capacity --watch: a share 0-1 per CPU"
else bad "capacity --watch: a share per CPU" "$out/capacity.err"; fi

# On this host: a full c2c matrix, every off-diagonal cell positive and finite.
ncpu=$(nproc)
if $b/c2c --matrix --mode cas,rw --raw "$out" --preheat-ms 50 > "$out/c2c.csv" 2> "$out/c2c.err"; then
  ok "c2c --matrix runs"
  for m in cas rw; do
    if awk -F, -v n="$ncpu" '
        NR == 1 { if (NF != n + 1) exit 1; next }
        { rows++; if (NF != n + 1) exit 1
          for (j = 2; j <= NF; j++) {
            if (j - 1 == NR - 1) { if ($j != "") exit 1; continue }   # diagonal: empty
            if ($j !~ /^[0-9.]+$/ || $j + 0 <= 0) exit 1 } }
        END { if (rows != n) exit 1 }' "$out/c2c-matrix-$m.csv"; then
      ok "c2c $m: valid ${ncpu}x${ncpu} matrix, positive finite values"
    else bad "c2c $m: matrix" "$out/c2c-matrix-$m.csv"; fi
  done
  for m in cas rw; do
    printf '     c2c %s (0,1) one-way median: %s ns\n' "$m" \
      "$(awk -F, -v m="$m" '$1 == m && $2 == "\"0" && $4 == "one_way_ns" { print $5 }' "$out/c2c.csv")"
  done
else bad "c2c --matrix runs" "$out/c2c.err"; fi

# The line's home and where threads ran, as the probes report them from inside (ran-on.csv).
# node_of CPU: the kernel's NUMA node of a CPU (sysfs), the answer --home a|b must match.
node_of() { local d; for d in /sys/devices/system/cpu/cpu"$1"/node[0-9]*; do [[ -e $d ]] && { echo "${d##*node}"; return; }; done; echo -1; }
if [[ $ncpu -ge 2 ]] && mkdir -p "$out/home" && $b/c2c --cpus 0,1 --home a,b,none --raw "$out/home" \
    --min-samples 10 --max-samples 40 --preheat-ms 10 > "$out/home.csv" 2> "$out/home.err"; then
  homes=$(awk -F, '$4 == "home_node" { print $1 "=" $5 }' "$out/home.csv" | sort | paste -sd' ')
  want="cas home=a=$(node_of 0) cas home=b=$(node_of 1) cas home=none=$(node_of 0)"
  # home=none is first touch by the unpinned main thread: only its presence is checked.
  if [[ $(cut -d' ' -f1-4 <<< "$homes") == "$(cut -d' ' -f1-4 <<< "$want")" ]] && grep -q '^cas home=none,"0,1",one_way_ns,' "$out/home.csv"; then
    ok "c2c --home a,b,none: a row per home, home_node = the home CPU's node ($homes)"
  else bad "c2c --home: home_node rows '$homes', want '$want'" "$out/home.csv"; fi
  # (the quoted cpus field holds commas: it is blanked before splitting)
  if awk -F, 'NR > 1 { gsub(/"[^"]*"/, "-"); n++; if ($5 != $6 || $6 != $7) exit 1 } END { exit n != 6 }' "$out/home/ran-on.csv"; then
    ok "c2c: both threads of every pair ran on their CPUs (sched_getcpu, ran-on.csv)"
  else bad "c2c: ran-on.csv" "$out/home/ran-on.csv"; fi
else bad "c2c --home a,b,none runs" "$out/home.err"; fi
if [[ $ncpu -ge 2 ]] && mkdir -p "$out/ran" && LAB_RAW="$out/ran" $b/counters --cpus 1,0 --threads 2 --ops 10000 > /dev/null 2>&1 \
    && LAB_RAW="$out/ran" $b/channel --cpus 1,0 --stages 3 --messages 10000 > /dev/null 2>&1 \
    && LAB_RAW="$out/ran" $b/counters --pinned 0 --threads 2 --ops 10000 > /dev/null 2>&1; then
  # pinned threads: first and last CPU = the one they were given; unpinned: -1, any CPU.
  if awk -F, -v n0="$(node_of 0)" 'NR > 1 { gsub(/"[^"]*"/, "-"); n++; if ($5 >= 0 && ($6 != $5 || $7 != $5)) exit 1
        if ($5 < 0) u++; if (n0 >= 0 && $8 != n0) exit 1 }
      END { exit !(n == 5 * 2 + 2 * 3 + 5 * 2 && u == 10) }' "$out/ran/ran-on.csv"; then
    ok "counters, channel: every pinned thread ran on its CPU; memory on node $(node_of 0) (ran-on.csv)"
  else bad "counters, channel: ran-on.csv" "$out/ran/ran-on.csv"; fi
else bad "counters, channel with LAB_RAW run" "$out/ran/ran-on.csv"; fi

# mem on this host: a cell per (node with CPUs, node with memory), each with its memory on the node it
# names (move_pages, from inside), a chase over the whole buffer slower per load than the same chase
# in 16 KiB of it, bandwidths positive and finite. Directions within one run only, never host timings.
if mkdir -p "$out/mem" && $b/mem --seconds 0.05 --raw "$out/mem" > "$out/mem.csv" 2> "$out/mem.err"; then
  cells=$(( $(tr ',' '\n' < /sys/devices/system/node/has_cpu | grep -c .) * $(tr ',' '\n' < /sys/devices/system/node/has_memory | grep -c .) ))
  [[ -r /sys/devices/system/node/has_cpu ]] || cells=1
  # (the quoted cpus field holds commas: it is blanked before splitting)
  if awk -F, -v want="$cells" 'NR > 1 { gsub(/"[^"]*"/, "-"); v[$1 " " $4 " " $2] = $5; c[$1] = 1 }
      END { n = 0
        for (x in c) { n++; split(x, cm, /[^0-9]+/)   # cpuC-memM: cm[2] = C, cm[3] = M
          lat = v[x " latency_ns 1"]; l1 = v[x " latency_l1_ns 1"]; rd = v[x " read_gbps 1"]; rw = v[x " rw_gbps 1"]
          if (!(lat > l1 && l1 > 0 && rd > 0 && rw > 0 && rd < 1e6 && rw < 1e6)) exit 1
          if (v[x " mem_node 1"] != cm[3] || v[x " mem_on_node_pct 1"] != 100) exit 1
          if (!(x " huge_pct 1" in v)) exit 1 }
        if (n != want) exit 1 }' "$out/mem.csv"; then
    ok "mem: $cells cell(s), each on its memory node, chase over the buffer slower than in 16 KiB of it, bandwidth > 0 ($(awk -F, '$4 == "latency_ns" || $4 == "latency_l1_ns" { printf "%s %s ns; ", $4, $5 }' "$out/mem.csv"))"
  else bad "mem: cells" "$out/mem.csv"; fi
  if awk -F, -v want="$cells" 'NR > 1 { gsub(/"[^"]*"/, "-"); n++; if ($5 != $6 || $6 != $7 || $8 != $9 || $9 < 0) exit 1 }
      END { exit n != want }' "$out/mem/ran-on.csv"; then
    ok "mem: every cell measured from its CPU, its memory on the node it bound (ran-on.csv)"
  else bad "mem: ran-on.csv" "$out/mem/ran-on.csv"; fi
else bad "mem runs" "$out/mem.err"; fi

# --budget: 10 pairs with --fixed (2000 samples each, ~20 ms at 20 ns) and 0.05 s for all of them must
# stop sampling early, but never under --min-samples.
if $b/c2c --pairs 0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1 --fixed --budget 0.05 --min-samples 10 --preheat-ms 0 \
    > "$out/budget.csv" 2> "$out/budget.err"; then
  read -r lo hi n < <(awk -F, '$4 == "samples" { if (!n || $5 < lo) lo = $5; if ($5 > hi) hi = $5; n++ } END { print lo, hi, n }' "$out/budget.csv")
  if [[ $n == 10 && $lo -ge 10 && $hi -lt 2000 ]]; then ok "c2c --budget: sampling stopped early (samples $lo-$hi of 2000, never < 10)"
  else bad "c2c --budget: samples $lo-$hi over $n pairs (want 10 pairs, 10 <= samples < 2000)" "$out/budget.csv"; fi
else bad "c2c --budget runs" "$out/budget.err"; fi

# --extra-pairs: the matrix's pairs, then the extra ones (a one-PU-per-core matrix's SMT siblings), a
# row each; an empty list adds none.
if $b/c2c --cpus 0,1 --extra-pairs 1:0 --min-samples 10 --max-samples 20 --preheat-ms 0 > "$out/extra.csv" 2> "$out/extra.err" \
    && $b/c2c --cpus 0,1 --extra-pairs "" --min-samples 10 --max-samples 20 --preheat-ms 0 > "$out/noextra.csv" 2>> "$out/extra.err"; then
  pairs=$(awk -F, '$4 == "one_way_ns" { printf "%s%s,%s", sep, $2, $3; sep = " " }' "$out/extra.csv")
  none=$(awk -F, '$4 == "one_way_ns" { n++ } END { print n + 0 }' "$out/noextra.csv")
  if [[ $pairs == '"0,1" "1,0"' && $none == 1 ]]; then ok "c2c --extra-pairs: the matrix pair, then the extra one ($pairs); empty adds none"
  else bad "c2c --extra-pairs: pairs '$pairs', with an empty list $none (want \"0,1\" \"1,0\" and 1)" "$out/extra.csv"; fi
else bad "c2c --extra-pairs runs" "$out/extra.err"; fi

# corun_pct: two threads pinned to one CPU can never run together; the probe must say so (< 60%:
# each thread's CPU time covers about half the span), and a row must be there for every variant.
corun() { awk -F, -v v="$2" '$1 == v && $(NF - 2) == "corun_pct" { print $(NF - 1) }' "$1"; }
if $b/counters --cpus 0 --threads 2 --variant shared-atomic,padded --ops 3000000 > "$out/one.csv" 2> "$out/one.err" \
    && $b/channel --cpus 0 --messages 300000 > "$out/chone.csv" 2>> "$out/one.err"; then
  c1=$(corun "$out/one.csv" shared-atomic) c2=$(corun "$out/one.csv" padded) c3=$(corun "$out/chone.csv" padded)
  if [[ -n $c1 && -n $c2 && -n $c3 ]] && awk -v a="$c1" -v b="$c2" -v c="$c3" 'BEGIN { exit !(a < 60 && b < 60 && c < 60) }'; then
    ok "corun_pct: 2 threads on one CPU ran together < 60% (counters ${c1}%, ${c2}%; channel ${c3}%)"
  else bad "corun_pct on one CPU: counters '$c1' '$c2', channel '$c3' (want < 60)" "$out/one.csv"; fi
else bad "counters/channel on one CPU" "$out/one.err"; fi

# The contract with the sweep engine: the lab's own tidy checker accepts every probe's output.
$b/counters --ops 200000 > "$out/counters.csv" 2> /dev/null
$b/channel --messages 100000 --stages 3 > "$out/channel.csv" 2> /dev/null
for f in c2c counters channel mem; do
  if [[ -f $root/scripts/lab/cli/tidy.py ]]; then
    check "$f: output accepted by scripts/lab/core/tidy.py" python3 -m lab.cli.tidy fill run_id=t experiment=$f \
      variant=- placement=p threads=2 cpus=0,1 repeat=1 "$out/$f.csv"
  else printf 'skip %s: scripts/lab/core/tidy.py not here\n' "$f"; fi
done

# Shared atomic vs padded counters, 2 threads, measured interleaved in one run: only the direction.
if [[ $ncpu -ge 2 ]] && $b/counters --cpus 0,1 --threads 2 --variant shared-atomic,padded --rounds 5 \
    --ops 2000000 > "$out/cnt.csv" 2> "$out/cnt.err"; then
  read -r shared padded < <(awk -F, '$3 == "ns_per_op" { v[$1] = $4 } END { print v["shared-atomic"], v["padded"] }' "$out/cnt.csv")
  ratio=$(awk -v s="$shared" -v p="$padded" 'BEGIN { printf "%.2f", s / p }')
  together=$(corun "$out/cnt.csv" shared-atomic)
  if awk -v s="$shared" -v p="$padded" 'BEGIN { exit !(s > p) }'; then
    ok "counters: shared atomic slower per op than padded at 2 threads (${shared} vs ${padded} ns/op, ${ratio}x; ran together ${together}%)"
  else bad "counters: shared atomic not slower than padded (${shared} vs ${padded} ns/op, ${ratio}x; ran together ${together}%)" "$out/cnt.csv"; fi
else bad "counters: 2-thread run" "$out/cnt.err"; fi

echo "probes: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
