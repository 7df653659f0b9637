"""Node × node memory matrices (c-probes/mem): which rows are a matrix cell, the firmware's distance
table beside it, and the verdict in words "remote memory costs ×L latency and ×B bandwidth here".

A cell is a row whose variant is `cpuC-memM` (CPU node C, memory node M). A cell's bandwidth has a
one-thread and an all-CPUs-of-the-node row; a matrix shows the node's figure (the most threads), as
Intel MLC's bandwidth matrix does."""
import csv
import os
import re

from lab.core.rules import quotient_range

# scripts/ is on sys.path: the programs that import the reporting package put it there
from lab.core.runfolder import ROOT, RunFolder, read_file
from lab.core.stats import summary
from lab.report.fmt import fmt

CELL = re.compile(r"^cpu(\d+)-mem(\d+)$")
LATENCY, BANDWIDTH = "latency_ns", "read_gbps"
# A line of env/numa-nodes.txt (env.sh: the kernel's node list and SLIT row); a node index and a distance
# have a few digits (the SLIT's are 10..255), and a host has at most MAX_NODES nodes
MAX_NODES = 1024
DISTANCES = re.compile(r"node(\d{1,4}) .*distance=(\d{1,4}(?:,\d{1,4}){0,1023})\s*$")
ONE_NODE = "this host has one NUMA node"


def node_cell(variant):
    """(cpu_node, mem_node) of a matrix row's variant, or None."""
    m = CELL.match(variant or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _threads(t):
    return int(t) if str(t).isdigit() else 0


def matrix(items, metric):
    """items: [(variant, threads, metric, payload)] → {(cpu_node, mem_node): payload} of `metric`,
    the row with the most threads per cell. Empty when no row is a cell."""
    best = {}
    for variant, threads, m, payload in items:
        cell = node_cell(variant)
        if m != metric or cell is None:
            continue
        if cell not in best or _threads(threads) > best[cell][0]:
            best[cell] = (_threads(threads), payload)
    return {c: p for c, (_t, p) in best.items()}


def distances(run):
    """{node: [distance to node 0, 1, …]} from env/numa-nodes.txt (the kernel's table, which is the
    firmware's SLIT); {} when not captured."""
    rf = RunFolder(run)
    # the safe reader: a FIFO, a link, /dev/zero refused
    text = read_file(rf.env("numa-nodes.txt"), "env", rf.path) or ""
    out = {}
    for line in text.splitlines()[:MAX_NODES]:
        m = DISTANCES.match(line)       # digit-bounded: a 5,000-digit distance was a ValueError in int()
        if m:
            out[int(m.group(1))] = [int(x) for x in m.group(2).split(",")]
    return out


def _pool(points, metric, local):
    """Summary over every repeat of the local (or remote) cells' node figures, with suspect carried."""
    cells = matrix([(p.variant, p.threads, p.metric, p) for p in points], metric)
    chosen = [p for (c, m), p in cells.items() if (c == m) == local]
    if not chosen:
        return None, 0
    return summary([r.value for p in chosen for r in p.repeats],
                   "; ".join(p.summary.suspect for p in chosen if p.summary.suspect)), len(chosen)


CATALOGUE = os.path.join(ROOT, "reference", "numa-mem", "catalogue.csv")


def _matrix(text, where):
    """'a b c d' (row-major 2 x 2, as published) -> [a, b, c, d]; '' -> None."""
    if not text.strip():
        return None
    try:
        xs = [float(x) for x in text.split()]
    except ValueError:
        xs = []
    if len(xs) != 4 or not all(0 < x < 1e9 for x in xs):
        raise ValueError(f"{where}: expected four positive numbers (node 0->0, 0->1, 1->0, 1->1), not {text!r}")
    return xs


def catalogue(path=CATALOGUE):
    """Published 2-socket figures (reference/numa-mem/): [{name, cpu, tool, source, source_file, lat_x, bw_x}],
    lat_x = remote ÷ local latency, bw_x = local ÷ remote bandwidth (None when not published). A malformed row
    raises ValueError naming file:line."""
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for n, r in enumerate(csv.DictReader(f), start=2):
            where = f"{path}:{n}"
            if not (r.get("name") and r.get("cpu") and r.get("source") and r.get("source_file") and r.get("where")):
                raise ValueError(f"{where}: name, cpu, source, source_file and where are required")
            lat, bw = _matrix(r.get("latency_ns") or "", where), _matrix(r.get("read_mbps") or "", where)
            if lat is None:
                raise ValueError(f"{where}: latency_ns is required")
            out.append({"name": r["name"], "cpu": r["cpu"], "tool": r.get("tool", ""), "source": r["source"],
                        "source_file": r["source_file"],
                        "lat_x": (lat[1] + lat[2]) / (lat[0] + lat[3]),
                        "bw_x": (bw[0] + bw[3]) / (bw[1] + bw[2]) if bw else None})
    return out


def published_line(path=CATALOGUE):
    """'Published, on other 2-socket machines: …' with each machine's ×L (and ×B) and its source, or ''."""
    try:
        rows = catalogue(path)
    except (OSError, ValueError) as e:
        return f"Published figures unreadable: {e}."
    parts = [f"{r['name']} ({r['cpu']}) ×{r['lat_x']:.2f} latency" +
             (f", ×{r['bw_x']:.2f} bandwidth" if r["bw_x"] is not None else ", bandwidth not published") +
             f" ({r['tool']}; {r['source'].split('@')[0]} {r['source_file']})" for r in rows]
    return ("Published, on other 2-socket machines (reference/numa-mem/): " + "; ".join(parts) + ".") if parts else ""


def _ratio(num, den):
    q = num.median / den.median if den.median else float("nan")
    lo, hi = quotient_range(num, den)
    if num.n < 3 or den.n < 3:
        return q, f"×{q:.2f} (no CI: fewer than 3 repeats)"
    return q, f"×{q:.2f} (95% CI ×{lo:.2f}–×{hi:.2f})"


def notes(run, points):
    """{"lines": sentences, "distances": {node: row}} for an experiment whose points hold a node matrix,
    else None. The sentences are plain text (markdown-safe, escaped by the HTML renderer)."""
    items = [(p.variant, p.threads, p.metric, p) for p in points]
    lat, bw = matrix(items, LATENCY), matrix(items, BANDWIDTH)
    if not lat and not bw:
        return None
    nodes = sorted({n for cell in list(lat) + list(bw) for n in cell})
    out = []
    if len(nodes) == 1:
        out.append(f"{ONE_NODE} (node {nodes[0]}): one cell, local memory only; what remote memory costs "
                   "cannot be measured here.")
    else:
        ll, nl = _pool(points, LATENCY, True)
        lr, nr = _pool(points, LATENCY, False)
        bl, _ = _pool(points, BANDWIDTH, True)
        br, _ = _pool(points, BANDWIDTH, False)
        if ll and lr and bl and br:
            _q, lat_text = _ratio(lr, ll)
            _q, bw_text = _ratio(bl, br)
            out.append(f"Remote memory costs {lat_text} latency and {bw_text} bandwidth here "
                       f"(latency: remote ÷ local, {fmt(lr.median)} vs {fmt(ll.median)} ns; bandwidth: "
                       f"local ÷ remote, {fmt(bl.median)} vs {fmt(br.median)} GB/s, all CPUs of a node; "
                       f"pooled over {nl} local and {nr} remote cells, each cell in the heatmaps).")
            doubt = "; ".join(x for x in (ll.suspect, lr.suspect, bl.suspect, br.suspect) if x)
            if doubt:
                out.append(f"Some of these repeats are suspect: {doubt}.")
        else:
            out.append("Remote and local cells were not both measured: no verdict.")
    pub = published_line()
    if pub:
        out.append(pub)
    dist = distances(run)
    if not dist:
        out.append("Firmware distances: not captured (env/numa-nodes.txt missing).")
    where = [p for p in points if p.metric == "mem_on_node_pct" and node_cell(p.variant)
             and p.summary.min < 100]
    for p in where:
        out.append(f"Memory of cell {p.variant} was not all on its node: as little as {fmt(p.summary.min)}% "
                   "of the sampled pages.")
    return {"lines": out, "distances": dist}


def distance_table(dist):
    """(header, rows) of the distance table: node, then its distance to each node."""
    cols = sorted({j for row in dist.values() for j in range(len(row))})
    return ["node"] + [str(j) for j in cols], [[str(n)] + [str(x) for x in dist[n]] for n in sorted(dist)]
