"""Caps the readers can hold (issue 55, BIGCSV): a data CSV is read only up to runfolder.LIMITS["csv"],
chosen from what the report's model of a CSV at the cap costs here (docs/design.md), and no writer of the
lab writes a data CSV over it, so an import never leaves a run its own reader refuses."""
import json
import os

from conftest import in_process
from lab.core import runfolder


def test_an_import_over_the_readers_cap_is_one_line_exit_2_and_leaves_no_folder(tmp_path, monkeypatch):
    monkeypatch.setitem(runfolder.LIMITS, "csv", 4096)      # the rule at a small cap: the real one is 64 MiB
    results = [{"command": f"prog --threads={t}", "parameters": {"threads": str(t)},
                "times": [1.0 + i * 1e-3 for i in range(50)], "exit_codes": [0] * 50} for t in (1, 2, 4)]
    src = tmp_path / "h.json"
    src.write_text(json.dumps({"results": results}))
    monkeypatch.setenv("LAB_RESULTS", str(tmp_path / "results"))
    # the program's main says its one-line refusal and returns 2, as its __main__ exits (lab.errors.program)
    p = in_process("lab.cli.import_run", src, f"run={tmp_path / 'run'}", check=False)
    assert p.returncode == 2 and "more than the lab's readers accept" in p.stderr and p.stderr.count("\n") == 1
    assert not (tmp_path / "run").exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-import")]


def test_the_csv_cap_is_the_measured_one():
    assert runfolder.LIMITS["csv"] == 64 << 20
