"""End to end: `sweep profile=smoke` over every experiment gives a complete run folder."""
import glob
import os

import pytest

from conftest import rows
from labtest import journal

SCHEMA = ["run_id", "experiment", "variant", "placement", "threads", "cpus", "repeat", "metric", "value", "unit",
          "suspect"]


@pytest.mark.rust_build
def test_smoke_sweep_of_every_instrument(tmp_path, results, lab_run):
    run = tmp_path / "smoke"
    # retries=0: a disturbed repeat is kept as suspect at once. The guard's re-measuring is
    # test_guard's; here every instrument runs once, where on a busy host (a burner on the other CPU)
    # every repeat would be measured three times with two pauses.
    p = lab_run.sweep("profile=smoke", f"run={run}", "retries=0", check=False)
    assert p.returncode == 0, p.stderr[-4000:]
    for f in ("lstopo.xml", "lscpu.txt", "cpuinfo.txt", "virt.txt", "cpu-state.txt", "versions.txt",
              "git.txt", "numa.txt", "versions.env", "flake.lock"):
        assert (run / "env" / f).exists(), f
    assert (run / "env" / "virt.txt").read_text().startswith("kind=")
    specs = sorted(glob.glob(str(run / "sweep" / "specs" / "*.spec")))
    assert specs, "no experiment ran"
    report = (run / "report.md").read_text()
    events = journal(run)
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


def test_a_smoke_cache_point_carries_the_load_generators_own_cpu_rows(tmp_path, results, lab_run):
    """Issue 25 item 4: loadgen's CPU per request and per thread reach data/ and the report's table."""
    run = tmp_path / "cache"
    p = lab_run.at(run).sweep("profile=smoke", "variants=global", "placements=compact", "threads=1", "warmup=0",
                              "experiments/cache-get.spec", check=False)
    assert p.returncode == 0, p.stderr[-4000:]
    data = rows(run / "data" / "cache-get.csv")
    got = {r["metric"]: float(r["value"]) for r in data}
    for m in ("client_cpu_us_per_req", "client_cpu_util_pct", "client_cpus", "client_thread_busy_max_pct"):
        assert m in got, sorted(got)
    assert got["client_cpu_us_per_req"] > 0
    assert "client_cpu_us_per_req" in (run / "report.md").read_text()
