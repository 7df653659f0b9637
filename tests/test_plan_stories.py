"""Issue 54, items 4 and 5 and the budget's resume: a sweep with a budget measures the points the seed
stories' claims judge first and never leaves them out to fit (lab/engine/stories.py); adaptive repeats
start from what this host's history showed for the same point (price.known); a run keeps the budget its plan
was fitted to (runfolder.choose).

The dry runs are fast; the tests that measure (a simulated program, tests/fixtures/usl-sim.sh, that sleeps
out its modelled time) are slow and hold the bench lock.
"""
import json
import os
import re

import pytest

from conftest import TOPO, sh
from lab.engine import api, price, stories
from lab.engine.plan import coarse

FIXTURES = ["AMD-19h-Zen3-2xEpyc-7763.v2.xml", "Intel-Haswell-2xXeon-E5-2680v3.v2.xml", ""]


def story_points(req):
    return [p for ps in req.plans.values() for p in ps if p.story]


@pytest.mark.parametrize("host", FIXTURES)
def test_the_story_points_are_all_planned_within_the_default_budget(results, host, monkeypatch):
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])      # no history: the specs' cost
    req = api.request(["dry=1"] + ([f"topology={TOPO}/{host}"] if host else []))
    marked = story_points(req)
    assert marked and req.budget
    # every story's experiment has its points, none left out by the budget's fit, the plan within budget
    assert {p.story.split(":")[0] for p in marked} == {"seed-000", "seed-001", "seed-004"}
    assert not [p for p in marked if p.skip and not p.same_as], "a story's point was left out"
    assert not [p for p in req.left_out if p.story]
    price = api.price(req)
    # within budget, a cold build included (here, before the runner is built: an experiment no story judges
    # is then left out whole, test_plan_adaptive); a fixture keeps every experiment
    assert price.expected <= req.budget
    assert not req.dropped or not host
    assert not {name for name, _why in req.dropped} & set(stories.EXPERIMENTS)
    by = lambda exp, pl: sorted({p.threads for p in marked if p.experiment == exp and p.placement == pl})  # noqa: E731
    ts = sorted({p.threads for p in req.plans["runner-empty"] if p.placement == "compact"})
    # seed-000: shared-arc vs per-thread at 1 thread, across the package boundary and at every core
    assert by("runner-empty", "compact")[0] == 1 and by("runner-empty", "compact")[-1] == ts[-1]
    packages = len({pu.package for pu in req.topo.pus})
    if packages > 1:
        crossing = min(p.threads for p in req.plans["runner-empty"] if p.placement == "compact"
                       and len({req.topo.pu(c).package for c in p.cpus}) > 1)
        assert crossing in by("runner-empty", "compact")
        assert 2 in by("runner-empty", "scatter")      # scatter crosses at its second thread
    # seed-001: the lock modes' coarse grid on the first placement: at least 3 counts where the host has them
    grid = coarse(sorted({p.threads for p in req.plans["cache-get"] if p.placement == "compact"}))
    assert by("cache-get", "compact") == grid
    if len(ts) >= 3:
        assert len(grid) >= 3
    assert {p.variant for p in marked if p.experiment == "cache-get"} == \
        {p.variant for p in req.plans["cache-get"]}
    # seed-004: same-l3 vs cross-l3, where the host has them
    assert {p.placement for p in marked if p.experiment in ("c2c", "channel")} <= set(stories.CCX)


def test_the_7763s_dry_run_names_the_story_points_and_fits(results):
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", f"topology={TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml",
             env=results).stdout
    tagged = {tuple(ln.split()[i] for i in (0, 2, 3)) for ln in out.splitlines() if "[story seed-" in ln}
    # the global lock's curve on compact: the coarse ×4 grid, the knee looked for (it was 1 and 128 only)
    assert {t for e, pl, t in tagged if (e, pl) == ("cache-get", "compact")} == {"1", "4", "16", "64", "128"}
    left = {(m.group(1), m.group(2), m.group(3)) for m in
            re.finditer(r"^skipped: (\S+) (\S+) threads=(\d+): budget:", out, re.M)}
    assert left and not left & tagged
    assert re.search(r"^budget 0:45:00 .*expected fits", out, re.M)


def test_a_tight_budget_leaves_out_everything_else_before_a_story_point(results, monkeypatch):
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])
    req = api.request(["dry=1", "budget=10m", f"topology={TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml"])
    assert req.left_out and not [p for p in req.left_out if p.story]
    assert all(p.skip == "" or p.same_as for p in story_points(req))


def test_known_starts_a_stable_point_lower_and_a_noisy_one_not():
    spec = {"min_repeats": "5", "max_repeats": "8", "stable_repeats": "3", "ci": "5"}
    assert price.known(spec, None) == (5, None, "")
    floor, expected, words = price.known(spec, (5, 0.8, True, "r1"))          # ±0.8% at 5: ±1.3% at 3
    assert (floor, expected) == (3, 3) and words.startswith("stable last time") and "not 5" in words
    floor, expected, words = price.known(spec, (8, 4.0, False, "r1"))
    assert (floor, expected) == (5, 8) and words.startswith("not stable")
    floor, expected, _w = price.known(spec, (5, 4.5, True, "r1"))             # met at 5, not projected at 3
    assert (floor, expected) == (5, 5)
    # the words' floor: never below 3, never above min_repeats
    assert price.known(dict(spec, stable_repeats="1"), (5, 0.5, True, "r"))[0] == 3
    assert price.known(dict(spec, min_repeats="3", stable_repeats="6"), (3, 0.5, True, "r"))[0] == 3


# --- the real engine (slow: it measures) -------------------------------------------------------------
def sim_spec(tmp_path, noise):
    path = tmp_path / f"sim{noise}.spec".replace("0.", "")
    path.write_text(f"""experiment = sim{noise.replace("0.", "-")}
exec = ["tests/fixtures/usl-sim.sh", "{{threads}}", "0", "0", "{noise}", "0.01"]
metric = ops:throughput. ([0-9.]+):ops/s:higher
placements = unpinned
threads = 1 2
repeats = auto
min_repeats = 5
max_repeats = 6
warmup = 0
capacity = 0
retries = 0
max_foreign = 100
max_neighbour = 100
max_steal = 100
max_invol_cs = 1000000000
chart = scaling ops
""")
    return str(path)


def sweep(env, *args, lock=True):
    cmd = ["python3", "-m", "lab.cli.sweep", "draw=0", *args]
    p = sh(*(["flock", "/tmp/lab-bench.lock"] if lock else []), *cmd, env=env, check=False)
    run = re.search(r"run folder: (\S+)", p.stderr)
    return p, run and run.group(1)


def events(run, kind):
    with open(os.path.join(run, "sweep", "journal.jsonl")) as f:
        return [e for e in map(json.loads, f) if e["event"] == kind]


@pytest.mark.slow
def test_a_stable_history_starts_with_fewer_repeats_a_noisy_one_not(results, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])
    expected = lambda *args: api.price(api.request(["dry=1", *args])).expected     # noqa: E731
    # noise 0.15: ±15% a run (never below 0: usl-sim's noise is bounded at ±6 of it), far above ci=5%
    stable, noisy = sim_spec(tmp_path, "0.001"), sim_spec(tmp_path, "0.15")
    for spec, word in ((stable, "stable"), (noisy, "not stable")):
        p, first = sweep(results, spec)
        assert p.returncode == 0, p.stderr[-2000:]          # complete: the next sweep starts a new run
        assert all(e["n"] >= 5 for e in events(first, "confidence"))       # no history: min_repeats
        assert not events(first, "known")
        dry = sh("python3", "-m", "lab.cli.sweep", "dry=1", spec, env=results).stdout
        # the price in seconds (the dry run's ETA rounds this program's 0.01 s runs to 0:00:00)
        priced, plain = expected(spec), expected("stable_repeats=5", spec)      # 5: the history not used
        p, second = sweep(results, spec)
        assert p.returncode == 0 and second != first, p.stderr[-2000:]
        known = events(second, "known")
        assert len(known) == 2 and all(e["reason"].startswith(word) for e in known)
        ns = [e["n"] for e in events(second, "confidence")]
        if word == "stable":
            # the journal shows it: at least 3, not 5, and the interval still decides (met at 3 here)
            assert all(e["floor"] == 3 for e in known) and ns == [3, 3]
            assert "2 stable last time (2 start at 3 repeats, not 5)" in dry
            assert priced < plain * 0.8                                   # the price drops accordingly (3 of 5)
        else:
            assert all(e["floor"] == 5 for e in known) and all(n >= 5 for n in ns)
            assert "0 stable last time, 2 not" in dry
            assert priced == plain


@pytest.mark.slow
def test_a_run_keeps_its_budget(results, tmp_path):
    spec = sim_spec(tmp_path, "0.001")
    _p, run = sweep(results, "budget=1h", "repeats=1", spec)
    assert run
    # run= with another budget is refused, naming both, before anything is measured
    p, _ = sweep(results, f"run={run}", "budget=2h", "repeats=1", spec, lock=False)
    assert p.returncode == 2 and "was swept with budget=1h, this command asks budget=2h" in p.stderr
    assert "resume it with budget=1h" in p.stderr
    # the automatic resume passes over an unfinished run of another budget and says why
    with open(os.path.join(run, "sweep", "state"), "w") as f:
        f.write("incomplete\n")           # as an interrupted sweep leaves it
    p, other = sweep(results, "budget=90m", "repeats=1", spec)
    assert other != run and f"not resuming {run}: it was swept with budget=1h, this asks budget=1h30m" in p.stderr
    p, again = sweep(results, "budget=1h", "repeats=1", spec)
    assert again == run and f"resuming {run}" in p.stderr
