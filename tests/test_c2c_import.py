"""Published core-to-core matrices as runs (import-c2c, reference/c2c/): per-relation medians checked
against a computation written here from the CSV and the synthetic string's arithmetic (not the lab's
relation code), the catalogue's CPU numbering checked against the matrices, the heatmap's order and
borders, report rows, seed 004's verdict on its own CPU, the home-socket split, bad inputs, and compare,
replay, dry run and run= on imported runs."""
import csv
import glob
import os
import re
import statistics
import sys
import tarfile

import pytest

from conftest import ROOT, sh
from lab.core import c2c_published as C
from lab.report import markdown, model

CAT = os.path.join(ROOT, "reference", "c2c")


def entries():
    with open(os.path.join(CAT, "catalogue.csv"), newline="") as f:
        return list(csv.DictReader(f))


def matrix(path):
    """{(i, j): ns} for j < i, read here with csv only."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]      # row 0 is all empty cells, yet a row
    return len(rows), {(i, j): float(c) for i, r in enumerate(rows) for j, c in enumerate(r) if j < i}


def shape(topology):
    """Levels of the catalogue's synthetic strings, and CPU c's place by arithmetic: the strings put
    PU index c on core c % cores (indexes=2*cores:1*2), its sibling c + cores."""
    lv = {k: int(v) for k, v in re.findall(r"(pack|die|l3|core|pu):(\d+)", topology)}
    per_l3 = lv["core"]
    per_die = per_l3 * lv["l3"]
    per_pack = per_die * lv.get("die", 1)
    cores = per_pack * lv["pack"]

    def place(c):
        core = c % cores
        return {"core": core, "l3": core // per_l3, "die": core // per_die, "pack": core // per_pack}
    return cores, place, "die" in lv


def relation_here(a, b, place, has_die):
    x, y = place(a), place(b)
    if x["pack"] != y["pack"]:
        return "cross-package"
    if x["core"] == y["core"]:
        return "smt"
    if x["l3"] == y["l3"]:
        return "same-l3"
    if has_die and x["die"] != y["die"]:
        return "cross-die"
    return "cross-l3"


def pct(xs, q):
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def expected(entry):
    n, cells = matrix(os.path.join(CAT, entry["file"]))
    _cores, place, has_die = shape(entry["topology"])
    by = {}
    for (i, j), v in cells.items():
        by.setdefault(relation_here(i, j, place, has_die), []).append(v)
    return n, cells, by


def imported(tmp_path, name):
    """Import one catalogued matrix with the library (no charts: fast) and return its run folder."""
    e = next(x for x in C.catalogue() if x["name"] == name)
    run = str(tmp_path / f"published-{name}")
    C.write_run(run, e["path"], e["topology"], e["cpu"], C.cite(e), e)
    return run


@pytest.fixture(scope="module")
def epyc(tmp_path_factory):
    """The 2x EPYC 7R13 matrix imported once, and its model, for the tests that only read them."""
    run = imported(tmp_path_factory.mktemp("epyc"), "2x-epyc-7r13")
    return run, model.build(run)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e["name"])
def test_catalogued_medians_match_an_independent_computation(entry, tmp_path):
    n, cells, by = expected(entry)
    run = str(tmp_path / "run")
    rows = C.write_run(run, os.path.join(CAT, entry["file"]), entry["topology"], entry["cpu"], "test", entry)
    got = {r["relation"]: r for r in rows}
    assert set(got) == set(by), (sorted(got), sorted(by))
    for rel, xs in by.items():
        assert got[rel]["pairs"] == len(xs)
        assert got[rel]["median_ns"] == pytest.approx(statistics.median(xs), rel=1e-9)
        assert got[rel]["p10_ns"] == pytest.approx(pct(xs, 10), rel=1e-9)
        assert got[rel]["p90_ns"] == pytest.approx(pct(xs, 90), rel=1e-9)
    # one tidy row per pair, both CPUs and the relation (placement), the lab's schema
    with open(os.path.join(run, "data", "c2c-matrix.csv"), newline="") as f:
        data = list(csv.DictReader(f))
    assert len(data) == n * (n - 1) // 2
    _c, place, has_die = shape(entry["topology"])
    for r in data[:: max(1, len(data) // 500)]:
        a, b = (int(x) for x in r["cpus"].split(","))
        assert (r["experiment"], r["variant"], r["threads"], r["metric"], r["unit"]) == \
            ("c2c-matrix", "cas", "2", "one_way_ns", "ns")
        assert r["placement"] == relation_here(a, b, place, has_die)
        assert float(r["value"]) == pytest.approx(cells[(b, a)], rel=1e-5)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e["name"])
def test_catalogue_numbering_fits_the_matrix(entry):
    """SMT siblings are each CPU's fastest partner, an L3 crossing is a step, a socket boundary too."""
    n, cells, by = expected(entry)
    cores, place, _d = shape(entry["topology"])
    lat = lambda a, b: cells[(max(a, b), min(a, b))]  # noqa: E731
    for c in range(n):
        sibling = c + cores if c < cores else c - cores
        assert min((x for x in range(n) if x != c), key=lambda x: lat(c, x)) == sibling, c
    near = statistics.median(by["same-l3"])
    for far in ("cross-l3", "cross-die", "cross-package"):
        if far in by:
            assert min(by[far]) > 1.5 * near, (far, min(by[far]), near)
    if "cross-package" in by:
        assert statistics.median(by["cross-package"]) > max(statistics.median(by[r]) for r in by
                                                            if r in ("same-l3", "smt"))
        assert pct(by["cross-package"], 10) > pct(by["same-l3"], 90)


def test_import_prints_summary_draws_bordered_heatmap_and_reports(tmp_path, results):
    e = next(x for x in entries() if x["name"] == "2x-xeon-e5-2690")
    run = str(tmp_path / "xeon")
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", os.path.join(CAT, e["file"]), f"topology={e['topology']}",
           f"name={e['cpu']}", "source=nviennot/core-to-core-latency results/", f"run={run}", env=results)
    lines = p.stdout.strip().splitlines()
    assert lines[0] == "relation,pairs,median_ns,p10_ns,p90_ns"
    _n, _cells, by = expected(e)
    printed = {ln.split(",")[0]: ln.split(",") for ln in lines[1:]}
    assert list(printed) == ["smt", "same-l3", "cross-package"]
    for rel, xs in by.items():
        assert int(printed[rel][1]) == len(xs)
        assert float(printed[rel][2]) == pytest.approx(statistics.median(xs), abs=0.051)
    # heatmap: hwloc's order (socket 0's cores with their siblings, then socket 1), one border between
    # (the chart object both the PNG's data and the page's SVG are drawn from: lab/report/chartmodel.py)
    from lab.core.runfolder import RunFolder
    from lab.report import chartmodel, model
    ex = next(x for x in model.build(run).experiments if x.name == "c2c-matrix")
    chart = chartmodel.build("heatmap", ex, "one_way_ns", RunFolder(run).topology())
    order = chart.order
    assert order[:4] == [0, 16, 1, 17] and order[16:18] == [8, 24]
    assert chart.bounds == [15]
    assert os.path.exists(os.path.join(run, "plots", "c2c-matrix-heatmap-one_way_ns.png"))
    assert os.path.exists(os.path.join(run, "env", "lstopo.xml"))
    md = open(os.path.join(run, "report.md")).read()
    assert "published matrix from nviennot/core-to-core-latency" in md
    assert ("Published numbers, not measured here: nviennot/core-to-core-latency results/ "
            "(file 2x-xeon-e5-2690.csv)") in md
    cross = statistics.median(by["cross-package"])
    assert re.search(rf"\| cross-package \| 256 \| {cross:.3g} ns \|", md), md
    assert "Beside the published machines" in md and "Ice Lake-SP" in md
    html = open(os.path.join(run, "report.html")).read()
    assert "Per relation" in html and "Dual Intel(R) Xeon(R) CPU E5-2690 0 @ 2.90GHz.csv" not in html  # itself left out
    assert "Platinum 8375C CPU @ 2.90GHz.csv" in html
    assert html.count('class="border"') == 2      # the socket boundary, across and down


def test_seed004_verdict_on_its_own_cpu(tmp_path):
    run = imported(tmp_path, "threadripper-3960x")
    m = model.build(run)
    story = next(s for s in m.stories if s.source == "seed-004")
    assert story.verdict == "yes", story
    _n, _cells, by = expected(next(x for x in entries() if x["name"] == "threadripper-3960x"))
    ratio = statistics.median(by["cross-l3"]) / statistics.median(by["same-l3"])
    claim = next(e for e in m.experiments if e.name == "c2c-matrix").relations["ccx_crossing"]
    assert claim["ratio"] == pytest.approx(ratio, rel=1e-9)
    assert claim["own_cpu"] and claim["ci"][0] < ratio < claim["ci"][1]
    assert "inside" in claim["why"] and "p10–p90" in claim["spread"]


def test_seed004_elsewhere_judges_the_direction_only(epyc):
    _run, m = epyc
    claim = next(e for e in m.experiments if e.name == "c2c-matrix").relations["ccx_crossing"]
    assert claim["verdict"] == "yes" and not claim["own_cpu"] and "not judged" in claim["why"]


def test_home_socket_split_on_two_socket_epyc(epyc):
    _run, m = epyc
    rel = next(e for e in m.experiments if e.name == "c2c-matrix").relations
    split = {x["relation"]: x for x in rel["split"]}
    e = next(x for x in entries() if x["name"] == "2x-epyc-7r13")
    _n, cells, _by = expected(e)
    _c, place, has_die = shape(e["topology"])
    halves = {0: [], 1: []}
    for (i, j), v in cells.items():
        if relation_here(i, j, place, has_die) == "cross-l3":
            halves[place(i)["pack"]].append(v)      # cross-l3 pairs share a socket
    assert split["cross-l3"]["differ"] is True
    assert split["cross-l3"]["ratio"] == pytest.approx(statistics.median(halves[1]) / statistics.median(halves[0]))
    assert split["same-l3"]["differ"] is False and split["smt"]["differ"] is False
    assert "p10–p90" in split["cross-l3"]["words"]
    md = markdown.render(m)
    assert "- cross-l3: do the halves differ? **yes**: the other socket's cross-l3 pairs 200 ns" in md
    assert "- same-l3: do the halves differ? **no**" in md
    assert "cross-package" not in split


BAD = [
    ("ragged", "1,2\n", ",,\n5,,\n6,7\n", ":3: 2 cells"),
    ("text", "", ",,\n5,,\nabc,7,\n", ":3: column 1: 'abc' is not a number"),
    ("negative", "", ",,\n5,,\n-6,7,\n", ":3: column 1: -6 is not a positive"),
    ("upper", "", ",4,\n5,,\n6,7,\n", ":1: column 2 holds '4' on or above the diagonal"),
    ("empty-cell", "", ",,\n5,,\n,7,\n", ":3: column 1 (CPU 2 with CPU 0) is empty"),
]


@pytest.mark.parametrize("name,_pre,text,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_matrix_is_one_line_exit_2_no_run(name, _pre, text, msg, tmp_path, results):
    f = tmp_path / f"{name}.csv"
    f.write_text(text)
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", str(f), "topology=pack:1 core:3 pu:1", env=results, check=False)
    assert p.returncode == 2 and p.stdout == ""
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and f"{f}{msg}" in err[0], err
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_export_of_a_matrix_whose_cpus_the_topology_lacks_is_one_short_line(tmp_path, results):
    """An imported matrix's pair moved to CPUs 300 and 301 (test input) under the 2 x EPYC 7763 fixture's
    topology: `export` refuses in one line that counts the topology's PUs and gives their range, not every one."""
    f = tmp_path / "m.csv"
    f.write_text(",,\n50,,\n60,55,\n")
    sh(sys.executable, "-m", "lab.cli.import_c2c", str(f), "topology=pack:1 core:3 pu:1", env=results)
    (run,) = glob.glob(os.path.join(results["LAB_RESULTS"], "*"))
    data = os.path.join(run, "data", "c2c-matrix.csv")
    text = open(data).read()
    assert text.count(',"0,1",') == 1
    with open(data, "w") as out:
        out.write(text.replace(',"0,1",', ',"300,301",'))
    with open(os.path.join(ROOT, "topologies", "AMD-19h-Zen3-2xEpyc-7763.v2.xml")) as src, \
            open(os.path.join(run, "env", "lstopo.xml"), "w") as out:
        out.write(src.read())
    p = sh(sys.executable, "-m", "lab.cli.export", run, env=results, check=False)
    (line,) = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == ""
    assert line.endswith("CPU 300 is not in this topology (128 PUs: 0-127)") and len(line) < 120, line


def test_pu_count_mismatch_and_bad_topology(tmp_path, results):
    f = tmp_path / "m.csv"
    f.write_text(",,\n5,,\n6,7,\n")
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", str(f), "topology=pack:1 core:2 pu:2", env=results, check=False)
    assert p.returncode == 2 and f"{f}:3: the matrix has 3 CPUs (rows) but the topology has 4 PUs" in p.stderr
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", str(f), "topology=pack:1 core:3 pu:1; touch /tmp/x",
           env=results, check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "topology" in p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_compare_replay_dry_run_and_run_key_on_an_imported_run(tmp_path, results):
    a = imported(tmp_path, "2x-xeon-e5-2690")
    b = imported(tmp_path, "xeon-8375c")
    out = tmp_path / "cmp.md"
    p = sh(sys.executable, "-m", "lab.cli.compare", a, b, str(out), env=results)
    assert "## Core-to-core latency by relation" in p.stdout
    row = next(ln for ln in p.stdout.splitlines() if ln.startswith("| same-l3 |"))
    _n, _c, by_a = expected(next(x for x in entries() if x["name"] == "2x-xeon-e5-2690"))
    _n, _c, by_b = expected(next(x for x in entries() if x["name"] == "xeon-8375c"))
    assert row.endswith(f"| {statistics.median(by_b['same-l3']) / statistics.median(by_a['same-l3']):.2f} |")
    assert os.path.exists(str(out)[:-3] + ".html")
    # replay: an imported run has no spec to re-measure
    tar = tmp_path / "a.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        t.add(a, arcname=os.path.basename(a))
    p = sh(sys.executable, "-m", "lab.cli.archive", "replay", str(tar), env=results, check=False)
    assert p.returncode == 2 and "imported published matrix" in p.stderr and "no spec" in p.stderr
    # a sweep never writes into it, and the dry run still prices with an imported run in results/
    p = sh(sys.executable, "-m", "lab.cli.sweep", "experiments/c2c-matrix.spec", f"run={a}", env=results, check=False)
    assert p.returncode == 2 and "imported published matrix" in p.stderr
    os.rename(a, os.path.join(results["LAB_RESULTS"], os.path.basename(a)))
    a = os.path.join(results["LAB_RESULTS"], os.path.basename(a))
    p = sh(sys.executable, "-m", "lab.cli.sweep", "experiments/c2c-matrix.spec", "dry=1", env=results)
    assert "ETA" in p.stdout and "spec's cost" in p.stdout
    # and its topology prices a sweep of that published machine: the c2c sweep there has cross-package pairs
    p = sh(sys.executable, "-m", "lab.cli.sweep", "experiments/c2c.spec", "dry=1",
           f"topology={os.path.join(a, 'env', 'lstopo.xml')}", env=results)
    assert "cross-package" in p.stdout and re.search(r"^\d+ points, ETA", p.stdout, re.M)
    # nothing measured, no new run folder
    assert os.listdir(results["LAB_RESULTS"]) == [os.path.basename(a)]
    assert not glob.glob(os.path.join(a, "data", "points", "*"))


def test_catalogue_recipe_imports_named_machines(results):
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", "catalogue", "2x-xeon-e5-2690", env=results)
    assert p.stdout.startswith("# 2x-xeon-e5-2690: Intel(R) Xeon(R) CPU E5-2690 0 @ 2.90GHz "
                               "(nviennot/core-to-core-latency")
    assert len(os.listdir(results["LAB_RESULTS"])) == 1
    p = sh(sys.executable, "-m", "lab.cli.import_c2c", "catalogue", "nope", env=results, check=False)
    assert p.returncode == 2 and "no machine named 'nope'" in p.stderr


def test_hostile_name_and_source_are_text_only(tmp_path, results):
    f = tmp_path / "m.csv"
    f.write_text(",,\n5,,\n6,7,\n")
    marker = tmp_path / "pwned"
    evil = f"x'; system('touch {marker}') #<script>alert(1)</script> $(touch {marker})"
    run = str(tmp_path / "evil")
    sh(sys.executable, "-m", "lab.cli.import_c2c", str(f), "topology=pack:1 core:3 pu:1", f"name={evil}",
       f"source={evil}", f"run={run}", env=results)
    assert not marker.exists()
    html = open(os.path.join(run, "report.html")).read()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
