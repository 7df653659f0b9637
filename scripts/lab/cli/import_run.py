#!/usr/bin/env python3
"""Import another tool's result file as a run of the lab: hyperfine's --export-json, Google Benchmark's
JSON, pyperf's JSON, or the lab's own `./lab export RUN format=json` (recognised by content).

  import_run.py FILE [topology=FILE|STRING] [name=EXPERIMENT] [run=DIR] [threads=PARAMETER]

name= names the experiment (use the name of a lab experiment of the same command to `./lab compare`
the two runs); threads= says which parameter (hyperfine -P/-L) or name part (pyperf) counts threads;
topology= describes the file's machine (hwloc XML or synthetic string) for the report's words.
Writes a run folder (default results/<UTC time>-imported-<host>/) with its charts and report, prints
the run folder and how it scales. Bad input: one line `FILE: …`, exit 2, no run folder.
"""
import os
import shlex
import shutil
import sys

from lab import imports
from lab.core.term import visible
from lab.engine.spec import NAME
from lab.errors import program, run
from lab.imports.runwriter import write_run
from lab.report import front

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = ("topology", "name", "run", "threads")


@program()
def main(argv):
    files = [a for a in argv if "=" not in a]
    keys = dict(a.split("=", 1) for a in argv if "=" in a)
    bad = sorted(set(keys) - set(KEYS))
    if len(files) != 1 or bad:
        why = f"unknown key {bad[0]}=" if bad else "one result FILE is needed"
        print(f"import: {visible(why)}\n{__doc__.strip()}", file=sys.stderr)
        return 2
    path = files[0]
    name = keys.get("name")
    imp = imports.read(path, keys.get("threads") or None)
    if name:
        if not NAME.fullmatch(name):
            raise imports.BadInput(f"name={name[:40]!r}: an experiment name (letters, digits, '.', '_', '-')")
        imp.rename(name)
    shown = "./lab import " + shlex.join(argv)
    dest = write_run(keys.get("run"), imp, path, keys.get("topology"), shown)
    try:
        run = front.read(dest)
        drawn = front.draw(run)
    except front.Unreadable as e:       # an import that fails after writing leaves no run folder
        shutil.rmtree(dest, ignore_errors=True)
        raise imports.BadInput(f"{path}: the imported run cannot be drawn ({e}): no run folder left") from None
    n = sum(len(rs) for rs in imp.rows.values())
    print(visible(f"import: {imp.format} {os.path.basename(path)}: {imp.points()} points, {n} rows: {dest}"),
          file=sys.stderr)
    for e in run.experiments:
        words = front.scaling_words(e, drawn.report_md)
        if words:
            print(visible(words[0].replace("How it scales", f"How {e.name} scales", 1)))
            for line in words[1:]:
                print(visible(line))
    return 0


if __name__ == "__main__":
    run(main)
