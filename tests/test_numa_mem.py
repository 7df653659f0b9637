"""The node x node memory matrix (c-probes/mem, experiments/numa-mem.spec): its heatmaps keep a CPU node
and a memory node apart, the report says what remote memory costs with its CI and shows the firmware's
distance table, a one-node host gets one cell and says so. The CSV values below are test input written
by hand, not measurements; test_mem_probe_on_this_host runs the real probe."""
import csv
import math
import os

from conftest import in_process, sh
from labtest import TWO_NODES, numa_run


def test_two_nodes_heatmaps_keep_cpu_and_memory_node_apart(tmp_path):
    run = numa_run(tmp_path, TWO_NODES, [[10, 21], [21, 10]])
    sh("python3", "-m", "lab.cli.charts", str(run))
    for metric in ("latency_ns", "read_gbps"):
        assert (run / "plots" / f"numa-mem-heatmap-{metric}.png").stat().st_size > 2000
    # rows are CPU nodes (y, column 2), columns memory nodes (x, column 1): 0→1 is 150, 1→0 is 160
    dat = [ln.split() for ln in (run / "plots" / "numa-mem-heatmap-latency_ns.dat").read_text().splitlines() if ln]
    cell = {(int(x), int(y)): float(v) for x, y, v, _label in dat}
    assert cell == {(0, 0): 100, (1, 0): 150, (0, 1): 160, (1, 1): 100}
    # bandwidth: the node's figure (2 threads), not the one-thread row
    dat = [ln.split() for ln in (run / "plots" / "numa-mem-heatmap-read_gbps.dat").read_text().splitlines() if ln]
    assert {(int(x), int(y)): float(v) for x, y, v, _l in dat}[(1, 0)] == 30


def test_two_nodes_verdict_in_words_with_ci_and_distance_table(tmp_path):
    run = numa_run(tmp_path, TWO_NODES, [[10, 21], [21, 10]])
    in_process("lab.cli.report", str(run))
    text = (run / "report.md").read_text()
    # remote latency: the 6 repeats of the two remote cells, median 155 (150 and 160 with ±1%);
    # local 100; bandwidth local 60 over remote 30 = ×2
    line = next(ln for ln in text.splitlines() if ln.startswith("Remote memory costs"))
    assert line.startswith("Remote memory costs ×1.55 (95% CI ×") and "latency and ×2.00 (95% CI ×" in line
    lo, hi = (float(x) for x in line.split("(95% CI ×", 1)[1].split(")", 1)[0].split("–×"))
    assert lo < 1.55 < hi and not math.isnan(lo)
    assert "| node | 0 | 1 |" in text and "| 1 | 21 | 10 |" in text
    assert "this host has one NUMA node" not in text
    # beside it, the published machines of reference/numa-mem/ with their sources
    pub = next(ln for ln in text.splitlines() if ln.startswith("Published, on other 2-socket machines"))
    assert "2x-xeon-8269cy" in pub and "×1.84 latency, ×2.22 bandwidth" in pub and "定制Linux_Kernel.md" in pub
    html = (run / "report.html").read_text()
    assert "Remote memory costs ×1.55" in html and "rows: CPU node, columns: memory node" in html
    # the SVG heatmap does not mirror a CPU node x memory node cell: four distinct cells
    assert html.count('class="cell"') >= 8     # two heatmaps of 2 x 2


def test_one_node_host_says_so(tmp_path):
    run = numa_run(tmp_path, {(0, 0): (120, 20)}, [[10]])
    sh("python3", "-m", "lab.cli.charts", str(run))
    assert (run / "plots" / "numa-mem-heatmap-latency_ns.png").stat().st_size > 2000   # one cell, drawn
    in_process("lab.cli.report", str(run))
    text = (run / "report.md").read_text()
    assert "this host has one NUMA node (node 0): one cell" in text
    assert "Remote memory costs" not in text and "| 0 | 10 |" in text
    assert "this host has one NUMA node" in (run / "report.html").read_text()


def test_published_catalogue_parses_and_every_number_has_a_source():
    from lab.report import numa
    rows = list(csv.DictReader(open(numa.CATALOGUE, encoding="utf-8")))
    parsed = numa.catalogue()
    assert len(parsed) == len(rows) >= 3
    for r, p in zip(rows, parsed):
        assert r["source"].count("@") == 1 and len(r["source"].split("@")[1]) == 40, r["source"]
        assert r["source_file"] and r["where"] and r["cpu"], r
        assert 1 < p["lat_x"] < 5 and (p["bw_x"] is None or 1 < p["bw_x"] < 10), p   # remote is dearer
    assert any(p["bw_x"] is not None for p in parsed)


def test_a_malformed_catalogue_row_names_its_line(tmp_path):
    from lab.report import numa
    bad = tmp_path / "c.csv"
    head = open(numa.CATALOGUE, encoding="utf-8").readline()
    bad.write_text(head + "m,cpu,u,t,1 2 3,,o/r@" + "0" * 40 + ",f,w\n")
    try:
        numa.catalogue(str(bad))
        raise AssertionError("accepted three numbers")
    except ValueError as e:
        assert str(e).startswith(f"{bad}:2: expected four positive numbers")
    assert numa.published_line(str(bad)).startswith("Published figures unreadable: ")


def test_mem_probe_on_this_host(tmp_path):
    """The real probe, briefly: a cell per node pair, memory where it says, output the lab accepts."""
    sh("make", "-s", "-C", "c-probes")
    p = sh("c-probes/build/mem", "--seconds", "0.02", "--size-mib", "64", "--raw", str(tmp_path))
    out = tmp_path / "mem.csv"
    out.write_text(p.stdout)
    sh("python3", "-m", "lab.cli.tidy", "fill", "run_id=t", "experiment=numa-mem", "variant=-", "placement=unpinned",
       "threads=1", "cpus=0", "repeat=1", str(out))
    rows = list(csv.DictReader(p.stdout.splitlines()))
    nodes = [d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")]
    cells = {r["variant"] for r in rows}
    assert len(cells) >= 1 and len(cells) <= len(nodes) ** 2
    for r in rows:
        if r["metric"] == "mem_node":
            assert r["variant"].endswith(f"-mem{r['value'].split('.')[0]}")
    assert os.path.getsize(tmp_path / "ran-on.csv") > 0
