"""The spec parser: one key table (documented in docs/instruments.md), errors with file:line, exit 2,
nothing created or run."""
import os
import re

import pytest

from conftest import ROOT, sh
from lab.engine.spec import KEYS, Spec, SpecError, overrides_from


def write(tmp_path, text):
    p = tmp_path / "x.spec"
    p.write_text(text)
    return str(p)


GOOD = "experiment = x\ncommand = true\n"


@pytest.mark.parametrize("text, line, words", [
    (GOOD + "repeat = 3\n", 3, "unknown key 'repeat'; known keys: experiment"),
    (GOOD + "placements = compact scater\n", 3, "placements from:"),
    (GOOD + "threads = 1 two\n", 3, "threads must be auto, all or whole numbers from 1 to 4096"),
    (GOOD + "repeats = 0\n", 3, "repeats must be auto or a whole number from 1 to 1000"),
    (GOOD + "pin = tasket\n", 3, "pin must be one of: taskset self none"),
    (GOOD + "membind = locale\n", 3, "membind must be one of: local interleave none"),
    (GOOD + "chart = pie ops_per_s\n", 3, "chart must be KIND METRIC"),
    (GOOD + "just some words\n", 3, "expected `key = value`"),
    (GOOD + "threads = 1\nthreads = 2\n", 4, "threads is already set at"),
    ("command = true\n", 1, "no 'experiment' key"),
])
def test_malformed_spec_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as e:
        Spec(path)
    assert str(e.value).startswith(f"{path}:{line}: ") and words in str(e.value)


def test_cli_rejects_a_bad_spec_with_exit_2_and_creates_nothing(tmp_path, results):
    path = write(tmp_path, GOOD + "placements = compact\nwarmup = -1\n")
    p = sh("python3", "-m", "lab.cli.sweep", path, env=results, check=False)
    assert p.returncode == 2 and f"{path}:4: warmup must be a whole number" in p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_overrides_are_checked_and_shell_keys_cannot_be_overridden(tmp_path, results):
    with pytest.raises(SpecError, match="command comes only from the spec file"):
        overrides_from([("command", "rm -rf ~")], ("profile",))
    with pytest.raises(SpecError, match="unknown key 'thread'"):
        overrides_from([("thread", "2")], ("profile",))
    p = sh("python3", "-m", "lab.cli.sweep", "placements=compact nonsense", "tests/fixtures/spin.spec", env=results,
           check=False)
    assert p.returncode == 2 and "command line: placements must be placements from" in p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_placeholder_inside_quotes_is_refused(tmp_path, results):
    path = write(tmp_path, "experiment = x\ncommand = echo \"{variant}\"\n")
    p = sh("python3", "-m", "lab.cli.sweep", path, env=results, check=False)
    assert p.returncode == 2 and f"{path}:2: {{variant}} stands inside" in p.stderr


def test_profile_line_wins_and_args_fill_the_command(tmp_path):
    s = Spec(write(tmp_path, GOOD.replace("true", "run {args}") + "args = --long\nargs[smoke] = --short\n"))
    assert s.resolve("smoke", {})["args"] == "--short" and s.resolve("default", {})["args"] == "--long"
    assert s.resolve("smoke", {"repeats": "5"})["repeats"] == "5"


def test_docs_table_is_the_key_table():
    """docs/instruments.md documents exactly the keys the parser knows, in the same order."""
    text = open(os.path.join(ROOT, "docs", "instruments.md")).read()
    section = text.split("## 2.")[1].split("## 3.")[0]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, re.M)
    assert documented == list(KEYS)


def test_every_project_spec_parses_and_is_named_after_its_experiment():
    for name in os.listdir(os.path.join(ROOT, "experiments")):
        s = Spec(os.path.join(ROOT, "experiments", name))
        assert s.resolve("default", {}).name + ".spec" == name


def test_an_unknown_placeholder_in_shell_text_is_refused_with_its_line(tmp_path, results):
    spec = tmp_path / "typo.spec"
    spec.write_text("experiment = typo\ncommand = tests/fixtures/spin.sh {thread} 100\n")
    p = sh("python3", "-m", "lab.cli.sweep", f"run={tmp_path / 'run'}", str(spec), env=results, check=False)
    assert p.returncode == 2 and f"{spec}:2: command must be shell text whose {{placeholders}} are known: " \
        "{thread} is not one of" in p.stderr, p.stderr
    assert not (tmp_path / "run").exists()
    # a shell variable's ${NAME} is bash's own, not a placeholder
    spec.write_text("experiment = typo\ncommand = tests/fixtures/spin.sh {threads} 100 ${SPIN_SLEEP:-0}\n"
                    "threads = 1\nrepeats = 1\nwarmup = 0\n")
    assert sh("python3", "-m", "lab.cli.sweep", f"run={tmp_path / 'run'}", "dry=1", str(spec),
              env=results).returncode == 0
