"""`./lab test-fast` and `./lab test` as the justfile runs them: the fast set and the slow set split the
lab's tests with none lost and none in both, and the full run deselects nothing (issue 42, item 8)."""
import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT


def pytest_args(recipe):
    """The arguments after `pytest` in a justfile recipe's body."""
    body = open(f"{ROOT}/justfile").read().split(f"\n{recipe}:\n", 1)[1].split("\n\n", 1)[0]
    (line,) = [ln for ln in body.splitlines() if "-m pytest" in ln]
    return shlex.split(line.split("-m pytest", 1)[1])


def collected(args):
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return p.stdout, {ln for ln in p.stdout.splitlines() if "::" in ln}


@pytest.mark.slow   # three collections of the whole suite: a check of the split, not of the lab
def test_fast_and_slow_sets_split_every_test():
    fast_args, full_args = pytest_args("test-fast"), pytest_args("test-lab")
    assert "not slow" in fast_args and "-m" not in full_args and "-k" not in full_args + fast_args
    out, full = collected(full_args)
    assert not re.search(r"\d+/\d+ tests collected", out) and len(full) > 100, out[-500:]   # none deselected
    _, fast = collected(fast_args)
    _, slow = collected([a for a in fast_args if a != "not slow" and a != "-m"] + ["-m", "slow"])
    assert fast and slow and not fast & slow
    assert fast | slow == full, sorted(full - fast - slow)[:20]
    # marked by conftest's rule alone: test_sweep.py carries no slow mark of its own
    assert any(re.match(r"tests/test_sweep\.py::", t) for t in slow)


RULE_CASES = '''
import subprocess
from conftest import one_point, sh
QUICK = ("python3", "-m", "lab.cli.sweep", "repeats=1")

def sweeps(tmp_path, results):
    return sh(*QUICK, env=results)

@pytest.fixture
def swept(tmp_path, results):
    return sweeps(tmp_path, results)

def test_sweep(results):
    sh("python3", "-m", "lab.cli.sweep", "tests/fixtures/spin.spec", env=results)

def test_popen_of_a_list(run):
    args = [sys.executable, "-m", "lab.cli.sweep", f"run={run}"]
    subprocess.Popen(args)

def test_through_a_helper(tmp_path, results):
    sweeps(tmp_path, results)

def test_through_conftest(tmp_path, results):
    one_point(tmp_path, results, "x", "command = true\\n")

def test_through_a_fixture(swept):
    assert swept

def test_a_recipe():
    sh("just", "bench-probes", "profile=smoke")

def test_dry_run(results):
    sh("python3", "-m", "lab.cli.sweep", "dry=1", "x.spec", env=results)

def test_refused(results):
    p = sh("python3", "-m", "lab.cli.sweep", "bad.spec", env=results, check=False)
    assert p.returncode == 2

def test_plan_and_report(run):
    sh("just", "plan", "compact", "2")
    sh("python3", "-m", "lab.cli.report", str(run))
    sh("tests/fixtures/spin.sh", "1")
'''


class Item:
    def __init__(self, path, name, fixturenames=()):
        self.path, self.name, self.originalname, self.cls, self.fixturenames = path, name, name, None, fixturenames


def test_the_rule_marks_what_starts_a_measurement_and_nothing_else(tmp_path):
    from conftest import starts_measurement
    module = tmp_path / "test_cases.py"
    module.write_text(RULE_CASES)
    slow = {"test_sweep", "test_popen_of_a_list", "test_through_a_helper", "test_through_conftest", "test_a_recipe"}
    fast = {"test_dry_run", "test_refused", "test_plan_and_report"}
    assert {n for n in slow | fast if starts_measurement(Item(module, n))} == slow
    assert starts_measurement(Item(module, "test_through_a_fixture", ("swept", "tmp_path", "results")))
