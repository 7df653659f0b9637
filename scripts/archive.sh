#!/usr/bin/env bash
# Pack a run, or replay a packed run's sweep on this host and compare.
#
#   scripts/archive.sh pack RUN          → results/RUN.tar.gz (data, raw, env, charts, report, sweep spec)
#   scripts/archive.sh replay ARCHIVE    → a new run of the same specs here, then compare.py old new
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scripts=$root/scripts
# shellcheck source=scripts/common.sh
. "$scripts/common.sh"

run_dir() {
  local r=${1%/}
  [[ -d $r ]] || r=$results/$r
  [[ -d $r/sweep ]] || die "'$1' is not a run folder (expected results/<run>/ with sweep/)"
  (cd "$r" && pwd)
}

case ${1:-} in
  pack)
    [[ $# -eq 2 ]] || die "usage: archive.sh pack RUN"
    run=$(run_dir "$2")
    out=$(dirname "$run")/$(basename "$run").tar.gz
    tar -C "$(dirname "$run")" -czf "$out.tmp" "$(basename "$run")"
    mv "$out.tmp" "$out"
    note "archive: $out ($(du -h "$out" | cut -f1))"
    ;;
  replay)
    [[ $# -eq 2 && -f $2 ]] || die "usage: archive.sh replay ARCHIVE.tar.gz (no such file: ${2:-})"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    tar -C "$work" -xzf "$2" || die "cannot unpack $2"
    old=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    [[ -d $old/sweep/specs ]] || die "$2 holds no sweep spec (sweep/specs/)"
    perf=0
    grep -q 'perf=1' "$old/sweep/signature" 2>/dev/null && perf=1
    new=$results/$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s)-replay-$(basename "$old")
    mkdir -p "$new/sweep"
    note "replaying the sweep of $(basename "$old") on this host into $new"
    rc=0
    "$scripts/sweep.sh" perf="$perf" run="$new" "$old"/sweep/specs/*.spec || rc=$?
    "$scripts/compare.py" "$old" "$new" "$new/compare-with-$(basename "$old").md" > /dev/null
    note "comparison: $new/compare-with-$(basename "$old").md"
    exit "$rc"
    ;;
  *) die "usage: archive.sh pack RUN | replay ARCHIVE.tar.gz" ;;
esac
