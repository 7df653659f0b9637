#!/usr/bin/env python3
"""Draw a run folder: its charts, flame graphs, report.md and report.html, from one model of the run's
numbers read once (lab/report/front.py): the host, per experiment its charts, medians with n and the 95%
CI, suspect / re-measured / skipped points from the journal, and the published figures beside the
measured ones with yes / no / inconclusive verdicts.

  report.py RUN
"""
import sys

from lab.core.runfolder import RunFolder, is_run
from lab.core.term import visible
from lab.errors import program, run
from lab.report import front


@program("report")
def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rf = RunFolder(argv[0])
    if not is_run(rf.path):
        print(f"report: {visible(rf.path)} is not a run folder (no sweep/)", file=sys.stderr)
        return 2
    drawn = front.draw(front.read(rf.path))
    for line in drawn.said:
        print(visible(line), file=sys.stderr)
    print(visible(f"report: {drawn.report_md}, {drawn.report_html}"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
