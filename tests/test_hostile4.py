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


# --- 1b. a received archive carries measurement settings only -----------------------------------------
def packed(tmp_path, results, **overrides):
    """A real quick run, its args.json's overrides extended as a sender would, packed."""
    run = quick_run(tmp_path, results, name="theirs")
    args = json.loads((run / "sweep" / "args.json").read_text())
    args["overrides"].update(overrides)
    (run / "sweep" / "args.json").write_text(json.dumps(args))
    with tarfile.open(tmp_path / "theirs.tar.gz", "w:gz") as t:
        t.add(run, arcname="theirs")
    return tmp_path / "theirs.tar.gz"


def test_a_replay_drops_the_hosts_servers_and_files_an_archive_names(tmp_path, results):
    archive = packed(tmp_path, results, clients="victim@example.org", nodes="10.9.9.9:9042",
                     server=".work/cassandra/cassandra.pid", nodes_server=".work/cluster/node1/cassandra.pid",
                     history="/etc/shadow")
    p = sh("scripts/archive.py", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"), timeout=300)
    for key in ("clients", "nodes", "server", "nodes_server", "history"):
        assert f"archive: not applying {key}=" in p.stderr
    replay = next(d for d in os.listdir(tmp_path / "results") if "replay" in d)
    command = (tmp_path / "results" / replay / "sweep" / "command").read_text()
    assert "victim" not in command and "10.9.9.9" not in command and "cassandra.pid" not in command
    assert "shadow" not in command


def test_a_replay_is_priced_at_its_worst_case_not_its_expected_one(tmp_path, results):
    archive = packed(tmp_path, results, retries="1000", retry_pause="86400", max_steal="0", max_foreign="0")
    p = sh("scripts/archive.py", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"), check=False,
           timeout=300)
    assert p.returncode == 2 and "at worst" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not any("replay" in n for n in os.listdir(tmp_path / "results"))
