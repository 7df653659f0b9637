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
from lab.core.runfolder import RunFolder, is_run, run_of, streamed
from lab.core.term import visible
from lab.errors import program, run
from lab.report import model


@program("export")
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
    out = keys.get("out")
    folder = os.path.dirname(os.path.abspath(out)) if out else None
    if out and not os.path.isdir(folder):
        print(visible(f"export: out={out}: no folder {folder}"), file=sys.stderr)
        return 2
    try:
        doc = exports.FORMATS[fmt](model.build(run))
        if out:     # the user's own folder may be a link; one inside a run folder may not (real_folder)
            with streamed(out, run_of(out) or folder) as f:   # RunFolderError: out= a FIFO, a device
                dump(doc, f)
    except OSError as e:
        print(visible(f"export: out={out}: cannot write: {e.strerror}"), file=sys.stderr)
        return 2
    if out:
        print(visible(f"export: {fmt} of {os.path.basename(run)} written to {out}"), file=sys.stderr)
    else:
        dump(doc, sys.stdout)
    return 0


def dump(doc, f):
    """The document written as it is encoded, never held whole as text: at the CSV cap the text is ~360
    MB, and json.dumps with an indent keeps every piece of it in a list first (docs/design.md). The
    encoder's pieces are a few bytes each: they go out a MiB at a time (a write each was ×2.7 slower)."""
    pieces, size = [], 0
    for piece in json.JSONEncoder(indent=1, ensure_ascii=False, allow_nan=False).iterencode(doc):
        pieces.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            f.write("".join(pieces))
            pieces, size = [], 0
    f.write("".join(pieces) + "\n")


if __name__ == "__main__":
    run(main)
