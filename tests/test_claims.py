"""A story's verdict judges the story's claim at the spans the run measured (reporting/claims.py), and the
equivalence verdict states its band (reporting/verdict.py). Every value below is test input written by
hand, not a measurement."""
import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from reporting import model  # noqa: E402
from reporting import verdict as V  # noqa: E402

HEADER = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"


def run_with(tmp_path, exp, rows, name="run"):
    """rows: (variant, placement, threads, cpus, metric, [values], unit)."""
    run = tmp_path / name
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True, exist_ok=True)
    lines = [HEADER]
    for variant, placement, threads, cpus, metric, xs, unit in rows:
        lines += [f'r,{exp},{variant},{placement},{threads},"{cpus}",{i},{metric},{x},{unit},' for i, x in enumerate(xs, 1)]
    (run / "data" / f"{exp}.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / f"{exp}.spec").write_text(f"experiment = {exp}\n")
    return str(run)


def story(run, source):
    return next(s for s in model.build(run)["stories"] if s["source"] == source)


def test_seed001_knee_and_mutex_share(tmp_path):
    rows = [("global", "compact", t, "0", "ops_per_s", [v, v * 1.005, v * 0.995], "1/s")
            for t, v in ((1, 100e3), (2, 150e3), (4, 120e3))]
    rows += [("global", "compact", t, "0", "mutex_cpu_share", [v, v + 0.1, v - 0.1], "%") for t, v in ((1, 5), (4, 30))]
    s = story(run_with(tmp_path, "cache-get", rows), "seed-001")
    assert s["verdict"] == "yes", s
    assert "knee: GET/s best at 2 of 1–4 threads: yes" in s["measured"]
    assert "mutex share 1→4 threads 5.0% → 30.0%: yes" in s["measured"]
    assert "best at 8 threads on 2 × 8 cores" in s["published"] and "60% at 16" in s["published"]
    # two thread counts and no perf: nothing of the claim can be measured, and the row says so
    few = run_with(tmp_path, "cache-get", rows[:2], "few")
    s = story(few, "seed-001")
    assert s["verdict"] == "not measurable here"
    assert "3 needed" in s["measured"] and "sweep with perf=1" in s["measured"]


def test_seed004_not_measurable_on_one_l3(tmp_path):
    rows = [("cas", "same-l3", 2, "0,1", "one_way_ns", [40, 41, 39], "ns")]
    s = story(run_with(tmp_path, "c2c", rows), "seed-004")
    assert s["verdict"] == "not measurable here" and "no cross-l3 pairs" in s["why"]
    assert "×3.92" in s["published"] and "nviennot-c2c" in s["published"]


def test_equivalence_band_and_one_sided_claim():
    lo, hi = V.band(4.0)
    assert (lo, hi) == (3.0, 5.0)
    assert V.equivalence(3.5, 4.5, lo, hi)[0] == "yes"
    assert V.equivalence(5.5, 6.0, lo, hi)[0] == "no"
    assert V.equivalence(4.5, 5.5, lo, hi)[0] == "inconclusive"
    assert V.equivalence(float("nan"), float("nan"), lo, hi)[0] == "inconclusive"
    assert V.claim_above(1.2, 1.5, 1.1)[0] == "yes"
    assert V.claim_above(0.9, 1.05, 1.1)[0] == "no"
    assert V.claim_above(1.0, 1.3, 1.1)[0] == "inconclusive"
