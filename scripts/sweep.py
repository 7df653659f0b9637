#!/usr/bin/env python3
"""The sweep engine: experiments over placements × threads × variants × repeats into one run folder.

  scripts/sweep.py [KEY=VALUE…] [experiments/NAME.spec…]

With no spec, every experiments/*.spec whose `sweep` key is not `no`. The sweep's own keys:
  profile=NAME      use the spec lines `key[NAME] = …` (default: default)
  perf=0|1          record every point with perf (docs/instruments.md)
  run=DIR           the run folder (default: resume this host's newest unfinished run of the same
                    arguments, else results/<UTC time>-<host>)
  dry=1             measure nothing: print every point, what is impossible and why, and the ETA
  topology=X        with dry=1 only: price the sweep on an hwloc XML file or synthetic string
  kind=K            on a hybrid CPU, place threads on this CPU kind (p, e, all, …: topo.py --kind)
Any other KEY=VALUE overrides that spec key in every spec (threads, repeats, ci, placements, …);
docs/instruments.md lists them. Exit: 0 complete, 1 points failed, 2 bad input (nothing run),
130 interrupted (run the same command again to resume).
"""
import fcntl
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine import price as pr  # noqa: E402
from engine.plan import plan  # noqa: E402
from engine.point import check_quoting, expand_args  # noqa: E402
from engine.spec import SpecError, default_specs, load, overrides_from, profiles  # noqa: E402
from engine.sweep import Sweep, identity, write_state  # noqa: E402
from term import visible  # noqa: E402
from topo import PlacementError, Topology  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE_KEYS = ("profile", "perf", "run", "dry", "topology", "kind")


def die(msg):
    print(f"error: {visible(msg)}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    keys, paths = {}, []
    pairs = []
    for arg in argv:
        k, eq, v = arg.partition("=")
        # KEY=VALUE when the part before '=' is a key's name (`profile=x.spec` too); else a spec path
        if eq and k.isidentifier():
            pairs.append((k, v))
            if k in ENGINE_KEYS:
                keys[k] = v
        elif arg.endswith(".spec"):
            if not os.path.isfile(arg):
                die(f"no such spec: {arg}")
            paths.append(arg)
        else:
            die(f"unknown argument '{arg}' (expected KEY=VALUE or a .spec file)")
    for k, allowed in (("perf", ("0", "1")), ("dry", ("0", "1"))):
        if keys.get(k, "0") not in allowed:
            die(f"{k} must be 0 or 1, not {keys[k]!r}")
    return keys, pairs, paths


def results_dir():
    return os.environ.get("LAB_RESULTS") or os.path.join(ROOT, "results")


def hostname():
    return socket.gethostname().split(".")[0]


def locked(folder):
    """Take the run folder's lock, or None when another sweep holds it."""
    os.makedirs(os.path.join(folder, "sweep"), exist_ok=True)
    f = open(os.path.join(folder, "sweep", "lock"), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    except OSError as e:    # a file system without locks (9p in the test guests): say so, go on
        print(f"warning: cannot lock {folder} ({e.strerror}): do not run two sweeps into it", file=sys.stderr)
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def project_profiles():
    """The profiles the project's own specs name: `profile=smoke` is known even to a spec without
    smoke lines (it then runs its defaults)."""
    try:
        return profiles(default_specs(ROOT, "default"))
    except (SpecError, OSError):
        return set()


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def choose_run(keys, signature, ident):
    """(folder, lock, note). An explicit run= is resumed only with the same code; an automatic
    resume skips runs that are locked or were measured with other code, saying why."""
    if keys.get("run"):
        run = os.path.abspath(keys["run"])
        if os.path.isdir(run) and os.listdir(run) and not os.path.isdir(os.path.join(run, "sweep")):
            die(f"{run} exists and is not a run folder (no sweep/): name a new folder or a run")
        if os.path.isdir(os.path.join(run, "sweep")):
            theirs = read(os.path.join(run, "sweep", "signature"))
            if theirs and theirs != signature:
                die(f"{run} was swept with other arguments ({theirs}); this command asks for {signature}: "
                    "resume it with its own arguments (sweep/command), or start a new run (omit run=)")
            before = read(os.path.join(run, "sweep", "identity.json"))
            if before and json.loads(before) != ident:
                die(f"{run} was measured with other code ({json.loads(before)['commit'][:12]}, diff "
                    f"{json.loads(before)['diff_sha256'][:8]}); this checkout is {ident['commit'][:12]}, diff "
                    f"{ident['diff_sha256'][:8]}: resume it from that code, or start a new run (omit run=)")
        lock = locked(run)
        if lock is None:
            die(f"another sweep is writing {run} (pid {read(os.path.join(run, 'sweep', 'lock'))})")
        return run, lock, f"run folder {run}"
    results = results_dir()
    notes = []
    host = hostname()
    if os.path.isdir(results):
        for name in sorted(os.listdir(results), reverse=True):
            d = os.path.join(results, name)
            if not name.endswith(f"-{host}") or not os.path.isdir(os.path.join(d, "sweep")):
                continue
            if read(os.path.join(d, "sweep", "state")) == "complete" or \
                    read(os.path.join(d, "sweep", "signature")) != signature:
                continue
            before = read(os.path.join(d, "sweep", "identity.json"))
            if before and json.loads(before) != ident:
                notes.append(f"not resuming {d}: it was measured with other code")
                continue
            lock = locked(d)
            if lock is None:
                notes.append(f"not resuming {d}: another sweep is writing it")
                continue
            return d, lock, "; ".join(notes + [f"resuming {d}"])
    os.makedirs(results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for i in range(1, 100):
        run = os.path.join(results, f"{stamp}-{host}" if i == 1 else f"{stamp}.{i}-{host}")
        try:
            os.makedirs(run)
            break
        except FileExistsError:
            continue
    return run, locked(run), "; ".join(notes + [f"new run {run}"])


def main(argv):
    keys, pairs, paths = parse_args(argv)
    profile = keys.get("profile", "default")
    dry = keys.get("dry") == "1"
    if keys.get("topology") and not dry:
        die("topology= describes a host you do not have: use it with dry=1; a sweep measures only this host")
    t0 = time.monotonic()
    try:
        overrides = overrides_from(pairs, ENGINE_KEYS)
        specs = load(paths) if paths else default_specs(ROOT, profile)
        if not specs:
            die("no experiment to sweep (experiments/*.spec is empty)")
        known = profiles(specs) | project_profiles()
        if profile not in known:
            die(f"unknown profile {profile!r}: the specs name {', '.join(sorted(known))}")
        resolved = [s.resolve(profile, overrides) for s in specs]
        for s, r in zip(specs, resolved):
            check_quoting(expand_args(r["command"], r["args"]), s.where("command", profile))
    except SpecError as e:
        die(str(e))
    try:
        topo = Topology(keys.get("topology") or None, kind=keys.get("kind") or None)
        plans = {r.name: plan(r, topo) for r in resolved}
    except PlacementError as e:
        die(f"placement: {e}")
    plan_ms = (time.monotonic() - t0) * 1000
    if dry:
        where = keys.get("topology") or f"this host ({hostname()})"
        print(visible(f"# dry run on {where}: profile {profile}, overrides: "
                      f"{' '.join(f'{k}={v}' for k, v in overrides.items()) or 'none'}"))
        pr.price(resolved, plans, profile, results_dir(), not keys.get("topology"), sys.stdout)
        return 0

    perf = int(keys.get("perf", "0"))
    signature = (f"profile={profile} perf={perf} topology=host kind={keys.get('kind', '')} "
                 + " ".join(f"{k}={v}" for k, v in sorted(overrides.items())) + " "
                 + " ".join(sorted(r.name for r in resolved)))
    ident = identity(ROOT)
    run, lock, note = choose_run(keys, signature, ident)
    print(note, file=sys.stderr)
    sweep_dir = os.path.join(run, "sweep")
    for d in ("sweep/specs", "data/points", "raw", "plots"):
        os.makedirs(os.path.join(run, d), exist_ok=True)
    # A point file being written when the last sweep was killed is not a point: drop it. Only the
    # engine's own temporary names, only where the engine writes them (data/points/*/, data/).
    for d in glob.glob(os.path.join(glob.escape(run), "data", "points", "*")):
        for f in glob.glob(os.path.join(glob.escape(d), "*.csv.tmp")):
            os.remove(f)
    for f in glob.glob(os.path.join(glob.escape(run), "data", ".tmp-*")):
        os.remove(f)
    for name, text in (("signature", signature), ("command", "scripts/sweep.py " + " ".join(argv)),
                       ("state", "running"), ("identity.json", json.dumps(ident)),
                       ("args.json", json.dumps({"profile": profile, "perf": perf, "overrides": overrides,
                                                 "experiments": [r.name for r in resolved]}))):
        write_atomic(os.path.join(sweep_dir, name), text + "\n")
    for r in resolved:
        if any(shutil.which(t) is None for t in r["requires"].split()):
            continue    # skipped whole (the journal says why): no spec as run, no data
        with open(os.path.join(sweep_dir, "specs", f"{r.name}.spec"), "w") as f:
            f.write(r.snapshot(f"{os.path.basename(r.path)}, profile {profile}, overrides: "
                               f"{' '.join(f'{k}={v}' for k, v in overrides.items()) or 'none'}"))
    if not os.path.isdir(os.path.join(run, "env")):
        # captured beside, then renamed: a capture cut off (kill -9) leaves env.tmp, which the next
        # resume throws away and captures again, never a half env/ that stays
        tmp = os.path.join(run, "env.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([os.path.join(ROOT, "scripts", "env.sh"), tmp], check=False)
        if os.path.isdir(tmp):
            os.replace(tmp, os.path.join(run, "env"))
    sweep = Sweep(ROOT, run, resolved, topo, {"perf": perf})
    sweep.journal.event("sweep", f"sweep {' '.join(argv)}", args=argv, profile=profile, perf=perf,
                        overrides=overrides, experiments=[r.name for r in resolved], plan_ms=round(plan_ms, 1),
                        **ident)
    if perf:
        sweep.journal.event("perf", f"perf: recording with -e {sweep.perf_event}"
                            + (" (no hardware counters here)" if sweep.perf_event == "cpu-clock" else ""),
                            perf_event=sweep.perf_event)
    try:
        code = sweep.run_all()
    except OSError as e:   # a full disk, a folder removed under the sweep: say so, keep what is measured
        try:
            write_state(run, "incomplete")
        except OSError:
            pass
        print(f"error: cannot write into {run}: {e}; the repeats measured so far are kept: fix it and run "
              "the same command again to resume", file=sys.stderr)
        return 1
    drawn = True
    for script in ("charts.py", "report.py"):
        if subprocess.run([os.path.join(ROOT, "scripts", script), run]).returncode != 0:
            print(f"{script} failed (see above)", file=sys.stderr)
            drawn = drawn and script != "report.py"
    print(f"run folder: {run}\n" + (f"report:     {os.path.join(run, 'report.html')} (and report.md; ./lab open {run})"
                                    if drawn else "report:     none written (see above)"), file=sys.stderr)
    if code == 1:
        print(f"{sweep.failed} point(s) failed: see {sweep_dir}/journal.log; run the same command again to "
              "retry them", file=sys.stderr)
    lock.close()
    return code


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as e:    # a full disk while preparing the run folder: one line, nothing lost
        print(f"error: cannot write: {e}; the repeats measured so far are kept: free space and run the same "
              "command again to resume", file=sys.stderr)
        sys.exit(1)
