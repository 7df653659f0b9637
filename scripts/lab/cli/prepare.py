#!/usr/bin/env python3
"""Prepare this host for why=1's evidence, before a recipe that measures (lab/engine/hostprep.py).

  prepare.py          mount tracefs if it is missing and we are root; say what cuts evidence (stderr)
  prepare.py record   the facts env/tracing.txt keeps (stdout)

Never fails a recipe: only why=1 needs what it prepares, and a why=1 run says what it lacked.
"""
import sys

from lab.engine import hostprep
from lab.errors import program, run


@program("prepare")
def main(argv):
    if argv == ["record"]:
        sys.stdout.write(hostprep.record())
        return 0
    if argv:
        print("usage: prepare.py [record]", file=sys.stderr)
        return 2
    for line in hostprep.prepare():
        print(f"lab: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
