"""One atomic writer (runfolder.write_atomic_text, writing, output_of): every file the lab writes into a
run folder or results/ appears whole (temp file + rename), a writer that fails midway leaves the old file
as it was, and a link standing at the target is replaced, never written through. The source is read (ast)
for writers that open a file in place, apart from the streams and scratch files listed with their reason."""
import ast
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, source_opens
from lab.core import c2c_published as C
from lab.core import runfolder, tidy
from lab.core.runfolder import RunFolderError, output_of, write_atomic_text, writing
from lab.fleet import code

# open(..., "w"/"wb") calls allowed, per file, and why they are not the atomic writer
IN_PLACE = {
    "lab/core/runfolder.py": 1, # the atomic writer itself, on its temp file
    "lab/engine/child.py": 3,    # a program's stdout/stderr streamed as it runs (a live tail)
    "lab/cli/loadclients.py": 2, # its own log stream, and the measure-file signal (an empty file)
    "lab/cli/bench_scale.py": 2, # its scratch folder's input and spec, not a run
    "lab/cli/scale.py": 2,       # the spec in a scratch folder, and save=: a spec of the user's, not a run's
    "lab/why/flame.py": 1,       # inferno's input in a temporary folder
    "lab/fleet/play.py": 2,      # Ansible's vars and inventory overlay in a temporary folder
    "lab/fleet/code.py": 1,      # the code tar, on output_of's temporary name
}


def opens_for_writing():
    found = {}
    for rel, n, mode in source_opens():
        in_place = isinstance(n.func, ast.Name) or n.func.attr == "fdopen"     # os.open is the safe reader's
        if in_place and isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "w" in mode.value:
            found[rel] = found.get(rel, 0) + 1
    return found


def test_no_writer_opens_a_run_folder_file_in_place():
    found = opens_for_writing()
    assert found.get("lab/core/runfolder.py") == 1       # the walk sees the writer's own temp file
    assert found == IN_PLACE, "a new in-place writer: write through runfolder.write_atomic_text/writing/output_of"


def old_file(tmp_path, name="report.md"):
    run = tmp_path / "run"
    (run / "sweep").mkdir(parents=True)
    path = run / name
    path.write_text("the old report\n")
    return str(run), str(path)


def test_a_writer_that_fails_midway_leaves_the_old_file_and_no_temp(tmp_path):
    run, path = old_file(tmp_path)
    with pytest.raises(RuntimeError):
        with writing(path) as f:
            f.write("half of a new rep")
            raise RuntimeError("killed midway")
    assert open(path).read() == "the old report\n"
    with pytest.raises(RuntimeError):
        with output_of(os.path.join(run, "plots", "x.png")) as tmp:
            open(tmp, "w").write("half a picture")
            raise RuntimeError("gnuplot died")
    assert sorted(os.listdir(run)) == ["plots", "report.md", "sweep"] and not os.listdir(os.path.join(run, "plots"))


@pytest.mark.parametrize("name", ["report.md", "report.html", "plots/c2c-bars-one_way_ns.dat", "export.json"])
def test_a_link_at_the_target_is_replaced_not_followed(tmp_path, name):
    run, _ = old_file(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the lab's\n")
    target = os.path.join(run, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.lexists(target):
        os.remove(target)
    os.symlink(outside, target)
    write_atomic_text(target, "1 2\n")
    assert not os.path.islink(target) and open(target).read() == "1 2\n"
    assert outside.read_text() == "not the lab's\n"


def test_a_linked_folder_inside_the_run_is_refused(tmp_path):
    """data/points/<exp> a link (a received run's): the point file is not written there."""
    run, _ = old_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rf = runfolder.RunFolder(run)
    os.makedirs(os.path.join(rf.data_dir, "points"))
    os.symlink(elsewhere, rf.points_dir("c2c"))
    with pytest.raises(RunFolderError, match="link"):
        tidy.write_atomic(rf.point_csv("c2c", "cas_smt_t2_r1"), [], header=False)
    assert not os.listdir(elsewhere)


def test_archive_and_the_fleet_history_reader_replace_a_link_not_its_target(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    m = tmp_path / "m.csv"
    m.write_text(",,\n20,,\n90,91,\n")
    run = results / "20260101T000000Z-published-x"
    C.write_run(str(run), str(m), "pack:1 l3:1 core:3 pu:1", "test CPU", "this test")
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    tar = str(run) + ".tar.gz"
    os.symlink(outside, tar)
    p = subprocess.run([sys.executable, "-m", "lab.cli.archive", "pack", run.name], capture_output=True,
                       text=True, env=dict(os.environ, LAB_RESULTS=str(results)), timeout=60)
    assert p.returncode == 0, p.stderr
    assert not os.path.islink(tar) and os.path.getsize(tar) > 0 and outside.read_text() == "keep\n"
    assert not [f for f in os.listdir(results) if f.startswith(".tmp-")]
    pyz = results / "history.pyz"
    os.symlink(outside, pyz)
    assert code.history_reader(ROOT, str(results)) == str(pyz)
    assert not os.path.islink(pyz) and "__main__.py" in zipfile.ZipFile(pyz).namelist()
    assert outside.read_text() == "keep\n"


def test_a_device_or_fifo_at_the_target_is_refused_not_replaced(tmp_path):
    """`./lab export RUN out=/dev/null` as root renamed a file over the device node: /dev/null became a
    regular file, and every later `> /dev/null` on the host filled it (found 2026-11-28). A FIFO stands in
    for the device here (a failing test must not break the host): refused, left as it was, no temp file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    os.symlink(fifo, link)
    for target in (fifo, link):
        with pytest.raises(RunFolderError, match="not a regular file"):
            write_atomic_text(str(target), "x\n")
        with pytest.raises(RunFolderError, match="not a regular file"):
            with output_of(str(target)):
                pass
    assert os.path.exists(fifo) and not os.path.isfile(fifo) and os.path.islink(link)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
    p = subprocess.run([sys.executable, "-m", "lab.cli.export", str(tmp_path), f"out={fifo}"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and not os.path.isfile(fifo), p.stderr
