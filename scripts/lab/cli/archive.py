#!/usr/bin/env python3
"""Pack a run, or replay a packed run's sweep on this host and compare the two.

  archive.py pack RUN          → results/RUN.tar.gz (data, raw, env, charts, report, sweep)
  archive.py replay ARCHIVE    → the same experiments, profile and overrides measured here with this
                                 checkout's own specs, then compare.py old new

An archive comes from another host: nothing in it is run. Its specs are shown, never executed; its
keys and overrides go through the engine's own checks, and member names are checked before unpacking.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib

from lab import ROOT
from lab.core.archive import MAX_TOP, members_of
from lab.core.runfolder import (
    KIND_IMPORTED,
    KIND_PUBLISHED,
    RunFolder,
    RunFolderError,
    find,
    hostname,
    kind_of,
    output_of,
    read_file,
    results_dir,
    run_name,
    stamp_now,
)
from lab.core.term import visible
from lab.engine import api
from lab.engine.spec import ENGINE_KEYS, TARGET_KEYS, Spec, spec_dir
from lab.errors import LabError, program, run
from lab.report import front


def pack(name):
    rf = find(name)
    if rf is None:
        raise LabError(f"{name!r} is not a run folder (expected results/<run>/ with sweep/)")
    run = rf.path
    out = run + ".tar.gz"
    with output_of(out, os.path.dirname(out)) as tmp, tarfile.open(tmp, "w:gz") as t:
        t.add(run, arcname=os.path.basename(run))
    print(visible(f"archive: {out} ({os.path.getsize(out) // 1024} KiB)"), file=sys.stderr)


MAX_HOURS = 24              # a replay priced above this is refused


def safe_extract(archive, dest):
    """Regular files and folders under one top folder only: no links, devices, absolute or .. paths,
    nothing sparse, nothing beyond the bounds above."""
    try:
        t = tarfile.open(archive)
        with t:
            members, top = members_of(archive, t)
            for m in members:
                m.mode = 0o755 if m.isdir() else 0o644
                t.extract(m, dest, set_attrs=False)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise LabError(f"cannot read {archive}: {e}") from None
    return os.path.join(dest, top)


def read_args(path, archive):
    """sweep/args.json of a received run, checked for shape: {"profile": name, "perf": 0|1,
    "overrides": {key: text}, "experiments": [name…]}. Its values then pass the engine's own checks
    and bounds (a dry run) before anything is measured."""
    where = f"{archive}: sweep/args.json"
    text = read_file(path, "json", os.path.dirname(os.path.dirname(path)))   # the safe reader: ≤ 1 MiB, a regular file
    try:
        args = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise LabError(f"{where}: not valid JSON ({type(e).__name__}: {str(e)[:80]})") from None
    name = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
    ok = (isinstance(args, dict) and isinstance(args.get("profile", "default"), str)
          and name.fullmatch(args.get("profile", "default")) and args.get("perf", 0) in (0, 1, "stat")
          and isinstance(args.get("overrides", {}), dict)
          and all(isinstance(k, str) and isinstance(v, str) for k, v in args.get("overrides", {}).items())
          and isinstance(args.get("experiments"), list)
          and all(isinstance(x, str) and name.fullmatch(x) for x in args["experiments"]))
    if not ok:
        raise LabError(f"{where}: expected an object {{\"profile\": NAME, \"perf\": 0, 1 or \"stat\", \"overrides\": "
                       f"{{KEY: TEXT}}, \"experiments\": [NAME…]}}")
    return args


def settings(overrides, say=True):
    """The overrides a replay applies: measurement settings only. Keys that choose hosts, servers,
    contact points or files (lab/engine/spec.py's TARGET_KEYS) and the sweep's own keys (run=, history=,
    topology=, …) are dropped, each said in one line."""
    out = {}
    for k, v in overrides.items():
        if (k in TARGET_KEYS or k in ENGINE_KEYS) and say:
            print(visible(f"archive: not applying {k}={v[:80]}: an archive carries measurement settings only, "
                          + ("not the hosts, servers or files a replay talks to" if k in TARGET_KEYS
                             else "not the sweep command")),
                  file=sys.stderr)
        if k not in TARGET_KEYS and k not in ENGINE_KEYS:
            out[k] = v
    return out


def local_specs():
    out = {}
    d = spec_dir(ROOT)
    for name in sorted(os.listdir(d)):
        if name.endswith(".spec"):
            s = Spec(os.path.join(d, name))
            out[s.lines[("experiment", None)][0][0]] = s
    return out


SHOWN = 4096        # characters of a foreign spec shown (a 20 KB archive held an 80 MiB spec)


def show_spec(path, run):
    """The first SHOWN characters of an archive's spec (through the safe reader), indented and visible,
    then how much was left out; a spec it refuses is said in one line."""
    try:
        text = read_file(path, "text", run)
    except RunFolderError as e:
        print(visible(f"    (not shown: {e})"), file=sys.stderr)
        return
    if text is None:
        return
    head = text[:SHOWN]
    sys.stderr.write("".join(f"    {visible(ln, lines=True)}" for ln in head.splitlines(True)))
    if len(text) > SHOWN:
        print(f"\n    (… {len(text) - SHOWN} more characters, {text.count(chr(10), SHOWN)} more lines, not shown)",
              file=sys.stderr)


def replay(archive):
    if not os.path.isfile(archive):
        raise LabError(f"no such archive: {archive}")
    work = tempfile.mkdtemp()
    try:
        old_rf = RunFolder(safe_extract(archive, work))
        old = old_rf.path
        rec = old_rf.import_record()
        kind = kind_of(rec)
        if kind == KIND_IMPORTED:   # another tool's file (./lab import): its commands are its own
            raise LabError(f"{os.path.basename(old)} is imported from {rec.get('source', '?')}: the lab did not "
                           "measure it and keeps no spec to replay; measure the same command here with `./lab scale` "
                           "and `./lab compare` the two runs")
        if kind == KIND_PUBLISHED:  # a published matrix read by import-c2c: nothing was measured, nothing can be re-run
            raise LabError(f"{os.path.basename(old)} is an imported published matrix ({rec.get('source', '?')}): "
                           "it has no spec to replay; measure this host with `./lab c2c-matrix` and `./lab compare` "
                           "the two runs")
        if not os.path.exists(old_rf.sweep_file("args.json")):
            raise LabError(f"{archive}: no sweep/args.json: a run without it (an imported run, or one made by an "
                           "older engine) has no sweep to replay; compare it with ./lab compare instead")
        args = read_args(old_rf.sweep_file("args.json"), archive)
        mine = local_specs()
        specs = []
        for exp in args["experiments"]:
            theirs = old_rf.spec_path(exp)
            if exp not in mine:
                print(visible(f"archive: {exp}: no local spec measures it; its spec is shown, not run:"),
                      file=sys.stderr)
                show_spec(theirs, old)
                continue
            specs.append(mine[exp].path)
        if not specs:
            raise LabError("nothing to replay: no experiment of the archive has a local spec")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(old))[:MAX_TOP]
        new = os.path.join(results_dir(), run_name(stamp_now(), hostname(), f"replay-{name}"))
        asked = [f"profile={args['profile']}", f"perf={args['perf']}"]
        asked += [f"{k}={v}" for k, v in settings(args.get("overrides", {})).items()]
        argv = asked + [f"run={new}"]
        print(visible(f"archive: replaying {os.path.basename(old)} here into {new}: {' '.join(argv)}"), file=sys.stderr)
        # The price first: the engine checks and bounds every value the archive asks for, and the
        # dry run shows what it costs; a replay priced above MAX_HOURS, expected or at worst (every run to
        # its timeout and retried: a sender sets retries=1000 retry_pause=86400 with guards that always
        # fire), is refused.
        price = api.dry_run(api.request([*asked, "dry=1", *specs]), sys.stdout)
        if price.expected > MAX_HOURS * 3600:
            raise LabError(f"the archive asks for {price.line()}: more than {MAX_HOURS} h; replay its experiments "
                           "yourself with fewer repeats (./lab sweep …)")
        if price.worst > MAX_HOURS * 3600:
            raise LabError(f"the archive's settings could take {price.worst / 3600:.3g} h at worst (every run to "
                           "its timeout and retried: points × repeats × (1 + retries) × (timeout + retry_pause)), "
                           f"more than {MAX_HOURS} h; replay its experiments yourself with a smaller timeout, "
                           "retries or retry_pause (./lab sweep …)")
        # a Ctrl-C stops it cleanly (teardown, state): 130
        outcome, _run = front.after_sweep(api.run(api.request(argv + specs)))
        for line in outcome.lines():
            print(line, file=sys.stderr)
        rc = outcome.code
        if rc == 130:
            raise LabError(f"interrupted: the repeats measured so far are in {new}; resume them with: "
                           f"./lab sweep {' '.join(shlex.quote(a) for a in argv)} "
                           + " ".join(shlex.quote(os.path.relpath(s, ROOT)) for s in specs))
        if rc == 2:
            return 2
        out = os.path.join(new, f"compare-with-{name}.md")
        subprocess.run([sys.executable, "-m", "lab.cli.compare", old, new, out],
                       stdout=subprocess.DEVNULL, check=False)
        print(visible(f"archive: comparison: {out}"), file=sys.stderr)
        return rc
    finally:
        shutil.rmtree(work, ignore_errors=True)


@program("archive")
def main(argv):
    if len(argv) == 2 and argv[0] == "pack":
        pack(argv[1])
        return 0
    if len(argv) == 2 and argv[0] == "replay":
        return replay(argv[1])
    raise LabError("usage: archive.py pack RUN | replay ARCHIVE.tar.gz")


if __name__ == "__main__":
    run(main)
