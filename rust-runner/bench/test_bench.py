"""Tests of bench.sh's helpers: the verdict arithmetic of summary.py and rusage.py on real processes."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import summary  # noqa: E402

HERE = os.path.dirname(__file__)


def test_median_interval_needs_six_values_for_95_percent():
    assert summary.median_ci([1, 2, 3, 4, 5]) is None
    lo, hi, coverage = summary.median_ci([6, 1, 5, 2, 4, 3])
    assert (lo, hi) == (1, 6) and coverage == pytest.approx(1 - 2 / 64)
    # nine values: the second and the eighth (P(B <= 1) = 10/512 per side)
    lo, hi, coverage = summary.median_ci(list(range(9, 0, -1)))
    assert (lo, hi) == (2, 8) and coverage == pytest.approx(1 - 20 / 512)


def test_verdict_is_met_only_when_the_whole_interval_is_below_the_goal():
    assert summary.verdict((0.70, 0.84, 0.96), 0.85, 9) == "met"
    assert summary.verdict((0.86, 0.95, 0.96), 0.85, 9) == "not met"
    assert summary.verdict((0.80, 0.90, 0.96), 0.85, 9).startswith("cannot tell")
    assert summary.verdict(None, 0.85, 3).startswith("cannot tell: 3 rounds")


def write_runs(tmp_path, rows):
    p = tmp_path / "runs.csv"
    p.write_text("round,tool,metric,value\n" + "".join(f"{r},{t},{m},{v}\n" for r, t, m, v in rows))
    return str(p)


def test_table_pairs_rounds_and_reports_noise(tmp_path):
    rows = []
    for r in range(1, 7):
        rows += [(r, "runner", "insert_cpu_us", 2.0 + r / 100), (r, "latte", "insert_cpu_us", 3.0),
                 (r, "runner", "insert_rss_mib", 19.5), (r, "latte", "insert_rss_mib", 24.0),
                 (r, "runner", "noise_steal_pct", 0.1 * r), (r, "runner", "noise_foreign_pct", 1.5)]
    text = summary.table(*summary.load(write_runs(tmp_path, rows)), 0.85, 27, "0", "0,1")
    assert "runner / Latte 0.29 | 0.68× | 0.67–0.69× (96.9%)" in text
    assert "**met**" in text
    assert "at most 19.5 MiB; goal ≤ 27 MB (25.7 MiB): **met**; Latte 0.29 at least 24.0 MiB" in text
    assert "stolen by the hypervisor 0.1–0.6%, other processes 1.5–1.5%" in text


def test_a_noisy_comparison_cannot_be_told(tmp_path):
    ratios = [0.70, 0.80, 0.84, 0.86, 0.90, 1.00]
    rows = [(r, t, "insert_cpu_us", x if t == "runner" else 1.0)
            for r, x in enumerate(ratios, start=1) for t in ("runner", "latte")]
    text = summary.table(*summary.load(write_runs(tmp_path, rows)), 0.85, 27, "0", "0,1")
    assert "**cannot tell: the interval straddles the goal" in text


def test_malformed_runs_name_their_line(tmp_path):
    p = write_runs(tmp_path, [(1, "runner", "insert_cpu_us", "2.5"), (1, "runner", "insert_cpu_us", "x")])
    with pytest.raises(SystemExit, match=r"runs.csv:3: expected round,tool,metric,value"):
        summary.load(p)
    p = write_runs(tmp_path, [(1, "runner", "insert_cpu_us", 2.5), (1, "runner", "insert_cpu_us", 2.6)])
    with pytest.raises(SystemExit, match=r"runs.csv:3: insert_cpu_us of runner in round 1 twice"):
        summary.load(p)


def rusage(tmp_path, *cmd, server=None):
    opt = ["--server", str(server)] if server else []
    out = subprocess.run([sys.executable, os.path.join(HERE, "rusage.py"), *opt, str(tmp_path / "log"), *cmd],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]), float(out[2]), float(out[3]), float(out[4]), int(out[5])


def test_rusage_measures_the_child_and_passes_its_status(tmp_path):
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    cpu, rss_kb, wall, steal, foreign, code = rusage(tmp_path, sys.executable, "-c", burn)
    assert cpu >= 0.29 and wall >= cpu * 0.9 and rss_kb > 1000 and code == 0
    assert 0 <= steal <= 100 and 0 <= foreign <= 100
    assert rusage(tmp_path, sys.executable, "-c", "raise SystemExit(3)")[-1] == 3


def test_rusage_counts_a_busy_process_as_foreign_unless_it_is_the_server(tmp_path):
    # A busy loop beside a child that sleeps: the loop's CPU is other processes' time, and is not once it
    # is named the server (the benchmark's Cassandra). Whatever else loads the host is in both readings,
    # so only their difference is asserted: the loop's share, at least a quarter of one CPU's.
    loop = subprocess.Popen(["bash", "-c", "end=$((SECONDS + 30)); while ((SECONDS < end)); do :; done"])
    try:
        share = 100 / os.cpu_count()
        other = rusage(tmp_path, "sleep", "1")[4]
        own = rusage(tmp_path, "sleep", "1", server=loop.pid)[4]
    finally:
        loop.kill()
        loop.wait()
    assert other - own > share / 4, (other, own)
