#!/usr/bin/env python3
"""Summarise RAW/perf.data: the top symbols (RAW/perf-top.txt) and derived metrics as tidy rows.

  perf.py RAW [N]      prints metric,value,unit rows on stdout

A shim for a person at a shell: the engine calls lab/engine/perfsummary.summarise() in process, where
the rules and the metrics' names live.
"""
import os
import sys

from lab.engine import perfsummary
from lab.errors import program, run


@program("perf")
def main(argv):
    raw, n = argv[0], int(argv[1]) if len(argv) > 1 else 10
    try:
        sys.stdout.write(perfsummary.summarise(raw, os.environ.get("LAB_PERF_EVENT"), n=n))
    except perfsummary.PerfError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    run(main)
