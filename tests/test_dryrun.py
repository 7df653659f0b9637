"""dry=1 prices a sweep without measuring: every point with its CPU list, the impossible ones with
hwloc's reason, and `N points, ETA H:MM:SS`, on this host, on fixtures and on synthetic strings."""
import os

import pytest

from conftest import TOPO, burner, sh

SPEC = "tests/fixtures/spin.spec"


def dry(results, *args):
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", *args, env=results)
    points = [ln.split() for ln in p.stdout.splitlines() if ln.startswith("spin ")]
    return p.stdout, {(f[2], int(f[3])): f[6] for f in points}, len(points)


def test_synthetic_two_package_host(results):
    out, cpus, n = dry(results, "topology=pack:2 l3:1 core:2 pu:2", SPEC)
    # 13 points, of which scatter at 1 and 8 threads has compact's CPUs: measured once (plan.shared)
    assert n == 11 and out.rstrip().endswith("11 points, ETA 0:02:45")   # 11 × 3 repeats × cost 5 s
    assert cpus[("compact", 4)] == "0-3"
    assert cpus[("scatter", 4)] == "0,4,2,6"        # packages alternate, one PU per core first
    assert "shared: spin scatter threads=8: the same CPUs as compact at 8 threads" in out
    assert "shared: spin scatter threads=1: the same CPUs as compact at 1 thread" in out
    out, cpus, n = dry(results, "topology=pack:2 l3:1 core:2 pu:2", "share=0", SPEC)
    assert n == 13 and cpus[("scatter", 8)] == "0,4,2,6,1,5,3,7"
    assert cpus[("cross-package", 2)] == "0,4"
    assert os.listdir(results["LAB_RESULTS"]) == []  # nothing measured, no run folder


def test_haswell_fixture(results):
    out, cpus, n = dry(results, f"topology={TOPO}/Intel-Haswell-2xXeon-E5-2680v3.v2.xml", SPEC)
    assert n == 17          # threads 1 2 4 8 16 24 × 3 policies + one pair, scatter at 1 and 24 shared with compact
    assert cpus[("compact", 8)] == "0,2,4,6,8,10,12,14"  # the BIOS interleaves sockets
    assert cpus[("scatter", 4)] == "0-1,12-13"
    assert cpus[("cross-package", 2)] == "0-1"


def test_epyc_fixture_prices_the_matrix_per_pair(results):
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", f"topology={TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml",
             "experiments/c2c-matrix.spec", "experiments/c2c.spec", env=results).stdout
    matrix = [ln.split() for ln in out.splitlines() if ln.startswith("c2c-matrix ")]
    assert len(matrix) == 2 and matrix[0][6] == "0-127"           # every PU of 2 × 64 cores
    # cost is per pair (0.035 × 8128 pairs = 284 s), capped by the matrix's --budget (max 250)
    assert float(matrix[0][5]) == 250
    assert "impossible: c2c smt threads=2: smt is impossible here" in out


def test_a_256_pu_host_gets_both_matrices_in_ten_minutes(results):
    """Issue 27 item 4: 2 packages x 64 cores x 2 PUs. The matrix is one PU per core (128 cores: 8128
    pairs) plus up to `pairs` (32) SMT-sibling pairs; each mode is bounded by --budget 240 (max 250)."""
    host = "topology=pack:2 numa:4 l3:2 core:8 pu:2"
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", host, "experiments/c2c-matrix.spec", env=results).stdout
    matrix = [ln.split() for ln in out.splitlines() if ln.startswith("c2c-matrix ")]
    assert [m[1] for m in matrix] == ["cas", "rw"]
    assert all(m[2] == "cores" and m[3] == "128" for m in matrix)
    assert matrix[0][6].split(",")[:3] == ["0", "2", "4"]             # the first PU of each core
    assert len(matrix[0][6].split(",")) == 128
    assert all(float(m[5]) == 250 for m in matrix)                   # capped by the budget
    h, mi, sec = map(int, out.rstrip().rsplit("ETA ", 1)[1].split(":"))
    assert h * 3600 + mi * 60 + sec <= 600, out
    # Uncapped, the per-pair price counts what c2c measures: the core pairs and the SMT pairs.
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", host, "cost=0.001/pair", "experiments/c2c-matrix.spec",
             env=results).stdout
    matrix = [ln.split() for ln in out.splitlines() if ln.startswith("c2c-matrix ")]
    assert abs(float(matrix[0][5]) - 0.001 * (128 * 127 / 2 + 32)) < 1e-6, out
    # Without SMT there are no sibling pairs to add.
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", "topology=pack:1 core:8 pu:1", "cost=0.001/pair",
             "experiments/c2c-matrix.spec", env=results).stdout
    matrix = [ln.split() for ln in out.splitlines() if ln.startswith("c2c-matrix ")]
    assert abs(float(matrix[0][5]) - 0.001 * 8 * 7 / 2) < 1e-6, out


def test_a_per_pair_cost_below_its_cap_is_not_capped(results):
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", "topology=pack:1 core:8 pu:1", "experiments/c2c-matrix.spec",
             env=results).stdout
    matrix = [ln.split() for ln in out.splitlines() if ln.startswith("c2c-matrix ")]
    assert matrix and abs(float(matrix[0][5]) - 0.035 * 8 * 7 / 2) < 1e-6


def test_overrides_and_auto_repeats_give_a_range(results):
    out, _cpus, n = dry(results, "topology=pack:1 core:2 pu:1", "repeats=auto", "min_repeats=2",
                        "max_repeats=4", "threads=1", "placements=compact", SPEC)
    assert n == 1 and out.rstrip().endswith("1 points, ETA 0:00:10 (range 0:00:10 – 0:00:20)")


def test_a_sweep_never_runs_on_a_topology_that_is_not_the_host(results):
    p = sh("python3", "-m", "lab.cli.sweep", "topology=pack:2 core:2 pu:1", SPEC, env=results, check=False)
    assert p.returncode == 2 and "use it with dry=1" in p.stderr


def test_the_last_runs_remeasurements_are_priced(tmp_path, results):
    spec = tmp_path / "guarded.spec"
    spec.write_text("experiment = guarded\ncommand = tests/fixtures/spin.sh 1 20000\nplacements = compact\n"
                    "threads = 1\nrepeats = 1\nwarmup = 0\npin = taskset\nretries = 1\nretry_pause = 3\n")
    cpu = sh("python3", "-m", "lab.cli.topo", "plan", "compact", "1").stdout.strip()
    with burner(cpu):                   # every attempt disturbed: one re-measured, then kept as suspect
        sh("python3", "-m", "lab.cli.sweep", str(spec), env=results)
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", str(spec), env=results).stdout
    assert "guarded: seconds per run from the newest run here; repeats 1; 1 re-measured per repeat" in out
    eta = out.rstrip().splitlines()[-1]          # two runs and a 3-s pause, against one run at best
    h, m, sec = (int(x) for x in eta.split("ETA ")[1].split()[0].split(":"))
    assert h * 3600 + m * 60 + sec >= 3 and "(range 0:00:0" in eta


def test_the_history_reads_a_bounded_number_of_runs_and_skips_an_oversized_journal(tmp_path, results):
    """A results/ folder of years of runs, or a journal of a GiB, costs the history a bounded time: a
    journal over the cap says nothing (it is not read), and runs older than the newest MAX_RUNS are not
    read at all."""
    import shutil

    from lab.engine import pricehistory as history
    spec = tmp_path / "h.spec"
    spec.write_text("experiment = hist\ncommand = tests/fixtures/spin.sh 1 20000\nplacements = unpinned\n"
                    "threads = 1\nrepeats = 1\nwarmup = 0\nretries = 0\n")
    sh("python3", "-m", "lab.cli.sweep", str(spec), env=results)
    root = results["LAB_RESULTS"]
    (real,) = os.listdir(root)
    stamp, host = real.split("-", 1)
    assert history.local(root).get("hist", "default") is not None      # the real run prices it

    def newer(i):                                  # a copy of the real run under a newer name (year 9xxx)
        d = os.path.join(root, f"9{i:04d}{stamp[5:]}-{host}")
        shutil.copytree(os.path.join(root, real), d)
        return d
    huge = newer(9999)          # the newest: its real journal, then zeros to a sparse GiB (read, it would price)
    with open(os.path.join(huge, "sweep", "journal.jsonl"), "r+b") as f:
        f.truncate(1 << 30)
    found = history.local(root).get("hist", "default")
    assert found is not None and found[3] != os.path.basename(huge)    # priced from the next run, not read
    for i in range(history.MAX_RUNS):   # newer run folders without a journal: the real run lies beyond the bound
        os.makedirs(os.path.join(root, f"9{i:04d}{stamp[5:]}-{host}", "sweep"))
    assert history.local(root).get("hist", "default") is None
    assert history.summary(root, "h")["entries"] == []


def test_the_api_returns_the_price_the_dry_run_prints(results):
    """lab/engine/api.py: the price as data is the dry run's text (one owner); bad input is EngineError, one
    line, never a process exit, so a program calling the engine in-process keeps its own narrative."""
    import io

    import pytest

    from lab.engine import api
    topo = "topology=pack:2 core:4 pu:2"
    req = api.request(["dry=1", topo, "repeats=auto", "min_repeats=2", "max_repeats=5", SPEC])
    out = io.StringIO()
    price = api.dry_run(req, out)
    text, cpus, n = dry(results, topo, "repeats=auto", "min_repeats=2", "max_repeats=5", SPEC)
    assert out.getvalue() == text and n == price.points and text.rstrip().endswith(price.line())
    (spin,) = price.experiments
    assert spin.repeats == (2, 2, 5) and spin.source == "spec's cost"
    assert price.fewest == price.expected < price.most < price.worst
    assert len(spin.skipped) == len([ln for ln in text.splitlines()
                                     if ln.startswith(("impossible: spin", "shared: spin"))])
    for bad, says in ((["nonsense"], "unknown argument"), (["dry=2", SPEC], "dry must be"),
                      (["dry=1", "threads=0", SPEC], "threads"), (["topology=pack:1 pu:1", SPEC], "use it with dry=1")):
        with pytest.raises(api.EngineError) as e:
            api.request(bad)
        assert says in str(e.value) and "\n" not in str(e.value), (bad, e.value)


def test_why_evidence_runs_are_priced_at_least_why_seconds_each(results):
    """A short command's evidence run is repeated until why_seconds have passed (lab/engine/evidence/collect.py), so the
    price counts that time, not the command's own run: the dry run does not promise a short sweep."""
    from lab.engine import api
    from lab.engine import price as pr
    from lab.engine.evidence import collect
    topo = "topology=pack:1 core:2 pu:1"
    got = {}
    for secs in ("0", "8"):
        req = api.request(["dry=1", topo, "why=1", "why_runs=2", f"why_seconds={secs}", SPEC])
        got[secs] = api.price(req)
    def unwinding(point, seconds):       # perf script's, by the recording's size, which plan() bounds
        size = pr.why_bytes(point, seconds)
        assert 0 < size <= collect.RECORD_BUDGET
        return pr.WHY_ANALYSIS_S + pr.WHY_ANALYSIS_S_PER_MB * size / pr.MIB
    for p0, p8 in zip(got["0"].experiments[0].points, got["8"].experiments[0].points):
        # perf's start-up and write-out, the run (filled to why_seconds), its unwinding; and one counting
        # calibration a point (collect.calibrate): a run, or the loop for at most CALIBRATE_S
        assert p0.why == pytest.approx(2 * (pr.WHY_RUN_FIXED + p0.seconds + unwinding(p0.point, p0.seconds))
                                       + pr.WHY_CALIBRATION_FIXED + p0.seconds)
        assert p8.why == pytest.approx(2 * (pr.WHY_RUN_FIXED + max(p8.seconds, 8.0) + unwinding(p8.point, 8.0))
                                       + pr.WHY_CALIBRATION_FIXED + max(p8.seconds, min(8.0, collect.CALIBRATE_S)))
        assert p8.why > p0.why and pr.why_bytes(p8.point, 8.0) > pr.why_bytes(p0.point, p0.seconds)
    assert got["8"].expected > got["0"].expected


def test_cache_gets_cause_profile_is_the_seed_001_why_run(results):
    """experiments/cache-get.spec profile=cause: global and striped at 1 and 2 server threads, compact,
    short pipelined windows (a 3 s run's lock events fill perf's limit), priced with its evidence runs."""
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", "why=1", "profile=cause", "topology=pack:1 l3:1 core:4 pu:1",
           "experiments/cache-get.spec", env=results)
    points = {(f[1], f[2], int(f[3])) for f in (ln.split() for ln in p.stdout.splitlines())
              if f and f[0] == "cache-get"}
    assert points == {(v, "compact", t) for v in ("global", "striped") for t in (1, 2)}, p.stdout
    assert "why=1: 5" not in p.stdout and "why=1: 2 evidence runs" in p.stdout


EPYC = f"topology={TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml"


def why_prices():
    """{"plain", "why", "all": (price, request)} of the default sweep on the 7763 fixture, its full grid
    (budget=none: the default budget would leave out different points from each)."""
    from lab.engine import api
    reqs = {k: api.request(["dry=1", EPYC, "budget=none"] + extra) for k, extra in
            (("plain", []), ("why", ["why=1"]), ("all", ["why=1", "why_points=all"]))}
    return {k: (api.price(r), r) for k, r in reqs.items()}


def test_why_is_priced_per_curve_not_per_point_on_a_big_host(results):
    """Issue 53 item 5: by default (why_points=differential) evidence runs are priced only where the
    differential will use them: per curve of an experiment with scaling words, its fewest threads and one
    knee candidate (the dearest); none where there is no scaling curve (but channel's story asks for every
    point). On the 2 × EPYC 7763 fixture that takes why=1 from ×2.52 the price without it (every point) to
    ×1.29 (shared points measured once, as their owners; 2026-12-07, evidence runs priced by phase)."""
    from lab.engine.evidence import points as W
    got = why_prices()
    plain, why, every = (got[k][0].expected for k in ("plain", "why", "all"))
    specs = {s.name: s for s in got["why"][1].specs}
    for x in got["why"][0].experiments:
        by_curve = {}
        for pp in x.points:
            by_curve.setdefault((pp.point.variant, pp.point.placement), []).append(pp)
        spec = specs[x.name]
        for pps in by_curve.values():
            priced = [pp for pp in pps if pp.why]
            if W.mode(spec) == W.ALL:                 # channel.spec: its story reads every point
                assert len(priced) == len(pps)
            elif W.metric(spec) is None:
                assert priced == []
            elif len(priced) == 2:
                assert priced[0].point.threads == min(pp.point.threads for pp in pps)
            else:        # its fewest-threads point is measured as another placement (plan.shared): its evidence too
                assert len(priced) == 1 and len(pps) > 1, (x.name, [pp.point for pp in pps])
    assert every / plain > 2.4 and why / plain < 1.35, (every / plain, why / plain)


def test_why_on_the_7763_fixture_is_priced_within_1_3_of_the_same_sweep_without(results):
    """Issue 53 item 5's ×1.3: ×1.29 (2026-12-07) with 2 evidence runs a point (why_runs' default, one more
    where the gate leaves one short: the range's top) and each priced by its phases as measured here, perf's
    1.2 s + the run + its unwinding by the bytes recorded (docs/measured.md, "why=1: what an evidence run
    costs, by phase"); it was ×1.59 at 3 runs of 1.5 s + 2 runs each."""
    got = why_prices()
    assert got["why"][0].expected <= 1.3 * got["plain"][0].expected


def test_a_cold_build_is_priced_once_per_built_file_and_only_on_this_host():
    """`built` missing here: the first spec of that file pays its `build_cost` (the runner's cargo build from
    a fresh clone took 179 s, priced 30 s before: docs/measured.md); a file present, or a fixture host: none."""
    from lab.engine import price

    class S(dict):
        def __init__(self, name, built):
            super().__init__(built=built)
            self.name = name
    specs = [S("a", "no/such/runner"), S("b", "no/such/runner"), S("c", "justfile"), S("d", ""), S("e", "no/x")]
    priced, cold = price.cold_builds(specs, {"e": "tool"}, True)
    assert [s.name for s in priced] == ["a", "b", "c", "d"] and cold == [True, False, False, False]
    assert price.cold_builds(specs, {}, False)[1] == [False] * 5
    # a sweep with a budget runs a story's experiment first: it builds, so it pays; a spec left out whole
    # (every point skipped) builds nothing, so the next to run pays
    from lab.engine.plan import Point
    pt = lambda exp, story="", skip="": Point(exp, "", "compact", 1, (0,), story=story, skip=skip)  # noqa: E731
    plans = {"a": [pt("a")], "b": [pt("b", story="seed-000: x")], "c": [], "d": []}
    assert price.cold_builds(specs, {"e": "tool"}, True, plans, first=True)[1] == [False, True, False, False]
    assert price.cold_builds(specs, {"e": "tool"}, True, plans)[1] == [True, False, False, False]
    plans["a"] = [pt("a", skip="budget: a left out whole")]
    assert price.cold_builds(specs, {"e": "tool"}, True, plans)[1] == [False, True, False, False]


class Branch(Exception):
    """The scripted collector reached an attempt its script does not say yet."""


def most_made(runs, folder, monkeypatch):
    """The most evidence runs run_point makes for `runs`, over every script of the gate's verdicts (kept,
    outside the disturbance budget, lost) its attempts can get: scripted attempts (no perf run; test input)
    explored depth-first, each prefix run until run_point asks for an attempt beyond it."""
    from lab.engine.evidence import collect
    outcomes = {"kept": dict(lost="", wall=1.0), "disturbed": dict(lost="", wall=2.0),
                "lost": dict(lost="exited 1: scripted", wall=None)}
    monkeypatch.setattr(collect, "availability", lambda event: {"oncpu": "ok"})
    monkeypatch.setattr(collect, "calibrate", lambda *a: None)      # no unrecorded reference: the timed median

    class Spec(dict):
        def watched(self):
            return []

    class Point:
        threads = 2
    pending, most = [()], 0
    while pending:
        script, made = pending.pop(), []

        def attempt(*a, **k):
            if len(made) == len(script):
                raise Branch
            made.append(script[len(made)])
            return dict(outcomes[made[-1]], cut=False, reps=1, status={}, out="", scope="tree", who=())
        monkeypatch.setattr(collect, "attempt", attempt)
        try:
            collect.run_point(None, Spec(timeout="60"), Point(), runs, [{"metric": "wall_s", "value": "1.0"}], folder)
        except Branch:
            pending += [script + (o,) for o in outcomes]
            continue
        most = max(most, len(made))
    return most


def test_the_why_range_top_is_the_most_evidence_runs_the_collector_makes(tmp_path, monkeypatch):
    """collect.most_attempts is what run_point makes at most (the gate's redos at a lighter tier, one more
    run where it leaves one kept short of two), and the dry run's top prices that many runs a point: its
    evidence points' why=1 price at most is that many evidence runs and the point's calibration."""
    from lab.engine import api
    from lab.engine import price as pr
    from lab.engine.evidence import collect
    topo = "topology=pack:1 core:2 pu:1"
    plain = api.price(api.request(["dry=1", topo, SPEC])).most
    for runs in (1, 2, 3):
        made = most_made(runs, str(tmp_path / "why"), monkeypatch)
        assert collect.most_attempts(runs) == made, (runs, made)
        price = api.price(api.request(["dry=1", topo, "why=1", f"why_runs={runs}", SPEC]))
        (spin,) = price.experiments
        (spec,) = api.request(["dry=1", topo, SPEC]).specs
        why = [pp for pp in spin.points if pp.why]
        assert why, spin.points
        assert price.most - plain == pytest.approx(sum(made * pr.why_run(spec, pp.seconds, pp.point)
                                                       + pr.why_calibration(spec, pp.seconds) for pp in why))
        # the expected price stays at why_runs runs a point: the redos are the exception
        assert all(pp.why == pytest.approx(runs * pr.why_run(spec, pp.seconds, pp.point)
                                           + pr.why_calibration(spec, pp.seconds)) for pp in why)
    # derived from the collector's own constants: two more, lighter tiers allow one more redo at 3 runs
    monkeypatch.setattr(collect, "TIERS", collect.TIERS + tuple(dict(collect.TIERS[-1], name=f"lighter{i}")
                                                                for i in (1, 2)))
    assert collect.most_attempts(3) == most_made(3, str(tmp_path / "why"), monkeypatch) == 7
