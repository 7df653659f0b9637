#!/usr/bin/env python3
"""Write RUN/report.md and RUN/report.html from one model of the run's numbers (lab/report/model.py):
the host, per experiment its charts, medians with n and the 95% CI, suspect / re-measured / skipped
points from the journal, and the published figures beside the measured ones with yes / no /
inconclusive verdicts.

  report.py RUN
"""
import sys

from lab.report import causes, goals, html_page, markdown, model
from lab.report.journal import JournalError
from lab.core.runfolder import RunFolder, RunFolderError, is_run
from lab.core.term import visible
def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rf = RunFolder(argv[0])
    run = rf.path
    if not is_run(run):
        print(f"report: {run} is not a run folder (no sweep/)", file=sys.stderr)
        return 2
    try:
        m = model.build(run)
        causes.draw(rf, m)          # the flame graphs of why=1 evidence, drawn by inferno into plots/
        rf.write_text("report.md", markdown.render(m))
        rf.write_text("report.html", html_page.report(m))
    except (model.DataError, JournalError, RunFolderError) as e:
        print(f"report: {visible(e)}", file=sys.stderr)
        return 2
    for e in m["experiments"]:      # the goals a spec states, judged: the benchmark's last words
        for line in goals.sentences(e["goals"]):
            print(visible(f"{e['name']}: {line}"), file=sys.stderr)
    print(f"report: {rf.report_md}, {rf.report_html}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
