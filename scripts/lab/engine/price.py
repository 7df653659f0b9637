"""The dry run's price of a sweep: every point, what cannot run and why, and an ETA.

Seconds per run come from the newest earlier run of the same experiment and profile on this host
(its journal's `done` events; lab/engine/pricehistory.py), or from another host's history summary (fleet-plan's
`history=FILE`), else from the spec's `cost`. Adaptive repeats count by the number the
last run needed (else min_repeats; per point where that run measured it: `known`, which also gives a point
stable last time its lower floor, stable_repeats), and so do re-measurements: that run's disturbed attempts per kept
repeat, each a run plus `retry_pause`. The range goes from min_repeats with none re-measured to
max_repeats at that rate; the worst case lets every run last its whole timeout and be retried as often
as allowed. `compute` returns the price as data (the sweep's progress line counts from it too),
`write` prints it.
"""
import math
import os
import shutil
from dataclasses import dataclass

from lab import ROOT
from lab.core import rules
from lab.core.stats import t975
from lab.core.term import visible
from lab.engine.evidence import collect as why_collect
from lab.engine.evidence import hardware, pmu
from lab.engine.evidence import points as why_points
from lab.topology.topo import cpu_list, cpu_ranges

from . import stories
from .plan import KEEP, Point, importance, words_of_level


def per_run(spec, point, measured):
    if measured is not None:
        return measured
    cost, _, most = spec["cost"].partition(" max ")
    n = len(point.cpus)
    if cost.endswith("/pair"):
        # every pair of {cpus}, and the SMT pairs a one-PU-per-core matrix adds ({smt_pairs})
        extra = len(point.smt_pairs.split(",")) if point.smt_pairs else 0
        secs = float(cost[:-5]) * (n * (n - 1) / 2 + extra)
    elif cost.endswith("/cpu"):
        secs = float(cost[:-4]) * n
    else:
        secs = float(cost)
    return min(secs, float(most)) if most else secs


def repeats(spec, seen_n):
    """(expected, fewest, most) repeats per point."""
    if spec["repeats"] != "auto":
        r = int(spec["repeats"])
        return r, r, r
    lo, hi = int(spec["min_repeats"]), int(spec["max_repeats"])
    return min(max(seen_n or lo, lo), hi), lo, hi


def stable_floor(spec):
    """The fewest repeats of a point this host measured stable last time: `stable_repeats`, never below
    what the report's words need (rules.MIN_REPEATS: an interval exists from 3) nor above min_repeats."""
    lo = int(spec["min_repeats"])
    return min(max(int(spec["stable_repeats"]), rules.MIN_REPEATS), lo)


def width(n):
    """The normal approximation's half-width per unit of spread at n repeats (stats.median_ci): t/√n."""
    return t975(n - 1) / math.sqrt(n)


def known(spec, seen):
    """(floor, expected repeats, words) of an adaptive point from what this host's history showed for it
    (seen: pricehistory.History.point's (n, ci %, confident, run), or None). Stable last time: its
    interval then, projected to the stable floor by t/√n (an order-statistic interval from 6 repeats on
    is wider than the normal one, so the projection errs noisy), is within `ci`: it starts from that
    floor. Else min_repeats stays its floor, and it is expected to need what it needed then."""
    lo, hi = int(spec["min_repeats"]), int(spec["max_repeats"])
    if seen is None:
        return lo, None, ""
    n, ci, confident, run = seen
    floor = stable_floor(spec)
    projected = ci * width(max(floor, 3)) / width(max(n, 3))
    then = f"run {run}: n={n}, ±{ci:.1f}%" + ("" if confident else ", not confident")
    if confident and projected <= float(spec["ci"]):
        return floor, floor, (f"stable last time ({then}; ±{projected:.1f}% projected at {floor} repeats <= "
                              f"{spec['ci']}%): at least {floor} repeats" + (f", not {lo}" if floor < lo else ""))
    return lo, min(max(n, lo), hi), (f"not stable last time ({then}; ±{projected:.1f}% projected at {floor} "
                                     f"repeats > {spec['ci']}%)" if confident else f"not stable last time ({then})") \
        + f": at least {lo} repeats (min_repeats), expected {min(max(n, lo), hi)}"


def hms(secs):
    secs = int(round(secs))
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


SPEC_COST = "spec's cost"


# why=1: what an evidence run costs beside the run it records, measured by phase on the lab's 2-vCPU VM
# (lab/engine/evidence/runcost.py; docs/measured.md, "why=1: what an evidence run costs, by phase"):
# perf record's start-up and write-out, WHY_RUN_FIXED seconds whatever the run's length; the run itself
# once (at least why_seconds where a short command is repeated to fill them: lab/engine/evidence/collect.py's
# rule, an instrument's unit is known only from its rows, so it is priced as repeated: the price errs
# long); then perf script's DWARF unwinding and the folding, WHY_ANALYSIS_S + WHY_ANALYSIS_S_PER_MB a MiB
# of recording, which scales with the stacks recorded, not the run's seconds, and collect.plan keeps
# within collect.RECORD_BUDGET (why_bytes). A point's evidence runs are preceded by one counting
# calibration (collect.calibrate: the command once more, or repeated for at most collect.CALIBRATE_S,
# under perf stat, whose start-up is WHY_CALIBRATION_FIXED): why_calibration.
WHY_RUN_FIXED, WHY_CALIBRATION_FIXED = 1.2, 0.15
WHY_ANALYSIS_S, WHY_ANALYSIS_S_PER_MB = 0.2, 0.004
MIB = 2 ** 20


def filled_seconds(spec):
    return why_collect.repeat_seconds(spec, why_collect.throughput(spec, why_collect.primary_metric(spec), []))


def why_bytes(point, seconds):
    """The recording an evidence run of `point` lasting `seconds` is expected to make, as collect.plan
    plans it at the full tier: the on-CPU samples of as many busy CPUs as the point has threads (or
    CPUs, if fewer), and the stacked tracepoints at their tier's cap (their rates are counted only just
    before the run: the price errs long), within RECORD_BUDGET."""
    tier = why_collect.TIERS[0]
    busy = max(1, min(point.threads, len(point.cpus) or point.threads))
    rates = {t: tier["trace_rate"] for t, stack in why_collect.TRACEPOINTS if stack}
    return why_collect.plan(tier, rates, busy, seconds, why_collect.RECORD_BUDGET)["bytes"]


def why_run(spec, s, point):
    """The price of one evidence run of `point`, whose run costs s seconds."""
    run = max(s, filled_seconds(spec))
    return WHY_RUN_FIXED + run + why_report(spec, s, point)


def why_report(spec, s, point):
    """The price of one pass over an evidence run's recording: perf script's unwinding and the folding.
    The hardware tier's second report of its c2c recording (--double-cl: hardware.second_reports) is
    priced so too: no report pass of perf c2c has been measured (the lab has had no PMU), and this is the
    measured price of reading a recording of that size (its bytes as the switch recording's: the hardware
    runs are priced as switch-recording runs too)."""
    run = max(s, filled_seconds(spec))
    return WHY_ANALYSIS_S + WHY_ANALYSIS_S_PER_MB * why_bytes(point, run) / MIB


def why_calibration(spec, s):
    """The price of a point's counting calibration before its evidence runs (collect.calibrate)."""
    return WHY_CALIBRATION_FIXED + max(s, min(filled_seconds(spec), why_collect.CALIBRATE_S))


@dataclass(frozen=True)
class PointPrice:
    point: Point
    repeats: float      # expected kept repeats (an adaptive point: the number the last run needed)
    seconds: float      # one run
    kept: float         # one kept repeat, its expected re-measurements included
    why: float          # its evidence runs (why=1), else 0
    chance: float = 1.0  # plan=adaptive: the share of its curve's refinement candidates expected measured
    floor: int = 0      # repeats=auto: the fewest it keeps (min_repeats, or the stable floor: price.known)
    known: str = ""     # what this host's history showed for it, in words (journal `known`), "" without


@dataclass(frozen=True)
class ExperimentPrice:
    name: str
    source: str                       # where the seconds per run came from
    repeats: tuple                    # (expected, fewest, most) per point
    remeasured: float                 # re-measured attempts per kept repeat, last run
    setup: float
    points: tuple                     # PointPrice, in measuring order
    skipped: tuple                    # "impossible: EXP placement threads=N: why" the host cannot run, or
                                      # "shared: …" measured once as another placement (plan.shared)
    expected: float
    fewest: float
    most: float
    worst: float                      # every run to its timeout, retried as often as allowed
    cold: str = ""                    # the built file missing here, whose cold build the setup includes


@dataclass(frozen=True)
class Price:
    experiments: tuple                # ExperimentPrice
    missing: tuple                    # (experiment, tool not on PATH): skipped whole
    why_runs: int = 0
    dropped: tuple = ()               # (experiment, why): left out whole to fit the budget (fit_budget)

    @property
    def points(self):
        return sum(len(e.points) for e in self.experiments)

    def total(self, field):
        return sum(getattr(e, field) for e in self.experiments)

    # in all: the sum over experiments (the dry run's ETA, its range, the worst case)
    expected = property(lambda self: self.total("expected"))
    fewest = property(lambda self: self.total("fewest"))
    most = property(lambda self: self.total("most"))
    worst = property(lambda self: self.total("worst"))

    def line(self):
        """The dry run's last line."""
        rng = f" (range {hms(self.fewest)} – {hms(self.most)})" if self.fewest != self.most else ""
        held = [pp for x in self.experiments for pp in x.points if pp.point.held == "refine"]
        cand = (f" (of which {len(held)} plan=adaptive refinement candidates, ~{sum(pp.chance for pp in held):.0f} "
                "expected measured)" if held else "")
        return f"{self.points} points{cand}, ETA {hms(self.expected)}{rng}"


def experiment_price(spec, plan, profile, history, why_runs, hw_runs=0, cold=False, hw_reports=0):
    found = history.get(spec.name, profile) if history else None
    measured, seen_n, again, _run = found or (None, None, 0.0, None)
    e, lo, hi = repeats(spec, seen_n)
    setup = float(spec["setup_cost"]) + (float(spec["build_cost"]) if cold else 0.0)
    live = [p for p in plan if not p.skip]
    expect = fewest = most = 0.0
    if live:
        first = per_run(spec, live[0], measured) * int(spec["warmup"])
        expect, fewest, most = (setup + first,) * 3
    points = []
    # why=1: evidence runs only where why_points makes them (by default per curve the fewest threads and
    # the dearest candidate for the knee; the range's top: a knee per variant)
    priced = why_points.priced(spec, plan, lambda p: per_run(spec, p, measured)) if why_runs else ([], [])
    explained, at_most = ({id(p) for p in ps} for ps in priced)
    chances = refinements(plan)
    auto = spec["repeats"] == "auto"
    for p in live:
        s = per_run(spec, p, measured)
        seen = history.point(spec.name, profile, p.variant, p.placement, p.threads, cpu_list(p.cpus)) \
            if auto and found else None
        floor, pe, words = known(spec, seen) if auto else (lo, None, "")
        pe = e if pe is None else pe
        kept = (1 + again) * s + again * float(spec["retry_pause"])   # a kept repeat, retries included
        one = (why_runs + hw_runs) * why_run(spec, s, p) + hw_reports * why_report(spec, s, p) + \
            why_calibration(spec, s)
        # the range's top: the most runs the collector makes (collect.most_attempts: a run the validity gate
        # rejects redone at a lighter tier, one more where it leaves a point one kept run short of two),
        # a redo priced as a whole run at the full tier (it records less: the top errs long)
        top = (why_collect.most_attempts(why_runs) - why_runs) * why_run(spec, s, p)
        why, why_most = (one if id(p) in explained else 0.0), (one + top if id(p) in at_most else 0.0)
        c = chances.get(id(p), 1.0)
        # an adaptive candidate: expected at its chance, never in the fewest, always in the most
        expect, fewest, most = (expect + c * (pe * kept + why), fewest + (floor * s + why if c == 1.0 else 0.0),
                                most + hi * kept + why_most)
        points.append(PointPrice(p, pe, s, kept, why, c, floor, words))
    timeout, pause = float(spec["timeout"]), float(spec["retry_pause"])
    worst = (len(live) * hi * (1 + int(spec["retries"])) * (timeout + pause)
             + (int(spec["warmup"]) * timeout if live else 0))
    return ExperimentPrice(spec.name, SPEC_COST if found is None else history.source(found), (e, lo, hi), again,
                           setup, tuple(points),
                           tuple(f"{kind_of_skip(p)}: {spec.name} {p.placement} "
                                 f"threads={p.threads}: {p.skip}" for p in plan if p.skip),
                           expect, fewest, most, worst, spec["built"] if cold else "")


def refinements(plan):
    """{id(point): chance} of plan=adaptive's refinement candidates (held "refine"): per curve the expected
    number of them measured, two bisections (the knee, a peak) of the widest gap between coarse counts,
    shared over them. Coarse candidates are priced whole: a curve that never turns down needs them all."""
    curves = {}
    for p in plan:
        if p.held == "refine" and not p.skip:
            curves.setdefault((p.variant, p.placement), []).append(p)
    out = {}
    for (v, pl), ps in curves.items():
        coarse = sorted(p.threads for p in plan if (p.variant, p.placement) == (v, pl) and p.held != "refine")
        gaps = [sum(1 for p in ps if a < p.threads < b) for a, b in zip(coarse, coarse[1:])] or [len(ps)]
        k = min(len(ps), 2 * math.ceil(math.log2(1 + max(gaps))))
        out.update({id(p): k / len(ps) for p in ps})
    return out


def curves(plan):
    """{(variant, placement): [live thread counts]} of one experiment's plan."""
    out = {}
    for p in plan:
        if not p.skip:
            out.setdefault((p.variant, p.placement), []).append(p.threads)
    return out


def cost_of(pp):
    """What leaving a point out saves, by the price's expectation."""
    return pp.chance * (pp.repeats * pp.kept + pp.why)


def fit(price, budget, when="before measuring"):
    """Leave out the points that change the answer least (plan.importance; the dearest first among
    equals) until the expected price fits budget seconds. Marks each left-out point skipped, saying so,
    and returns them; a curve keeps its first and last thread count (what is left then does not fit, and
    the dry run says by how much)."""
    over = price.expected - budget
    if over <= 0:
        return []
    groups = {}      # a placement and thread count is left out for every variant: rounds compare them
    for x in price.experiments:
        ts = curves([pp.point for pp in x.points])
        for pp in x.points:
            p = pp.point
            g = groups.setdefault((x.name, p.placement, p.threads), [KEEP + 1, 0.0, []])
            g[0] = min(g[0], importance(p, ts[(p.variant, p.placement)]))
            g[1] += cost_of(pp)
            g[2].append(p)
    out = []
    for (_x, _pl, t), (level, saves, ps) in sorted(groups.items(), key=lambda kv: (kv[1][0], -kv[1][1], -kv[0][2])):
        if over <= 0 or level >= KEEP:
            break
        for p in ps:
            p.skip = (f"budget: left out {when} to fit {hms(budget)} ({words_of_level(level)}; "
                      f"the points that change the answer least go first)")
            p.held = ""
            out.append(p)
        over -= saves
    return out


def fit_budget(reprice, plans, specs, budget):
    """Fit the plan to budget seconds: thin the curves (fit); when that is not enough, leave out whole
    experiments no seed story judges (stories.py), the dearest by the thinned price first, until the rest
    fits; then thin the experiments kept again, only as far as they now need (an experiment left out may
    make room for the counts thinned before). reprice(): the price of plans as they are marked now.
    Returns (the points left out, ((experiment, why), …) left out whole); a story's experiment, or the
    last experiment left, is never left out, so what is left may still not fit (the dry run says so)."""
    before = [(p, p.skip, p.held) for ps in plans.values() for p in ps]
    full = reprice()
    left = fit(full, budget)
    now = reprice() if left else full
    alone = {x.name: x.expected for x in full.experiments}
    where = {s.name: spec_path(s.path) for s in specs}
    dropped = {}
    while now.expected > budget:
        live = [x for x in now.experiments if x.points]
        kept = [x for x in live if not any(p.story for p in plans.get(x.name, ()))]
        if not kept or len(live) < 2:     # a sweep of one experiment (./lab scale) is never left empty
            break
        x = max(kept, key=lambda x: x.expected)
        why = (f"budget (priced {hms(alone[x.name])}; the dearest experiment no story judges, left out whole "
               f"to fit {hms(budget)}); run it alone with `./lab sweep {where[x.name]}`")
        dropped[x.name] = why
        for p in plans[x.name]:
            if not p.skip:
                p.skip, p.held = f"budget: {x.name} left out whole", ""
        now = reprice()
    if not dropped:
        return left, ()
    for p, skip, held in before:
        if p.experiment not in dropped:
            p.skip, p.held = skip, held
    return fit(reprice(), budget), tuple(dropped.items())


def spec_path(path):
    """A spec's path as a user types it in the checkout (experiments/x.spec), else as given."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


def kind_of_skip(p):
    return "shared" if p.same_as else "skipped" if p.skip.startswith(("budget:", "adaptive:")) else "impossible"


def compute(specs, plans, profile, history, on_host, why_runs=0, first=False, dropped=()):
    """The price of every point of the resolved specs. history (lab/engine/pricehistory.py, or None) gives
    measured times; on this host missing tools count too, on a fixture they do not. why_runs: evidence
    runs per point (why=1), each priced by why_run(); on a host whose PMU the hardware tier detected, one
    more such run per kind it records (evidence/hardware.py; priced at every evidence point, though a point
    with no switch recording kept or a measured server gets none: the price errs long), and where that
    perf reports c2c's recording a second time (--double-cl), that pass (why_report). A fixture has no
    PMU of its own to detect: none there. first: a sweep with a budget, which measures the seed stories'
    experiments first (stories.first), so one of them pays a cold build; dropped: (experiment, why) of
    the experiments fit_budget left out whole."""
    missing = {s.name: t for s in specs for t in s["requires"].split() if on_host and not shutil.which(t)}
    kinds = hardware.wanted(pmu.evidence_parts()) if why_runs and on_host else []
    hw_reports = hardware.second_reports(kinds, pmu.host()) if kinds else 0
    return Price(tuple(experiment_price(s, plans[s.name], profile, history, why_runs, len(kinds), cold, hw_reports)
                       for s, cold in zip(*cold_builds(specs, missing, on_host, plans, first))),
                 tuple(missing.items()), why_runs, tuple(dropped))


def cold_builds(specs, missing, on_host, plans=None, first=False):
    """(the specs priced, whether each pays its cold build): on this host, of each `built` file that is
    missing (the runner's cargo build: 179 s from a fresh clone here, priced 30 s before, docs/measured.md),
    the first spec to run that has a point to measure (plans given; in stories.first's order with first),
    which builds it; a fixture host is priced warm."""
    priced = [s for s in specs if s.name not in missing]
    order = stories.first(priced, plans) if first and plans is not None else priced
    seen, cold = set(), set()
    for s in order:
        path = s["built"]
        if not path or path in seen or (plans is not None and all(p.skip for p in plans.get(s.name, ()))):
            continue
        seen.add(path)
        if on_host and not built_here(path):
            cold.add(s.name)
    return priced, [s.name in cold for s in priced]


def built_here(path):
    """Whether a spec's `built` file is in this checkout (a fresh clone has none of them)."""
    return os.path.exists(os.path.join(ROOT, path))


def why_where(spec, x, runs):
    """The dry run's words for an experiment's evidence runs: how many, where (why_points) and their price."""
    n = sum(1 for pp in x.points if pp.why)
    if not n:
        return "no evidence runs: no scaling curve here for the differential to compare (why_points=all: every point)"
    where = f"at every point ({n})" if why_points.mode(spec) == why_points.ALL else \
        (f"at {n} of {len(x.points)} points (per curve the fewest threads and the knee, a placement's variants "
         "at each other's too; the knee is unknown until the curve is measured, so it is priced at the curve's "
         "dearest other point, and in the range's top at as many as the placement has variants)")
    return (f"{runs} evidence runs per point {where}, each a run (a short command's filled to why_seconds) + "
            f"~{WHY_RUN_FIXED:g} s of perf + its unwinding (~{WHY_ANALYSIS_S_PER_MB * 1000:g} ms a MiB recorded, "
            f"at most {why_collect.RECORD_BUDGET // MIB} MiB); in the range's top up to "
            f"{why_collect.most_attempts(runs)} evidence runs a point (a run the validity gate rejects is redone at a "
            "lighter tier" + (f", and one more is made where it leaves one kept run short of {why_collect.MIN_KEPT}"
                              if runs >= why_collect.MIN_KEPT else "") + ")")


def history_words(x):
    """The comment line's words on the points whose repeats start from what the history showed (known)."""
    seen = [pp for pp in x.points if pp.known]
    if not seen:
        return ""
    stable = [pp for pp in seen if pp.known.startswith("stable")]
    lowered = sum(1 for pp in stable if pp.floor < x.repeats[1])
    return (f"; {len(seen)} point(s) measured here before: {len(stable)} stable last time"
            + (f" ({lowered} start at {min(pp.floor for pp in stable)} repeats, not {x.repeats[1]})" if lowered else "")
            + f", {len(seen) - len(stable)} not")


def write(price, specs, out):
    """Print every point, each experiment's sources, what is impossible, and the ETA."""
    spec = {s.name: s for s in specs}
    out.write(f"{'experiment':<18} {'variant':<14} {'placement':<14} {'threads':>7}  {'repeats':<9} "
              f"{'s/run':>8}  cpus\n")
    gone = dict(price.dropped)
    for x in price.experiments:
        if x.name in gone:
            continue
        reps = spec[x.name]["repeats"]
        for pp in x.points:
            p = pp.point
            held = (f"  [adaptive: {'coarse grid, while the curve rises' if p.held == 'coarse' else 'candidate'}"
                    f", expected {pp.chance:.0%}]" if p.held else "") + (f"  [story {p.story}]" if p.story else "")
            out.write(f"{x.name:<18} {visible(p.variant) or '-':<14} {p.placement:<14} {p.threads:>7}  {reps:<9} "
                      f"{pp.seconds:>8.5g}  {cpu_ranges(p.cpus)}{held}\n")
        e, lo, hi = x.repeats
        out.write(f"# {x.name}: seconds per run from the {x.source}; repeats {e:.3g}"
                  + (f" expected ({lo}–{hi})" if lo != hi else "")
                  + (f"; {x.remeasured:.2g} re-measured per repeat last run" if x.remeasured else "")
                  + history_words(x)
                  + f"; build and setup {x.setup:g} s" + (f" (a cold build: {x.cold} is missing)" if x.cold else "")
                  + (f"; why=1: {why_where(spec[x.name], x, price.why_runs)}" if price.why_runs else "")
                  + "\n")
    for x in price.experiments:
        for s in () if x.name in gone else dict.fromkeys(x.skipped):   # per placement and count, not variant
            out.write(f"{s}\n")
    for name, why in price.dropped:
        out.write(f"skipped: {name} (every point) — {why}\n")
    for name, tool in price.missing:
        out.write(f"impossible: {name} (every point): '{tool}' is not on PATH\n")
    out.write(price.line() + "\n")
