#!/usr/bin/env bash
# Helpers shared by the drivers (sourced, not run). Callers set: root, scripts; sweep.sh also
# profile, overrides (KEY=VALUE array), run, journal, total, done_now, started.
# shellcheck disable=SC2154

# Where runs go: results/ in the project, or LAB_RESULTS (the tests use a temporary folder).
results=${LAB_RESULTS:-$root/results}

die() { printf 'error: %s\n' "$*" >&2; exit 2; }
note() { printf '%s\n' "$*" >&2; }

# One line in the run's journal (when there is a run) and on stderr, with a UTC time.
log() {
  local line
  line="$(date -u +%H:%M:%S) $*"
  printf '%s\n' "$line" >&2
  if [[ -n ${journal:-} ]]; then printf '%s\n' "$line" >> "$journal"; fi
}

# spec_value FILE KEY PROFILE [DEFAULT]: an override KEY=… wins, then KEY[PROFILE], then KEY.
# Values of the repeated key `chart` come back one per line.
spec_value() {
  local file=$1 key=$2 prof=$3 default=${4:-} o
  for o in "${overrides[@]}"; do
    if [[ ${o%%=*} == "$key" ]]; then printf '%s\n' "${o#*=}"; return; fi
  done
  awk -v key="$key" -v prof="$prof" -v def="$default" '
    /^[[:space:]]*(#|$)/ { next }
    {
      i = index($0, "="); if (!i) next
      k = substr($0, 1, i - 1); v = substr($0, i + 1)
      gsub(/^[[:space:]]+|[[:space:]]+$/, "", k); gsub(/^[[:space:]]+|[[:space:]]+$/, "", v)
      if (k == key "[" prof "]") { p[++np] = v }
      else if (k == key) { b[++nb] = v }
    }
    END {
      if (np) { for (j = 1; j <= np; j++) print p[j] }
      else if (nb) { for (j = 1; j <= nb; j++) print b[j] }
      else if (def != "") print def
    }' "$file"
}

# The spec as this sweep used it: every key resolved for the profile and the overrides.
spec_snapshot() {
  local file=$1 prof=$2 k
  printf '# %s, profile %s, overrides: %s\n' "$(basename "$file")" "$prof" "${overrides[*]:-none}"
  for k in experiment requires build setup teardown command variants placements threads repeats warmup pin \
           perf membind timeout chart; do
    spec_value "$file" "$k" "$prof" | while IFS= read -r v; do printf '%s = %s\n' "$k" "$v"; done
  done
}

is_pair() { case $1 in smt|same-l3|cross-l3|cross-die|cross-package) return 0 ;; esac; return 1; }

# 1 2 4 … up to the PU count, and the PU count itself.
auto_threads() {
  local n i=1 out=""
  n=$("$scripts/topo.py" summary | sed -n 's/^pus=//p')
  while [[ $i -lt $n ]]; do out+="$i "; i=$((i * 2)); done
  printf '%s\n' "$out$n"
}

point_key() { printf '%s_%s_t%s_r%s\n' "${1//[^A-Za-z0-9.-]/_}" "$2" "$3" "$4"; }

fill_placeholders() {
  local c=$1
  c=${c//\{variant\}/$2}; c=${c//\{placement\}/$3}; c=${c//\{threads\}/$4}; c=${c//\{repeat\}/$5}
  c=${c//\{cpus\}/$6}; c=${c//\{other_cpus\}/$7}; c=${c//\{raw\}/$8}; c=${c//\{perf\}/$9}
  c=${c//\{pinned\}/${10}}; c=${c//\{root\}/$root}
  printf '%s\n' "$c"
}

# tidy_point OUT KEY=VALUE… FILE…: the point's rows, filled and checked, land in OUT by a rename,
# so OUT exists only when complete.
tidy_point() {
  local out=$1
  shift
  "$scripts/tidy.py" fill "$@" > "$out.tmp" && mv "$out.tmp" "$out"
}

progress() {
  local eta="?" elapsed=$((SECONDS - started)) left=$((total - done_now))
  if [[ $done_now -gt 0 ]]; then eta=$(human $((elapsed * left / done_now))); fi
  printf '[%d/%d] %s %s %s threads=%s repeat=%s  elapsed %s, ETA %s\n' \
    $((done_now + 1)) "$total" "$1" "$2" "$3" "$4" "$5" "$(human "$elapsed")" "$eta" >&2
}

human() { if [[ $1 -ge 60 ]]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

# The newest run of this host with the same sweep signature that did not complete.
find_resumable() {
  local sig=$1 d
  for d in $(ls -1d "$results"/*-"$(hostname -s)" 2>/dev/null | sort -r); do
    [[ -f $d/sweep/signature && -f $d/sweep/state ]] || continue
    [[ $(cat "$d/sweep/state") != complete && $(cat "$d/sweep/signature") == "$sig" ]] || continue
    printf '%s\n' "$d"
    return 0
  done
  return 1
}

# Hardware cycles when the PMU is there; VMs and containers often lack it: then cpu-clock.
perf_event_for_host() {
  if perf stat -x, -e cycles true 2>&1 >/dev/null | grep -qE '^[0-9]+,'; then echo cycles; else echo cpu-clock; fi
}
