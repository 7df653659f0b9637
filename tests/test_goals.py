"""A spec's goals (lab/report/goals.py): checked like every spec line, judged by every report from the
medians' 95% intervals, said in report.md, report.html and on the terminal. The measured program is
echo: each variant prints its own rate, so the ratios are known exactly and each verdict must come out
(the guards are open: the test's own host may be busy, and suspect points would be inconclusive)."""
import glob
import os

import pytest

from conftest import sh

SPEC = """experiment = goals
exec = ["echo", "rate {variant}"]
metric = rate:rate ([0-9]+):1/s:higher
variants = 10 13
placements = unpinned
threads = 1
capacity = 0
retries = 0
warmup = 0
max_foreign = 100
max_neighbour = 100
max_steal = 100
max_invol_cs = 1000000000
min_corun = 0
chart = bars rate
goal = 13 / 10 rate >= 1.2
goal = 10|13 / 10 rate >= 1.3
goal = 13 / 10 rate >= 1.5
goal = 13 / 10 rate <= 1
goal = 10 / 13 rate <= 1 threads=1 placement=unpinned
goal = 13 / 10 rate >= 1.2 threads=7
"""


@pytest.fixture
def goals_spec(tmp_path):
    spec = tmp_path / "goals.spec"
    spec.write_text(SPEC)
    return str(spec)


def test_goals_are_judged_met_not_met_or_not_measured(tmp_path, results, goals_spec, lab_run):
    p = lab_run.sweep("repeats=3", goals_spec)
    (run,) = glob.glob(os.path.join(results["LAB_RESULTS"], "*"))
    report = open(os.path.join(run, "report.md")).read()
    said = [ln[2:] for ln in report.splitlines() if ln.startswith("- goal ")]
    assert said == [
        "goal 13 ÷ 10, rate ≥ ×1.2 at unpinned t1: 13 ×1.30: met (95% CI ×1.30–×1.30: all of it ≥ ×1.2)",
        "goal best of (10, 13) ÷ 10, rate ≥ ×1.3 at unpinned t1: 13 ×1.30: met (95% CI ×1.30–×1.30: all of it ≥ ×1.3)",
        "goal 13 ÷ 10, rate ≥ ×1.5 at unpinned t1: 13 ×1.30: not met (95% CI ×1.30–×1.30: none of it ≥ ×1.5)",
        "goal 13 ÷ 10, rate ≤ ×1 at unpinned t1: 13 ×1.30: not met (95% CI ×1.30–×1.30: none of it ≤ ×1)",
        "goal 10 ÷ 13, rate ≤ ×1 at unpinned t1: 10 ×0.77: met (95% CI ×0.77–×0.77: all of it ≤ ×1)",
        "goal 13 ÷ 10, rate ≥ ×1.2: not measured here: no rate of both sides at one point",
    ], report
    # the same words on the terminal, and in the page (escaped as every cell is)
    assert "goals: goal 13 ÷ 10, rate ≥ ×1.5 at unpinned t1: 13 ×1.30: not met" in p.stderr
    html = open(os.path.join(run, "report.html")).read()
    assert "goal best of (10, 13) ÷ 10, rate ≥ ×1.3 at unpinned t1: 13 ×1.30: met" in html


def test_too_few_repeats_are_inconclusive(tmp_path, results, goals_spec, lab_run):
    lab_run.sweep("repeats=2", goals_spec)
    (run,) = glob.glob(os.path.join(results["LAB_RESULTS"], "*"))
    report = open(os.path.join(run, "report.md")).read()
    assert "- goal 13 ÷ 10, rate ≥ ×1.2 at unpinned t1: 13 ×1.30: inconclusive (13 unpinned t1: n=2 < 3 repeats; " \
           "10 unpinned t1: n=2 < 3 repeats)" in report


@pytest.mark.parametrize("line", [
    "goal = 13 / 10 rate >= -1", "goal = 13 / 10 rate > 1.2", "goal = 13 / 10 rate >= 1.2 threads=1 threads=2",
    "goal = 13 / 10 rate >= 1e9", "goal = $(touch x) / 10 rate >= 1", "goal = 13 / 10 rate >= 1 cpus=0",
    "goal = 13 rate >= 1", "goal = 13 / 10 rate >= 5000"])
def test_a_bad_goal_is_file_line_and_exit_2(tmp_path, results, line):
    spec = tmp_path / "bad.spec"
    spec.write_text(SPEC.split("goal =")[0] + line + "\n")
    p = sh("python3", "-m", "lab.cli.sweep", str(spec), env=results, check=False)
    n = spec.read_text().splitlines().index(line) + 1
    assert p.returncode == 2 and f"bad.spec:{n}: goal must be " in p.stderr, p.stderr
    assert not os.listdir(results["LAB_RESULTS"]) and not (tmp_path / "x").exists()


def test_a_received_runs_unreadable_goal_is_named_not_shown(tmp_path):
    """A run folder from elsewhere may carry any goal line: the report says it cannot read it, by its
    place, without echoing its text (words from a received file are not the report's)."""
    from lab.report import goals
    spec = tmp_path / "x.spec"
    spec.write_text("experiment = x\n" + "goal = <script>alert(1)</script> / 10 rate >= 1\n" * 100)
    got = goals.of_experiment(str(spec), [])
    assert len(got) == goals.MOST_GOALS
    assert goals.sentences(got)[0].startswith("goal line 1: not a goal this lab reads: NUM[|NUM…] / DEN")
    assert not any("<script>" in s for s in goals.sentences(got))
