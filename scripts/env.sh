#!/usr/bin/env bash
# Capture what is needed to judge and repeat a run into DIR (default: a new results/<run>/env).
# Anything that cannot be read is written as "unavailable: <reason>", never skipped silently.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the lab's Python package (scripts/lab/), for the programs run below as python3 -m lab.cli.X
export PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}"
dir=${1:-${LAB_RESULTS:-$root/results}/$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s)/env}
mkdir -p "$dir"
# Files are read with bash's own `read`, not `cat`/`sed`: each process start costs 16-50x more under
# TCG (vm/), where a capture with a command per sysfs file took most of a guest's minute.
shopt -s extglob
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# first_line VAR FILE: FILE's first line into VAR ("" when it cannot be read), without a process.
first_line() {
  local -n _to=$1
  _to=""
  { IFS= read -r _to || true; } 2>/dev/null < "$2"
}

# capture NAME CMD…: stdout of CMD into NAME, or the reason it could not be read.
capture() {
  local name=$1 out
  shift
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "unavailable: $1 not installed" > "$dir/$name"
    return
  fi
  if out=$("$@" 2>"$err") && [[ -n $out ]]; then
    printf '%s\n' "$out" > "$dir/$name"
  else
    printf 'unavailable: %s failed: %s\n' "$*" "$(head -c 300 "$err" | tr '\n' ' ')" > "$dir/$name"
  fi
}

# copy NAME FILE: a kernel or config file, or why not.
copy() {
  if [[ -r $2 ]]; then cat "$2" > "$dir/$1" 2>/dev/null || echo "unavailable: cannot read $2" > "$dir/$1"
  else echo "unavailable: $2 does not exist here" > "$dir/$1"; fi
}

# VM, container or bare metal: systemd-detect-virt when present, else the CPU's hypervisor flag.
virt() {
  local vm="none" ct="none"
  if command -v systemd-detect-virt >/dev/null; then
    vm=$(systemd-detect-virt --vm 2>/dev/null || true)
    ct=$(systemd-detect-virt --container 2>/dev/null || true)
  fi
  if [[ ${vm:-none} == none ]] && grep -qw hypervisor /proc/cpuinfo; then vm="unknown-hypervisor"; fi
  if [[ ${vm:-none} == none && ${ct:-none} == none ]]; then echo "kind=bare-metal"
  elif [[ ${vm:-none} == none ]]; then echo "kind=container"; echo "hypervisor_flag=no"
  else echo "kind=vm"; fi
  echo "vm=${vm:-none}"
  echo "container=${ct:-none}"
}

cpu_state() {
  local f
  for f in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do
    [[ -r $f ]] && { echo "governor=$(sort -u /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor | tr '\n' ' ')"; break; }
  done
  [[ -r $f ]] || echo "governor=unavailable: no cpufreq in /sys (VM or container)"
  if [[ -r /sys/devices/system/cpu/cpufreq/boost ]]; then echo "boost=$(cat /sys/devices/system/cpu/cpufreq/boost)"
  elif [[ -r /sys/devices/system/cpu/intel_pstate/no_turbo ]]; then echo "no_turbo=$(cat /sys/devices/system/cpu/intel_pstate/no_turbo)"
  else echo "boost=unavailable: no boost control in /sys"; fi
  if [[ -r /sys/devices/system/cpu/smt/control ]]; then echo "smt=$(cat /sys/devices/system/cpu/smt/control)"
  else echo "smt=unavailable: /sys/devices/system/cpu/smt/control missing"; fi
  local key val micro="" online
  while IFS=: read -r key val; do
    [[ $key == microcode* ]] && { micro=${val// /}; break; }
  done < /proc/cpuinfo
  echo "microcode=$micro"
  [[ -n $micro ]] || echo "microcode=unavailable: not shown in /proc/cpuinfo"
  first_line online /sys/devices/system/cpu/online
  echo "online=${online:-unavailable}"
  echo "allowed=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //')"
}

# The kernel's own NUMA view, independent of numactl: per node its CPUs, the packages they sit in,
# its memory and its distance row; then the SNC/NPS shape (NUMA nodes with CPUs per package).
numa_nodes() {
  local d n cpus pkgs c p mem dist key val
  [[ -d /sys/devices/system/node/node0 ]] || { echo "unavailable: no /sys/devices/system/node (kernel without NUMA)"; return; }
  declare -A per_pkg=()
  for d in /sys/devices/system/node/node[0-9]*; do
    n=${d##*node}
    first_line cpus "$d/cpulist"
    # the packages of its CPUs, each once, in numeric order (an indexed array's keys are sorted)
    local -a seen=()
    for c in "$d"/cpu[0-9]*; do
      [[ -r $c/topology/physical_package_id ]] || continue
      first_line p "$c/topology/physical_package_id"
      [[ $p =~ ^[0-9]+$ ]] && seen[10#$p]=1
    done
    pkgs=""
    for p in "${!seen[@]}"; do pkgs+=${pkgs:+,}$p; done
    mem=""
    while read -r _ _ key val _; do [[ $key == *MemTotal* ]] && mem=$val; done 2>/dev/null < "$d/meminfo"
    first_line dist "$d/distance"
    echo "node$n cpus=${cpus:-none} packages=${pkgs:-none} mem_kb=$mem distance=${dist// /,}"
    for c in ${pkgs//,/ }; do per_pkg[$c]=$(( ${per_pkg[$c]:-0} + 1 )); done
  done
  shape=$(for c in "${!per_pkg[@]}"; do echo "${per_pkg[$c]}"; done | sort -un | paste -sd/ -)
  echo "numa_per_package=${shape:-unavailable: no node has CPUs}"
}

# A copy shipped by fleet-sweep has no .git: .lab-source/ holds the commit and the uncommitted diff it
# was archived from.
# sysval KEY FILE: "KEY=first line of FILE", or why it cannot be read.
sysval() {
  local v
  if [[ -r $2 ]]; then first_line v "$2"; echo "$1=${v%%+( )}"; else echo "$1=unavailable: $2 does not exist here"; fi
}

# idle_states CPUDIR: its cpuidle states as name:exit latency in us, ",off" when disabled.
idle_states() {
  local s out="" off name lat
  for s in "$1"/cpuidle/state[0-9]*; do
    [[ -r $s/name ]] || continue
    first_line off "$s/disable"
    if [[ $off == 1 ]]; then off=",off"; else off=""; fi
    first_line name "$s/name"
    first_line lat "$s/latency"
    out+="$name:${lat}us$off "
  done
  echo "${out% }"
}

# What moves memory or time behind the lab's back, one key=value a line (compare flags any difference):
# NUMA balancing migrates pages during a run, THP changes the TLB cost of every access, the clocksource
# is every timer's, deep idle states add wake-up latency, IRQs on a measured CPU steal its time, and
# autogroup decides how much of a shared CPU a busy process of another session takes from the sweep.
# numa_per_package repeats numa-nodes.txt's SNC/NPS shape (nodes per package) so that one file says it all.
memory_time() {
  local f v cpu0 same=yes c irqs
  sysval numa_balancing /proc/sys/kernel/numa_balancing
  for f in enabled defrag; do  # "always [madvise] never": the bracketed word is the setting
    v=/sys/kernel/mm/transparent_hugepage/$f
    if [[ -r $v ]]; then
      first_line v "$v"
      [[ $v =~ \[([^]]*)\] ]] && v=${BASH_REMATCH[1]} || v=""
      echo "thp_$f=$v"
    else echo "thp_$f=unavailable: $v does not exist here"; fi
  done
  sysval clocksource /sys/devices/system/clocksource/clocksource0/current_clocksource
  sysval clocksource_available /sys/devices/system/clocksource/clocksource0/available_clocksource
  sysval cpuidle_driver /sys/devices/system/cpu/cpuidle/current_driver
  if [[ -r /sys/devices/system/cpu/cpuidle/current_governor_ro ]]; then sysval cpuidle_governor /sys/devices/system/cpu/cpuidle/current_governor_ro
  else sysval cpuidle_governor /sys/devices/system/cpu/cpuidle/current_governor; fi
  # In a KVM guest under the haltpoll driver, how long an idle vCPU polls before it halts: 0 halts at
  # once, so every wake-up of an idle vCPU goes through the host (cache-server/README.md, latency-bound)
  sysval guest_halt_poll_ns /sys/module/haltpoll/parameters/guest_halt_poll_ns
  cpu0=$(idle_states /sys/devices/system/cpu/cpu0)
  for c in /sys/devices/system/cpu/cpu[0-9]*; do [[ $(idle_states "$c") == "$cpu0" ]] || same=no; done
  echo "cpuidle_states=${cpu0:-unavailable: no cpuidle states in /sys (idle=poll, or none exposed)}"
  echo "cpuidle_same_on_all_cpus=$same"
  if command -v pgrep > /dev/null; then
    if pgrep -x irqbalance > /dev/null; then echo "irqbalance=running"; else echo "irqbalance=not running"; fi
  else echo "irqbalance=unavailable: pgrep not installed"; fi
  # IRQ count per CPU list they may fire on (the effective list where the kernel has one)
  irqs=$(for f in /proc/irq/[0-9]*; do
      if [[ -r $f/effective_affinity_list ]]; then first_line v "$f/effective_affinity_list"
      elif [[ -r $f/smp_affinity_list ]]; then first_line v "$f/smp_affinity_list"
      else continue; fi
      echo "$v"
    done | sort | uniq -c | awk '{ printf "%scpus %s: %d", sep, (NF > 1 ? $2 : "none"), $1; sep = "; " }')
  echo "irq_affinity=${irqs:-unavailable: /proc/irq not readable}"
  sysval sched_autogroup /proc/sys/kernel/sched_autogroup_enabled
  echo "numa_per_package=$(sed -n 's/^numa_per_package=//p' "$dir/numa-nodes.txt" 2>/dev/null | grep . || echo "unavailable: see numa-nodes.txt")"
}

git_state() {
  if [[ ! -e $root/.git && -f $root/.lab-source/commit ]]; then
    cat "$root/.lab-source/commit"; echo "(a git archive shipped by fleet-sweep: .lab-source/)"
  else
    git -C "$root" rev-parse HEAD 2>/dev/null || echo "unavailable: not a git checkout"
    git -C "$root" status --short 2>/dev/null
  fi
}

git_diff() {
  if [[ ! -e $root/.git && -f $root/.lab-source/diff.patch ]]; then cat "$root/.lab-source/diff.patch"
  else git -C "$root" diff HEAD; fi
}

# Java's version from its JDK's release file: starting a JVM costs a second here and half a minute under TCG
java_release() {
  local home key val who="" version=""
  home=$(readlink -f "$(command -v java)")
  home=${home%/*/*}
  [[ -r $home/release ]] || return 1
  while IFS='=' read -r key val; do
    [[ $val =~ ^\"(.*)\"$ ]] || continue
    case $key in IMPLEMENTOR) who+=${BASH_REMATCH[1]} ;; JAVA_RUNTIME_VERSION) version+=${BASH_REMATCH[1]} ;; esac
  done < "$home/release"
  printf '%s %s (%s/release)' "$who" "$version" "$home"
}

# (mvn is left out: it only re-resolves cassandra/jars.lock, which env/ copies; it measures nothing)
versions() {
  local t out
  for t in just hyperfine perf gnuplot lstopo-no-graphics numactl taskset memcached java cargo rustc gcc clang python3 nix; do
    if ! command -v "$t" >/dev/null 2>&1; then
      printf '%s: unavailable: not installed\n' "$t"; continue
    fi
    if [[ $t == java ]] && out=$(java_release); then printf 'java: %s\n' "$out"; continue; fi
    # The whole output, then its first line: `| head -n 1` cut a slow writer (mvn) short, and under
    # pipefail that ran the fallback too (mvn -V starts a build: seconds per sweep, minutes under TCG).
    out=$("$t" --version 2>&1 </dev/null) || out=$("$t" -V 2>&1 </dev/null) ||
      out="unavailable: no version flag (the package list below has it)"
    out=${out%%$'\n'*}
    printf '%s: %s\n' "$t" "${out//$'\e['*([0-9;])m/}"
  done
  if command -v dpkg-query >/dev/null; then
    echo "--- Debian packages"
    dpkg-query -W hwloc numactl gnuplot-nox linux-perf hyperfine memcached "openjdk-$(sed -n 's/^JAVA_MAJOR=//p' "$root/versions.env")-jre-headless" 2>/dev/null
  fi
}

# How each instrument is built here: compiler, its version and the exact flags, one line per instrument
# (the C ones print it from their Makefile, which includes their build.env), so that two runs, on the
# Debian and the Nix path or on two hosts, say when they measured differently built code.
# Instruments are discovered, not listed: every folder with a build.env (C) or a Cargo.toml (Rust).
builds() {
  local f d cc
  for f in "$root"/*/build.env; do
    d=${f%/*}
    d=${d##*/}
    [[ -f $root/$d/Makefile ]] || continue
    printf '%s: %s\n' "$d" "$(make -s --no-print-directory -C "$root/$d" print-build 2>&1 | head -n 1)"
  done
  for f in "$root"/*/Cargo.toml; do
    [[ -f $f ]] || continue
    d=${f%/*}
    printf '%s: %s | profile.release: %s| rustflags=%s\n' "${d##*/}" "$(rustc --version 2>&1 | head -n 1)" \
      "$(awk '/^\[profile\.release\]/ { on = 1; next } /^\[/ { on = 0 } on && /=/ && !/^#/ { gsub(/ /, ""); printf "%s ", $0 }' \
        "$f")" "${RUSTFLAGS:-${CARGO_BUILD_RUSTFLAGS:-}}"
  done
  # What a compiler wrapper adds by itself (nixpkgs' cc-wrapper; unset on Debian), and the compiler's
  # built-in defaults that change the code (PIE, stack protector, fortify, CET).
  echo "wrapper: NIX_HARDENING_ENABLE=${NIX_HARDENING_ENABLE-unset} NIX_CFLAGS_COMPILE=${NIX_CFLAGS_COMPILE-unset} NIX_LDFLAGS=${NIX_LDFLAGS-unset}"
  # The Nix shell's store paths (scripts/lab/fleet/nixenv.py): a fleet's Nix host runs the controller's, and says so here.
  echo "nix store: $(python3 -m lab.cli.nixenv digest 2>&1 | head -n 1)"
  cc=""
  while IFS= read -r f; do [[ $f == CC=* ]] && cc=${f#CC=}; done 2>/dev/null < "$root/c-probes/build.env"
  if [[ -n $cc ]] && command -v "$cc" > /dev/null; then
    echo "$cc defaults: $("$cc" -O2 -dM -E -x c /dev/null 2>/dev/null | grep -oE '__(pie|PIE|SSP[A-Z_]*|FORTIFY_SOURCE|CET)__ [0-9]+' | sort | tr '\n' ' ')"
  fi
}

capture uname.txt uname -a
copy cmdline.txt /proc/cmdline
copy cpuinfo.txt /proc/cpuinfo
copy meminfo.txt /proc/meminfo
copy os-release.txt /etc/os-release
capture lscpu.txt lscpu
capture lstopo.xml lstopo-no-graphics --of xml -
capture topology.txt python3 -m lab.cli.topo summary
capture numa.txt numactl --hardware
numa_nodes > "$dir/numa-nodes.txt"
memory_time > "$dir/memory-time.txt"
capture dmidecode.txt dmidecode -t system
virt > "$dir/virt.txt"
cpu_state > "$dir/cpu-state.txt"
git_state > "$dir/git.txt"
# an empty diff is a clean tree, not a failed capture
if out=$(git_diff 2>&1); then
  if [[ -n $out ]]; then printf '%s\n' "$out" > "$dir/git-diff.patch"
  else echo "(clean: no uncommitted change)" > "$dir/git-diff.patch"; fi
else
  printf 'unavailable: git diff failed: %s\n' "$(head -c 300 <<< "$out" | tr '\n' ' ')" > "$dir/git-diff.patch"
fi
versions > "$dir/versions.txt"
builds > "$dir/build.txt"
cp "$root/versions.env" "$dir/versions.env" 2>/dev/null || echo "unavailable: versions.env missing" > "$dir/versions.env"
if [[ -f $root/flake.lock ]]; then cp "$root/flake.lock" "$dir/flake.lock"; else echo "unavailable: no flake.lock" > "$dir/flake.lock"; fi
if [[ -n ${IN_NIX_SHELL:-} ]]; then
  { echo "IN_NIX_SHELL=$IN_NIX_SHELL"; echo "nixpkgs=${LAB_NIX_PINNED_NIXPKGS:-unknown}"
    echo "CASSANDRA_LIB=${CASSANDRA_LIB:-unset}"; tr ':' '\n' <<< "$PATH" | grep '^/nix/store'
    echo "--- store paths of the shell (scripts/lab/fleet/nixenv.py; env/build.txt has their digest)"
    python3 -m lab.cli.nixenv paths 2>&1 ; } > "$dir/nix.txt"
else
  echo "unavailable: not in a Nix shell (the non-Nix path; pinned versions in versions.env)" > "$dir/nix.txt"
fi
capture perf-paranoid.txt cat /proc/sys/kernel/perf_event_paranoid
# Whether the kernel's tracepoints were mounted and the perf settings that cut why=1's evidence: a received
# run that lacks evidence says why (lab/engine/hostprep.py owns the rule).
capture tracing.txt python3 -m lab.cli.prepare record
# Service versions and configs (the instruments that start them add their configs under raw/).
capture memcached-version.txt memcached -V
if [[ -f $root/cassandra/jars.lock ]]; then cp "$root/cassandra/jars.lock" "$dir/cassandra-jars.lock"
else echo "unavailable: no cassandra/jars.lock in this checkout" > "$dir/cassandra-jars.lock"; fi
# The lab's Cassandra cluster, when one is up (cassandra/cluster.sh's record: how many nodes, where, bound how).
cluster_record=${CLUSTER_WORK:-$root/.work/cluster}/cluster.txt
if [[ -f $cluster_record ]]; then cp "$cluster_record" "$dir/cassandra-cluster.txt"
else echo "unavailable: no cluster up (cassandra/cluster.sh)" > "$dir/cassandra-cluster.txt"; fi
echo "captured $(ls "$dir" | wc -l) files into $dir" >&2
