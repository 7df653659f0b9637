#!/usr/bin/env python3
"""This host's history as the dry run prices from it, as one JSON document (lab/engine/pricehistory.py): per
(experiment, profile), the newest run's seconds per run, repeats per point and re-measured attempts per
kept repeat. fleet-check and fleet-plan run it on each host (shipped as one zip file, removed after) and
price that host's dry run from what it prints.

  history.py RESULTS
"""
import json
import sys

from lab.core.runfolder import hostname
from lab.engine.pricehistory import summary
from lab.errors import program, run


@program("history")
def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(json.dumps(summary(argv[0], hostname()), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    run(main)
