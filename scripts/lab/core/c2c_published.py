"""Published core-to-core latency matrices as runs of the lab.

A matrix in nviennot/core-to-core-latency's `--csv` format (lower-triangular: row i, column j < i is the
one-way latency in ns between CPU i and CPU j; diagonal and upper triangle empty) plus a topology that
describes that machine's OS CPU numbering becomes an ordinary run folder of experiment `c2c-matrix`:
one tidy row per pair (variant `cas`, the pair's relation as its placement, both CPUs in `cpus`), env/
with the topology as lstopo XML, its summary and where the numbers came from, and a journal whose only
event is `imported`. Such a run has no spec: nothing in it can be re-measured. runfolder.kind() tells it
(KIND_PUBLISHED) from a sweep's run and from another tool's import.

The catalogue (reference/c2c/catalogue.csv) lists the published matrices the project keeps, each with
its topology, CPU identity (vendor, family, model as /proc/cpuinfo gives them) and source.
"""
import csv
import hashlib
import io
import json
import os
import shutil
import time

from lab import ROOT
from lab.core.runfolder import IMPORT_RECORD, RunFolder, RunFolderError, read_given
from lab.core.stats import percentile
from lab.core.tidy import value_problem, write_atomic
from lab.errors import LabError
from lab.topology.topo import PAIRS, PlacementError, Topology, synthetic_pus, xml_text

CATALOGUE = os.path.join(ROOT, "reference", "c2c", "catalogue.csv")
EXPERIMENT = "c2c-matrix"
VARIANT = "cas"            # the tool's CAS ping-pong, what the lab's c2c calls --mode cas
METRIC, UNIT = "one_way_ns", "ns"
MAX_BYTES = 32 << 20       # a 1024-CPU matrix is ~10 MB; anything bigger is not a matrix
MAX_CPUS = 1024


class C2CError(LabError, ValueError):
    """Bad input, named by file:line where there is one."""


# --- the matrix -------------------------------------------------------------------------------------
def read_matrix(path):
    """(n, {(i, j): ns} for j < i) of a lower-triangular matrix; C2CError names file:line otherwise."""
    try:        # a regular file (a FIFO never ends), at most MAX_BYTES
        data = read_given(path, MAX_BYTES, "core-to-core matrix")
        lines = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except RunFolderError as e:
        raise C2CError(str(e)) from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise C2CError(f"{path}: not a CSV text file ({e})") from None
    while lines and not any(c.strip() for c in lines[-1]):
        lines.pop()               # trailing blank lines
    n = len(lines)
    if n < 2:
        raise C2CError(f"{path}:1: a matrix needs at least 2 rows (CPUs), found {n}")
    if n > MAX_CPUS:
        raise C2CError(f"{path}:{MAX_CPUS + 1}: more than {MAX_CPUS} rows: not read")
    cells = {}
    for i, row in enumerate(lines):
        line = i + 1
        if len(row) != n:
            raise C2CError(f"{path}:{line}: {len(row)} cells in a row of a {n}-CPU matrix (ragged rows)")
        for j, cell in enumerate(row):
            cell = cell.strip()
            if j >= i:
                if cell:
                    raise C2CError(f"{path}:{line}: column {j + 1} holds {cell[:20]!r} on or above the diagonal "
                                   "(expected lower-triangular: row i has values in columns 1..i-1 only)")
                continue
            if not cell:
                raise C2CError(f"{path}:{line}: column {j + 1} (CPU {i} with CPU {j}) is empty")
            why = value_problem(cell)       # the tidy rule for a value: a finite number within ±1e18
            if why:
                raise C2CError(f"{path}:{line}: column {j + 1}: {why.removeprefix('value ')[:80]}")
            v = float(cell)
            if v <= 0:
                raise C2CError(f"{path}:{line}: column {j + 1}: {cell[:20]} is not a positive latency in ns")
            cells[(i, j)] = v
    return n, cells


def load_topology(spec, n, matrix_path):
    """(Topology, lstopo XML text) of a file or synthetic string whose PUs are exactly CPUs 0..n-1."""
    pus = synthetic_pus(spec)
    if pus is not None and pus != n:    # before hwloc builds it: a wrong string costs nothing
        raise C2CError(f"{matrix_path}:{n}: the matrix has {n} CPUs (rows) but the topology has {pus} PUs")
    try:
        xml = xml_text(spec)
        topo = Topology(spec)
    except PlacementError as e:
        raise C2CError(f"topology: {e}".replace("\n", "; ")) from None   # hwloc may say it in two lines
    pus = sorted(p.os for p in topo.pus)
    if len(pus) != n:
        raise C2CError(f"{matrix_path}:{n}: the matrix has {n} CPUs (rows) but the topology has {len(pus)} PUs")
    if pus != list(range(n)):
        raise C2CError(f"{matrix_path}:1: the topology's PUs are numbered {pus[0]}..{pus[-1]} with gaps, "
                       f"the matrix's CPUs 0..{n - 1}")
    return topo, xml


def pair_relations(topo, n):
    """{(i, j): relation} for every pair j < i, from the lab's one relation()."""
    return {(i, j): topo.relation(i, j) for i in range(n) for j in range(i)}


# --- per relation -----------------------------------------------------------------------------------
def summarize(values_by_relation):
    """[{relation, pairs, median_ns, p10_ns, p90_ns}] in the lab's order of relations (near to far)."""
    order = list(PAIRS) + sorted(set(values_by_relation) - set(PAIRS))
    return [{"relation": r, "pairs": len(xs), "median_ns": percentile(xs, 50),
             "p10_ns": percentile(xs, 10), "p90_ns": percentile(xs, 90)}
            for r in order for xs in [values_by_relation.get(r)] if xs]


def by_relation(cells, relations):
    out = {}
    for k, v in cells.items():
        out.setdefault(relations[k], []).append(v)
    return out


def summary_csv(rows):
    lines = ["relation,pairs,median_ns,p10_ns,p90_ns"]
    lines += [f"{r['relation']},{r['pairs']},{r['median_ns']:.1f},{r['p10_ns']:.1f},{r['p90_ns']:.1f}" for r in rows]
    return "\n".join(lines) + "\n"


# --- the catalogue ----------------------------------------------------------------------------------
def catalogue(path=CATALOGUE):
    """The catalogued machines: dicts of catalogue.csv with `path` (the matrix file) added."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["path"] = os.path.join(os.path.dirname(path), r["file"])
    return rows


def cite(entry):
    return f"{entry['source']}{entry['source_file']}" if entry.get("source_file") else entry.get("source", "")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --- the run folder ---------------------------------------------------------------------------------
def write_run(dest, matrix_path, topology_spec, name, source, entry=None):
    """Import one matrix into the new run folder `dest`; returns the per-relation summary rows.
    Everything is checked before anything is written, and the folder appears by a rename when whole:
    bad input leaves no run folder."""
    n, cells = read_matrix(matrix_path)
    topo, xml = load_topology(topology_spec, n, matrix_path)
    relations = pair_relations(topo, n)
    if os.path.exists(dest):
        raise C2CError(f"{dest} exists already: an import writes a new run folder")
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".tmp-import-{os.getpid()}-{os.path.basename(dest)}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _fill(tmp, os.path.basename(dest), matrix_path, n, cells, topo, xml, relations,
              topology_spec, name, source, entry)
        os.rename(tmp, dest)
    except RunFolderError as e:         # e.g. more rows than the readers accept: nothing is left behind
        raise C2CError(str(e)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summarize(by_relation(cells, relations))


def _fill(run, run_id, matrix_path, n, cells, topo, xml, relations, topology_spec, name, source, entry):
    rf = RunFolder(run)
    rf.make()
    os.makedirs(rf.env_dir)
    raw = rf.raw(EXPERIMENT, "published")
    os.makedirs(raw)
    rows = [{"run_id": run_id, "experiment": EXPERIMENT, "variant": VARIANT, "placement": relations[(i, j)],
             "threads": "2", "cpus": f"{j},{i}", "repeat": "1", "metric": METRIC, "value": f"{v:.10g}",
             "unit": UNIT, "suspect": ""} for (i, j), v in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
    write_atomic(rf.data_csv(EXPERIMENT), rows)
    shutil.copyfile(matrix_path, os.path.join(raw, "matrix.csv"))
    rf.write_text("env/lstopo.xml", xml)
    rf.write_text("env/topology.txt", "".join(f"{k}={v}\n" for k, v in topo.shape().items()))
    home = topo.pu(0).package
    record = {
        "cpu": name, "source": source, "file": os.path.basename(matrix_path), "sha256": sha256(matrix_path),
        "topology": topology_spec if not os.path.exists(topology_spec) else os.path.basename(topology_spec),
        "cpus": n, "pairs": len(cells), "variant": VARIANT,
        # core-to-core-latency allocates the line from its main thread, first touched on CPU 0's node
        "home_package": home,
        "vendor_id": (entry or {}).get("vendor_id", ""), "cpu_family": (entry or {}).get("cpu_family", ""),
        "model": (entry or {}).get("model", ""), "uarch": (entry or {}).get("uarch", ""),
        "catalogue": (entry or {}).get("name", ""),
        "charts": [[EXPERIMENT, "heatmap", METRIC]],     # what the run draws, as a tool's import records it
    }
    rf.write_text(IMPORT_RECORD, json.dumps(record, indent=1) + "\n")
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rf.write_text(os.path.relpath(rf.journal_path, rf.path),
                  json.dumps({"ts": ts, "event": "imported", "experiment": EXPERIMENT, **record}) + "\n")
    rf.set_state("imported")
    rf.write_text(os.path.relpath(rf.sweep_file("command"), rf.path),
                  f"import-c2c {os.path.basename(matrix_path)} topology={record['topology']}\n")
