"""`just bench-runner` is an ordinary sweep (experiments/bench-runner.spec, bench-runner-insert.spec): a
smoke of its first half, the empty workload, which needs no Cassandra, end to end through the lab's
engine. The insert half needs the lab's Cassandra and is left to the recipe (its dry run is priced in
tests/test_dryrun.py). Runs after `cargo build --release` (tests/run.sh), so the spec's build is a no-op."""
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_empty_workload_half_runs_on_the_engine(tmp_path):
    run = tmp_path / "run"
    env = dict(os.environ, LAB_RESULTS=str(tmp_path))
    # retries=0: a busy test host marks a repeat suspect instead of making the test wait
    p = subprocess.run([sys.executable, "-m", "lab.cli.sweep", f"run={run}", "profile=smoke", "retries=0",
                        "experiments/bench-runner.spec"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with open(run / "data" / "bench-runner.csv", newline="") as f:
        data = list(csv.DictReader(f))
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    assert [e["state"] for e in events if e["event"] == "end"] == ["complete"]
    # 2 threads on two cores: skipped, with hwloc's reason, on a host with one core
    skipped = {str(e["threads"]) for e in events if e["event"] == "skipped"}
    assert skipped <= {"2"}
    calls = {(r["variant"], r["threads"]): float(r["value"]) for r in data if r["metric"] == "calls_per_s"}
    expected = {(v, t) for v in ("shared-arc", "per-thread") for t in ("1", "2") if t not in skipped}
    assert set(calls) == expected and all(v > 0 for v in calls.values())
    # measured from outside by the engine, every repeat: the runner's CPU and peak RSS
    rss = [float(r["value"]) for r in data if r["metric"] == "max_rss_kib"]
    assert len(rss) == len(expected) and all(v > 0 for v in rss)
    assert "bench-runner" in (run / "report.md").read_text()
