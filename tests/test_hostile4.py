"""Hostile input, fourth round (issue 44): a received run folder is an untrusted file system, a received
archive chooses no targets, and every bound holds. Each test's set-up is the reproduction."""
import json
import os
import tarfile

from conftest import sh
from test_hostile import quick_run, set_cells


# --- 1a. writes into a run folder -------------------------------------------------------------------
def test_charts_never_write_through_a_linked_dat_and_a_cell_never_becomes_a_line(tmp_path, results):
    run = quick_run(tmp_path, results)
    spec = run / "sweep" / "specs" / "spin.spec"
    spec.write_text(spec.read_text() + "chart = speedup iters_per_s\n")
    canary = tmp_path / "pwned"
    set_cells(run / "data" / "spin.csv", placement=f"compact\ntouch {canary}\n")
    outside = tmp_path / "outside.sh"
    outside.write_text("echo mine\n")
    dat = run / "plots" / "spin-speedup-iters_per_s.dat"
    dat.unlink(missing_ok=True)
    dat.symlink_to(outside)
    sh("scripts/charts.py", str(run), check=False)
    assert outside.read_text() == "echo mine\n"
    assert not dat.is_symlink()
    assert all(line.count('"') % 2 == 0 for line in dat.read_text().splitlines())
    assert not any(line.startswith("touch") for line in dat.read_text().splitlines())


def test_a_plots_folder_that_is_a_link_is_refused_and_nothing_written_there(tmp_path, results):
    run = quick_run(tmp_path, results)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for f in (run / "plots").iterdir():
        f.unlink()
    (run / "plots").rmdir()
    (run / "plots").symlink_to(elsewhere)
    p = sh("scripts/charts.py", str(run), check=False)
    assert p.returncode == 2 and "not a real folder inside the run" in p.stderr and "Traceback" not in p.stderr
    assert os.listdir(elsewhere) == []


def test_report_refuses_a_linked_folder_and_replaces_a_linked_report_not_its_target(tmp_path, results):
    run = quick_run(tmp_path, results)
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    (run / "report.md").unlink()
    (run / "report.md").symlink_to(outside)
    sh("scripts/report.py", str(run))
    assert outside.read_text() == "mine\n" and not (run / "report.md").is_symlink()
