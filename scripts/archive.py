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
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from c2c_published import imported  # noqa: E402
from engine.spec import ENGINE_KEYS, Spec, SpecError, spec_dir  # noqa: E402
from runfolder import RunFolder, find, hostname, results_dir, run_name, stamp_now  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print(f"archive: {msg}", file=sys.stderr)
    sys.exit(2)


def pack(name):
    rf = find(name)
    if rf is None:
        die(f"{name!r} is not a run folder (expected results/<run>/ with sweep/)")
    run = rf.path
    out = run + ".tar.gz"
    with tarfile.open(out + ".tmp", "w:gz") as t:
        t.add(run, arcname=os.path.basename(run))
    os.replace(out + ".tmp", out)
    print(f"archive: {out} ({os.path.getsize(out) // 1024} KiB)", file=sys.stderr)


def safe_extract(archive, dest):
    """Regular files and folders under one top folder only: no links, devices, absolute or .. paths."""
    try:
        t = tarfile.open(archive)
    except (tarfile.TarError, OSError) as e:
        die(f"cannot read {archive}: {e}")
    with t:
        members = t.getmembers()
        tops = set()
        for m in members:
            parts = m.name.split("/")
            if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                die(f"{archive}: refusing member {m.name!r} (links, devices, absolute and .. paths are not unpacked)")
            tops.add(parts[0])
        if len(tops) != 1:
            die(f"{archive}: expected one run folder inside, found {len(tops)}")
        for m in members:
            m.mode = 0o755 if m.isdir() else 0o644
            t.extract(m, dest, set_attrs=False)
    return os.path.join(dest, tops.pop())


def local_specs():
    out = {}
    d = spec_dir(ROOT)
    for name in sorted(os.listdir(d)):
        if name.endswith(".spec"):
            s = Spec(os.path.join(d, name))
            out[s.lines[("experiment", None)][0][0]] = s
    return out


def replay(archive):
    if not os.path.isfile(archive):
        die(f"no such archive: {archive}")
    work = tempfile.mkdtemp()
    try:
        old_rf = RunFolder(safe_extract(archive, work))
        old = old_rf.path
        rec = imported(old)
        if rec:     # a published matrix read by import-c2c: nothing was measured, nothing can be re-run
            die(f"{os.path.basename(old)} is an imported published matrix ({rec.get('source', '?')}): it has no "
                "spec to replay; measure this host with `./lab c2c-matrix` and `./lab compare` the two runs")
        if not os.path.exists(old_rf.sweep_file("args.json")):
            die(f"{archive}: no sweep/args.json: a run without it (an imported run, or one made by an older "
                "engine) has no sweep to replay; compare it with ./lab compare instead")
        args = json.load(open(old_rf.sweep_file("args.json")))
        mine = local_specs()
        specs = []
        for exp in args["experiments"]:
            theirs = old_rf.spec_path(exp)
            if exp not in mine:
                print(f"archive: {exp}: no local spec measures it; its spec is shown, not run:", file=sys.stderr)
                if os.path.exists(theirs):
                    sys.stderr.write("".join(f"    {ln}" for ln in open(theirs, errors="replace")))
                continue
            specs.append(mine[exp].path)
        if not specs:
            die("nothing to replay: no experiment of the archive has a local spec")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(old))
        new = os.path.join(results_dir(), run_name(stamp_now(), hostname(), f"replay-{name}"))
        argv = [f"profile={args['profile']}", f"perf={args['perf']}", f"run={new}"]
        argv += [f"{k}={v}" for k, v in args.get("overrides", {}).items() if k not in ENGINE_KEYS]
        print(f"archive: replaying {os.path.basename(old)} here into {new}: {' '.join(argv)}", file=sys.stderr)
        rc = subprocess.run([os.path.join(ROOT, "scripts", "sweep.py"), *argv, *specs]).returncode
        if rc == 2:
            return 2
        out = os.path.join(new, f"compare-with-{name}.md")
        subprocess.run([os.path.join(ROOT, "scripts", "compare.py"), old, new, out],
                       stdout=subprocess.DEVNULL, check=False)
        print(f"archive: comparison: {out}", file=sys.stderr)
        return rc
    except SpecError as e:
        die(str(e))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv):
    if len(argv) == 2 and argv[0] == "pack":
        pack(argv[1])
        return 0
    if len(argv) == 2 and argv[0] == "replay":
        return replay(argv[1])
    die("usage: archive.py pack RUN | replay ARCHIVE.tar.gz")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
