"""TEMPORARY minimal reader of the evidence format (notes/why-format.md), private to why-analyze until
why-collect's why/evidence.py is merged: the lead drops this file then and points diff.load at
evidence.py. Bounded: refuses oversized files, with file:line in the error."""
import csv
import json
import os

MAX_STACKS = 20_000
MAX_FRAMES = 64
MAX_FRAME_CHARS = 512
MAX_BYTES = 64 * 1024 * 1024


class EvidenceError(ValueError):
    """Bad evidence: the message names file:line."""


def _lines(path):
    if os.path.getsize(path) > MAX_BYTES:
        raise EvidenceError(f"{path}:1: larger than {MAX_BYTES} bytes")
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def folded(path):
    """{stack: count} of one folded file; None when the file is absent."""
    if not os.path.exists(path):
        return None
    out = {}
    for i, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        try:
            n = float(count)
        except ValueError:
            raise EvidenceError(f"{path}:{i}: no count at the end of the line") from None
        if not stack or n < 0 or n != n:
            raise EvidenceError(f"{path}:{i}: bad stack or count")
        frames = stack.split(";")
        if len(frames) > MAX_FRAMES or any(len(f) > MAX_FRAME_CHARS for f in frames):
            raise EvidenceError(f"{path}:{i}: deeper than {MAX_FRAMES} frames or a frame over {MAX_FRAME_CHARS} chars")
        out[stack] = out.get(stack, 0) + n
        if len(out) > MAX_STACKS + 1:
            raise EvidenceError(f"{path}:{i}: more than {MAX_STACKS} distinct stacks")
    return out


def table(path, header):
    """[row dict] of one CSV with exactly this header; None when absent."""
    if not os.path.exists(path):
        return None
    rows = list(csv.reader(_lines(path)))
    if not rows or rows[0] != header:
        raise EvidenceError(f"{path}:1: header is not {','.join(header)}")
    if len(rows) > MAX_STACKS + 1:
        raise EvidenceError(f"{path}:{MAX_STACKS + 2}: more than {MAX_STACKS} rows")
    out = []
    for i, r in enumerate(rows[1:], 2):
        if len(r) != len(header):
            raise EvidenceError(f"{path}:{i}: {len(r)} fields, expected {len(header)}")
        out.append(dict(zip(header, r)))
    return out


FUTEX = ["addr", "waits", "wait_us", "stack"]
THREADS = ["tid", "comm", "oncpu_us", "offcpu_us", "runq_us", "voluntary", "involuntary", "migrations"]
HOTINS = ["symbol", "dso", "offset", "samples", "instruction"]


def load(folder):
    """{"meta": dict, "runs": [{"oncpu", "offcpu", "futex", "threads", "hotins"}]} of one point's evidence
    folder; a missing file is None (said as missing by the analysis)."""
    mpath = os.path.join(folder, "meta.json")
    try:
        with open(mpath, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise EvidenceError(f"{mpath}:1: no meta.json: not an evidence folder") from None
    except json.JSONDecodeError as e:
        raise EvidenceError(f"{mpath}:{e.lineno}: {e.msg}") from None
    n = meta.get("runs")
    if not isinstance(n, int) or not 0 <= n <= 100 or not isinstance(meta.get("work"), list) \
            or len(meta["work"]) != n:
        raise EvidenceError(f"{mpath}:1: runs must be 0..100 with one work value per run")
    runs = []
    for r in range(1, n + 1):
        p = lambda name: os.path.join(folder, name.format(r))  # noqa: E731
        runs.append({"oncpu": folded(p("oncpu_r{}.folded")), "offcpu": folded(p("offcpu_r{}.folded")),
                     "futex": table(p("futex_r{}.csv"), FUTEX), "threads": table(p("threads_r{}.csv"), THREADS),
                     "hotins": table(p("hotins_r{}.csv"), HOTINS)})
    return {"meta": meta, "runs": runs}
