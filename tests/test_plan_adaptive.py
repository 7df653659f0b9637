"""Issue 54: thread counts chosen per curve (plan=adaptive) and a sweep's budget.

The adaptive plan must reach the full grid's words (where scaling stops, the peak) within one grid step
with at most 40% of its points: on synthetic curves through the planner alone (fast), and on a simulated
program of known law through the real engine (tests/fixtures/usl-sim.sh; slow). A budget is parsed
strictly, the default sweep's dry run fits its budget by the plan's own price, and a sweep whose measured
costs exceed its price re-plans and says so; a point left out is never in the data.
"""
import glob
import io
import json
import os
import random
import re

import pytest

from conftest import TOPO, sh
from lab.core import rules
from lab.core.stats import Summary, summary
from lab.engine.plan import FIRST, Point, below, coarse, importance, peak_of, refine
from lab.engine.spec import SpecError, duration

# The simulated host's candidate thread counts: up to 256, a grid step of 8 past 8
GRID = [1, 2, 4] + list(range(8, 257, 8))
# (sigma, kappa) of each shape: linear, contention-bound (σ), coherency-bound (σ, κ: a peak near 44)
SHAPES = {"linear": (0.0, 0.0), "contention": (0.03, 0.0), "coherency": (0.02, 0.0005)}
NOISE = 0.005


def usl(n, sigma, kappa):
    return 1000 * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def words(series):
    """(where scaling stops: the count before the knee or None, the peak: the best count with a later one
    below it over both 95% intervals or None): the report's rules (core/rules.py) on measured points."""
    rows = rules.speedups({"c": series}, "higher")["c"]
    _b, knee, _why, stops = rules.knee(rows)
    ts = sorted(series)
    top = peak_of(series, "higher")
    past = any(t > top and below(series[t], series[top], "higher") for t in ts)
    return (ts[ts.index(knee) - 1] if stops else None), (top if past else None)


def within_a_step(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(GRID.index(a) - GRID.index(b)) <= 1)


def planned(measure):
    """The adaptive plan's loop: the first coarse counts, then what refine() asks, until it asks nothing."""
    got = {t: measure(t) for t in coarse(GRID)[:FIRST]}
    while True:
        ask = refine(GRID, got, "higher")
        if not ask:
            return got
        assert not set(ask) & set(got), "refine asks only for counts not measured"
        got.update({t: measure(t) for t in ask})


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adaptive_words_match_the_full_grid_on_synthetic_curves(shape, seed):
    rng = random.Random(seed)
    sigma, kappa = SHAPES[shape]

    def measure(t):
        return summary([usl(t, sigma, kappa) * (1 + rng.gauss(0, NOISE)) for _ in range(3)])
    full = {t: measure(t) for t in GRID}
    adaptive = planned(measure)
    (fs, fp), (as_, ap) = words(full), words(adaptive)
    assert within_a_step(fs, as_), (shape, fs, as_, sorted(adaptive))
    assert within_a_step(fp, ap), (shape, fp, ap, sorted(adaptive))
    assert len(adaptive) <= 0.4 * len(GRID), sorted(adaptive)
    if shape == "coherency":
        assert fp is not None and ap is not None         # the law has a peak: both must find it
    if shape == "linear":
        assert sorted(adaptive) == coarse(GRID)          # nothing to refine: the coarse grid alone


def exactly(median, lo, hi):
    """A summary of three repeats with this median and 95% interval (a curve known exactly)."""
    return Summary(median=median, min=lo, max=hi, spread_pct=(hi - lo) / median * 100, n=3, ci_lo=lo, ci_hi=hi,
                   ci_pct=(hi - median) / median * 100, ci_method="given")


def test_refine_bisects_the_knee_bracket_and_stops_when_neighbours():
    exact = {t: exactly(v, v * 0.999, v * 1.001)
             for t, v in ((1, 1000.0), (4, 3900.0), (16, 9000.0), (64, 30000.0), (256, 110000.0))}
    ask = refine(GRID, exact, "higher")
    # efficiency at 16 is 56%: the bracket 4–16 is bisected at its geometric middle (8)
    assert 8 in ask and "knee" in ask[8]
    exact[8] = exactly(7000.0, 6993.0, 7007.0)
    assert all(t > 16 or t not in (8, 4) for t in refine(GRID, exact, "higher"))


def test_importance_keeps_a_curves_ends():
    ts = [1, 2, 4, 8, 16, 32, 64, 128]
    level = {t: importance(Point("x", "", "compact", t), ts) for t in ts}
    assert level[1] == level[128] == 3 and level[4] == level[16] == level[64] == 2 and level[2] == level[32] == 1
    assert importance(Point("x", "", "compact", 16, held="refine"), ts) == 1   # measured only if asked


@pytest.mark.parametrize("text,secs", [("45m", 2700), ("1h30m", 5400), ("90s", 90), ("2h", 7200), ("1h0m5s", 3605)])
def test_budget_durations(text, secs):
    assert duration(text) == secs


@pytest.mark.parametrize("bad", ["45", "0m", "-5m", "1.5h", "45 m", "", "m", "1d", "200h"])
def test_a_bad_budget_is_refused(bad):
    with pytest.raises(SpecError, match=r"^command line: budget must be a duration"):
        duration(bad)


def test_a_bad_budget_exits_2_naming_it(results):
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", "budget=45", env=results, check=False)
    assert p.returncode == 2 and "command line: budget must be a duration" in p.stderr and p.stdout == ""


def budget_line(out):
    m = re.search(r"^budget (\d+):(\d\d):(\d\d) .*the plan's price (\d+):(\d\d):(\d\d) expected (fits|does NOT fit)",
                  out, re.M)
    assert m, out[-2000:]
    g = [int(x) for x in m.groups()[:6]]
    return g[0] * 3600 + g[1] * 60 + g[2], g[3] * 3600 + g[4] * 60 + g[5], m.group(7)


@pytest.mark.parametrize("host", ["AMD-19h-Zen3-2xEpyc-7763.v2.xml", "Intel-Haswell-2xXeon-E5-2680v3.v2.xml", ""])
def test_the_default_sweep_fits_its_budget_by_its_own_price(results, host):
    args = [f"topology={TOPO}/{host}"] if host else []
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", *args, env=results).stdout
    budget, price, word = budget_line(out)
    total = re.search(r"^(\d+) points, ETA (\d+):(\d\d):(\d\d)", out, re.M)
    eta = int(total.group(2)) * 3600 + int(total.group(3)) * 60 + int(total.group(4))
    # here too, built or a fresh clone (test_a_fresh_clones_default_sweep_leaves_out_an_experiment_to_fit)
    assert word == "fits" and price <= budget and eta >= price, out[-3000:]
    pus = int(re.search(r"on a host of (\d+) PUs", out).group(1))
    assert budget == (20 * 60 if pus <= 4 else 45 * 60)
    if host.startswith("AMD"):
        # the full grid is ~1:39 here (issue 54): points were left out, each said so with why
        left = [ln for ln in out.splitlines() if ln.startswith("skipped: ") and ": budget: left out" in ln]
        assert left and "placement × thread count(s) left out to fit" in out
        measured = {(f[0], f[2], f[3]) for f in (ln.split() for ln in out.splitlines())
                    if len(f) > 6 and f[3].isdigit()}
        for ln in left:     # a point left out is not among those priced
            exp, pl, t = re.match(r"skipped: (\S+) (\S+) threads=(\d+):", ln).groups()
            assert (exp, pl, t) not in measured


def test_a_fresh_clones_default_sweep_leaves_out_an_experiment_to_fit(results, monkeypatch):
    # measured from a fresh clone here: 28:51 of 20:00, runner-cql (a Cassandra of its own) 11 min of it and
    # the runner's cold build 3 (docs/measured.md). Thinning cannot help on 2 PUs (every curve is 1 and 2
    # threads): the dearest experiment no story judges is left out whole, said so, and the rest fits
    from lab.engine import api
    from lab.engine import price as pr
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])          # no history: the specs' cost
    monkeypatch.setattr(pr, "built_here", lambda path: False)          # a fresh clone: nothing built
    req = api.request(["dry=1"])                                       # this host (a fixture is priced warm)
    out = io.StringIO()
    p = api.dry_run(req, out)
    out = out.getvalue()
    assert p.expected <= req.budget and "expected fits" in budget_line_text(out), out[-3000:]
    if len(req.topo.pus) > 2:
        return      # the rest is this 2-vCPU host's case (a bigger host may fit by thinning its curves)
    assert dict(req.dropped).keys() == {"runner-cql"} and req.budget == 20 * 60, out[-3000:]
    assert re.search(r"^skipped: runner-cql \(every point\) — budget \(priced \d:\d\d:\d\d; .*\); run it alone "
                     r"with `./lab sweep experiments/runner-cql.spec`$", out, re.M)
    assert "1 experiment(s) left out whole" in budget_line_text(out) and "expected fits" in budget_line_text(out)
    # none of its points is priced or said point by point; the cold build is the first runner spec to run
    assert not [ln for ln in out.splitlines() if ln.startswith("runner-cql ") or ln.startswith("skipped: runner-cql ")
                   and "(every point)" not in ln]
    cold = [x.name for x in p.experiments if x.cold]
    assert cold == ["runner-empty"] and not any(x.points for x in p.experiments if x.name == "runner-cql")
    # without a budget it is measured, and the runner's first spec in file order pays the build
    full = api.request(["dry=1", "budget=none"])
    assert not full.dropped and [x.name for x in api.price(full).experiments if x.cold] == ["runner-cql"]


def test_a_budget_never_leaves_a_sweep_of_one_experiment_empty(results, monkeypatch):
    from lab.engine import api
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])
    req = api.request(["dry=1", "budget=1s", "experiments/runner-cql.spec"])
    assert not req.dropped and api.price(req).points
    req = api.request(["dry=1", "budget=1s", "experiments/runner-cql.spec", "experiments/counters.spec"])
    assert [name for name, _why in req.dropped] == ["runner-cql"]


def test_the_fixtures_keep_every_experiment_in_their_default_budget(results, monkeypatch):
    # the 256-PU hosts fit by thinning curves alone: no experiment is left out whole there
    from lab.engine import api
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])
    for xml in sorted(glob.glob(f"{TOPO}/*.xml")):
        req = api.request(["dry=1", f"topology={xml}"])
        assert not req.dropped and api.price(req).expected <= req.budget, xml


def budget_line_text(out):
    return next(ln for ln in out.splitlines() if ln.startswith("budget "))


def test_budget_none_prices_the_full_grid(results):
    epyc = f"topology={TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml"
    fitted = sh("python3", "-m", "lab.cli.sweep", "dry=1", epyc, env=results).stdout
    full = sh("python3", "-m", "lab.cli.sweep", "dry=1", epyc, "budget=none", env=results).stdout
    n = lambda out: int(re.search(r"^(\d+) points, ETA", out, re.M).group(1))   # noqa: E731
    assert n(full) > n(fitted) and "budget" not in full.splitlines()[-1]


# --- the real engine, on a simulated program (slow: it measures) --------------------------------------
def scale(results, shape, plan, *extra, work="0.03"):
    sigma, kappa = SHAPES[shape]
    p = sh("flock", "/tmp/lab-bench.lock", "python3", "-m", "lab.cli.scale", "placements=unpinned",
           f"threads={' '.join(map(str, GRID))}", f"plan={plan}", "repeats=3", "warmup=0", "capacity=0",
           "retries=0", "max_foreign=100", "max_neighbour=100", "max_steal=100", "max_invol_cs=1000000000",
           "draw=0", "metric=ops:throughput. ([0-9.]+):ops/s:higher", *extra, "--",
           "tests/fixtures/usl-sim.sh", "{threads}", str(sigma), str(kappa), str(NOISE), work,
           env=results, check=False)
    run = re.search(r"run folder: (\S+)", p.stderr)
    assert run, p.stderr[-3000:]
    return p, run.group(1)


def measured_series(run):
    from lab.report import front
    e = front.read(run).experiments[0]
    return ({int(p.threads): p.summary for p in e.points if p.metric == "ops"}, e.skipped, e)


def journal(run):
    with open(os.path.join(run, "sweep", "journal.jsonl")) as f:
        return [json.loads(ln) for ln in f]


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_engine_reaches_the_full_grids_words_with_few_points(results, shape):
    _p, full_run = scale(results, shape, "grid")
    _p, run = scale(results, shape, "adaptive")
    full, _skipped, _e = measured_series(full_run)
    adaptive, skipped, e = measured_series(run)
    assert sorted(full) == GRID
    (fs, fp), (as_, ap) = words(full), words(adaptive)
    assert within_a_step(fs, as_) and within_a_step(fp, ap), (fs, as_, fp, ap, sorted(adaptive))
    assert len(adaptive) <= 0.4 * len(GRID)
    # every candidate not measured is a skipped point, said with why, and never drawn
    said = {int(re.match(r"unpinned threads=(\d+): adaptive: ", s).group(1)) for s in skipped}
    assert said == set(GRID) - set(adaptive)
    refined = [ev for ev in journal(run) if ev["event"] == "refine"]
    assert {ev["threads"] for ev in refined} <= set(adaptive)
    if said:     # the report's words say which thread counts were skipped
        assert any(s.startswith("unpinned: measured at ") and "skipped (the adaptive plan" in s
                   and s.rstrip(".").endswith(", ".join(map(str, sorted(said)))) for s in e.scaling.sentences)


@pytest.mark.slow
def test_a_sweep_over_its_price_replans_and_says_so(results):
    # cost=0.001: the price is a sliver of what the runs take (0.3 s at 1 thread), so the measured pace
    # soon breaks the budget
    p, run = scale(results, "linear", "grid", "threads=1 2 4 8 16 32 64 128 256", "cost=0.001", "budget=2s",
                   work="0.3")
    events = journal(run)
    replans = [e for e in events if e["event"] == "replan"]
    assert replans and "re-planned at" in p.stderr
    left = {e["threads"] for e in events if e["event"] == "skipped" and e.get("budget")}
    assert left and not left & {1, 256}                 # a curve keeps its first and last count
    series, skipped, _e = measured_series(run)
    assert not left & set(series)                       # never drawn as measured
    assert all(any(s.startswith(f"unpinned threads={t}: budget: left out while running") for s in skipped)
               for t in left)


@pytest.mark.slow
def test_a_sweep_over_its_budget_with_nothing_to_leave_out_stops_adaptive_points_at_their_floor(results):
    # Seen on the default sweep here (2 PUs: every curve is 1 and 2 threads): over its budget with nothing to
    # leave out, adaptive points went on chasing ci= (runner-cql to 5 repeats a point) and the sweep ran 28
    # min of 20. Now they stop at their fewest repeats once the re-plan finds nothing more to leave out.
    p, run = scale(results, "linear", "grid", "threads=1 256", "cost=0.001", "budget=2s", "repeats=auto",
                   "min_repeats=3", "max_repeats=8", "ci=0.0001", work="0.3")
    events = journal(run)
    replan = next(e for e in events if e["event"] == "replan")
    assert "adaptive points stop at their fewest repeats" in p.stderr and not replan["left_out"]
    done = [e for e in events if e["event"] == "done"]
    per_point = {}
    for e in done:
        per_point[e["threads"]] = per_point.get(e["threads"], 0) + 1
    # the first point may have run past its floor before the pace was known; the rest stop at 3
    assert per_point[256] == 3 and min(per_point.values()) == 3, per_point
    # the report names the points stopped at their floor (the re-plan says it once)
    floored = [e for e in events if e["event"] == "confidence" and e.get("at_floor")]
    assert floored and all("stopped at its floor (3 repeats) by the budget's re-plan" in e["stopped"] for e in floored)
    from lab.report import view
    _s, _k, e = measured_series(run)
    assert any("(stopped at its floor: the budget's re-plan)" in m.head for m in view.marks(e))


@pytest.mark.slow
def test_a_sweep_over_its_budget_stops_the_guards_re_measures(results):
    # the guard's re-measures count against the budget: once the re-plan finds the sweep still over, a
    # disturbed repeat is kept, labelled suspect (as a disturbed one is after its retries), not measured again
    # (the guard's limits at 0: any other process's time on the CPUs marks a run disturbed; whether one is
    # depends on the host, so the test asserts the rule on whatever was disturbed, not a count)
    p, run = scale(results, "linear", "grid", "threads=1 256", "cost=0.001", "budget=2s", "retries=2",
                   "retry_pause=0", "max_foreign=0", "max_neighbour=0", "max_invol_cs=0", work="0.3")
    events = journal(run)
    at = next(i for i, e in enumerate(events) if e["event"] == "replan")
    assert "a disturbed repeat is kept, labelled suspect, not re-measured" in p.stderr and events[at]["floor"]
    after = events[at + 1:]
    # until a later projection back within the budget lifts the stop (rounds.RESUME: a `replan` resumed)
    after = after[:next((i for i, e in enumerate(after) if e["event"] == "replan" and e.get("resumed")), len(after))]
    assert not [e for e in after if e["event"] == "remeasured"]
    kept = [e for e in after if e["event"] == "suspect"]
    assert all("not re-measured: the budget's re-plan" in e["reason"] for e in kept)


def test_the_report_folds_a_curves_planned_skips_into_one_line():
    from lab.report.view import folded_skips
    skipped = ["smt threads=2: no SMT here"] + \
        [f"unpinned threads={t}: adaptive: not needed: the measured 2 and 64 threads already decide"
         for t in (3, 5, 6)] + \
        ["compact threads=128: budget: left out before the sweep to fit 0:45:00"]
    said = folded_skips(skipped)
    assert said[0] == "smt threads=2: no SMT here"           # any other reason stays a line a point
    assert said[1].startswith("unpinned at 3 thread counts (3, 5, 6): the adaptive plan did not need them (the first: "
                              "not needed: the measured 2 and 64 threads already decide;")
    assert said[2] == skipped[-1] and len(said) == 3         # one point left out keeps its own line


def test_the_pace_against_the_price_waits_for_a_minute_of_measuring():
    # Seen on a default sweep here: after a build, two 0.2-s repeats made a ×24 pace, a projection of 6:33
    # against 0:20, and "it will run over" at 0:00:02. The pace is trusted only after PACE_SAMPLE_S of
    # measuring (a tenth of a shorter budget), timed from the first kept repeat, not from the sweep's setup.
    import time

    from lab.engine import rounds
    r = rounds.Sweep.__new__(rounds.Sweep)
    r.budget, r.first_at, r.priced_done = 1200.0, None, 0.0
    assert r.pace() is None                                      # nothing kept yet
    r.first_at, r.priced_done = time.monotonic() - 2.0, 0.4      # two 0.2-s repeats, 2 s ago
    assert r.pace() is None
    r.first_at, r.priced_done = time.monotonic() - 90.0, 45.0    # past the sample: the pace is measured
    assert 1.9 < r.pace() < 2.2
    r.budget, r.first_at, r.priced_done = 2.0, time.monotonic() - 0.5, 0.01   # a 2-s budget: 0.2 s suffice
    assert r.pace() > 10


def test_a_re_plan_lets_the_guard_re_measure_again_once_the_projection_is_back_within_the_budget(tmp_path):
    # Measured here: a minute's pace of ×1.57 under load ~4 stopped re-measures at 0:01:08 for a sweep that
    # ended at 14:22 of 20:00 (docs/measured.md). A later projection under RESUME of the budget lifts it.
    import time

    from lab.engine import journal as jr
    from lab.engine import rounds
    r = rounds.Sweep.__new__(rounds.Sweep)
    r.journal = jr.Journal(str(tmp_path / "j.jsonl"), str(tmp_path / "j.log"), quiet=True)
    r.out, r.plans, r.left, r.price, r.unexplained, r.setups = io.StringIO(), {}, {}, {}, set(), {"x": 100.0}
    r.budget, r.done_now, r.started = 1200.0, 10, time.monotonic() - 300
    r.first_at, r.priced_done = time.monotonic() - 290, 200.0           # ×1.45 the price
    r.left[("x", "a")] = 3                                                # x not yet prepared: its 100 s count
    r.at_floor, r.no_retry, r.said_over, r.all_bound = True, "not re-measured: …", True, True
    r.replan()        # 300 + 100 × 1.45 = 445 s projected, under 90% of 1200: lifted, said so
    assert r.at_floor and not r.no_retry and not r.all_bound and "within it again" in r.out.getvalue()
    events = [json.loads(ln) for ln in open(tmp_path / "j.jsonl")]
    assert events[-1]["event"] == "replan" and events[-1]["floor"] is False
    r.at_floor, r.no_retry, r.budget = True, "x", 480.0                   # 445 of 480: fits, not by 10%: kept
    r.replan()
    assert r.at_floor and r.no_retry
    # over: the points no story judges stop; a story's too once the rest does not fit even at its price
    r.at_floor, r.no_retry, r.all_bound, r.said_over, r.budget = False, "", False, False, 420.0   # 445 > 420
    r.replan()
    assert r.at_floor and r.no_retry and not r.all_bound                  # 300 + 100 at its price: fits 420
    r.budget = 390.0
    r.replan()
    assert r.all_bound and "the points a story judges stop at their floor" in r.out.getvalue()


def test_past_a_re_plan_a_storys_point_keeps_the_ci_rule():
    from lab.engine import rounds

    class S(dict):
        def watched(self):
            return ["ops"]
    spec = S(repeats="auto", min_repeats="3", max_repeats="8", ci="1")
    rows = lambda v: [{"metric": "ops", "value": str(v), "cpus": "0", "variant": ""}]   # noqa: E731
    done = {1: rows(100), 2: rows(130), 3: rows(80)}                    # ±30%: not within ci=1
    r = rounds.Sweep.__new__(rounds.Sweep)
    r.price, r.at_floor, r.all_bound = {}, True, False
    plain, story = Point("e", "", "compact", 1, [0]), Point("e", "", "compact", 2, [0, 1], story="seed-000: x")
    assert r.settled(spec, plain, done)[0] and not r.settled(spec, story, done)[0]
    r.all_bound = True          # the rest no longer fits even at its price: a story's point stops too
    assert r.settled(spec, story, done)[0]
    r.at_floor = False
    assert not r.settled(spec, plain, done)[0]
