#!/usr/bin/env python3
"""Summarise RAW/perf.data: the top symbols (RAW/perf-top.txt) and derived metrics as tidy rows.

  perf.py RAW [N]      prints metric,value,unit rows on stdout

The rules and the metrics' names live in scripts/lab/engine/perfsummary.py.
"""
import os
import sys


from lab.engine import perfsummary
from lab.core.runfolder import write_atomic_text
def main(argv):
    raw, n = argv[0], int(argv[1]) if len(argv) > 1 else 10
    rows = perfsummary.symbols(raw)
    if not rows:
        print("perf: no samples in perf.data", file=sys.stderr)
        return 1
    write_atomic_text(f"{raw}/perf-top.txt", perfsummary.top_table(rows, n, os.environ.get("LAB_PERF_EVENT") or "unknown"))
    sys.stdout.write(perfsummary.metrics(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
