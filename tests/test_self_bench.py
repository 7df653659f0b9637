"""The self-benchmarks are ordinary sweeps (issue 22 item 3): `just bench-runner` (two specs),
`just bench-probes` (the probes' specs under profile bench) and `just bench-mem` (the memory probe and
likwid-bench as two variants, issue 42 item 5) are priced by the dry run like any sweep, and
bench-probes and bench-mem run end to end through their recipes (profile=smoke: seconds).
bench-runner's smoke needs the runner built and lives in rust-runner/bench/test_bench.py."""
import os
import re
import shutil

import pytest

from conftest import ROOT, rows, sh
from lab.engine.spec import Spec, profiles
from labtest import journal

RECIPES = {name: os.path.join(ROOT, f"{folder}/lab.just") for name, folder in
           (("bench-runner", "rust-runner"), ("bench-probes", "c-probes"), ("bench-mem", "c-probes"))}


def recipe_specs(name):
    """The spec files and the profile a bench recipe sweeps, read from its lab.just."""
    text = open(RECIPES[name]).read()
    body = text[text.index(f"\n{name} *args:"):].split("\n")[2]
    return re.findall(r"experiments/\S+\.spec", body), re.findall(r"profile=(\w+)", body)


def test_bench_runner_is_priced_as_an_ordinary_sweep(results):
    """The empty workload (1 and 2 threads, shared vs per-thread), the pinned insert run against
    Cassandra, and the empty workload and the inserts against Latte (priced on a fixture host whether or not `latte` is
    on this one's PATH), each point priced, nothing started."""
    specs, _ = recipe_specs("bench-runner")
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", "profile=smoke", "topology=pack:1 core:2 pu:2", *specs,
             env=results).stdout
    points = [ln.split() for ln in out.splitlines() if ln.split()[:1] in (["bench-runner"], ["bench-runner-insert"],
                                                                          ["bench-runner-latte"],
                                                                     ["bench-runner-latte-insert"])]
    assert sorted((f[0], f[1], f[3]) for f in points) == [
        ("bench-runner", "per-thread", "1"), ("bench-runner", "per-thread", "2"),
        ("bench-runner", "shared-arc", "1"), ("bench-runner", "shared-arc", "2"),
        ("bench-runner-insert", "runner", "1"),
        ("bench-runner-latte", "latte", "1"), ("bench-runner-latte", "runner", "1"),
        ("bench-runner-latte-insert", "latte", "1"), ("bench-runner-latte-insert", "runner", "1")]
    assert "9 points, ETA" in out and os.listdir(results["LAB_RESULTS"]) == []


def test_bench_probes_profile_is_priced(results):
    specs, profile = recipe_specs("bench-probes")
    assert profile == ["bench"]
    out = sh("python3", "-m", "lab.cli.sweep", "dry=1", "profile=bench", "topology=pack:1 l3:1 core:4 pu:2", *specs,
             env=results).stdout
    points = [ln.split() for ln in out.splitlines() if ln.split()[:1] and ln.split()[0] in
              ("c2c", "c2c-matrix", "counters", "channel", "channel-pipeline")]
    by_exp = {}
    for f in points:
        by_exp.setdefault(f[0], []).append(f)
    # c2c: one pair per relation, 5 fixed repeats (the run-to-run spread); counters on two cores
    assert {f[2] for f in by_exp["c2c"]} == {"smt", "same-l3"} and all(f[4] == "5" for f in by_exp["c2c"])
    assert [(f[2], f[3]) for f in by_exp["c2c-matrix"]] == [("cores", "4")]
    assert {(f[2], f[3], f[6]) for f in by_exp["counters"]} == {("cores", "2", "0,2")} and len(by_exp["counters"]) == 5
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_bench_probes_smoke_end_to_end(tmp_path, results, lab_run):
    run = tmp_path / "run"
    # retries=0: a busy test host marks a repeat suspect instead of making the test wait
    lab_run.recipe("bench-probes", "profile=smoke", "retries=0", f"run={run}")
    specs, _ = recipe_specs("bench-probes")
    assert [e["state"] for e in journal(run, "end")] == ["complete"]
    for spec in specs:
        exp = os.path.basename(spec)[:-5]
        data = rows(run / "data" / f"{exp}.csv")
        assert data and {"wall_s", "max_rss_kib"} <= {r["metric"] for r in data}, exp
    assert "channel-pipeline" in (run / "report.md").read_text()


def test_bench_mem_is_priced_as_an_ordinary_sweep(results):
    """One spec, the two tools as variants of one point (their rounds are the engine's), priced on a
    fixture host whether or not likwid-bench is on this one's PATH; nothing started."""
    specs, _ = recipe_specs("bench-mem")
    assert specs == ["experiments/bench-mem.spec"]
    for profile in ("default", "smoke"):
        out = sh("python3", "-m", "lab.cli.sweep", "dry=1", f"profile={profile}", "topology=pack:2 [numa] core:2 pu:2",
                 *specs, env=results).stdout
        points = [ln.split() for ln in out.splitlines() if ln.split()[:1] == ["bench-mem"]]
        assert sorted((f[1], f[2], f[3]) for f in points) == [("likwid", "unpinned", "1"), ("mem", "unpinned", "1")]
        assert "2 points, ETA" in out, out
    assert os.listdir(results["LAB_RESULTS"]) == []


@pytest.mark.skipif(shutil.which("likwid-bench") is None, reason="likwid-bench not installed")
def test_bench_mem_smoke_end_to_end(tmp_path, results, lab_run):
    """Both tools measured through the recipe, each run's rows on the same metrics, units and thread
    counts (1, and node 0's CPUs where it has several), mem's latency alone, and the goals judged."""
    run = tmp_path / "run"
    lab_run.recipe("bench-mem", "profile=smoke", "retries=0", f"run={run}")
    assert [e["state"] for e in journal(run, "end")] == ["complete"]
    data = rows(run / "data" / "bench-mem.csv")
    measured = {}
    for r in data:
        if r["metric"] in ("read_gbps", "rw_gbps", "latency_ns"):
            assert r["unit"] == ("ns" if r["metric"] == "latency_ns" else "GB/s") and float(r["value"]) > 0, r
            measured.setdefault((r["variant"], r["metric"]), set()).add(r["threads"])
    for metric in ("read_gbps", "rw_gbps"):
        assert "1" in measured[("mem", metric)] and measured[("mem", metric)] == measured[("likwid", metric)]
    assert ("mem", "latency_ns") in measured and ("likwid", "latency_ns") not in measured
    assert {"wall_s", "noise_steal_pct"} <= {r["metric"] for r in data if r["variant"] == "likwid"}
    report = (run / "report.md").read_text()
    assert "mem ÷ likwid, read_gbps ≥ ×0.9" in report and "mem ÷ likwid, rw_gbps ≥ ×0.9" in report, report


def test_bench_mem_peer_refuses_bad_input_with_its_usage(tmp_path):
    """c-probes/bench/peer.sh: an unknown tool, a size or a time that is no number, a RAW that is no
    folder: exit 2 and the usage line, before either tool runs."""
    for args in (["lmbench", tmp_path, "64", "1"], ["mem", tmp_path, "64MB", "1"], ["likwid", tmp_path, "64", "1s"],
                 ["mem", tmp_path / "none", "64", "1"], ["mem", tmp_path, "0", "1"], ["mem", tmp_path, "64"]):
        p = sh("c-probes/bench/peer.sh", *map(str, args), check=False)
        assert p.returncode == 2 and p.stderr.startswith("usage: ") and not p.stdout, (args, p.stderr)
    assert os.listdir(tmp_path) == []


def test_bench_runner_insert_calls_match_its_arguments():
    """cpu_us_per_call divides by the spec's `calls`: in every profile it must be the --duration and
    --warmup counts that the same profile's args ask the runner for."""
    spec = Spec(os.path.join(ROOT, "experiments", "bench-runner-insert.spec"))
    for profile in sorted(profiles([spec])):
        r = spec.resolve(profile, {})
        counts = dict(re.findall(r"--(duration|warmup) (\d+)\b", r["args"]))
        assert int(r["calls"]) == int(counts["duration"]) + int(counts["warmup"]), profile


@pytest.mark.skipif(shutil.which("hyperfine") is None, reason="hyperfine not installed")
def test_bench_scale_runs_its_rounds_in_one_run_folder(tmp_path, results, lab_run):
    """bench_scale.py runs the engine in-process (lab/engine/api.py) round after round into one run folder:
    each round resumes it with more repeats (no timing is asserted, only that every round counted)."""
    p = lab_run.program("bench_scale", "rounds=2", "runs=1", "lines=2000", f"keep={tmp_path / 'b'}")
    assert "round 2/2 done" in p.stderr and "n=2" in p.stdout.split("hyperfine -N:")[0], (p.stdout, p.stderr)
    assert "engine overhead per repeat (journal overhead_ms)" in p.stdout and "n=2" in p.stdout.split("overhead_ms")[1]
