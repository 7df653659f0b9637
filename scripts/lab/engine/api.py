"""The engine's front door: a sweep's price and its run, in-process, as typed results.

  req = api.request(["profile=smoke", "experiments/cache-get.spec"])   # parsed, checked, planned
  api.price(req)  -> price.Price     every point, per experiment and in all: expected, range, worst case
  api.run(req)    -> Outcome         the run folder the sweep wrote, its exit status, repeats done, failed

Every program that prices or runs a sweep (sweep.py, scale.py, archive.py, fleet/, bench_lab.py,
bench_scale.py) calls these: none parses another's printed text or guesses the folder a sweep wrote.
Bad input raises EngineError (one line; nothing run, no run folder made). The sweep's progress line
counts from the same price (lab/engine/rounds.py).
"""
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from lab import ROOT
from lab.core.runfolder import KIND_PUBLISHED, KIND_SWEEP, RunFolderError, choose, hostname, kind, results_dir
from lab.core.term import visible
from lab.errors import LabError
from lab.topology.topo import PlacementError, Topology

from . import perfstat
from . import price as pr
from .plan import plan
from .point import check_program, check_quoting, expand_args
from .pricehistory import HistoryError
from .pricehistory import load as load_history
from .pricehistory import local as local_history
from .rounds import Sweep, identity
from .spec import ENGINE_KEYS, WHY_RUNS, SpecError, default_specs, duration, load, overrides_from, profiles


class EngineError(LabError):
    """Bad input: str() is the one line to show; nothing was run."""


@dataclass(frozen=True)
class Request:
    """A sweep asked for, parsed, checked and planned; nothing measured yet."""
    argv: tuple
    keys: dict               # the sweep's own keys (ENGINE_KEYS) as given
    profile: str
    overrides: dict          # spec keys set for every spec
    specs: list              # resolved specs, in order
    topo: Topology
    plans: dict              # {experiment: [plan.Point]}
    plan_ms: float
    budget: float = 0.0      # seconds the sweep may take (budget=DURATION; the default sweep's own), 0: none
    budget_why: str = ""     # where the budget came from
    left_out: tuple = ()     # plan.Point left out to fit the budget (price.fit)
    dropped: tuple = ()      # (experiment, why) left out whole to fit the budget (price.fit_budget)

    @property
    def dry(self):
        return self.keys.get("dry") == "1"

    @property
    def why_runs(self):
        """Evidence runs per point: 0 without why=1, else why_runs (default WHY_RUNS' third)."""
        return int(self.keys.get("why_runs", WHY_RUNS[2])) if self.keys.get("why") == "1" else 0

    def overrides_text(self):
        return " ".join(f"{k}={v}" for k, v in self.overrides.items()) or "none"


@dataclass(frozen=True)
class Outcome:
    """What a sweep did: its run folder, exit status (0 complete, 1 points failed or no report, 2 a
    command rejected its input, 130 interrupted), repeats kept and failed in this session."""
    run: str
    code: int
    state: str
    done: int
    failed: int
    report: str              # report.html when drawn, else ""
    draw: bool               # a report was asked for (draw=1)
    journal_log: str
    error: str = ""          # the run folder could not be written (said on `out` already)

    def lines(self):
        """The sweep's closing words: where its folder and report are, what failed."""
        if self.error:
            return []
        out = [f"run folder: {self.run}",
               f"report:     {self.report} (and report.md; ./lab open {self.run})" if self.report else
               "report:     none written (" + ("see above)" if self.draw else f"draw=0: ./lab report {self.run})")]
        if self.code == 1 and self.failed:
            out.append(f"{self.failed} point(s) failed: see {self.journal_log}; run the same command again to "
                       "retry them")
        return out


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
                raise EngineError(f"no such spec: {arg}")
            paths.append(arg)
        else:
            raise EngineError(f"unknown argument '{arg}' (expected KEY=VALUE or a .spec file)")
    for k, allowed in (("perf", ("0", "1", "stat")), ("dry", ("0", "1")), ("draw", ("0", "1")), ("why", ("0", "1"))):
        if keys.get(k, "0") not in allowed:
            raise EngineError(f"{k} must be {' or '.join(allowed)}, not {keys[k]!r}")
    lo, hi, _ = WHY_RUNS
    if "why_runs" in keys and not (keys["why_runs"].isascii() and keys["why_runs"].isdigit()
                                   and lo <= int(keys["why_runs"]) <= hi):
        raise EngineError(f"why_runs must be a whole number from {lo} to {hi}, not {keys['why_runs']!r}")
    if "why_runs" in keys and keys.get("why") != "1":
        raise EngineError("why_runs= counts the evidence runs of why=1: add why=1")
    if "seed" in keys and not (keys["seed"].isdigit() and len(keys["seed"]) <= 18):
        raise EngineError(f"seed must be a whole number (at most 18 digits), not {keys['seed']!r}")
    return keys, pairs, paths


def project_profiles():
    """The profiles the project's own specs name: `profile=smoke` is known even to a spec without
    smoke lines (it then runs its defaults)."""
    try:
        return profiles(default_specs(ROOT, "default"))
    except (SpecError, OSError):
        return set()


def request(argv):
    """Parse, check and plan a sweep's KEY=VALUE words and spec paths (scripts/lab/cli/sweep.py's arguments)."""
    keys, pairs, paths = parse_args(argv)
    profile = keys.get("profile", "default")
    dry = keys.get("dry") == "1"
    if keys.get("topology") and not dry:
        raise EngineError("topology= describes a host you do not have: use it with dry=1; a sweep measures only "
                          "this host")
    if keys.get("history") and not dry:
        raise EngineError("history= prices a dry run from another host's runs: use it with dry=1")
    t0 = time.monotonic()
    try:
        overrides = overrides_from(pairs, ENGINE_KEYS)
        specs = load(paths) if paths else default_specs(ROOT, profile)
        if not specs:
            raise EngineError("no experiment to sweep (experiments/*.spec is empty)")
        known = profiles(specs) | project_profiles()
        if profile not in known:
            raise EngineError(f"unknown profile {profile!r}: the specs name {', '.join(sorted(known))}")
        resolved = [s.resolve(profile, overrides) for s in specs]
        for s, r in zip(specs, resolved):
            if r["exec"]:
                if not dry:    # a host you have not booked need not have the program
                    check_program(r, s.where("exec", profile), ROOT)
            else:
                check_quoting(expand_args(r["command"], r["args"]), s.where("command", profile))
    except SpecError as e:
        raise EngineError(str(e)) from None
    try:
        topo = Topology(keys.get("topology") or None, kind=keys.get("kind") or None)
        plans = {r.name: plan(r, topo) for r in resolved}
    except PlacementError as e:
        raise EngineError(f"placement: {e}") from None
    try:
        budget, why = budget_of(keys, paths, topo)
    except SpecError as e:
        raise EngineError(str(e)) from None
    req = Request(tuple(argv), keys, profile, overrides, resolved, topo, plans, (time.monotonic() - t0) * 1000,
                  budget, why)
    if budget:
        left, dropped = pr.fit_budget(lambda: price(req), req.plans, resolved, budget)
        req = dataclasses.replace(req, left_out=tuple(left), dropped=dropped)
    return req


# The default sweep's budget: an answer within the booked hour on any host (issue 54), sooner on a small
# one, whose default sweep is short anyway
DEFAULT_BUDGET, SMALL_BUDGET, SMALL_HOST = 45 * 60, 20 * 60, 4


def budget_of(keys, paths, topo):
    """(seconds, where from) of the sweep's budget: budget=DURATION, budget=none (0), else the default
    sweep's own (no spec named), else none. A malformed value raises SpecError."""
    given = keys.get("budget")
    if given == "none":
        return 0.0, "budget=none"
    if given is not None:
        return float(duration(given, "command line")), f"budget={given}"
    if paths:
        return 0.0, ""
    pus = len(topo.pus)
    secs = SMALL_BUDGET if pus <= SMALL_HOST else DEFAULT_BUDGET
    return float(secs), (f"the default sweep's on a host of {pus} PUs"
                         f" ({'at most' if pus <= SMALL_HOST else 'more than'} {SMALL_HOST});"
                         " budget=DURATION or budget=none")


def as_duration(secs):
    """A budget's seconds as budget= takes them (2700 → 45m, 5400 → 1h30m): the signature's form."""
    secs = int(secs)
    h, m, s = secs // 3600, secs % 3600 // 60, secs % 60
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


def price(req, resuming=""):
    """The sweep's price (lab/engine/price.py), from this host's history, or from history=FILE, or (on a
    topology= host with no history) from the specs' cost. resuming: the run folder a sweep resumes, which
    is no history of itself."""
    keys = req.keys
    try:
        history = load_history(keys["history"]) if keys.get("history") else \
            None if keys.get("topology") else local_history(results_dir(), resuming)
    except HistoryError as e:
        raise EngineError(f"history={e}") from None
    return pr.compute(req.specs, req.plans, req.profile, history, not keys.get("topology"), req.why_runs,
                      first=bool(req.budget), dropped=req.dropped)


def dry_run(req, out):
    """The dry run: its heading, every point and the ETA written to out; returns the price."""
    p = price(req)
    where = req.keys.get("topology") or f"this host ({hostname()})"
    out.write(visible(f"# dry run on {where}: profile {req.profile}, overrides: {req.overrides_text()}") + "\n")
    pr.write(p, req.specs, out)
    if req.budget:
        out.write(budget_line(req, p) + "\n")
    return p


def budget_line(req, p):
    """The dry run's verdict on the budget: the plan's own expected price against it."""
    fits = p.expected <= req.budget
    left = len({(x.experiment, x.placement, x.threads) for x in req.left_out})
    return (f"budget {pr.hms(req.budget)} ({req.budget_why}): the plan's price {pr.hms(p.expected)} expected "
            + (f"fits, {pr.hms(req.budget - p.expected)} to spare" if fits else
               f"does NOT fit, over by {pr.hms(p.expected - req.budget)} with every curve at its first and last "
               "thread count, every story's point and no other experiment: name fewer experiments or a longer "
               "budget")
            + (f"; {len(req.dropped)} experiment(s) left out whole (the `skipped: … (every point)` lines)"
               if req.dropped else "")
            + (f"; {left} placement × thread count(s) left out to fit (the `skipped: … budget:` lines)" if left else
               "" if req.dropped else "; nothing left out"))


def run(req, shown=None, out=sys.stderr, quiet=False):
    """Measure the sweep (not a dry one) into its run folder and draw its report unless draw=0.
    shown: the command line recorded in sweep/command (another program's, e.g. ./lab scale). out: the
    engine's progress and notes; quiet: the chart and report programs' output goes nowhere.
    A full disk while preparing the run folder raises OSError (nothing measured is lost)."""
    if req.dry:
        raise EngineError("dry=1 measures nothing: price it with api.price")
    keys, resolved, argv = req.keys, req.specs, list(req.argv)
    perf = keys.get("perf", "0")
    perf = "stat" if perf == "stat" else int(perf)     # stat: perf stat counters (lab/engine/perfstat.py)
    why = req.why_runs
    # the budget is the run's: its plan's left-out points are that budget's, so a run is resumed only with it
    # (runfolder.choose: run= refuses another, the automatic resume starts a new run and says why)
    signature = (f"profile={req.profile} perf={perf} topology=host kind={keys.get('kind', '')} "
                 f"budget={as_duration(req.budget) if req.budget else 'none'} "
                 + (f"why={why} " if why else "")
                 + " ".join(f"{k}={v}" for k, v in sorted(req.overrides.items())) + " "
                 + " ".join(sorted(r.name for r in resolved)))
    ident = identity(ROOT)
    received = kind(os.path.abspath(keys["run"])) if keys.get("run") else KIND_SWEEP
    if received != KIND_SWEEP:
        what = "an imported published matrix" if received == KIND_PUBLISHED else "an imported run"
        raise EngineError(f"{os.path.abspath(keys['run'])} is {what}: it has no spec and "
                          "takes no measurement; omit run=")
    try:
        rf, lock, note = choose(os.path.abspath(keys["run"]) if keys.get("run") else None, signature, ident)
    except RunFolderError as e:
        raise EngineError(str(e)) from None
    try:
        return measure(req, rf, note, signature, ident, perf, shown or "./lab sweep " + " ".join(argv), out,
                       quiet)
    finally:
        lock.close()


def measure(req, rf, note, signature, ident, perf, shown, out, quiet):
    keys, resolved, argv, why = req.keys, req.specs, list(req.argv), req.why_runs
    print(note, file=out)
    rf.make()
    rf.drop_partial()
    for name, text in (("signature", signature), ("command", shown),
                       ("state", "running"), ("identity.json", json.dumps(ident)),
                       ("args.json", json.dumps({"profile": req.profile, "perf": perf, "why_runs": why,
                                                 "overrides": req.overrides,
                                                 "experiments": [r.name for r in resolved]}))):
        rf.write_text(f"sweep/{name}", text + "\n")
    for r in resolved:
        if any(shutil.which(t) is None for t in r["requires"].split()):
            continue    # skipped whole (the journal says why): no spec as run, no data
        rf.write_text(f"sweep/specs/{r.name}.spec",
                      r.snapshot(f"{os.path.basename(r.path)}, profile {req.profile}, overrides: "
                                 f"{req.overrides_text()}"))
    if not os.path.isdir(rf.env_dir):
        # captured beside, then renamed: a capture cut off (kill -9) leaves env.tmp, which the next
        # resume throws away and captures again, never a half env/ that stays
        tmp = rf.env_dir + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([os.path.join(ROOT, "scripts", "env.sh"), tmp], check=False,
                       **({"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL} if quiet else {}))
        if os.path.isdir(tmp):
            os.replace(tmp, rf.env_dir)
    sweep = Sweep(ROOT, rf, resolved, req.topo, {"perf": perf, "why_runs": why, "price": price(req, rf.name),
                                                 "plans": req.plans, "budget": req.budget,
                                                 "dropped": dict(req.dropped),
                                                 "seed": int(keys["seed"]) if "seed" in keys else None}, out=out)
    sweep.journal.event("sweep", f"sweep {' '.join(argv)}", args=argv, profile=req.profile, perf=perf,
                        seed=sweep.seed, overrides=req.overrides, experiments=[r.name for r in resolved],
                        plan_ms=round(req.plan_ms, 1), **ident)
    if perf == "stat":
        counted, missing = perfstat.probe()
        sweep.journal.event("perf_stat", "perf stat: counting " + (", ".join(counted) or "nothing")
                            + (f"; not countable here (no PMU in this VM, or perf_event_paranoid): {', '.join(missing)}"
                               if missing else ""), counted=counted, missing=missing)
    elif perf:
        sweep.journal.event("perf", f"perf: recording with -e {sweep.perf_event}"
                            + (" (no hardware counters here)" if sweep.perf_event == "cpu-clock" else ""),
                            perf_event=sweep.perf_event)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = sweep.run_all()
    except OSError as e:   # a full disk, a folder removed under the sweep: say so, keep what is measured
        try:
            rf.set_state("incomplete")
        except OSError:
            pass
        error = (f"error: cannot write into {rf.path}: {e}; the repeats measured so far are kept: fix it and run "
                 "the same command again to resume")
        print(error, file=out)
        return Outcome(rf.path, 1, "incomplete", sweep.done_now, sweep.failed, "", False, rf.journal_log, error)
    finally:
        for s, h in handlers.items():     # an in-process caller gets its own Ctrl-C back
            signal.signal(s, h)
    # The engine measures; the reading side draws (lab/report/front.after_sweep, called by the program).
    return Outcome(rf.path, code, rf.state() or "", sweep.done_now, sweep.failed, "",
                   keys.get("draw", "1") == "1", rf.journal_log)
