#!/usr/bin/env bash
# with-perf.sh PERF RAW CMD…: run CMD as is, or with PERF=1 under `perf record -g` into RAW/perf.data.
# The probes pin their own threads (pin = self), so the sweep engine leaves profiling to the command;
# perf follows every thread of CMD and passes its exit code through.
set -euo pipefail
[[ $# -ge 3 && ($1 == 0 || $1 == 1) ]] || { echo "usage: $0 0|1 RAW_DIR CMD…" >&2; exit 2; }
on=$1 raw=$2
shift 2
if [[ $on == 1 ]]; then
  exec perf record -q -g -e "${LAB_PERF_EVENT:-cpu-clock}" -o "$raw/perf.data" -- "$@"
fi
exec "$@"
