"""End to end: `sweep profile=smoke` over every experiment gives a complete run folder."""
import glob
import json
import os

from conftest import ROOT, rows, sh

SCHEMA = ["run_id", "experiment", "variant", "placement", "threads", "cpus", "repeat", "metric", "value", "unit",
          "suspect"]


def test_smoke_sweep_of_every_instrument(tmp_path, results):
    run = tmp_path / "smoke"
    p = sh("scripts/sweep.py", "profile=smoke", f"run={run}", env=results, check=False)
    assert p.returncode == 0, p.stderr[-4000:]
    for f in ("lstopo.xml", "lscpu.txt", "cpuinfo.txt", "virt.txt", "cpu-state.txt", "versions.txt",
              "git.txt", "numa.txt", "versions.env", "flake.lock"):
        assert (run / "env" / f).exists(), f
    assert (run / "env" / "virt.txt").read_text().startswith("kind=")
    specs = sorted(glob.glob(str(run / "sweep" / "specs" / "*.spec")))
    assert specs, "no experiment ran"
    report = (run / "report.md").read_text()
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    for spec in specs:
        exp = os.path.basename(spec)[:-5]
        data = rows(run / "data" / f"{exp}.csv")
        ran = [e for e in events if e["event"] == "done" and e["experiment"] == exp]
        if not ran:   # every placement impossible on this host (c2c-home on one NUMA node): said why
            assert [e for e in events if e["event"] == "skipped" and e["experiment"] == exp], exp
            assert data == []
            continue
        assert data, f"{exp}: no rows"
        assert list(data[0]) == SCHEMA
        assert f"## {exp}" in report
        measured = {r["metric"] for r in data}
        for line in open(spec):
            k, _, v = line.partition("=")
            if k.strip() == "chart":
                kind, metric = v.split()
                png = run / "plots" / f"{exp}-{kind}-{metric}.png"
                if metric in measured:
                    assert png.exists() and png.stat().st_size > 1000, png
                    assert (run / "plots" / f"{exp}-{kind}-{metric}.svg").exists()
                else:  # e.g. a perf-derived metric in a sweep without perf=1: the report says so
                    assert not png.exists()
                    assert f"chart {kind} {metric} not drawn:" in report, (exp, metric)
    assert (run / "sweep" / "state").read_text().strip() == "complete"
