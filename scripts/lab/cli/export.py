#!/usr/bin/env python3
"""Export a run in a format others read.

  export.py RUN [format=json|bmf|hyperfine] [out=FILE]

json (default): the whole run, documented in docs/run-format.md (JSON Schema docs/run-format.schema.json):
the machine, the code identity, every point with every repeat, its statistics and suspect marks, the
scaling words, goals and verdicts. bmf: Bencher's Metric Format (median, 95% interval), for
`bencher run --adapter json`. hyperfine: hyperfine's --export-json shape for the points with wall_s.
Writes to stdout, or atomically to out=FILE. Bad input: one line, exit 2.
"""
import json
import os
import sys

from lab import exports
from lab.report import model
from lab.report.journal import JournalError
from lab.core.runfolder import RunFolder, is_run, write_atomic_text
from lab.core.term import visible
def main(argv):
    runs = [a for a in argv if "=" not in a]
    keys = dict(a.split("=", 1) for a in argv if "=" in a)
    fmt = keys.get("format", "json")
    bad = sorted(set(keys) - {"format", "out"})
    if len(runs) != 1 or bad or fmt not in exports.FORMATS:
        why = (f"unknown key {bad[0]}=" if bad else f"format={fmt}: one of {' '.join(exports.FORMATS)}"
               if fmt not in exports.FORMATS else "one RUN folder is needed")
        print(f"export: {visible(why)}\n{__doc__.strip()}", file=sys.stderr)
        return 2
    run = RunFolder(runs[0]).path
    if not is_run(run):
        print(visible(f"export: {run} is not a run folder (no sweep/)"), file=sys.stderr)
        return 2
    try:
        doc = exports.FORMATS[fmt](run)
    except (model.DataError, JournalError) as e:
        print(visible(f"export: {e}"), file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if keys.get("out"):
        write_atomic_text(keys["out"], text)
        print(visible(f"export: {fmt} of {os.path.basename(run)} written to {keys['out']}"), file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
