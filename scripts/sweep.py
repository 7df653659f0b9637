#!/usr/bin/env python3
"""The sweep engine: experiments over placements × threads × variants × repeats into one run folder.

  scripts/sweep.py [KEY=VALUE…] [experiments/NAME.spec…]

With no spec, every experiments/*.spec whose `sweep` key is not `no`. The sweep's own keys:
  profile=NAME      use the spec lines `key[NAME] = …` (default: default)
  perf=0|1|stat     1: record every point with perf (docs/instruments.md); stat: count cycles,
                    instructions, cache and LLC misses, switches, migrations where the PMU allows
  run=DIR           the run folder (default: resume this host's newest unfinished run of the same
                    arguments, else results/<UTC time>-<host>)
  dry=1             measure nothing: print every point, what is impossible and why, and the ETA
  topology=X        with dry=1 only: price the sweep on an hwloc XML file or synthetic string
  history=FILE      with dry=1 only: seconds per run, repeats and re-measure rates from another host's
                    history summary (scripts/history.py there; fleet-plan fetches it), not this host's runs
  kind=K            on a hybrid CPU, place threads on this CPU kind (p, e, all, …: topo.py --kind)
  seed=N            the seed of the variants' shuffled order in each round (default: from the run's name;
                    the journal's `round` events record the seed and the order)
  why=1             after each point's timed repeats, why_runs=N (1–10, default 3) evidence runs under
                    perf record (on-CPU, off-CPU per reason, futex waits, scheduling; docs/design.md
                    "Why it stops scaling: evidence") into raw/<exp>/<point>_why/; never in a timed repeat
  draw=0            measure only: no charts or report at the end (draw them later, anywhere, with
                    `./lab report RUN`: a slow or emulated host need not spend its time drawing)
Any other KEY=VALUE overrides that spec key in every spec (threads, repeats, ci, placements, …);
docs/instruments.md lists them. Exit: 0 complete, 1 points failed, 2 bad input (nothing run),
130 interrupted (run the same command again to resume).
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from c2c_published import imported  # noqa: E402
from engine import perfstat  # noqa: E402
from engine import price as pr  # noqa: E402
from engine.history import HistoryError  # noqa: E402
from engine.history import load as load_history  # noqa: E402
from engine.history import local as local_history  # noqa: E402
from engine.plan import plan  # noqa: E402
from engine.point import check_program, check_quoting, expand_args  # noqa: E402
from engine.spec import ENGINE_KEYS, WHY_RUNS, SpecError, default_specs, load, overrides_from, profiles  # noqa: E402
from engine.sweep import Sweep, identity  # noqa: E402
from runfolder import RunFolderError, choose, hostname, results_dir  # noqa: E402
from term import visible  # noqa: E402
from topo import PlacementError, Topology  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    for k, allowed in (("perf", ("0", "1", "stat")), ("dry", ("0", "1")), ("draw", ("0", "1")), ("why", ("0", "1"))):
        if keys.get(k, "0") not in allowed:
            die(f"{k} must be {' or '.join(allowed)}, not {keys[k]!r}")
    lo, hi, _ = WHY_RUNS
    if "why_runs" in keys and not (keys["why_runs"].isascii() and keys["why_runs"].isdigit()
                                   and lo <= int(keys["why_runs"]) <= hi):
        die(f"why_runs must be a whole number from {lo} to {hi}, not {keys['why_runs']!r}")
    if "why_runs" in keys and keys.get("why") != "1":
        die("why_runs= counts the evidence runs of why=1: add why=1")
    if "seed" in keys and not (keys["seed"].isdigit() and len(keys["seed"]) <= 18):
        die(f"seed must be a whole number (at most 18 digits), not {keys['seed']!r}")
    return keys, pairs, paths


def why_runs(keys):
    """Evidence runs per point: 0 without why=1, else why_runs (default WHY_RUNS' third)."""
    return int(keys.get("why_runs", WHY_RUNS[2])) if keys.get("why") == "1" else 0


def project_profiles():
    """The profiles the project's own specs name: `profile=smoke` is known even to a spec without
    smoke lines (it then runs its defaults)."""
    try:
        return profiles(default_specs(ROOT, "default"))
    except (SpecError, OSError):
        return set()


def main(argv, shown=None):
    """shown: the command line to record in sweep/command, when another program (scale.py) runs the sweep."""
    keys, pairs, paths = parse_args(argv)
    profile = keys.get("profile", "default")
    dry = keys.get("dry") == "1"
    if keys.get("topology") and not dry:
        die("topology= describes a host you do not have: use it with dry=1; a sweep measures only this host")
    if keys.get("history") and not dry:
        die("history= prices a dry run from another host's runs: use it with dry=1")
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
            if r["exec"]:
                if not dry:    # a host you have not booked need not have the program
                    check_program(r, s.where("exec", profile), ROOT)
            else:
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
        try:
            history = load_history(keys["history"]) if keys.get("history") else \
                None if keys.get("topology") else local_history(results_dir())
        except HistoryError as e:
            die(f"history={e}")
        where = keys.get("topology") or f"this host ({hostname()})"
        print(visible(f"# dry run on {where}: profile {profile}, overrides: "
                      f"{' '.join(f'{k}={v}' for k, v in overrides.items()) or 'none'}"))
        pr.price(resolved, plans, profile, history, not keys.get("topology"), sys.stdout, why_runs(keys))
        return 0

    perf = keys.get("perf", "0")
    perf = "stat" if perf == "stat" else int(perf)     # stat: perf stat counters (engine/perfstat.py)
    why = why_runs(keys)
    signature = (f"profile={profile} perf={perf} topology=host kind={keys.get('kind', '')} "
                 + (f"why={why} " if why else "")
                 + " ".join(f"{k}={v}" for k, v in sorted(overrides.items())) + " "
                 + " ".join(sorted(r.name for r in resolved)))
    ident = identity(ROOT)
    if keys.get("run") and imported(os.path.abspath(keys["run"])):
        die(f"{os.path.abspath(keys['run'])} is an imported published matrix: it has no spec and takes no "
            "measurement; omit run=")
    try:
        rf, lock, note = choose(os.path.abspath(keys["run"]) if keys.get("run") else None, signature, ident)
    except RunFolderError as e:
        die(str(e))
    print(note, file=sys.stderr)
    rf.make()
    rf.drop_partial()
    for name, text in (("signature", signature), ("command", shown or "scripts/sweep.py " + " ".join(argv)),
                       ("state", "running"), ("identity.json", json.dumps(ident)),
                       ("args.json", json.dumps({"profile": profile, "perf": perf, "why_runs": why,
                                                 "overrides": overrides,
                                                 "experiments": [r.name for r in resolved]}))):
        rf.write_text(f"sweep/{name}", text + "\n")
    for r in resolved:
        if any(shutil.which(t) is None for t in r["requires"].split()):
            continue    # skipped whole (the journal says why): no spec as run, no data
        rf.write_text(f"sweep/specs/{r.name}.spec",
                      r.snapshot(f"{os.path.basename(r.path)}, profile {profile}, overrides: "
                                 f"{' '.join(f'{k}={v}' for k, v in overrides.items()) or 'none'}"))
    if not os.path.isdir(rf.env_dir):
        # captured beside, then renamed: a capture cut off (kill -9) leaves env.tmp, which the next
        # resume throws away and captures again, never a half env/ that stays
        tmp = rf.env_dir + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([os.path.join(ROOT, "scripts", "env.sh"), tmp], check=False)
        if os.path.isdir(tmp):
            os.replace(tmp, rf.env_dir)
    sweep = Sweep(ROOT, rf, resolved, topo, {"perf": perf, "why_runs": why,
                                             "seed": int(keys["seed"]) if "seed" in keys else None})
    sweep.journal.event("sweep", f"sweep {' '.join(argv)}", args=argv, profile=profile, perf=perf, seed=sweep.seed,
                        overrides=overrides, experiments=[r.name for r in resolved], plan_ms=round(plan_ms, 1),
                        **ident)
    if perf == "stat":
        counted, missing = perfstat.probe()
        sweep.journal.event("perf_stat", "perf stat: counting " + (", ".join(counted) or "nothing")
                            + (f"; not countable here (no PMU in this VM, or perf_event_paranoid): {', '.join(missing)}"
                               if missing else ""), counted=counted, missing=missing)
    elif perf:
        sweep.journal.event("perf", f"perf: recording with -e {sweep.perf_event}"
                            + (" (no hardware counters here)" if sweep.perf_event == "cpu-clock" else ""),
                            perf_event=sweep.perf_event)
    try:
        code = sweep.run_all()
    except OSError as e:   # a full disk, a folder removed under the sweep: say so, keep what is measured
        try:
            rf.set_state("incomplete")
        except OSError:
            pass
        print(f"error: cannot write into {rf.path}: {e}; the repeats measured so far are kept: fix it and run "
              "the same command again to resume", file=sys.stderr)
        return 1
    drawn = keys.get("draw", "1") == "1"
    for script in ("charts.py", "report.py") if drawn else ():
        if subprocess.run([os.path.join(ROOT, "scripts", script), rf.path]).returncode != 0:
            print(f"{script} failed (see above)", file=sys.stderr)
            drawn = drawn and script != "report.py"
    print(f"run folder: {rf.path}\n" + (f"report:     {rf.report_html} (and report.md; ./lab open {rf.path})"
                                        if drawn else "report:     none written (" + (
                                            "see above)" if keys.get("draw", "1") == "1" else
                                            f"draw=0: ./lab report {rf.path})")), file=sys.stderr)
    if drawn is False and keys.get("draw", "1") == "1" and code == 0:
        code = 1        # asked for a report and wrote none: not a success
    if code == 1:
        print(f"{sweep.failed} point(s) failed: see {rf.journal_log}; run the same command again to "
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
