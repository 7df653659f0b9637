"""Where memory lives (not the CPU placement of topo.py), checked per repeat: where an instrument says
its measured memory was, against where the point wanted it.

Instruments that know where their hot data lives append `{raw}/ran-on.csv` (docs/instruments.md): per
thread `mem_node`, the node the kernel reports for the data, and `mem_want`, the node the instrument
bound it to itself (-1 or absent: it bound nothing). The node expected is `mem_want` when the instrument
bound the data, else the point's NUMA nodes when the engine applied `membind` (local or interleave) to a
pinned point; otherwise nothing is expected and nothing is checked. A mismatch makes the repeat disturbed,
like steal: measured again, then kept as suspect with the reason."""
import os

from lab.core.runfolder import RunFolderError, read_csv


def _int(text, default=-1):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def _rows(raw):
    return read_csv(os.path.join(raw, "ran-on.csv"), "text")     # a regular file of the run, bounded


def memory_nodes(raw):
    """The nodes an instrument said its measured memory was on, in a repeat's raw folder (sorted; empty when
    it recorded none)."""
    return sorted({n for n in (_int(r.get("mem_node")) for r in _rows(raw)) if n >= 0})


def misplaced(raw, nodes, membind, pinned):
    """'memory on node N, expected M' (with how many of the instrument's rows), or '' when every row that
    says where its memory was is where it should be."""
    engine_expects = set(nodes) if pinned and membind in ("local", "interleave") and nodes else set()
    wrong, checked = [], 0
    try:
        rows = _rows(raw)
    except RunFolderError as e:     # the instrument left something that is not its CSV: the repeat says so
        return f"ran-on.csv unreadable: {e}"
    for r in rows:
        node, want = _int(r.get("mem_node")), _int(r.get("mem_want"))
        expected = {want} if want >= 0 else engine_expects
        if node < 0 or not expected:
            continue
        checked += 1
        if node not in expected:
            wrong.append((node, expected, r.get("probe", "?"), r.get("variant", "")))
    if not wrong:
        return ""
    node, expected, probe, variant = wrong[0]
    where = f"{probe} {variant}".strip()
    return (f"memory on node {node}, expected {','.join(map(str, sorted(expected)))} "
            f"({where}; {len(wrong)} of {checked} threads)")
