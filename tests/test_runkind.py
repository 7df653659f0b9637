"""What kind of run a folder holds (a sweep measured here, another tool's import, a published matrix) is
decided in one place, runfolder.kind_of(), and an import's charts come through the same chart lines as a
sweep's (lab/report/model.py chart_lines): read from the source (ast) and by drawing both kinds of run."""
import ast
import json
import os
import shutil

from conftest import ROOT
from lab.core import c2c_published as C
from lab.core import runfolder
from lab.report import model

SCRIPTS = os.path.join(ROOT, "scripts")


def sources():
    for folder, dirs, files in os.walk(SCRIPTS):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, encoding="utf-8") as fh:
                    yield os.path.relpath(path, SCRIPTS), ast.parse(fh.read(), path)


def code_strings(tree):
    """String constants of a module that are not docstrings (what the code spells, not what it says)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_only_runfolder_reads_the_import_record():
    spelled, old_path = [], []
    for rel, tree in sources():
        strings = code_strings(tree)
        if rel != "lab/core/runfolder.py" and any("imported.json" in s for s in strings):
            spelled.append(rel)
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.ImportFrom)) and (
                    getattr(n, "name", None) in ("imported", "imported_charts")
                    or any(a.name in ("imported", "imported_charts") for a in getattr(n, "names", []))):
                old_path.append(rel)
    assert len(list(sources())) > 50    # the walk found the scripts
    assert not spelled, f"env/imported.json spelled outside runfolder.py (use runfolder.IMPORT_RECORD): {spelled}"
    assert not old_path, f"the imported() side path is back: {old_path}"


def small_matrix(tmp_path):
    """A published-matrix run of 4 CPUs (2 L3 of 2 cores), numbers made up here, by the real importer."""
    m = tmp_path / "m.csv"
    m.write_text(",,,\n20,,,\n90,91,,\n92,93,21,\n")
    run = str(tmp_path / "published")
    C.write_run(run, str(m), "pack:1 l3:2 core:2 pu:1", "test CPU", "this test")
    return run


def test_an_import_and_a_sweep_draw_the_same_chart_lines_by_one_path(tmp_path):
    pub = small_matrix(tmp_path)
    assert runfolder.kind(pub) == runfolder.KIND_PUBLISHED
    # the same folder as a sweep would leave it: no import record, the chart line in its spec snapshot
    sweep = str(tmp_path / "sweep")
    shutil.copytree(pub, sweep)
    os.remove(os.path.join(sweep, runfolder.IMPORT_RECORD))
    rf = runfolder.RunFolder(sweep)
    os.makedirs(rf.specs_dir, exist_ok=True)
    with open(rf.spec_path(C.EXPERIMENT), "w") as f:
        f.write(f"experiment = {C.EXPERIMENT}\nchart = heatmap {C.METRIC}\n")
    assert rf.kind() == runfolder.KIND_SWEEP
    a, b = model.build(pub).experiments, model.build(sweep).experiments
    assert [e.charts for e in a] == [e.charts for e in b] == [(("heatmap", C.METRIC),)]
    drawn = [[(p.cpus, p.placement, p.summary.median) for p in e.points] for exps in (a, b) for e in exps]
    assert drawn[0] == drawn[1] and len(drawn[0]) == 6
    assert model.build(pub).kind == runfolder.KIND_PUBLISHED and model.build(sweep).kind == runfolder.KIND_SWEEP


def test_an_import_records_its_chart_lines_and_bad_ones_are_not_drawn(tmp_path):
    pub = small_matrix(tmp_path)
    path = os.path.join(pub, runfolder.IMPORT_RECORD)
    rec = json.load(open(path))
    assert rec["charts"] == [[C.EXPERIMENT, "heatmap", C.METRIC]]
    rf = runfolder.RunFolder(pub)
    # a matrix imported before imports recorded chart lines still draws its heatmap
    del rec["charts"]
    with open(path, "w") as f:
        json.dump(rec, f)
    assert model.chart_lines(rf, C.EXPERIMENT, rf.import_record()) == [("heatmap", C.METRIC)]
    # a received record's lines are held to the spec's rule: they name files
    rec["charts"] = [[C.EXPERIMENT, "heatmap", "../../etc"], [C.EXPERIMENT, "pie", C.METRIC],
                     [C.EXPERIMENT, "bars", 3], [C.EXPERIMENT, "bars", C.METRIC], ["other", "bars", C.METRIC]]
    with open(path, "w") as f:
        json.dump(rec, f)
    assert model.chart_lines(rf, C.EXPERIMENT, rf.import_record()) == [("bars", C.METRIC)]
