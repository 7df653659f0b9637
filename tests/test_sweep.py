"""The sweep engine: points, skips, tidy rows, resume after kill -9, bad input, charts and report.

Plumbing tests pass retries=0: the interference guard still marks a disturbed repeat suspect, but a
busy test host does not make them wait (test_guard.py tests the guard itself)."""
import glob
import os
import signal
import subprocess
import time

import pytest

from conftest import rows, sh
from lab.engine.guard import NOISE_METRICS
from labtest import LabRun, journal

SPEC = "tests/fixtures/spin.spec"
SCHEMA = ["run_id", "experiment", "variant", "placement", "threads", "cpus", "repeat", "metric", "value", "unit",
          "suspect"]
NOISE = set(NOISE_METRICS)     # the guard's readings (forced switches, capacity changes): may be 0
RESOURCES = {"wall_s", "cpu_user_s", "cpu_sys_s", "max_rss_kib"}    # the engine's, from wait4: may be 0


@pytest.fixture
def engine(lab_run):
    """The sweep engine for plumbing: retries=0 (the guard's re-measuring is test_guard's)."""
    return lab_run.args("retries=0")


def test_sweep_writes_tidy_rows_charts_and_report(tmp_path, results, engine):
    run = tmp_path / "run"
    p = engine.at(run).sweep("repeats=2", SPEC)
    data = rows(run / "data" / "spin.csv")
    assert list(data[0].keys()) == SCHEMA
    assert all(float(r["value"]) > 0 for r in data if r["metric"] not in NOISE | RESOURCES)
    assert all(float(r["value"]) >= 0 for r in data if r["metric"] in RESOURCES)
    # every repeat carries the guard's readings
    assert {"noise_steal_pct", "noise_foreign_pct", "noise_invol_cs"} <= {r["metric"] for r in data}
    pus = sh("python3", "-m", "lab.cli.topo", "pus").stdout.strip().split(",")
    for r in data:
        assert r["experiment"] == "spin" and r["variant"] == "loop" and r["run_id"] == "run"
        expected = sh("python3", "-m", "lab.cli.topo", "plan", r["placement"], r["threads"]).stdout.strip()
        assert r["cpus"] == expected and set(r["cpus"].split(",")) <= set(pus)
    # cross-package cannot exist on a one-package host: skipped with a reason, never substituted.
    summary = dict(ln.split("=", 1) for ln in sh("python3", "-m", "lab.cli.topo", "summary").stdout.split())
    if summary["packages"] == "1":
        assert not [r for r in data if r["placement"] == "cross-package"]
        assert "skip cross-package threads=2: cross-package is impossible here" in p.stderr
        assert "skipped: cross-package" in (run / "report.md").read_text()
    for chart in ("spin-scaling-iters_per_s", "spin-bars-loop_ns"):
        for ext in ("png", "svg"):
            assert (run / "plots" / f"{chart}.{ext}").stat().st_size > 1000
    report = p.report()
    assert "## Environment" in report and "| loop | compact | 1 |" in report
    # the charted metrics at a glance, a column per variant, before the full table
    assert "#### At a glance" in report and "| iters_per_s | compact | 1 | " in report
    assert (run / "env" / "lstopo.xml").exists() and (run / "sweep" / "specs" / "spin.spec").exists()
    assert (run / "sweep" / "state").read_text().strip() == "complete"


def point_count(run):
    return len(glob.glob(str(run / "data" / "points" / "spin" / "*.csv")))


def test_killed_sweep_resumes_with_exactly_one_row_set_per_point(tmp_path, engine):
    run = tmp_path / "run"
    sweeping = engine.at(run).args("repeats=4", "placements=compact scatter", "share=0", SPEC)
    slow_spin = {"SPIN_SLEEP": "0.4"}
    proc = sweeping.start(env=slow_spin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while point_count(run) < 3 and time.time() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)          # the whole sweep, mid-point, no chance to clean up
    proc.wait()
    done_before = point_count(run)
    assert 3 <= done_before < 16
    kept = {f: open(f).read() for f in glob.glob(str(run / "data" / "points" / "spin" / "*.csv"))}
    p = sweeping.sweep(env=slow_spin, check=False)
    assert p.returncode == 0, p.stderr
    assert "resuming" in p.stderr or str(run) in p.stderr
    for f, text in kept.items():                  # completed points are kept as they were
        assert open(f).read() == text
    data = rows(run / "data" / "spin.csv")
    seen = {}
    for r in data:
        key = (r["placement"], r["threads"], r["repeat"], r["metric"])
        seen[key] = seen.get(key, 0) + 1
    threads = {r["threads"] for r in data}
    # placements × threads × repeats × (2 metrics + 4 resource rows + 4 noise + 4 capacity probe), and the
    # neighbour's row for the points that leave some of the host's CPUs to others
    host = len(os.sched_getaffinity(0))
    partial = {(r["placement"], r["threads"], r["repeat"]) for r in data if len(r["cpus"].split(",")) < host}
    neighbour = {k[:3] for k in seen if k[3] == "noise_neighbour_pct"}
    assert neighbour == partial
    assert len(seen) == 2 * len(threads) * 4 * 14 + len(partial)
    assert set(seen.values()) == {1}
    assert not glob.glob(str(run / "data" / "**" / "*.tmp"), recursive=True)


def test_sigterm_stops_the_sweep_keeps_its_points_and_says_so(tmp_path, engine):
    run = tmp_path / "run"
    proc = engine.at(run).start("repeats=4", "placements=compact", SPEC, env={"SPIN_SLEEP": "0.5"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while point_count(run) < 2 and time.time() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert (run / "sweep" / "state").read_text().strip() == "incomplete"
    assert [e for e in journal(run) if e["event"] == "interrupted"]
    assert "run the same command again to resume" in err
    assert point_count(run) >= 2


def test_rerun_of_a_complete_sweep_measures_nothing_again(tmp_path, results, engine):
    run = tmp_path / "run"
    # draw=0 measures only (and is not part of what a resume must match); the rerun draws
    p = engine.at(run).sweep("repeats=1", "placements=compact", "threads=1", "draw=0", SPEC)
    assert not (run / "report.md").exists() and not list((run / "plots").iterdir())
    assert f"draw=0: ./lab report {run}" in p.stderr
    before = (run / "data" / "spin.csv").read_text()
    p = engine.at(run).sweep("repeats=1", "placements=compact", "threads=1", SPEC)
    assert "every point already measured" in p.stderr
    assert (run / "data" / "spin.csv").read_text() == before
    assert (run / "report.md").exists()


def write_spec(tmp_path, command, extra=""):
    spec = tmp_path / "bad.spec"
    spec.write_text(f"experiment = bad\ncommand = {command}\nplacements = compact\nthreads = 1\n"
                    f"repeats = 1\nwarmup = 0\n{extra}")
    return str(spec)


def test_command_rejecting_its_input_stops_the_sweep(tmp_path, results):
    spec = write_spec(tmp_path, "echo 'error: no such CPU' >&2; exit 2")
    # fast: the command's exit 2 stops the sweep at its first repeat (a builder of its own may not measure)
    p = LabRun(tmp_path, results).at("run").args("retries=0").sweep(spec, check=False)
    assert p.returncode == 2
    assert "rejected its input" in p.stderr and "no such CPU" in p.stderr


def test_garbage_output_fails_the_point_and_a_rerun_retries_it(tmp_path, results, engine):
    flag = tmp_path / "fixed"
    spec = write_spec(tmp_path, f"if [ -f {flag} ]; then printf 'metric,value,unit\\nx,1.5,s\\n'; "
                                f"else printf 'metric,value,unit\\nx,fast,s\\n'; fi")
    run = tmp_path / "run"
    p = engine.at(run).sweep(spec, check=False)
    assert p.returncode == 1
    assert "value 'fast' is not a number" in (run / "sweep" / "journal.log").read_text()
    failed = [e for e in journal(run) if e["event"] == "failed"]
    assert len(failed) == 1 and failed[0]["rc"] == 3 and "'fast'" in failed[0]["reason"]
    assert (run / "sweep" / "state").read_text().strip() == "incomplete"
    assert rows(run / "data" / "bad.csv") == []
    flag.write_text("")
    engine.at(run).sweep(spec)
    assert [r["value"] for r in rows(run / "data" / "bad.csv") if r["metric"] == "x"] == ["1.5"]


def test_impossible_placement_in_override_is_skipped_not_substituted(tmp_path, results, engine):
    run = tmp_path / "run"
    p = engine.at(run).sweep("placements=compact", "threads=64", "repeats=1", SPEC, check=False)
    assert "skip compact threads=64: compact needs 64 PUs" in p.stderr
    assert rows(run / "data" / "spin.csv") == []


def test_unknown_argument_and_missing_spec_are_errors(tmp_path, results):
    p = sh("python3", "-m", "lab.cli.sweep", "nonsense", env=results, check=False)
    assert p.returncode == 2 and "unknown argument 'nonsense'" in p.stderr
    p = sh("python3", "-m", "lab.cli.sweep", "experiments/nope.spec", env=results, check=False)
    assert p.returncode == 2 and "no such spec" in p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []            # nothing was created


def test_compare_archive_and_replay(tmp_path, results, engine):
    a = tmp_path / "a"
    engine.at(a).sweep("repeats=3", "placements=compact", SPEC)
    b = tmp_path / "b"
    engine.at(b).sweep("repeats=3", "placements=compact", SPEC)
    out = sh("python3", "-m", "lab.cli.compare", str(a), str(b), str(tmp_path / "cmp.md")).stdout
    assert "| spin | loop | compact | 1 | iters_per_s |" in out and "B / A" in out
    sh("python3", "-m", "lab.cli.archive", "pack", str(a), env=results)
    archive = tmp_path / "a.tar.gz"
    assert archive.exists()
    # replay measures with this checkout's own spec of the experiment (here the fixtures' folder)
    sh("python3", "-m", "lab.cli.archive", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"))
    replays = glob.glob(os.path.join(results["LAB_RESULTS"], "*-replay-a-*"))
    assert len(replays) == 1
    assert rows(os.path.join(replays[0], "data", "spin.csv"))
    assert os.path.exists(os.path.join(replays[0], "compare-with-a.md"))


def test_perf_profile_per_point(tmp_path, results, engine):
    run = tmp_path / "run"
    engine.at(run).sweep("perf=1", "repeats=1", "placements=compact", "threads=1", SPEC)
    top = glob.glob(str(run / "raw" / "spin" / "*" / "perf-top.txt"))
    assert len(top) == 1
    text = open(top[0]).read()
    assert text.startswith("# perf record -g -e ") and "%" in text
    metrics = {r["metric"]: float(r["value"]) for r in rows(run / "data" / "spin.csv")}
    assert 0 <= metrics["mutex_cpu_share"] <= 100 and 0 < metrics["top_symbol_share"] <= 100
    assert "perf: top symbols of" in (run / "report.md").read_text()


def test_failing_build_loses_only_its_experiment(tmp_path, results, engine):
    broken = write_spec(tmp_path, "printf 'metric,value,unit\\nx,1,s\\n'",
                        "build = echo compiler exploded >&2; false\n")
    run = tmp_path / "run"
    p = engine.at(run).sweep(broken, "repeats=1", "placements=compact", "threads=1", SPEC, check=False)
    assert p.returncode == 1
    assert "FAILED build" in p.stderr and "compiler exploded" in p.stderr
    assert [e["experiment"] for e in journal(run) if e["event"] == "build_failed"] == ["bad"]
    assert rows(run / "data" / "spin.csv")          # the other experiment was measured


def test_missing_required_tool_skips_its_experiment_with_the_reason(tmp_path, results, engine):
    needs = write_spec(tmp_path, "printf 'metric,value,unit\\nx,1,s\\n'", "requires = bash no-such-tool-here\n")
    run = tmp_path / "run"
    p = engine.at(run).sweep(needs, "repeats=1", "placements=compact", "threads=1", SPEC)
    assert "bad: skip all: 'no-such-tool-here' is not on PATH" in p.stderr
    assert not (run / "data" / "bad.csv").exists()
    assert rows(run / "data" / "spin.csv")          # the other experiment was measured
    assert (run / "sweep" / "state").read_text().strip() == "complete"
    assert "- bad: 'no-such-tool-here' is not on PATH" in (run / "report.md").read_text()


def test_variants_are_shuffled_per_round_and_the_journal_reproduces_the_order(tmp_path, results, engine):
    from lab.engine.rounds import round_order
    spec = tmp_path / "order.spec"
    spec.write_text("experiment = order\ncommand = tests/fixtures/spin.sh 1 2000\nvariants = a b c d\n"
                    "placements = unpinned\nthreads = 1\nrepeats = 4\nwarmup = 0\n")
    run = tmp_path / "run"
    engine.at(run).sweep("seed=7", str(spec))
    events = journal(run)
    assert [e["seed"] for e in events if e["event"] == "sweep"] == [7]
    rounds = [e for e in events if e["event"] == "round"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]      # the fifth finds every variant settled
    measured = [e["variant"] for e in events if e["event"] == "started"]
    assert measured == [v for r in rounds[:4] for v in r["order"]]

    class P:                               # round_order shuffles whatever it is given, in a seeded order
        def __init__(self, v):
            self.variant = v
    for r in rounds:
        again = round_order(7, "order", "unpinned", 1, r["round"], [P(v) for v in "abcd"])
        assert [p.variant for p in again] == r["order"]
    assert len({tuple(r["order"]) for r in rounds}) > 1         # not one fixed order


def test_calls_turns_the_commands_cpu_into_cpu_per_call(tmp_path, results, engine):
    """`calls = N`: every repeat gets cpu_us_per_call, the command's own wait4 CPU over N calls."""
    spec = tmp_path / "percall.spec"
    spec.write_text("experiment = percall\ncommand = tests/fixtures/spin.sh 1 20000\ncalls = 20000\n"
                    "placements = compact\nthreads = 1\nrepeats = 2\nwarmup = 0\nchart = bars loop_ns\n")
    run = tmp_path / "run"
    engine.at(run).sweep(str(spec))
    by_repeat = {}
    for r in rows(run / "data" / "percall.csv"):
        by_repeat.setdefault(r["repeat"], {})[r["metric"]] = r
    assert sorted(by_repeat) == ["1", "2"]
    for m in by_repeat.values():
        cpu_s = float(m["cpu_user_s"]["value"]) + float(m["cpu_sys_s"]["value"])
        assert m["cpu_us_per_call"]["unit"] == "us"
        assert float(m["cpu_us_per_call"]["value"]) == pytest.approx(cpu_s * 1e6 / 20000, rel=1e-5, abs=1e-9)


def test_the_progress_line_counts_the_repeats_still_to_run_from_the_plan(tmp_path, results, engine):
    """`[i/n] … ETA`: n counts, at every repeat, what the dry run's price still expects of every point
    (an adaptive point at least one more until it settles), so a point not yet started counts in full
    even after an earlier one needed more repeats than expected (the default sweep once read
    `[415/415] runner-cql … ETA 5s` with runner-cql's unpinned points still to run)."""
    run = tmp_path / "run"
    # an interval no host meets: each point runs to max_repeats, twice what the price expects (min_repeats)
    p = engine.at(run).sweep("repeats=auto", "min_repeats=2", "max_repeats=4", "ci=0.0001", "threads=1 2",
              "placements=unpinned", "draw=0", SPEC)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("[")]
    evs = journal(run)
    kept, settled, seen = {}, set(), []
    for e in evs:
        if e["event"] == "started":
            point = e["threads"]
            # the plan: points threads=1 and 2, min_repeats (the price's expectation with no history) each
            left = sum(0 if t in settled else max(2 - kept.get(t, 0), 1) for t in (1, 2))
            assert e["left"] == left and isinstance(e["eta_s"], (int, float)), (e, kept, settled)
            seen.append((point, left))
        elif e["event"] == "done":
            kept[e["threads"]] = kept.get(e["threads"], 0) + 1
        elif e["event"] == "confidence":
            settled.add(e["threads"])
    assert len(lines) == len(seen) and len(seen) == sum(kept.values()), (lines, seen)
    for line, (_point, left) in zip(lines, seen):
        i, n = map(int, line[1:line.index("]")].split("/"))
        assert n - i + 1 == left, (line, left)
    first_of_last = next(left for point, left in seen if point == 2)
    assert first_of_last == 2, (seen, kept)      # threads=2's own two, whatever threads=1 needed
