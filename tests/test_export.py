"""`./lab export RUN [format=json|bmf|hyperfine]`: a real sweep (two variants, two thread counts, a goal)
exported; the JSON validated against docs/run-format.schema.json with the jsonschema package, BMF against
Bencher's documented shape, hyperfine's shape read back by `./lab import`; the round trip (export,
import) gives the same points and statistics."""
import base64
import json
import math
import os
import statistics
import subprocess

import jsonschema
import pytest

from conftest import ROOT, rows, sh
from lab.report import model
from labtest import LabRun

SCHEMA = json.load(open(os.path.join(ROOT, "docs", "run-format.schema.json")))
# Bencher's Metric Format as documented at https://bencher.dev/docs/reference/bencher-metric-format
# (its JSON Schema, https://bencher.dev/bmf.json: draft-07, every benchmark an object of measures, every
# measure an object with a number `value` and optional number `lower_value`/`upper_value`), plus the
# documented name limits: a measure's name at most 64 characters, a benchmark's at most 1024.
BMF = {"$schema": "http://json-schema.org/draft-07/schema", "type": "object",
       "propertyNames": {"maxLength": 1024},
       "patternProperties": {".+": {"type": "object", "propertyNames": {"maxLength": 64},
                                    "patternProperties": {".+": {
                                        "type": "object", "required": ["value"],
                                        "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                                                       "upper_value": {"type": "number"}}}}}}}


def export(run, *args, check=True):
    return sh("python3", "-m", "lab.cli.export", run, *args, check=check)


def import_(results, path, *args):
    return sh("python3", "-m", "lab.cli.import_run", path, *args, env=results)


@pytest.fixture(scope="module")
def sort_run(tmp_path_factory):
    """A real sweep (slow: conftest.SLOW_FIXTURES): sort with --parallel 1 or 2 (the variants) at 1 and 2
    threads, 3 repeats, a goal."""
    d = tmp_path_factory.mktemp("export")
    rnd = subprocess.run(["head", "-c", "800000", "/dev/urandom"], capture_output=True, check=True).stdout
    (d / "input.txt").write_text(base64.b64encode(rnd).decode())
    spec = d / "sortgoal.spec"
    spec.write_text("experiment = sortgoal\n"
                    f'exec = ["sort", "--parallel={{variant}}", "-S", "8M", "{d / "input.txt"}", "-o", "/dev/null"]\n'
                    "variants = 1 2\nplacements = unpinned\nthreads = 1 2\nrepeats = 3\nwarmup = 0\nretries = 0\n"
                    "chart = speedup wall_s\nchart = scaling wall_s\ngoal = 2 / 1 wall_s <= 1.5 threads=1\n")
    res = {"LAB_RESULTS": str(d / "results")}
    os.makedirs(res["LAB_RESULTS"])
    LabRun(d, res, measures=True).sweep(str(spec))
    (run,) = os.listdir(res["LAB_RESULTS"])
    return os.path.join(res["LAB_RESULTS"], run)


def same(a, b):
    return (a is None and b is None) or a == b or (isinstance(a, float) and isinstance(b, float)
                                                 and math.isnan(a) and math.isnan(b))


def by_point(doc):
    return {(e["name"], p["variant"], p["placement"], p["threads"], p["cpus"], p["metric"], p["unit"]): p
            for e in doc["experiments"] for p in e["points"]}


def test_json_is_valid_and_holds_the_run(sort_run):
    doc = json.loads(export(sort_run).stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["format"] == "scaling-lab run" and doc["format_version"] == 1
    m = model.build(sort_run)
    pts = by_point(doc)
    (e,) = m.experiments
    for p in e.points + e.noise:
        q = pts[(e.name, p.variant, p.placement, int(p.threads), p.cpus, p.metric, p.unit)]
        assert [r["value"] for r in q["repeats"]] == [r.value for r in p.repeats]
        assert q["suspect"] == p.summary.suspect and q["noise"] == p.noise
        for k, v in q["stats"].items():      # the lab's own statistics, NaN as null
            assert same(v, getattr(p.summary, k) if getattr(p.summary, k) == getattr(p.summary, k) else None), \
                (k, v, getattr(p.summary, k))
    # every repeat of the tidy CSV is there
    csv_rows = rows(os.path.join(sort_run, "data", "sortgoal.csv"))
    assert sum(len(p["repeats"]) for p in pts.values()) == len(csv_rows)
    mach = doc["machine"]
    assert mach["kernel"] and mach["cpu"] and mach["memory_time"].get("clocksource")
    assert mach["topology"]["pus"] == str(os.cpu_count())
    assert doc["code"] == json.load(open(os.path.join(sort_run, "sweep", "identity.json")))
    (ex,) = doc["experiments"]
    assert ex["goals"][0]["rows"][0]["verdict"] in ("met", "not met", "inconclusive")
    assert ex["scaling"]["metric"] == "wall_s" and ex["scaling"]["sentences"]


def test_bmf_has_bencher_shape_and_the_medians(sort_run):
    bmf = json.loads(export(sort_run, "format=bmf").stdout)
    jsonschema.validate(bmf, BMF, cls=jsonschema.Draft7Validator)
    doc = json.loads(export(sort_run).stdout)
    n = 0
    for (exp, variant, placement, threads, _c, metric, _u), p in by_point(doc).items():
        if p["noise"]:
            assert metric not in bmf.get(f"{exp}/{variant}/{placement}/t{threads}", {})
            continue
        got = bmf[f"{exp}/{variant}/{placement}/t{threads}"][metric]
        assert got["value"] == p["stats"]["median"]
        assert (got["lower_value"], got["upper_value"]) == (p["stats"]["ci_lo"], p["stats"]["ci_hi"])
        n += 1
    assert n >= 16       # 2 variants x 2 thread counts x wall_s, cpu_user_s, cpu_sys_s, max_rss_kib


def test_hyperfine_shape_reads_back(sort_run, tmp_path, results):
    out = tmp_path / "hf.json"
    export(sort_run, "format=hyperfine", f"out={out}")
    hf = json.load(open(out))
    doc = json.loads(export(sort_run).stdout)
    wall = {(p["variant"], p["threads"]): p for k, p in by_point(doc).items() if p["metric"] == "wall_s"}
    assert len(hf["results"]) == len(wall) == 4
    for r in hf["results"]:
        assert set(r) >= {"command", "mean", "stddev", "median", "user", "system", "min", "max", "times",
                          "exit_codes", "parameters"}
        p = wall[(r["parameters"]["variant"], int(r["parameters"]["threads"]))]
        assert r["times"] == [x["value"] for x in p["repeats"]] and r["median"] == p["stats"]["median"]
        assert r["mean"] == pytest.approx(statistics.fmean(r["times"])) and len(r["exit_codes"]) == len(r["times"])
        assert r["command"].startswith("sort --parallel=")       # the command the engine ran
    import_(results, str(out), "name=sortgoal")
    (run,) = os.listdir(results["LAB_RESULTS"])
    back = rows(os.path.join(results["LAB_RESULTS"], run, "data", "sortgoal.csv"))
    got = sorted(float(r["value"]) for r in back if r["metric"] == "wall_s")
    assert got == sorted(t for r in hf["results"] for t in r["times"])


def test_round_trip_gives_the_same_points_and_statistics(sort_run, tmp_path, results):
    out = tmp_path / "run.json"
    export(sort_run, f"out={out}")
    import_(results, str(out))
    (run,) = os.listdir(results["LAB_RESULTS"])
    run = os.path.join(results["LAB_RESULTS"], run)
    a, b = json.load(open(out)), json.loads(export(run).stdout)
    jsonschema.validate(b, SCHEMA, cls=jsonschema.Draft202012Validator)
    pa, pb = by_point(a), by_point(b)
    assert pa.keys() == pb.keys()
    for k in pa:
        for f in ("repeats", "stats", "suspect", "noise"):
            got = [dict(r, command=None) for r in pb[k][f]] if f == "repeats" else pb[k][f]
            want = [dict(r, command=None) for r in pa[k][f]] if f == "repeats" else pa[k][f]
            assert got == want, (k, f)
    assert [e["charts"] for e in a["experiments"]] == [e["charts"] for e in b["experiments"]]
    assert b["machine"]["memory_time"] == a["machine"]["memory_time"]
    assert b["machine"]["imported"]["format"] == "scaling-lab run"
    assert b["experiments"][0]["scaling"]["rows"] == a["experiments"][0]["scaling"]["rows"]


@pytest.mark.parametrize("args, says", [(("format=xml",), "format=xml"), (("colour=red",), "unknown key colour=")])
def test_bad_arguments(sort_run, args, says):
    p = export(sort_run, *args, check=False)
    assert p.returncode == 2 and says in p.stderr


def test_not_a_run(tmp_path):
    p = export(str(tmp_path), check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a run folder" in p.stderr
