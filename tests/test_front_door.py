"""The reading side's front door (lab/report/front.py): a run folder is read into one model once and drawn
in process. `./lab import` and `./lab scale` build the model once (they built it two and three times, and
spawned two programs to draw); `./lab report` draws charts and report from the same read."""
import json
import subprocess

import pytest

from conftest import in_process
from lab.report import model


@pytest.fixture
def builds(monkeypatch):
    """Counts model.build calls in this process, and fails a test that spawns a lab program to draw (a
    model built in a child process is a model built again)."""
    real_popen = subprocess.Popen

    class Popen(real_popen):
        def __init__(self, args, *a, **kw):
            words = [str(w) for w in (args if isinstance(args, (list, tuple)) else [args])]
            assert not any(w.startswith("lab.cli.") for w in words), f"spawned {words}"
            super().__init__(args, *a, **kw)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    count = [0]
    real = model.build

    def counted(run):
        count[0] += 1
        return real(run)
    monkeypatch.setattr(model, "build", counted)
    return count


def hyperfine_doc(path):
    """A hyperfine --export-json shape written by hand (test input, not a measurement)."""
    results = [{"command": f"sort --parallel={t}", "parameters": {"threads": str(t)},
                "times": [1.0 / t * (1 + 0.01 * i) for i in range(5)], "exit_codes": [0] * 5}
               for t in (1, 2, 4)]
    path.write_text(json.dumps({"results": results}))
    return path


def test_import_builds_the_model_once_and_draws_in_process(tmp_path, monkeypatch, builds):
    monkeypatch.setenv("LAB_RESULTS", str(tmp_path / "results"))
    p = in_process("lab.cli.import_run", hyperfine_doc(tmp_path / "h.json"), f"run={tmp_path / 'run'}")
    assert builds[0] == 1, builds
    assert "How sort scales" in p.stdout or "scales (" in p.stdout, p.stdout
    assert (tmp_path / "run" / "report.md").is_file() and (tmp_path / "run" / "report.html").is_file()
    assert list((tmp_path / "run" / "plots").glob("*.png"))      # the charts, drawn by the same read


@pytest.mark.slow   # a sweep of six repeats, in this process
def test_scale_builds_the_model_once(tmp_path, monkeypatch, builds):
    monkeypatch.setenv("LAB_RESULTS", str(tmp_path / "results"))
    p = in_process("lab.cli.scale", "threads=1 2", "placements=unpinned", "repeats=3", "warmup=0", "capacity=0",
                   "--", "true")
    assert builds[0] == 1, builds
    assert "How it scales" in p.stdout and p.returncode == 0


def test_report_draws_charts_and_report_from_one_read(tmp_path, monkeypatch, builds):
    monkeypatch.setenv("LAB_RESULTS", str(tmp_path / "results"))
    in_process("lab.cli.import_run", hyperfine_doc(tmp_path / "h.json"), f"run={tmp_path / 'run'}")
    for png in (tmp_path / "run" / "plots").glob("*"):
        png.unlink()
    builds[0] = 0
    in_process("lab.cli.report", tmp_path / "run")
    assert builds[0] == 1
    assert list((tmp_path / "run" / "plots").glob("*.png"))
