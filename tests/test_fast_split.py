"""`./lab test-fast` and `./lab test` as the justfile runs them: the fast set and the slow set split the
lab's tests with none lost and none in both, and the full run deselects nothing (issue 42, item 8)."""
import os
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
    # marked through its fixtures alone: test_sweep.py carries no slow mark of its own
    assert any(re.match(r"tests/test_sweep\.py::", t) for t in slow)


class Item:
    """What the rule reads of a collected test: its fixtures (pytest's closure: a fixture's own fixtures
    too) and its marks."""
    def __init__(self, fixturenames, marks=()):
        self.fixturenames, self.marks = fixturenames, list(marks)

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m == name), None)

    def add_marker(self, mark):
        self.marks.append(mark.name)


def test_a_test_is_slow_when_a_fixture_sweeps_builds_or_boots():
    from conftest import pytest_itemcollected
    cases = {("tmp_path", "results", "lab_run"): True,               # sweeps (labtest.LabRun)
             ("engine", "lab_run", "tmp_path", "results"): True,     # through a fixture of its own (test_sweep)
             ("fleet", "tmp_path"): True,                           # boots two sshd hosts
             ("build",): True,                                      # compiles (test_why_collect)
             ("tmp_path", "results"): False,                        # a FakeRun, a dry run, refused input
             ("monkeypatch",): False}
    for names, slow in cases.items():
        item = Item(names)
        pytest_itemcollected(item)
        assert ("slow" in item.marks) == slow, names
    item = Item(("tmp_path",), ["rust_build"])
    pytest_itemcollected(item)
    assert "slow" in item.marks


def test_every_slow_fixture_is_one_fixture_of_the_suite():
    """A slow fixture renamed would leave its tests fast unnoticed, and a fast fixture of the same name
    elsewhere would be slow: each name in SLOW_FIXTURES is defined once, as a fixture."""
    import glob

    from conftest import SLOW_FIXTURES
    sources = {p: open(p).read() for p in glob.glob(os.path.join(ROOT, "tests", "*.py"))}
    for name in SLOW_FIXTURES:
        defs = [p for p, text in sources.items() for m in re.finditer(rf"@pytest\.fixture[^\n]*\ndef {name}\(", text)]
        assert len(defs) == 1, (name, defs)


def test_a_lab_run_of_a_tests_own_does_not_sweep(tmp_path, results):
    """A LabRun not from the `lab_run` fixture (a fast test's: dry runs, refused input) refuses to start
    a sweep, so that no test measures unmarked."""
    from labtest import LabRun
    with pytest.raises(AssertionError, match="lab_run"):
        LabRun(tmp_path, results).start("tests/fixtures/spin.spec")
    assert not os.listdir(results["LAB_RESULTS"])
