#!/usr/bin/env python3
"""Put two runs side by side (two machines, or before/after): every point both measured, the medians
with their 95% CI, B / A, and Welch's t-test over the repeats not marked suspect. Noise readings are
shown apart, never as ratios. Warns when the runs built different code or ran different specs.

  compare.py RUN_A RUN_B [OUT.md]     (also writes OUT.html beside OUT.md)

A point is (experiment, variant, placement, threads, metric); the CPU lists may differ between hosts,
which is the point of comparing them, so they are not matched.
"""
import os
import sys

from lab.core.runfolder import RunFolder, write_atomic_text
from lab.core.term import visible
from lab.errors import program, run
from lab.report import html_page, markdown, model
from lab.report.comparison import compare


@program("compare")
def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a_run, b_run = (os.path.abspath(x.rstrip("/")) for x in argv[:2])
    for r in (a_run, b_run):
        if not os.path.isdir(RunFolder(r).data_dir):
            print(visible(f"compare: {r} is not a run folder (no data/)"), file=sys.stderr)
            return 2
    ma, mb = model.build(a_run), model.build(b_run)
    cmp = compare(ma, mb)       # reads both runs' env/ and spec snapshots: a refusal is one line too
    text = markdown.comparison(ma, mb, cmp)
    na, nb = ma.name, mb.name
    dest = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(b_run), f"compare-{na}-vs-{nb}.md")
    html = (dest[:-3] if dest.endswith(".md") else dest) + ".html"
    write_atomic_text(dest, text)
    write_atomic_text(html, html_page.compare(ma, mb, cmp))
    print(visible(text, lines=True))    # the names and cells in it are the runs' own: shown, not obeyed
    for w in cmp["warnings"]:
        print(f"compare: warning: {visible(w)}", file=sys.stderr)
    print(f"compare: written to {visible(dest)} and {visible(html)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
