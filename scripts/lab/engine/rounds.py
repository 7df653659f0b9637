"""The sweep: every planned point of every spec, repeated and guarded, into one run folder.

Order: per experiment, build and setup once; then per (placement, threads) the variants are measured
in rounds, A B C, A B C, … so that drift and steal hit every variant alike. A repeat lands in
data/points/<experiment>/<key>.csv by a rename: that file is the proof it is done, so a sweep killed
with -9 is resumed by running it again, with exactly one row set per repeat.
"""
import csv
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from lab.core import tidy
from lab.core.stats import ci_method, ci_pct
from lab.core.term import visible
from lab.engine.evidence import collect as why_collect
from lab.engine.evidence import points as why_points
from lab.engine.evidence import store as why_ev
from lab.topology.topo import cpu_list

from . import capacity, cgroup, child, hostprep, orphans, prefix, stories
from . import journal as jr
from . import point as pt
from .guard import NOISE_METRICS, corun_short
from .memplace import misplaced
from .plan import KEEP, importance, plan, refine, unneeded, words_of_level
from .price import hms
from .spec import better_of

PACE_SAMPLE_S = 60.0    # seconds of measuring before the pace against the price is trusted (re-plan, ETA)
RESUME = 0.9            # a re-plan that stopped re-measures lifts it once the projection is this share of the budget


class Interrupted(Exception):
    pass


class RejectedInput(Exception):
    pass


def identity(root):
    """What the run measured: the commit and a hash of the uncommitted change."""
    def git(*args):
        p = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True)
        return p.stdout if p.returncode == 0 else ""
    shipped = os.path.join(root, ".lab-source", "identity.json")
    if not os.path.exists(os.path.join(root, ".git")) and os.path.exists(shipped):
        # A copy shipped by fleet-sweep (a git archive): it carries the identity it was made from.
        try:
            with open(shipped) as f:
                d = json.load(f)
            return {"commit": str(d["commit"]), "diff_sha256": str(d["diff_sha256"])}
        except (OSError, ValueError, KeyError, TypeError):
            pass
    head = git("rev-parse", "HEAD").strip() or "unavailable: not a git checkout"
    diff = git("diff", "HEAD", "--", ".", ":(exclude)results")
    return {"commit": head, "diff_sha256": hashlib.sha256(diff.encode()).hexdigest()}


class Sweep:
    def __init__(self, root, rf, specs, topo, opts, out=sys.stderr):
        self.root, self.rf, self.topo, self.out = root, rf, topo, out
        self.specs = specs                       # resolved specs, in order
        self.run_id = rf.name
        self.perf = opts["perf"]
        self.why_runs = opts.get("why_runs", 0)   # why=1: evidence runs per point that gets them (why_points)
        # The variants' order in each round is shuffled from this seed (journaled): drift and periodic
        # noise cannot line up with one variant, and the order can be re-derived (round_order).
        self.seed = opts.get("seed")
        if self.seed is None:
            self.seed = int(hashlib.sha256(rf.name.encode()).hexdigest()[:8], 16)
        self.perf_event = prefix.perf_event() if self.perf == 1 else ""
        self.token = orphans.new_token()     # every process this sweep starts carries it
        self.env = dict(os.environ, LAB_ROOT=root, **{orphans.VAR: self.token})
        self.all_cpus = [p.os for p in topo.pus]
        self.capacity = None                 # the capacity probe's baseline {cpu: {kind: ns}}, see baseline()
        self.launcher = None                 # child.py's LAUNCHER once built: the command's own peak RSS
        self.child = None
        self.stopping = False
        self.reaper = None
        self.cgroups = []                    # the sweep's control groups, where the host gives them (cgroup.py)
        self.teardown = ""
        self.teardown_env = self.env
        self.failed = 0
        self.done_now = 0
        self.started = time.monotonic()
        # The progress line counts from the dry run's price (lab/engine/price.py): per point, the repeats
        # still expected (an adaptive point at least one until it settles) and the price of one.
        self.price = {(pp.point.experiment, pp.point.stem): pp
                      for x in (opts["price"].experiments if opts.get("price") else ()) for pp in x.points}
        self.left = {}                       # {(experiment, stem): repeats still expected}
        # the priced build and setup (a cold build included) of each experiment not yet prepared: the pace's
        # projection counts them (a budget bounds them too), prepare() takes one off once it has run
        self.setups = {x.name: x.setup for x in (opts["price"].experiments if opts.get("price") else ())}
        # why=1: (experiment, stem) whose evidence runs may still come: every point until its experiment's
        # are made (the price counts only those why_points prices, so the ETA stays right before the knee is known)
        self.unexplained = set()
        self.priced_done = 0.0               # the price of the repeats kept so far in this session
        self.first_at = None                 # when the session's first kept repeat began (setup is not pace)
        os.makedirs(rf.sweep_dir, exist_ok=True)
        self.journal = jr.Journal(rf.journal_path, rf.journal_log)
        self.plans = opts.get("plans") or {}    # the request's plans (a budget's fit marked in them), else planned here
        self.budget = opts.get("budget") or 0.0  # seconds; a sweep running over its price re-plans to fit (replan)
        self.dropped = opts.get("dropped") or {}  # {experiment: why} left out whole to fit it (price.fit_budget)
        self.said_skipped = set()                # id(point) whose `skipped` event is journaled already
        self.said_over = False                   # replan said once that nothing more can be left out
        self.at_floor = False                    # ... and adaptive points stop at their fewest repeats since,
        self.no_retry = ""                       # ... and a disturbed repeat is kept, suspect, not re-measured:
                                                 # why (the re-plan's words), "" while the guard re-measures
        self.all_bound = False                   # ... a story's points too: not even the price's pace fits

    # --- bookkeeping --------------------------------------------------------------------------------
    def track(self, proc):
        self.child = proc

    def done_repeats(self, point):
        """Repeats of a point already on disk, as {repeat: rows}."""
        out = {}
        for r, path in self.rf.repeats(point.experiment, point.stem).items():
            with open(path, newline="") as f:
                out[r] = list(csv.DictReader(f, tidy.COLUMNS))
        return out

    def settled(self, spec, point, done):
        """(settled, n, worst ci %): fixed repeats are settled at their count; auto ones when the
        watched metrics' CI is within target, or at max_repeats."""
        n = len(done)
        if spec["repeats"] != "auto":
            return n >= int(spec["repeats"]), n, float("nan")
        worst = self.worst_ci(spec, done)
        # past a re-plan still over the budget (replan), a point no story judges stops at its floor
        if n >= int(spec["max_repeats"]) or (self.at_floor and self.bound(point) and n >= self.floor(spec, point)):
            return True, n, worst
        return n >= self.floor(spec, point) and worst <= float(spec["ci"]), n, worst

    def floor(self, spec, point):
        """The fewest repeats of an adaptive point: the price's (price.known: this host's history of the
        point may lower min_repeats to stable_repeats), else min_repeats."""
        pp = self.price.get((point.experiment, point.stem))
        return pp.floor if pp and pp.floor else int(spec["min_repeats"])

    def worst_ci(self, spec, done):
        rows = [r for rs in done.values() for r in rs if r["metric"] not in NOISE_METRICS]
        present = [m for m in spec.watched() if any(r["metric"] == m for r in rows)]
        if not present:
            present = [rows[0]["metric"]] if rows else []
        groups = {}
        for r in rows:
            if r["metric"] in present:
                # per variant too: one command may measure several cells on the same CPUs (mem's nodes)
                groups.setdefault((r["metric"], r["cpus"], r["variant"]), []).append(float(r["value"]))
        cis = [ci_pct(xs) for xs in groups.values()]
        return max(cis) if cis and all(c == c for c in cis) else float("inf")

    def expected(self, spec, point):
        """(repeats a point is expected to keep, seconds one costs): the price's, else the spec's count
        (min_repeats for adaptive ones) at the spec's cost."""
        pp = self.price.get((point.experiment, point.stem))
        if pp:
            return pp.repeats, pp.kept
        want = int(spec["repeats"]) if spec["repeats"] != "auto" else int(spec["min_repeats"])
        return want, 0.0

    def count(self, spec, point, settled, n):
        """Record a point's repeats still to run: none once settled (or broken), else what the price
        expects beyond the n kept, and at least one (an adaptive point that has not met its interval)."""
        self.left[(point.experiment, point.stem)] = 0 if settled else max(self.expected(spec, point)[0] - n, 1)

    def remaining(self):
        """(repeats still to run, their priced seconds) over every point of the sweep."""
        reps = secs = 0.0
        for (exp, stem), n in self.left.items():
            reps += n
            pp = self.price.get((exp, stem))
            secs += n * pp.kept if pp else 0.0
        secs += sum(self.price[k].why for k in self.unexplained if k in self.price)
        waiting = {exp for (exp, _stem), n in self.left.items() if n} | \
            {p.experiment for ps in self.plans.values() for p in ps if p.held and not p.skip}
        secs += sum(self.setups.get(exp, 0.0) for exp in waiting)
        for ps in self.plans.values():     # plan=adaptive's candidates still held, at their expected share
            for p in ps:
                pp = self.price.get((p.experiment, p.stem)) if p.held and not p.skip else None
                secs += pp.chance * pp.repeats * pp.kept if pp else 0.0
        return reps, secs

    def pace(self):
        """How this session's measured costs compare with their price: the time since its first kept repeat
        began over the price of the repeats kept since; None until it has measured for a while (PACE_SAMPLE_S,
        or a tenth of a shorter budget): two 0.2-s repeats after a build once made a ×24 pace and a needless
        "it will run over"."""
        if self.first_at is None or self.priced_done <= 0:
            return None
        measuring = time.monotonic() - self.first_at
        if measuring < min(PACE_SAMPLE_S, 0.1 * self.budget if self.budget else PACE_SAMPLE_S):
            return None
        return measuring / self.priced_done

    def replan(self):
        """A sweep with a budget whose measured costs run over its price: leave out the points not yet
        begun that change the answer least (plan.importance, the dearest first among equals) until the
        projection fits again, and say so (journal `replan`, the terminal, a `skipped` event per point).
        Still over with nothing more to leave out: the points no story judges stop at their floor (at_floor,
        for the rest of the sweep) and keep a disturbed repeat as suspect (no_retry) until a later projection
        is back under RESUME of the budget (a minute's pace under load once stopped them for a sweep that ended
        5 minutes early)."""
        pace = self.pace()
        if not self.budget or self.done_now < 2 or pace is None:      # no pace yet
            return
        elapsed = time.monotonic() - self.started
        _reps, secs = self.remaining()
        over = elapsed + secs * pace - self.budget
        if over <= 0:
            # the floor stays (a point at its floor projects no more repeats: lifting it on that projection
            # would chase ci= again); the re-measures, which the pace counts, resume
            if self.no_retry and elapsed + secs * pace <= RESUME * self.budget:
                self.no_retry, self.said_over, self.all_bound = "", False, False
                msg = (f"re-planned at {hms(elapsed)}: measured costs run ×{pace:.2f} the price, the rest projected "
                       f"{hms(elapsed + secs * pace)} against the budget {hms(self.budget)}: within it again, "
                       "the guard's re-measures resume (adaptive points stay at their floor)")
                print(visible(f"sweep: {msg}"), file=self.out, flush=True)
                self.journal.event("replan", msg, budget_s=self.budget, elapsed_s=round(elapsed, 1),
                                   pace=round(pace, 3), left_out=[], floor=False, resumed=True)
            return
        groups = {}
        for ps in self.plans.values():
            ts = {}
            for p in ps:
                if not p.skip:
                    ts.setdefault((p.variant, p.placement), []).append(p.threads)
            for p in ps:
                if p.skip or self.done_repeats(p):
                    continue
                pp = self.price.get((p.experiment, p.stem))
                left = (self.left.get((p.experiment, p.stem), 0) if not p.held else
                        pp.chance * pp.repeats if pp else 0)
                g = groups.setdefault((p.experiment, p.placement, p.threads), [KEEP + 1, 0.0, []])
                g[0] = min(g[0], importance(p, ts[(p.variant, p.placement)]))
                g[1] += left * (pp.kept if pp else 0.0) * pace
                g[2].append(p)
        dropped = []
        for (exp, pl, t), (level, saves, ps) in sorted(groups.items(), key=lambda kv: (kv[1][0], -kv[1][1], -kv[0][2])):
            if over <= 0 or level >= KEEP:
                break
            why = (f"budget: left out while running, re-planned at {hms(elapsed)} to fit {hms(self.budget)} "
                   f"({words_of_level(level)}; measured costs ran ×{pace:.2f} the price)")
            for p in ps:
                p.skip, p.held = why, ""
                self.left[(p.experiment, p.stem)] = 0
                self.said_skipped.add(id(p))
                self.journal.event("skipped", f"{exp}: skip {pl} threads={t}: {why}", experiment=exp,
                                   placement=pl, threads=t, reason=why, variant=p.variant, budget=True)
            dropped.append(f"{exp} {pl} threads={t}")
            over -= saves
        still = over > 0
        msg = (f"re-planned at {hms(elapsed)}: measured costs run ×{pace:.2f} the price, the rest projected "
               f"{hms(elapsed + secs * pace)} against the budget {hms(self.budget)}: "
               + (f"left out {len(dropped)} placement × thread count(s) that change the answer least: "
                  + ", ".join(dropped) if dropped else "nothing more can be left out (every curve is at its "
                  "first and last thread count)")
               + ("" if not still else
                  ("; still over: " if dropped else ": ") + "adaptive points stop at their fewest repeats from here "
                  "(their intervals may stay wider than ci=) and a disturbed repeat is kept, labelled suspect, not "
                  "re-measured, but for the points a story judges; it may still run over"))
        # the budget bounds the guard's re-measures and adaptive repeats too: past it, a point keeps what the
        # words need (its floor) and a disturbed repeat keeps its suspect label instead of a retry
        self.at_floor = self.at_floor or still
        if still and not self.no_retry:
            self.no_retry = f"not re-measured: the budget's re-plan at {hms(elapsed)} stopped re-measures"
        # a story's points keep the guard's rule while the rest would fit at the price's own pace; past that
        # they stop too (measured here: story points re-measured under load ran a sweep at ×2.77 its price)
        stories = ""
        if still and not self.all_bound and elapsed + secs > self.budget:
            self.all_bound = True
            stories = (f"re-planned at {hms(elapsed)}: the rest, {hms(secs)} at its price, no longer fits the budget "
                       f"{hms(self.budget)}: the points a story judges stop at their floor and keep a disturbed "
                       "repeat as suspect too")
        if dropped or not self.said_over:
            self.said_over = still
            print(visible(f"sweep: {msg}"), file=self.out, flush=True)
            self.journal.event("replan", msg, budget_s=self.budget, elapsed_s=round(elapsed, 1), pace=round(pace, 3),
                               left_out=dropped, floor=still)
        if stories:         # the second stage, said after the first (both can come in one re-plan)
            print(visible(f"sweep: {stories}"), file=self.out, flush=True)
            self.journal.event("replan", stories, budget_s=self.budget, elapsed_s=round(elapsed, 1),
                               pace=round(pace, 3), left_out=[], floor=True, stories=True)

    def bound(self, point):
        """Whether the re-plan's stops (at_floor, no_retry) hold for `point`: a point no story judges from the
        first stage, a story's only from the second (all_bound)."""
        return self.all_bound or not point.story

    def progress(self, point, repeat):
        """`[i/n] … ETA`: n is the repeats kept so far plus those the price still expects of every point
        (so a long point still to run counts), the ETA their price scaled by how this session's kept
        repeats compared with theirs."""
        reps, secs = self.remaining()
        total = self.done_now + max(round(reps), 1)
        elapsed = time.monotonic() - self.started
        pace = self.pace() or 1.0
        eta = hms(secs * pace) if self.price else \
            hms(elapsed * reps / self.done_now) if self.done_now else "?"
        print(visible(f"[{self.done_now + 1}/{total}] {point.experiment} {point.variant or '-'} {point.placement} "
                      f"threads={point.threads} repeat={repeat}  elapsed {hms(elapsed)}, ETA {eta}"),
              file=self.out, flush=True)
        return round(reps), round(secs * pace, 1)

    def fields(self, point, repeat=None, **extra):
        d = {"experiment": point.experiment, "variant": point.variant, "placement": point.placement,
             "threads": point.threads, "cpus": cpu_list(point.cpus)}
        if repeat is not None:
            d.update(repeat=repeat, key=point.key(repeat))
        d.update(extra)
        return d

    # --- the sweep ----------------------------------------------------------------------------------
    def guard_children(self):
        """End what a killed engine of this run left running, then start this engine's reaper and
        record its token: from here on nothing the sweep starts outlives it."""
        record = self.rf.sweep_file("engine.json")
        before = orphans.leftover(record)
        if before:
            n = orphans.end(before)
            if n:
                self.journal.event("orphans", f"ended {n} process(es) that a killed sweep of this run left "
                                   "running, before measuring", count=n)
        pid, self.reaper = orphans.start_reaper(self.token, os.path.join(self.root, "scripts"))
        self.cgroups = cgroup.create(self.token)
        self.rf.write_text("sweep/engine.json",
                           json.dumps({"pid": os.getpid(), "token": self.token, "reaper": pid}) + "\n")

    def run_all(self):
        """Returns the exit code: 0 complete, 1 some points failed, 2 a command rejected its input,
        130 interrupted."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.interrupt)
        self.guard_children()
        plans = {}
        for spec in self.specs:
            missing = [t for t in spec["requires"].split() if shutil.which(t) is None]
            if missing:
                self.journal.event("experiment_skipped", f"{spec.name}: skip all: '{missing[0]}' is not on PATH",
                                   experiment=spec.name, reason=f"'{missing[0]}' is not on PATH")
                continue
            ps = self.plans.get(spec.name) or plan(spec, self.topo)
            if spec.name in self.dropped and not any(self.done_repeats(p) for p in ps):
                # left out whole by the budget's fit (begun by an earlier session of this run: measured on)
                why = self.dropped[spec.name]
                self.journal.event("experiment_skipped", f"{spec.name}: skip all: {why}", experiment=spec.name,
                                   reason=why, budget=True)
                continue
            plans[spec.name] = ps
        self.plans = plans
        for spec in self.specs:
            for p in plans.get(spec.name, []):
                if (p.held or p.skip.startswith("budget:")) and self.done_repeats(p):
                    # chosen, or begun, by an earlier session of this run: its rows are data, never a skipped point
                    p.held, p.skip = "", ""
                if not p.skip and not p.held:
                    ok, n, _ci = self.settled(spec, p, self.done_repeats(p))
                    self.count(spec, p, ok, n)
                    if self.why_runs and not why_ev.complete(self.rf.evidence_dir(spec.name, p.stem), self.why_runs):
                        self.unexplained.add((spec.name, p.stem))
        self.baseline([s for s in self.specs if s.name in plans])
        for line in hostprep.prepare() if self.why_runs else ():
            self.journal.event("evidence_host", line, reason=line)
        why = capacity.build(self.root, self.rf.sweep_file("setup.log"), child.LAUNCHER)
        if why:
            self.journal.event("launcher_unavailable", f"max_rss_kib includes the engine's own RSS: {why}", reason=why)
        else:
            self.launcher = os.path.join(self.root, child.LAUNCHER)
        state = "complete"
        # with a budget, the experiments a seed story judges first (each still built and set up once)
        order = stories.first(self.specs, plans) if self.budget else self.specs
        try:
            for spec in order:
                if spec.name in plans:
                    self.experiment(spec, plans[spec.name])
        except RejectedInput:
            state, code = "incomplete", 2
        except Interrupted:
            state, code = "incomplete", 130
        else:
            code = 1 if self.failed else 0
            state = "incomplete" if self.failed else "complete"
        finally:
            self.stopping = True          # a second Ctrl-C now waits for teardown and the state
            self.run_teardown()
        self.rf.set_state(state)
        self.journal.event("end", state=state, failed=self.failed)
        os.close(self.reaper)             # the reaper ends whatever is left, then exits
        return code

    def baseline(self, specs):
        """The capacity probe's baseline, once per sweep on every CPU, when a spec wants the probe."""
        if not any(s["capacity"] == "1" for s in specs):
            return
        why = capacity.build(self.root, self.rf.sweep_file("setup.log"))
        if not why:
            try:
                self.capacity, secs = capacity.baseline(self.root, self.all_cpus)
            except capacity.ProbeError as e:
                why = str(e)
        if why:
            self.journal.event("capacity_unavailable", f"capacity probe unavailable, repeats are not probed: {why}",
                               reason=why)
            return
        self.journal.event("capacity_baseline", runs=capacity.BASELINE_RUNS, seconds=round(secs, 3),
                           ns={str(c): {k: round(v, 3) for k, v in d.items()}
                               for c, d in sorted(self.capacity.items())})

    def interrupt(self, signum, _frame):
        if self.stopping:
            print(f"signal {signum}: stopping already (teardown, then the state); it ends by itself",
                  file=self.out, flush=True)
            return
        self.stopping = True
        if self.child is not None:
            pt.kill_group(self.child)
        self.journal.event("interrupted", f"interrupted by signal {signum}: the measured points are kept; "
                           "run the same command again to resume", signal=signum)
        raise Interrupted()

    def run_teardown(self):
        if self.teardown:
            text, self.teardown = self.teardown, ""
            # in its own session: the terminal's second Ctrl-C must not cut it off
            pt.run_shell(text, self.root, self.teardown_env, self.rf.sweep_file("setup.log"), own_session=True)

    def experiment(self, spec, points):
        exp = spec.name
        os.makedirs(self.rf.points_dir(exp), exist_ok=True)
        for p in points:
            if p.skip and id(p) not in self.said_skipped:
                self.journal.event("skipped", f"{exp}: skip {p.placement} threads={p.threads}: {p.skip}",
                                   experiment=exp, placement=p.placement, threads=p.threads, reason=p.skip,
                                   **({"variant": p.variant, "same_as": p.same_as} if p.same_as else {}))
        live = [p for p in points if not p.skip and not p.held]
        # the points a seed story judges first (stories.mark), then the rest as the budget allows
        todo = sorted((p for p in live if not self.settled(spec, p, self.done_repeats(p))[0]),
                      key=lambda p: not p.story)
        held = [p for p in points if p.held]
        unexplained = [p for p in self.evidence_points(spec, points)
                       if not why_ev.complete(self.rf.evidence_dir(exp, p.stem), self.why_runs)]
        if not todo and not unexplained and not held:
            self.journal.event("experiment_done", f"{exp}: every point already measured", experiment=exp)
        elif self.prepare(spec, todo or held):
            self.measure_points(spec, todo)
            self.adapt(spec, points)
            self.explain(spec, points)
            self.run_teardown()
        rows = []
        for path in self.rf.point_files(exp):
            with open(path, newline="") as f:
                rows += list(csv.DictReader(f, tidy.COLUMNS))
        tidy.write_atomic(self.rf.data_csv(exp), rows)

    def adapt(self, spec, points):
        """plan=adaptive: measure the held candidates refine() asks for, curve by curve, round after round,
        until none is asked; the rest become skipped points, journaled with why (never drawn)."""
        held = [p for p in points if p.held]
        if not held:
            return
        name = why_points.metric(spec)
        if name is None:      # no curve to refine by: every candidate is measured, as plan=grid would
            self.journal.event("refine", f"{spec.name}: adaptive: no speedup or scaling chart to choose thread "
                               "counts by: every candidate measured", experiment=spec.name, reason="no curve metric")
            for p in held:
                p.held = ""
                self.count(spec, p, False, 0)
            self.measure_points(spec, held)
            return
        while True:
            rows = [r for p in points for rs in self.done_repeats(p).values() for r in rs]
            rows = [r for r in why_points.with_shared(points, rows) if r["metric"] == name]
            if not rows:
                break
            better = better_of(spec.path, name, rows[0]["unit"])
            chosen = []
            for (v, pl), ps in why_points.curves(points).items():
                waiting = {p.threads: p for p in ps if p.held}
                if not waiting:
                    continue
                measured = self.curve(rows, v, pl)
                ts = sorted({p.threads for p in ps if not p.skip or p.same_as})
                chosen += [(waiting[t], why) for t, why in sorted(refine(ts, measured, better).items()) if t in waiting]
            if not chosen:
                break
            for p, why in chosen:
                p.held = ""
                self.count(spec, p, False, 0)
                self.journal.event("refine", f"{spec.name}: adaptive: measure {p.variant or '-'} {p.placement} "
                                   f"threads={p.threads}: {why}", **self.fields(p), reason=why)
            self.measure_points(spec, [p for p, _why in chosen])
        rows = [r for p in points for rs in self.done_repeats(p).values() for r in rs]
        rows = [r for r in why_points.with_shared(points, rows) if r["metric"] == name]
        better = better_of(spec.path, name, rows[0]["unit"]) if rows else "higher"
        for p in points:
            if p.held:
                p.held = ""
                p.skip = unneeded(sorted({q.threads for q in points
                                          if (q.variant, q.placement) == (p.variant, p.placement)}),
                                  self.curve(rows, p.variant, p.placement), p.threads, better)
                self.journal.event("skipped", f"{spec.name}: skip {p.placement} threads={p.threads}: {p.skip}",
                                   experiment=spec.name, placement=p.placement, threads=p.threads, reason=p.skip,
                                   variant=p.variant, adaptive=True)

    @staticmethod
    def curve(rows, variant, placement):
        """{threads: summary} of one curve's rows of the curve metric."""
        by = {}
        for r in rows:
            if (r["variant"], r["placement"]) == (variant, placement) and str(r["threads"]).isdigit():
                by.setdefault(int(r["threads"]), []).append(r)
        return {t: why_points.summarised(rs) for t, rs in by.items()}

    def prepare(self, spec, todo):
        self.setups.pop(spec.name, None)        # run now (or failed): no longer to come
        n = len(todo)
        log = self.rf.sweep_file("setup.log")
        for step in ("build", "setup"):
            text = spec[step]
            if not text:
                continue
            self.journal.event(step, f"{spec.name}: {step}: {text}", experiment=spec.name, command=text)
            env = pt.spec_env(self.env, spec)
            if step == "setup":
                self.teardown, self.teardown_env = spec["teardown"], env
            rc, secs = pt.run_shell(text, self.root, env, log)
            if rc != 0:
                why = pt.tail(log, 5)
                self.journal.event(f"{step}_failed", f"{spec.name}: FAILED {step}: {text} (exit {rc}; its {n} "
                                   f"point(s) not measured): {why}", experiment=spec.name, rc=rc, reason=why)
                self.failed += n
                for p in todo:
                    self.count(spec, p, True, 0)
                self.run_teardown()
                return False
            self.journal.event(f"{step}_done", experiment=spec.name, seconds=round(secs, 2))
        return True

    def measure_points(self, spec, todo):
        warm = int(spec["warmup"])
        groups = {}
        for p in todo:
            groups.setdefault((p.placement, p.threads), []).append(p)
        for members in groups.values():
            if warm:
                self.warm_up(spec, members[0], warm)
                warm = 0
            broken = set()
            rnd = 0
            while True:
                rnd += 1
                active = False
                order = round_order(self.seed, spec.name, members[0].placement, members[0].threads, rnd, members)
                if len(order) > 1:
                    self.journal.event("round", experiment=spec.name, placement=members[0].placement,
                                       threads=members[0].threads, round=rnd, seed=self.seed,
                                       order=[p.variant for p in order])
                for p in order:
                    if id(p) in broken or p.skip:       # p.skip: left out by a re-plan (replan)
                        continue
                    done = self.done_repeats(p)
                    ok, n, _ci = self.settled(spec, p, done)
                    if ok:
                        continue
                    active = True
                    pp = self.price.get((p.experiment, p.stem))
                    if not done and pp and pp.known:
                        self.journal.event("known", f"{spec.name}: {p.variant or '-'} {p.placement} "
                                           f"threads={p.threads}: {pp.known}", **self.fields(p), floor=pp.floor,
                                           expected=pp.repeats, reason=pp.known)
                    repeat = max(done, default=0) + 1
                    if not self.one_repeat(spec, p, repeat):
                        broken.add(id(p))
                        self.count(spec, p, True, 0)
                        continue
                    done = self.done_repeats(p)
                    ok, n, ci = self.settled(spec, p, done)
                    self.count(spec, p, ok, n)
                    if ok and spec["repeats"] == "auto":
                        confident = ci <= float(spec["ci"])
                        floored = not confident and n < int(spec["max_repeats"])    # the re-plan's at_floor
                        stopped = (f"interval met: ±{ci:.1f}% <= {spec['ci']}%" if confident else
                                   f"stopped at its floor ({n} repeats) by the budget's re-plan at ±{ci:.1f}% > "
                                   f"{spec['ci']}%" if floored else
                                   f"repeat cap reached ({n} = max_repeats) at ±{ci:.1f}% > {spec['ci']}%")
                        self.journal.event(
                            "confidence", f"{spec.name}: {p.variant or '-'} {p.placement} threads={p.threads}: "
                            f"n={n}, {stopped}" + ("" if confident else ": not confident"),
                            **self.fields(p), metric=" ".join(spec.watched()), n=n,
                            ci_pct=None if ci != ci or ci == float("inf") else round(ci, 2), confident=confident,
                            stopped=stopped, method=ci_method(n), **({"at_floor": True} if floored else {}))
                if not active:
                    break

    def evidence_points(self, spec, points):
        """why=1: the measured points that get evidence runs (lab/engine/evidence/points.py: why_points),
        judged from the
        timed repeats kept so far; final once the experiment's timed rounds are done. points: the plan's
        (a shared point's curve counts, and its evidence is its owner's)."""
        if not self.why_runs:
            return []
        return why_points.chosen(spec, points, [r for p in points for rs in self.done_repeats(p).values() for r in rs])

    def explain(self, spec, points):
        """why=1: the evidence runs, after the experiment's timed rounds and never inside one
        (scripts/lab/engine/evidence/collect.py), at the points why_points chooses: by default each curve's fewest
        threads and its knee, known only now. Each point whose timed repeats are all done and whose
        evidence is not gets them (a resumed sweep makes only what is missing). Missing evidence is one
        journal line, never a failed point."""
        if not self.why_runs:
            return
        chosen = self.evidence_points(spec, points)
        if why_points.mode(spec) == why_points.DIFFERENTIAL:
            self.journal_choice(spec, points)
        for p in chosen:
            folder = self.rf.evidence_dir(p.experiment, p.stem)
            done = self.done_repeats(p)
            if why_ev.complete(folder, self.why_runs) or not done or not self.settled(spec, p, done)[0]:
                continue
            self.journal.event("evidence_started", f"{p.experiment}: evidence runs ({self.why_runs}) of "
                               f"{p.variant or '-'} {p.placement} threads={p.threads}", **self.fields(p),
                               runs=self.why_runs)
            t0 = time.monotonic()
            rows = [r for rs in done.values() for r in rs]
            runs, status, why = why_collect.run_point(self, spec, p, self.why_runs, rows, folder)
            self.unexplained.discard((p.experiment, p.stem))
            missing = why_collect.missing_line(status)
            reason = "; ".join(x for x in (why, missing) if x)
            if reason:
                self.journal.event("evidence_missing", f"{p.experiment}: {p.variant or '-'} {p.placement} "
                                   f"threads={p.threads}: evidence missing: {reason}", **self.fields(p), reason=reason)
            self.journal.event("evidence_done", **self.fields(p), runs=runs, seconds=round(time.monotonic() - t0, 3),
                               evidence=status)
        self.unexplained -= {(p.experiment, p.stem) for p in points}    # the points not chosen get none

    def journal_choice(self, spec, points):
        """The journal's `evidence_points` line: where the differential's evidence runs go, per curve, and why."""
        exp = spec.name
        if why_points.metric(spec) is None:
            self.journal.event("evidence_points", f"{exp}: no evidence runs: no speedup or scaling chart, so no "
                               "curve for the differential to compare (why_points=all: every point)",
                               experiment=exp, curves=[])
            return
        rows = [r for p in points for rs in self.done_repeats(p).values() for r in rs]
        pairs = why_points.compared(spec, why_points.with_shared(points, rows))
        curves = [{"variant": v, "placement": pl, "base": b, "knee": k, "why": why}
                  for (v, pl), (b, k, why) in sorted(pairs.items())]
        said = "; ".join(f"{c['variant'] or '-'} {c['placement']} threads={c['base']}"
                         + (f" and {c['knee']}, {c['why']}" if c["knee"] != c["base"] else "") for c in curves)
        self.journal.event("evidence_points", f"{exp}: evidence runs at the points the differential compares "
                           "(and a placement's other variants at the same thread counts): "
                           + (said or f"none (no timed repeat of {why_points.metric(spec)})"),
                           experiment=exp, curves=curves)

    def warm_up(self, spec, p, count):
        raw = self.rf.raw(p.experiment, p.key(0))
        for i in range(count):
            self.journal.event("warmup", f"{p.experiment}: warm-up run ({p.variant or '-'} {p.placement} "
                               f"threads={p.threads}), discarded", **self.fields(p))
            pt.measure(self, spec, p, 0, raw, discard=True)

    def one_repeat(self, spec, p, repeat):
        """Measure one repeat, re-measuring while the guard says it was disturbed. True when kept."""
        t_enter = time.monotonic()
        exp = p.experiment
        raw = self.rf.raw(exp, p.key(repeat))
        limits = {k: float(spec[k]) for k in ("max_steal", "max_foreign", "max_neighbour", "max_invol_cs", "min_corun",
                                              "max_capacity_loss", "max_memory_capacity_loss")}
        shown = pt.shown_command(spec, pt.values_for(p, repeat, raw, self.perf, self.root, p.placement != "unpinned"))
        attempt = 0
        measured = 0.0       # seconds inside measured commands (and retry pauses): not the engine's
        while True:
            attempt += 1
            if os.path.isdir(raw):
                shutil.rmtree(raw)
            left, eta = self.progress(p, repeat)
            self.journal.event("started", **self.fields(p, repeat), attempt=attempt, command=shown, left=left,
                               eta_s=eta)
            t0 = time.monotonic()
            outcome = pt.measure(self, spec, p, repeat, raw)
            secs = time.monotonic() - t0
            if outcome.rc != 0 and not outcome.reason:
                outcome.reason = silent_failure(self.rf.path)
            measured += outcome.reading.seconds if outcome.reading else secs
            # the lab's instruments' "bad input"; any program's 2 is a failure
            if outcome.rc == 2 and not spec.get("exec"):
                self.journal.event("failed", f"{exp}: the command rejected its input (exit 2): {shown}: "
                                   f"{outcome.reason}", **self.fields(p, repeat), rc=2, reason=outcome.reason)
                raise RejectedInput()
            if outcome.rc != 0:
                self.failed += 1
                self.journal.event("failed", f"{exp}: FAILED {p.key(repeat)} (exit {outcome.rc}, {secs:.0f} s): "
                                   f"{outcome.reason}", **self.fields(p, repeat), rc=outcome.rc,
                                   reason=outcome.reason, seconds=round(secs, 3))
                return False
            why = "; ".join(w for w in (outcome.reading.disturbed(limits),
                                        outcome.capacity.disturbed({"core": limits["max_capacity_loss"],
                                                                    "memory": limits["max_memory_capacity_loss"]})
                                        if outcome.capacity else "",
                                        corun_short(outcome.rows, limits["min_corun"]),
                                        misplaced(raw, p.nodes, spec["membind"], p.placement != "unpinned")) if w)
            stopped = self.no_retry and self.bound(p)
            if why and attempt <= int(spec["retries"]) and not stopped:
                os.replace(raw, f"{raw}.try{attempt}")
                self.journal.event("remeasured", f"{exp}: {p.key(repeat)} disturbed ({why}): measuring again",
                                   **self.fields(p, repeat), attempt=attempt, reason=why,
                                   noise=noise(outcome))
                time.sleep(float(spec["retry_pause"]))
                measured += float(spec["retry_pause"])
                continue
            break
        if why and stopped and attempt <= int(spec["retries"]):
            why = f"{why} ({self.no_retry})"
        if why:
            for r in outcome.rows:
                r["suspect"] = why
            self.journal.event("suspect", f"{exp}: {p.key(repeat)} kept but suspect: {why}",
                               **self.fields(p, repeat), reason=why)
        tidy.write_atomic(self.rf.point_csv(exp, p.key(repeat)),
                          [{k: r.get(k, "") for k in tidy.COLUMNS} for r in outcome.rows], header=False)
        self.done_now += 1
        self.first_at = t_enter if self.first_at is None else self.first_at
        self.priced_done += self.expected(spec, p)[1]
        overhead = time.monotonic() - t_enter - measured
        self.journal.event("done", f"{exp}: done {p.key(repeat)} in {secs:.1f} s", **self.fields(p, repeat),
                           seconds=round(outcome.reading.seconds, 3), overhead_ms=round(overhead * 1000, 2),
                           noise=noise(outcome))
        self.count(spec, p, *self.settled(spec, p, self.done_repeats(p))[:2])
        self.replan()
        return True


def noise(outcome):
    """The guard's readings of one attempt, for the journal."""
    d = outcome.reading.as_dict()
    if outcome.capacity:
        d["capacity"] = outcome.capacity.as_dict()
    return d


def silent_failure(run):
    """Why a command that failed left no word on stderr: often a full disk (its log could not be
    written either)."""
    try:
        free = shutil.disk_usage(run).free
    except OSError as e:
        return f"no output; the run folder cannot be read: {e.strerror}"
    return ("no output: the disk holding the run folder is full" if free < 1 << 20 else
            "no output on stderr")


def round_order(seed, experiment, placement, threads, rnd, members):
    """The variants of one (placement, threads) in the order round `rnd` measures them: a shuffle seeded
    by the sweep's seed and the round, so that the journal's seed reproduces it."""
    order = list(members)
    random.Random(f"{seed}:{experiment}:{placement}:{threads}:{rnd}").shuffle(order)
    return order
