"""The typed run model (lab/core/run.py) at the lab's edges: a received run is checked where its types are built
(Repeat, Point: one place, the reader adding file:line), the lab's own export is read back as a Run directly
(imports/labrun) and the run folder written from it, the exports read the Run (bmf, hyperfine), and an
Experiment is frozen all the way. Run folders written by hand (test input, never a measurement)."""
import ast
import csv
import dataclasses
import json
import os
import re

import pytest

from conftest import ROOT
from lab.core.run import DataError, Experiment, Point, Repeat
from lab.core.stats import summary
from lab.errors import LabError
from lab.exports import bmf, document, hyperfine
from lab.imports import labrun
from lab.imports.runwriter import write_run
from lab.report import model

HEADER = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"


def folder(tmp_path, name="run"):
    """Two variants at 1 and 2 threads, three repeats each (one suspect), wall_s with cpu_user_s and max_rss_kib
    (hyperfine's columns), a noise reading, and scatter at 1 thread shared with compact (plan.shared)."""
    run = tmp_path / name
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = [HEADER]
    for v, base in (("a", 1.0), ("b", 2.0)):
        for t in (1, 2):
            for r in (1, 2, 3):
                suspect = "foreign 31% > 10%" if (v, t, r) == ("b", 2, 2) else ""
                lines += [f"x,sortp,{v},compact,{t},0-{t - 1},{r},wall_s,{base / t + r / 100},s,{suspect}",
                          f"x,sortp,{v},compact,{t},0-{t - 1},{r},cpu_user_s,{base + r / 10},s,",
                          f"x,sortp,{v},compact,{t},0-{t - 1},{r},max_rss_kib,{1000 * t + r},KiB,",
                          f"x,sortp,{v},compact,{t},0-{t - 1},{r},noise_steal_pct,{r / 10},%,"]
    (run / "data" / "sortp.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "sortp.spec").write_text("experiment = sortp\ncommand = true\nchart = scaling wall_s\n")
    (run / "sweep" / "journal.jsonl").write_text(json.dumps(
        {"event": "skipped", "experiment": "sortp", "variant": "a", "placement": "scatter", "threads": 1,
         "same_as": "compact", "reason": "the same CPUs as compact"}) + "\n")
    (run / "env" / "topology.txt").write_text("packages=1\ncores=2\n")
    return run


def by_point(points):
    return {(p.variant, p.placement, p.threads, p.cpus, p.metric): p for p in points}


def test_an_export_reads_back_as_the_run_it_was_and_writes_the_same_rows(tmp_path):
    src = folder(tmp_path)
    m = model.build(str(src))
    doc = json.loads(json.dumps(document(m)))
    path = str(tmp_path / "run.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    got = labrun.received(doc, path)
    (e,), (r,) = m.experiments, got.experiments
    assert isinstance(r, Experiment) and r.charts == e.charts
    # every measured point (the shared one is exported once, as the placement it was measured as), its
    # repeats, suspect marks and Summary the same: the Run is the model's, not tidy rows
    mine = {k: p for k, p in by_point(e.points + e.noise).items() if not p.shared}
    theirs = by_point(r.points + r.noise)
    assert mine.keys() == theirs.keys() and len(mine) == 16
    for k, p in mine.items():
        q = theirs[k]
        assert (q.summary, q.noise) == (p.summary, p.noise), k
        assert [(x.repeat, x.value, x.suspect) for x in q.repeats] == \
            [(x.repeat, x.value, x.suspect) for x in p.repeats]
    assert theirs[("b", "compact", "2", "0-1", "wall_s")].summary.suspect == "r2: foreign 31% > 10%"
    assert got.host.settings["topology"] == {"packages": "1", "cores": "2"}
    # the folder written from that Run: the export's rows in its order, and a model with the same medians
    dest = write_run(str(tmp_path / "back"), labrun.parse(doc, path, None), path)
    with open(os.path.join(dest, "data", "sortp.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(w["variant"], w["threads"], w["repeat"], w["metric"], float(w["value"])) for w in rows] == \
        [(p.variant, p.threads, x.repeat, p.metric, x.value) for p in r.points + r.noise for x in p.repeats]
    assert open(os.path.join(dest, "env", "topology.txt")).read() == "packages=1\ncores=2\n"
    back = by_point(model.build(dest).experiments[0].points)
    assert {k: p.summary.median for k, p in back.items()} == \
        {k: p.summary.median for k, p in mine.items() if not p.noise}


def test_a_received_point_is_refused_by_its_type_with_where_it_is(tmp_path):
    for args, says in ((("x", 1.0), "repeat 'x' is not a whole number"),
                       (("1", "nan"), "value nan is not finite"),
                       (("1", "fast"), "value 'fast' is not a number"),
                       (("1", "1.7e308"), "value 1.7e308 is beyond ±1e+18"),
                       (("1", 10 ** 400), "is not a number")):
        with pytest.raises(DataError, match=re.escape(says)):
            Repeat(*args)
    assert Repeat("2", "1.5").value == 1.5          # a cell's text becomes the value
    with pytest.raises(DataError, match="threads 'abc' is not a whole number"):
        Point("", "compact", "abc", "0", "m", "s", summary([1.0]), (Repeat("1", 1.0),))
    assert issubclass(DataError, LabError) and DataError.code == 2
    # the reader names the line: the row's check is the type's, not a second copy in the reader
    run = folder(tmp_path)
    csv_path = run / "data" / "sortp.csv"
    lines = csv_path.read_text().splitlines()
    lines[5] = lines[5].replace(",2,wall_s,", ",two,wall_s,")
    csv_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"^{csv_path}:6: repeat 'two' is not a whole number$"):
        model.build(str(run))
    lines[5] = lines[5].replace(",two,wall_s,", ",2,wall_s,").replace("sortp,a,compact,1,", "sortp,a,compact,x,")
    csv_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"^{csv_path}:6: threads 'x' is not a whole number$"):
        model.build(str(run))


def test_the_rules_and_the_error_have_one_owner():
    found = {}
    for base, _dirs, files in os.walk(os.path.join(ROOT, "scripts", "lab")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                for n in ast.walk(ast.parse(open(path).read())):
                    if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name in ("DataError", "row_problem"):
                        found.setdefault(n.name, []).append(os.path.relpath(path, ROOT))
    assert found == {"DataError": ["scripts/lab/core/run.py"]}


def test_bmf_and_hyperfine_read_the_run(tmp_path):
    m = model.build(str(folder(tmp_path)))
    (e,) = m.experiments
    b = bmf(m)
    measured = [p for p in e.points if not p.shared]
    assert len(measured) < len(e.points)        # the shared scatter point is drawn, not exported twice
    assert sorted(b) == ["sortp/a/compact/t1", "sortp/a/compact/t2", "sortp/b/compact/t1", "sortp/b/compact/t2"]
    for p in measured:
        assert b[f"sortp/{p.variant}/compact/t{p.threads}"][p.metric] == {
            "value": p.summary.median, "lower_value": p.summary.ci_lo, "upper_value": p.summary.ci_hi}
    assert not any("noise_steal_pct" in v for v in b.values())
    h = hyperfine(m)["results"]
    assert [(x["parameters"]["variant"], x["parameters"]["threads"]) for x in h] == \
        [("a", "1"), ("a", "2"), ("b", "1"), ("b", "2")]
    wall = {(p.variant, p.threads): p for p in measured if p.metric == "wall_s"}
    for x in h:
        p = wall[(x["parameters"]["variant"], x["parameters"]["threads"])]
        assert x["times"] == [r.value for r in p.repeats] and x["median"] == p.summary.median
        assert x["memory_usage_byte"] == [(1000 * int(p.threads) + r) * 1024 for r in (1, 2, 3)]
        assert x["command"] == f"sortp {p.variant} compact t{p.threads}"


def test_an_experiment_is_frozen_all_the_way(tmp_path):
    m = model.build(str(folder(tmp_path)))
    (e,) = m.experiments
    for f in dataclasses.fields(Experiment):
        v = getattr(e, f.name)
        assert not isinstance(v, list), f"Experiment.{f.name} is a list"
    assert all(isinstance(ms, tuple) for _p, ms in e.suspect_points) and e.suspect_points
    assert all(isinstance(p.repeats, tuple) for p in e.points + e.noise)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.points = ()
