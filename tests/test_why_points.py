"""why_points (lab/engine/evidence/points.py): where why=1's evidence runs go, from a curve's timed rows, by the
report's
own knee rule; and what the dry run prices before the knee is known. Nothing is measured here."""
import glob
import os
import shutil

import pytest

from lab.engine.evidence import points as W
from lab.engine.plan import Point
from lab.engine.spec import Spec
from test_why_collect import BASE, build, journal, run_folder, scale  # noqa: F401 (build: a fixture)

SPEC = "experiment = t\ncommand = true {threads}\nplacements = compact unpinned\nthreads = 1 2 4 8\n"


def spec(tmp_path, extra="chart = scaling wall_s\n", **keys):
    path = tmp_path / "t.spec"
    path.write_text(SPEC + extra)
    return Spec(str(path)).resolve("default", keys)


def pts(placements=("compact",), threads=(1, 2, 4, 8)):
    return [Point("t", "", pl, t, [0]) for pl in placements for t in threads]


def rows(walls, placement="compact", suspect=()):
    """Tidy rows of wall_s (lower is better), three repeats a count: {threads: (r1, r2, r3)}."""
    return [{"metric": "wall_s", "unit": "s", "variant": "", "placement": placement, "threads": str(t),
             "value": str(v), "repeat": str(i + 1), "suspect": "foreign 80% > 10%" if (t, i) in suspect else ""}
            for t, vs in walls.items() for i, v in enumerate(vs)]


# a curve that stops at 4 threads: 2 is linear (efficiency 100%), 4 and 8 are not faster than 2
KNEE4 = {1: (1.0, 1.01, 0.99), 2: (0.5, 0.505, 0.495), 4: (0.5, 0.505, 0.495), 8: (0.5, 0.51, 0.49)}
LINEAR = {t: tuple(v / t for v in (1.0, 1.01, 0.99)) for t in (1, 2, 4, 8)}


def chosen(s, points, rs):
    return [(p.placement, p.threads) for p in W.chosen(s, points, rs)]


def test_the_fewest_threads_and_the_knee_only(tmp_path):
    assert chosen(spec(tmp_path), pts(), rows(KNEE4)) == [("compact", 1), ("compact", 4)]


def test_no_knee_means_the_most_threads_as_the_differential_compares(tmp_path):
    assert chosen(spec(tmp_path), pts(), rows(LINEAR)) == [("compact", 1), ("compact", 8)]


def test_a_suspect_point_cannot_be_the_knee_as_in_the_report(tmp_path):
    # the report's rule: a suspect repeat makes its point inconclusive, never "below": the knee moves on
    got = chosen(spec(tmp_path), pts(), rows(KNEE4, suspect={(4, 0)}))
    assert got == [("compact", 1), ("compact", 8)]


def test_every_curve_gets_its_own_two_and_a_one_count_curve_its_one(tmp_path):
    rs = rows(KNEE4) + rows({1: (1.0, 1.01, 0.99)}, placement="unpinned")
    got = chosen(spec(tmp_path), pts(("compact", "unpinned")), rs)
    assert got == [("compact", 1), ("compact", 4), ("unpinned", 1)]


def test_the_base_is_the_fewest_threads_measured(tmp_path):
    # the 1-thread point failed (no rows): the report compares from 2 threads, and so do the evidence runs
    rs = [r for r in rows(LINEAR) if r["threads"] != "1"]
    assert chosen(spec(tmp_path), pts(), rs) == [("compact", 2), ("compact", 8)]


def test_all_is_every_point_and_no_scaling_chart_is_none(tmp_path):
    assert len(W.chosen(spec(tmp_path, why_points="all"), pts(), rows(KNEE4))) == 4
    assert W.chosen(spec(tmp_path, "chart = bars wall_s\n"), pts(), rows(KNEE4)) == []
    # a speedup chart is the scaling words' metric before any scaling chart (engine/spec.curve_metric)
    s = spec(tmp_path, "chart = scaling other\nchart = speedup wall_s\n")
    assert chosen(s, pts(), rows(KNEE4)) == [("compact", 1), ("compact", 4)]


def test_a_placements_variants_get_each_others_counts(tmp_path):
    # the stories contrast variants at one variant's base and knee (report/claims.py): a stops at 4, b scales
    rs = [dict(r, variant="a") for r in rows(KNEE4)] + [dict(r, variant="b") for r in rows(LINEAR)]
    points = [Point("t", v, "compact", t, [0]) for t in (1, 2, 4, 8) for v in ("a", "b")]
    got = [(p.variant, p.threads) for p in W.chosen(spec(tmp_path), points, rs)]
    assert got == [("a", 1), ("b", 1), ("a", 4), ("b", 4), ("a", 8), ("b", 8)]


def test_the_price_takes_the_fewest_and_the_dearest_candidate(tmp_path):
    points = pts(("compact", "unpinned"))
    cost = {1: 1.0, 2: 3.0, 4: 2.0, 8: 3.0}
    expected, most = W.priced(spec(tmp_path), points, lambda p: cost[p.threads])
    got = [(p.placement, p.threads) for p in expected]
    assert got == [("compact", 1), ("compact", 8), ("unpinned", 1), ("unpinned", 8)]     # ties: the most threads
    assert most == expected            # one variant: one knee a placement
    two = [Point("t", v, "compact", t, [0]) for t in (1, 2, 4, 8) for v in ("a", "b")]
    expected, most = W.priced(spec(tmp_path), two, lambda p: cost[p.threads])
    assert len(expected) == 4 and sorted((p.variant, p.threads) for p in most) == [
        (v, t) for v in "ab" for t in (1, 2, 8)]                   # each variant's knee elsewhere: 2 more
    assert [len(x) for x in W.priced(spec(tmp_path, why_points="all"), points, lambda p: 1.0)] == [8, 8]
    assert W.priced(spec(tmp_path, "chart = heatmap wall_s\n"), points, lambda p: 1.0) == ([], [])


@pytest.mark.parametrize("value", ["some", "", "ALL"])
def test_a_bad_why_points_is_one_line(tmp_path, value):
    from lab.engine.spec import SpecError, check
    with pytest.raises(SpecError) as e:
        check("why_points", value, "command line")
    assert "why_points" in str(e.value) and "\n" not in str(e.value)


def test_a_bad_why_points_on_the_command_line_exits_2_in_one_line(results):
    from conftest import sh
    p = sh("python3", "-m", "lab.cli.sweep", "why=1", "why_points=some", "tests/fixtures/spin.spec", env=results,
           check=False)
    assert p.returncode == 2 and "why_points must be one of: differential all" in p.stderr, p.stderr
    assert p.stderr.strip().count("\n") == 0 and p.stdout == "" and not os.listdir(results["LAB_RESULTS"])


# --- the engine, measuring: root and perf (tests/test_why_collect.py's fixtures and helpers) -------------
needs_perf = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("perf") is None,
                                reason="the evidence runs' tracepoints need root and perf")
# oversubscribed (4 threads on 2 vCPUs is fine here) and loose guards: a busy host's suspect repeats only
# move the knee, which the test reads back from the report rather than guessing
CURVE = ("threads=1 2 4", "placements=unpinned", "why_runs=1", "max_foreign=100", "max_neighbour=100")


def evidence_at(run):
    """The thread counts whose evidence is whole (its meta.json is written last)."""
    return sorted(int(m.split(os.sep)[-2][:-4].rsplit("_t", 1)[1])
                  for m in glob.glob(os.path.join(run, "raw", "*", "*_why", "meta.json")))


@needs_perf
def test_the_engine_makes_evidence_exactly_where_the_report_compares_and_resumes_what_is_missing(build, tmp_path):  # noqa: F811 (the fixture imported above)
    from lab.report import model
    scale(tmp_path, *BASE, *CURVE, "repeats=3", "--", "tests/fixtures/why/build/lock", "{threads}")
    run = run_folder(tmp_path)
    (c,) = model.build(run).experiments[0].why.curves
    base, knee = c.verdict.base_threads, c.verdict.knee_threads
    # where the evidence is made is the subject; whether the validity gate kept it (lab/engine/evidence/gate.py: the
    # lock's runs under perf are often ×2–×4 faster than timed here) is test_why_collect's
    assert evidence_at(run) == sorted({base, knee}) and base == 1
    assert c.diff is not None or "none kept" in c.verdict.text, c.verdict.text
    (said,) = journal(run, "evidence_points")
    assert [(x["base"], x["knee"]) for x in said["curves"]] == [(base, knee)]
    assert [e["threads"] for e in journal(run, "evidence_started")] == [base, knee]
    # killed before the knee's evidence was whole: the same command again makes only that
    (meta,) = glob.glob(os.path.join(run, "raw", "*", f"-_unpinned_t{knee}_why", "meta.json"))
    os.remove(meta)
    timed = len(journal(run, "started"))
    scale(tmp_path, *BASE, *CURVE, "repeats=3", f"run={run}", "--", "tests/fixtures/why/build/lock", "{threads}")
    assert len(journal(run, "started")) == timed
    assert [e["threads"] for e in journal(run, "evidence_started")] == [base, knee, knee]
    assert evidence_at(run) == sorted({base, knee})


@needs_perf
def test_why_points_all_makes_evidence_at_every_point(build, tmp_path):  # noqa: F811 (the fixture imported above)
    scale(tmp_path, *BASE, *CURVE, "why_points=all", "--", "tests/fixtures/why/build/scales", "{threads}")
    run = run_folder(tmp_path)
    assert evidence_at(run) == [1, 2, 4] and journal(run, "evidence_points") == []


def test_a_shared_points_evidence_is_its_owners(tmp_path):
    # plan.shared: scatter's 1-thread point has compact's CPUs, measured once as compact; scatter's curve
    # still starts there (the report draws it in both), and its evidence is compact's, made once
    points = pts(("compact", "scatter"), (1, 2, 4))
    shared = points[3]
    shared.skip, shared.same_as = "the same CPUs as compact at 1 thread: measured once there, shared", "compact"
    walls = {1: (1.0, 1.01, 0.99), 2: (0.5, 0.505, 0.495), 4: (0.5, 0.505, 0.495)}
    rs = rows(walls) + [r for r in rows(walls, placement="scatter") if r["threads"] != "1"]
    got = chosen(spec(tmp_path), points, rs)
    assert got == [("compact", 1), ("compact", 4), ("scatter", 4)]
    expected, _most = W.priced(spec(tmp_path), points, lambda p: 1.0)
    assert [(p.placement, p.threads) for p in expected] == [("compact", 1), ("compact", 4), ("scatter", 4)]
