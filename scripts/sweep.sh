#!/usr/bin/env bash
# The sweep engine: run experiments over placements × threads × variants × repeats into one run folder.
#
#   scripts/sweep.sh [KEY=VALUE…] [experiments/NAME.spec…]
#
# With no spec, every experiments/*.spec whose `sweep` key is not `no`. KEY=VALUE pairs are either the
# sweep's own (profile, perf, run, topology) or override the same key in every spec (threads, repeats,
# placements, variants, membind, warmup). The spec format and the instrument contract are in
# docs/instruments.md.
#
# Resuming: each point's rows are written to their own file with a rename, and that file is the proof
# that the point is done. A sweep that was killed is resumed by running the same command again (or with
# run=results/…): done points are skipped, failed and missing ones are run, the tidy CSV is rebuilt.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scripts=$root/scripts
# shellcheck source=scripts/common.sh
. "$scripts/common.sh"

profile=default perf=0 run="" specs=() overrides=()
for arg in "$@"; do
  case $arg in
    profile=*) profile=${arg#*=} ;;
    perf=*) perf=${arg#*=} ;;
    run=*) run=${arg#*=} ;;
    topology=*) export LAB_TOPOLOGY=${arg#*=} ;;
    *=*) overrides+=("$arg") ;;
    *.spec) [[ -f $arg ]] || die "no such spec: $arg"; specs+=("$arg") ;;
    *) die "unknown argument '$arg' (expected KEY=VALUE or a .spec file)" ;;
  esac
done
[[ $perf == 0 || $perf == 1 ]] || die "perf must be 0 or 1, not '$perf'"
if [[ ${#specs[@]} -eq 0 ]]; then
  shopt -s nullglob
  for s in "$root"/experiments/*.spec; do
    [[ $(spec_value "$s" sweep "$profile") == no ]] || specs+=("$s")
  done
  shopt -u nullglob
fi
[[ ${#specs[@]} -gt 0 ]] || die "no experiment to sweep (experiments/*.spec is empty)"

# The arguments that define a sweep: a rerun with the same ones resumes the same run.
signature="profile=$profile perf=$perf topology=${LAB_TOPOLOGY:-host} ${overrides[*]} $(
  for s in "${specs[@]}"; do basename "$s"; done | sort | tr '\n' ' ')"

if [[ -z $run ]]; then
  run=$(find_resumable "$signature") || true
fi
if [[ -n $run && -d $run ]]; then
  note "resuming $run"
else
  run=${run:-$results/$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s)}
  mkdir -p "$run/sweep"
  note "new run $run"
fi
run=$(cd "$run" && pwd)
mkdir -p "$run"/{sweep/specs,data/points,raw,plots}
# A point file being written when the last sweep was killed is not a point: drop it.
find "$run/data/points" -name '*.tmp' -delete
printf '%s\n' "$signature" > "$run/sweep/signature"
printf '%s\n' "$0 $*" > "$run/sweep/command"
echo running > "$run/sweep/state"
journal=$run/sweep/journal.log
run_id=$(basename "$run")

[[ -d $run/env ]] || "$scripts/env.sh" "$run/env" >&2

perf_event=""
if [[ $perf == 1 ]]; then
  perf_event=$(perf_event_for_host)
  log "perf: recording with -e $perf_event$( [[ $perf_event == cpu-clock ]] && echo ' (no hardware counters here)')"
fi

failed=0 teardown=""
cleanup() { if [[ -n $teardown ]]; then (cd "$root" && bash -c "$teardown") >&2 || true; fi; }
trap cleanup EXIT

# Every point of one spec, as lines: variant|placement|threads|repeat|cpus  (or |skip|reason)
plan_points() {
  local spec=$1 threads placements variants repeats p t v r cpus
  placements=$(spec_value "$spec" placements "$profile" unpinned)
  threads=$(spec_value "$spec" threads "$profile" auto)
  variants=$(spec_value "$spec" variants "$profile" "-")
  repeats=$(spec_value "$spec" repeats "$profile" 3)
  [[ $threads == auto ]] && threads=$(auto_threads)
  [[ $repeats =~ ^[1-9][0-9]*$ ]] || die "$spec: repeats must be a positive number, not '$repeats'"
  for p in $placements; do
    if is_pair "$p"; then set -- 2; else set -- $threads; fi  # word splitting is the list
    for t in "$@"; do
      if ! cpus=$("$scripts/topo.py" plan "$p" "$t" 2>&1); then
        echo "-|$p|$t|-|skip|${cpus#placement: }"
        continue
      fi
      for v in $variants; do
        for ((r = 1; r <= repeats; r++)); do echo "$v|$p|$t|$r|$cpus"; done
      done
    done
  done
}

# Plan everything first: the progress line needs the count of points still to measure.
# shellcheck disable=SC2034  # started is read by progress() in common.sh
total=0 done_now=0 started=$SECONDS
declare -A points todo
# Points of SPEC (experiment EXP) that have no row file yet.
count_todo() {
  local n=0 v p t r cpus
  while IFS='|' read -r v p t r cpus _; do
    [[ $cpus == skip || -f $run/data/points/$2/$(point_key "$v" "$p" "$t" "$r").csv ]] || n=$((n + 1))
  done <<< "${points[$1]}"
  echo "$n"
}
# A tool an experiment `requires` that is not on PATH skips the whole experiment, with the reason.
declare -A absent
for spec in "${specs[@]}"; do
  exp=$(spec_value "$spec" experiment "$profile")
  [[ -n $exp ]] || die "$spec: no 'experiment' key"
  for tool in $(spec_value "$spec" requires "$profile"); do
    command -v "$tool" > /dev/null || { absent[$spec]=$tool; break; }
  done
  if [[ -n ${absent[$spec]:-} ]]; then todo[$spec]=0; continue; fi
  points[$spec]=$(plan_points "$spec")
  todo[$spec]=$(count_todo "$spec" "$exp")
  total=$((total + todo[$spec]))
done

for spec in "${specs[@]}"; do
  exp=$(spec_value "$spec" experiment "$profile")
  if [[ -n ${absent[$spec]:-} ]]; then
    log "$exp: skip all: '${absent[$spec]}' is not on PATH"
    continue
  fi
  spec_snapshot "$spec" "$profile" > "$run/sweep/specs/$exp.spec"
  command=$(spec_value "$spec" command "$profile")
  [[ -n $command ]] || die "$spec: no 'command' key"
  pin=$(spec_value "$spec" pin "$profile" taskset)
  # perf = self: the command profiles only what it wants (a server, not its load generator).
  perf_by=$(spec_value "$spec" perf "$profile" engine)
  membind=$(spec_value "$spec" membind "$profile" none)
  timeout_s=$(spec_value "$spec" timeout "$profile" 600)
  warmup=$(spec_value "$spec" warmup "$profile" 1)
  mkdir -p "$run/data/points/$exp"
  # Skipped points are logged with their reason every time: the journal says why a chart has gaps.
  while IFS='|' read -r v p t r cpus reason; do
    [[ $cpus == skip ]] && log "$exp: skip $p threads=$t: $reason"
  done <<< "${points[$spec]}"
  if [[ ${todo[$spec]} -eq 0 ]]; then
    log "$exp: every point already measured"
  else
    build=$(spec_value "$spec" build "$profile")
    setup=$(spec_value "$spec" setup "$profile")
    # A build or set-up that fails loses this experiment's points, not the other experiments'.
    if [[ -n $build ]] && ! { log "$exp: build: $build"; (cd "$root" && bash -c "$build" < /dev/null) >&2; }; then
      log "$exp: FAILED build: $build (its ${todo[$spec]} point(s) not measured)"
      failed=$((failed + todo[$spec]))
      continue
    fi
    teardown=$(spec_value "$spec" teardown "$profile")
    if [[ -n $setup ]] && ! { log "$exp: setup: $setup"; (cd "$root" && bash -c "$setup" < /dev/null) >&2; }; then
      log "$exp: FAILED setup: $setup (its ${todo[$spec]} point(s) not measured)"
      failed=$((failed + todo[$spec]))
      cleanup
      teardown=""
      continue
    fi
    warmed=0
    while IFS='|' read -r v p t r cpus _; do
      [[ $cpus == skip ]] && continue
      key=$(point_key "$v" "$p" "$t" "$r")
      [[ $v == - ]] && v=""    # a spec without variants
      out=$run/data/points/$exp/$key.csv
      [[ -f $out ]] && continue
      raw=$run/raw/$exp/$key
      rm -rf "$raw" && mkdir -p "$raw"
      pinned=1 && [[ $p == unpinned ]] && pinned=0
      other=$("$scripts/topo.py" others "$cpus")
      cmd=$(fill_placeholders "$command" "$v" "$p" "$t" "$r" "$cpus" "$other" "$raw" "$perf" "$pinned")
      export LAB_VARIANT=$v LAB_PLACEMENT=$p LAB_THREADS=$t LAB_REPEAT=$r LAB_CPUS=$cpus \
        LAB_OTHER_CPUS=$other LAB_RAW=$raw LAB_PERF=$perf LAB_PINNED=$pinned LAB_ROOT=$root \
        LAB_PERF_EVENT=$perf_event
      wrap=()
      if [[ $perf == 1 && $perf_by == engine ]]; then
        wrap=(perf record -q -g -e "$perf_event" -o "$raw/perf.data" --)
      fi
      if [[ $pin == taskset && $pinned == 1 ]]; then
        case $membind in
          local) wrap+=(numactl --membind="$("$scripts/topo.py" nodes "$cpus")") ;;
          interleave) wrap+=(numactl --interleave="$("$scripts/topo.py" nodes "$cpus")") ;;
          none) ;;
          *) die "$spec: membind must be local, interleave or none, not '$membind'" ;;
        esac
        wrap+=(taskset -c "$cpus")
      fi
      if [[ $warmed -lt $warmup ]]; then
        log "$exp: warm-up run ($v $p threads=$t), discarded"
        (cd "$root" && timeout -k 10 "$timeout_s" "${wrap[@]}" bash -c "$cmd" < /dev/null) > /dev/null 2> "$raw/warmup.log" || true
        warmed=$((warmed + 1))
      fi
      progress "$exp" "$v" "$p" "$t" "$r"
      t0=$SECONDS
      rc=0
      (cd "$root" && timeout -k 10 "$timeout_s" "${wrap[@]}" bash -c "$cmd" < /dev/null) > "$raw/stdout.csv" 2> "$raw/stderr.log" || rc=$?
      if [[ $rc -eq 2 ]]; then
        tail -n 5 "$raw/stderr.log" >&2
        die "$exp: the command rejected its input (exit 2): $cmd"
      fi
      if [[ $rc -ne 0 ]]; then
        failed=$((failed + 1))
        log "$exp: FAILED $key (exit $rc, $((SECONDS - t0)) s): $(tail -n 3 "$raw/stderr.log" | tr '\n' ' ')"
        continue
      fi
      outputs=("$raw/stdout.csv")
      if [[ -f $raw/perf.data ]]; then
        if "$scripts/perf.py" "$raw" > "$raw/perf.csv" 2>> "$raw/stderr.log"; then outputs+=("$raw/perf.csv")
        else log "$exp: perf summary failed for $key (see $raw/stderr.log)"; fi
      fi
      if ! tidy_point "$out" run_id="$run_id" experiment="$exp" variant="$v" placement="$p" \
          threads="$t" cpus="$cpus" repeat="$r" "${outputs[@]}" 2>> "$raw/stderr.log"; then
        failed=$((failed + 1))
        log "$exp: FAILED $key: $(tail -n 1 "$raw/stderr.log")"
        continue
      fi
      log "$exp: done $key in $((SECONDS - t0)) s"
      done_now=$((done_now + 1))
    done <<< "${points[$spec]}"
    cleanup
    teardown=""
  fi
  # The tidy CSV is rebuilt from the point files: a killed sweep never leaves a half-written one.
  shopt -s nullglob
  files=("$run/data/points/$exp"/*.csv)
  shopt -u nullglob
  "$scripts/tidy.py" concat "$run/data/$exp.csv" "${files[@]}"
done

if [[ $failed -gt 0 ]]; then
  echo incomplete > "$run/sweep/state"
else
  echo complete > "$run/sweep/state"
fi
"$scripts/charts.py" "$run" >&2 || log "charts failed (see above)"
"$scripts/report.py" "$run" >&2 || log "report failed (see above)"
note "run folder: $run"
note "report:     $run/report.md"
if [[ $failed -gt 0 ]]; then
  note "$failed point(s) failed: see $journal; run the same command again to retry them"
  exit 1
fi
