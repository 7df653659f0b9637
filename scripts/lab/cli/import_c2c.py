#!/usr/bin/env python3
"""Import a published core-to-core latency matrix (nviennot/core-to-core-latency's --csv) as a run.

  import_c2c.py FILE topology=FILE|STRING [name=CPU] [source=TEXT] [run=DIR]
  import_c2c.py catalogue [NAME…]        every machine of reference/c2c/catalogue.csv (or the named ones)

Writes a run folder of experiment c2c-matrix (default results/<UTC time>-published-<name>/) with its
heatmap and report, and prints the per-relation summary on stdout:
relation,pairs,median_ns,p10_ns,p90_ns. Bad input: one line naming file:line, exit 2, no run folder.
"""
import os
import re
import shutil
import sys

from lab.core import c2c_published as C
from lab.core.runfolder import results_dir, run_name, stamp_now
from lab.core.term import visible
from lab.errors import program, run
from lab.report import front

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = ("topology", "name", "source", "run")


def new_dest(name):
    """results/<UTC stamp>-published-<name>: the machine's name stands where a host's would."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "matrix"
    stamp = stamp_now()
    for n in range(1, 1000):
        path = os.path.join(results_dir(), run_name(stamp, slug, "published", n))
        if not os.path.exists(path):
            return path
    raise C.C2CError(f"{results_dir()}: no free run folder name for {slug}")


def import_one(path, topology, name, source, dest, entry=None):
    dest = os.path.abspath(dest or new_dest(name))
    rows = C.write_run(dest, path, topology, name, source, entry)
    try:
        front.draw(front.read(dest))
    except front.Unreadable as e:       # an import that fails after writing leaves no run folder
        shutil.rmtree(dest, ignore_errors=True)
        raise C.C2CError(f"{path}: the imported matrix cannot be drawn ({e}): no run folder left") from None
    print(visible(f"import-c2c: {name}: {dest}"), file=sys.stderr)
    return rows


@program("import-c2c")
def main(argv):
    if argv[:1] == ["catalogue"]:
        entries = C.catalogue()
        wanted = argv[1:]
        unknown = [w for w in wanted if w not in {e["name"] for e in entries}]
        if unknown:
            raise C.C2CError(f"{C.CATALOGUE}: no machine named {unknown[0]!r} "
                             f"(known: {' '.join(e['name'] for e in entries)})")
        for e in entries:
            if wanted and e["name"] not in wanted:
                continue
            rows = import_one(e["path"], e["topology"], e["cpu"], C.cite(e), new_dest(e["name"]), e)
            sys.stdout.write(f"# {e['name']}: {e['cpu']} ({C.cite(e)})\n" + C.summary_csv(rows))
        return 0
    files = [a for a in argv if "=" not in a]
    keys = dict(a.split("=", 1) for a in argv if "=" in a)
    bad = sorted(set(keys) - set(KEYS))
    if len(files) != 1 or bad or not keys.get("topology"):
        why = f"unknown key {bad[0]}=" if bad else "one matrix FILE and topology= are needed"
        print(f"import-c2c: {why}\n{__doc__.strip()}", file=sys.stderr)
        return 2
    path = files[0]
    name = keys.get("name") or os.path.splitext(os.path.basename(path))[0]
    rows = import_one(path, keys["topology"], name, keys.get("source") or f"file {os.path.basename(path)}",
                      keys.get("run"))
    sys.stdout.write(C.summary_csv(rows))
    return 0


if __name__ == "__main__":
    run(main)
