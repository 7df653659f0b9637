#!/usr/bin/env python3
"""Render every chart a run's specs ask for (`chart = KIND METRIC`), as PNG and SVG, with gnuplot; the
report is drawn by lab.cli.report, which draws the charts too.

  charts.py RUN
"""
import sys

from lab.core.term import visible
from lab.errors import program, run
from lab.report import front


@program("charts")
def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run = front.read(argv[0])       # Unreadable: a row no chart can show (file:line), a linked folder
    made, said = front.draw_charts(run)
    for line in said:
        print(visible(line), file=sys.stderr)
    print(visible(f"charts: {len(made)} chart(s) in {run.folder.plots_dir}"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
