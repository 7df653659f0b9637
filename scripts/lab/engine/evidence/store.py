"""The evidence folder's format, read and written here only (raw/<exp>/<stem>_why/, docs/design.md
"Why it stops scaling: evidence"). A run folder may come from elsewhere: every reader is bounded and
typed, and refuses what is larger or malformed with EvidenceError naming file:line.

  oncpu_r<N>.folded   `frame;…;leaf COUNT`: perf samples per stack (root: the process's comm)
  offcpu_r<N>.folded  `[reason];comm;frame;… MICROSECONDS` (REASONS)
  futex_r<N>.csv      addr,waits,wait_us,stack
  lock_r<N>.csv       addr,symbol,wakes,waker: per futex word, its symbol (a mutex in a binary's static
                      data, `lock` in /path; '' elsewhere), the wakes and the stack that woke it most (the
                      holder letting go); absent in folders written before it
  threads_r<N>.csv    tid,comm,oncpu_us,offcpu_us,runq_us,voluntary,involuntary,migrations
  hotins_r<N>.csv     symbol,dso,offset,samples,instruction
  cpus_r<N>.csv       tid,comm,cpu,seconds (where each thread ran, from the switch records)
  doing_r<N>.csv      tid,samples,stack: each thread's most-sampled on-CPU user stacks (what it does);
                      absent in folders written before it
  numa_r<N>.json      where the program's memory was (numamaps.py writes and reads it)
  meta.json           runs, unit, metric, work, wall_s, value, timed_median, slowdown, sample, evidence;
                      since the validity gate (lab/engine/evidence/gate.py) also runs_judged, disturbance and
                      timed_suspect (format 1 still: a folder without them is read as before, every
                      run kept)
"""
import csv
import io
import json
import math
import os
import re

from lab.core.runfolder import read_present, write_atomic_text
from lab.errors import LabError

from . import numamaps

FORMAT = 1
MAX_STACKS = 20000          # distinct stacks per file; the rest is summed into TRUNCATED
MAX_FRAME = 512             # characters of one frame
MAX_DEPTH = 64              # frames of one stack (the innermost are kept)
MAX_RUNS = 22              # recorded runs: why_runs (at most 10) and one more (collect.MIN_KEPT), each redone once
VERDICTS = ("kept", "lost", "cut", "disturbed")   # gate.py's words for a judged run
MAX_HZ = 1e6                # samples a second (perf's cap, perf_event_max_sample_rate, is far below)
TRUNCATED = "[truncated]"
REASONS = ("[futex]", "[io]", "[sleep]", "[other]", "[runqueue]")
PARTS = ("oncpu", "offcpu", "futex", "sched", "hotins", "c2c", "topdown", "memsource", "symbols")
FUTEX_COLUMNS = ("addr", "waits", "wait_us", "stack")
# pid: its process; parent: the tid of the thread that started it (a fork record; 0: not in the recording);
# joined: 1 when it was blocked as the last thread it started exited (it waited for them); the three absent
# in folders before 2026-12-08
THREAD_COLUMNS = ("tid", "comm", "oncpu_us", "offcpu_us", "runq_us", "voluntary", "involuntary", "migrations",
                  "pid", "parent", "joined")
HOTINS_COLUMNS = ("symbol", "dso", "offset", "samples", "instruction")
PARALLEL_COLUMNS = ("running", "seconds")
CPUS_COLUMNS = ("tid", "comm", "cpu", "seconds")
LOCK_COLUMNS = ("addr", "symbol", "wakes", "waker")
# the hardware tier's raw report texts (hardware.py writes them, why/hardware.py parses them on read)
HW_RAW = {"c2c": "c2c_report.txt", "topdown": "topdown.txt", "memsource": "mem_report.txt"}
HW_DOUBLE_CL = "c2c_double_cl.txt"  # the c2c run's recording reported again with --double-cl (c2creport.adjacent_pairs)
MAX_HW_RAW = 16 * 2 ** 20   # bytes of one such text read or kept
DOING_COLUMNS = ("tid", "samples", "stack")
OK = "ok"
NA = "not available here: "


class EvidenceError(LabError):
    """A malformed or oversized evidence file; str() is `file:line: message`."""


def path(folder, kind, run):
    ext = "folded" if kind in ("oncpu", "offcpu", "alone") else "csv"
    return os.path.join(folder, f"{kind}_r{int(run)}.{ext}")


def clean_frame(frame):
    """One frame as the format allows it: no ';', no newline, no space-only name, bounded length."""
    frame = re.sub(r"[;\n\r\t]", "_", frame).strip() or "[unknown]"
    return frame[:MAX_FRAME]


def bound_stack(frames):
    """Root first; deeper than MAX_DEPTH keeps the root (comm, reason) and the innermost frames."""
    frames = [clean_frame(f) for f in frames]
    if len(frames) > MAX_DEPTH:
        frames = frames[:1] + [TRUNCATED] + frames[-(MAX_DEPTH - 2):]
    return tuple(frames)


# --- writing -------------------------------------------------------------------------------------
def folded_text(counts):
    """{stack tuple: count} → folded text, biggest first, at most MAX_STACKS lines (the rest in one)."""
    items = sorted(((bound_stack(s), c) for s, c in counts.items() if c > 0), key=lambda x: (-x[1], x[0]))
    merged = {}
    for s, c in items:
        merged[s] = merged.get(s, 0) + c
    items = sorted(merged.items(), key=lambda x: (-x[1], x[0]))
    if len(items) > MAX_STACKS:
        rest = sum(c for _s, c in items[MAX_STACKS - 1:])
        items = items[:MAX_STACKS - 1] + [((TRUNCATED,), rest)]
    return "".join(f"{';'.join(s)} {int(round(c))}\n" for s, c in items)


def csv_text(columns, rows):
    f = io.StringIO()
    w = csv.writer(f, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([r[c] for c in columns])
    return f.getvalue()


def write_run(folder, run, oncpu=None, offcpu=None, futex=None, threads=None, hotins=None, parallel=None,
              alone=None, cpus=None, lock=None, doing=None):
    """Write what one evidence run gave; None leaves that file out (meta.json says why)."""
    if doing is not None:
        rows = sorted(doing, key=lambda r: (r["tid"], -r["samples"]))[:MAX_STACKS]
        write_atomic_text(path(folder, "doing", run), csv_text(DOING_COLUMNS, [
            dict(r, stack=";".join(bound_stack(r["stack"]))) for r in rows]))
    if cpus is not None:
        write_atomic_text(path(folder, "cpus", run), csv_text(CPUS_COLUMNS, [
            dict(r, comm=clean_frame(r["comm"]), seconds=f"{r['seconds']:.6f}") for r in cpus[:MAX_STACKS]]))
    if lock is not None:
        rows = sorted(lock, key=lambda r: (-r["wakes"], r["addr"]))[:MAX_STACKS]
        write_atomic_text(path(folder, "lock", run), csv_text(LOCK_COLUMNS, [
            dict(r, symbol=clean_frame(r["symbol"]) if r["symbol"] else "", wakes=int(round(r["wakes"])),
                 waker=";".join(bound_stack(r["waker"]))) for r in rows]))
    if parallel is not None:
        write_atomic_text(path(folder, "parallel", run), csv_text(PARALLEL_COLUMNS, [
            {"running": int(r["running"]), "seconds": f"{r['seconds']:.6f}"} for r in parallel[:MAX_STACKS]]))
    if alone is not None:
        write_atomic_text(path(folder, "alone", run), folded_text(alone))
    if oncpu is not None:
        write_atomic_text(path(folder, "oncpu", run), folded_text(oncpu))
    if offcpu is not None:
        write_atomic_text(path(folder, "offcpu", run), folded_text(offcpu))
    if futex is not None:
        rows = sorted(futex, key=lambda r: -r["wait_us"])[:MAX_STACKS]
        write_atomic_text(path(folder, "futex", run), csv_text(FUTEX_COLUMNS, [
            dict(r, stack=";".join(bound_stack(r["stack"])), wait_us=int(round(r["wait_us"]))) for r in rows]))
    if threads is not None:
        write_atomic_text(path(folder, "threads", run), csv_text(THREAD_COLUMNS, [
            dict(r, comm=clean_frame(r["comm"]),
                 **{k: int(round(r[k])) for k in ("oncpu_us", "offcpu_us", "runq_us")})
            for r in sorted(threads, key=lambda r: r["tid"])[:MAX_STACKS]]))
    if hotins is not None:
        write_atomic_text(path(folder, "hotins", run), csv_text(HOTINS_COLUMNS, [
            dict(r, symbol=clean_frame(r["symbol"]), dso=clean_frame(r["dso"]),
                 instruction=clean_frame(r["instruction"])) for r in hotins]))


def write_meta(folder, meta):
    write_atomic_text(os.path.join(folder, "meta.json"), json.dumps(dict(meta, format=FORMAT), indent=1) + "\n")


# --- reading -------------------------------------------------------------------------------------
def _text(p):
    """A file of an evidence folder, through the run folder's one reader of received files (a regular
    file inside the run, no link, FIFO or device followed, at most runfolder.LIMITS['evidence'] bytes)."""
    return read_present(p, "evidence", EvidenceError)


def read_folded(p):
    """{stack tuple: count} of a folded file."""
    out = {}
    lines = _text(p).splitlines()
    if len(lines) > MAX_STACKS:
        raise EvidenceError(f"{p}:{MAX_STACKS + 1}: more than {MAX_STACKS} stacks")
    for n, line in enumerate(lines, 1):
        stack, _, count = line.rpartition(" ")
        if not stack or not re.fullmatch(r"\d{1,15}", count):
            raise EvidenceError(f"{p}:{n}: expected `frame;frame;… COUNT`")
        frames = tuple(stack.split(";"))
        if len(frames) > MAX_DEPTH or any(len(f) > MAX_FRAME or not f for f in frames):
            raise EvidenceError(f"{p}:{n}: a stack deeper than {MAX_DEPTH} frames or a frame empty or over "
                                f"{MAX_FRAME} characters")
        out[frames] = out.get(frames, 0) + int(count)
    return out


def _header(p):
    return next(csv.reader(io.StringIO(_text(p))), None)


def _rows(p, columns, types):
    text = _text(p)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header != list(columns):
        raise EvidenceError(f"{p}:1: header must be {','.join(columns)}")
    out = []
    for n, row in enumerate(reader, 2):
        if n > MAX_STACKS + 1:
            raise EvidenceError(f"{p}:{n}: more than {MAX_STACKS} rows")
        if len(row) != len(columns):
            raise EvidenceError(f"{p}:{n}: {len(columns)} columns expected, got {len(row)}")
        d = {}
        for c, v, t in zip(columns, row, types):
            try:
                d[c] = t(v)
            except ValueError:
                raise EvidenceError(f"{p}:{n}: {c} {v[:40]!r} is not {t.__name__}") from None
        out.append(d)
    return out


def count(v):
    if not re.fullmatch(r"\d{1,15}", v):
        raise ValueError(v)
    return int(v)


def text(v):
    if len(v) > MAX_FRAME * MAX_DEPTH:
        raise ValueError(v)
    return v


def hexaddr(v):
    if not re.fullmatch(r"0x[0-9a-f]{1,16}", v):
        raise ValueError(v)
    return v


def read_futex(p):
    rows = _rows(p, FUTEX_COLUMNS, (hexaddr, count, count, text))
    for r in rows:
        r["stack"] = tuple(r["stack"].split(";")) if r["stack"] else ()
    return rows


def read_doing(p):
    rows = _rows(p, DOING_COLUMNS, (count, count, text))
    for r in rows:
        r["stack"] = tuple(r["stack"].split(";")) if r["stack"] else ()
    return rows


def read_lock(p):
    rows = _rows(p, LOCK_COLUMNS, (hexaddr, text, count, text))
    for r in rows:
        r["waker"] = tuple(r["waker"].split(";")) if r["waker"] else ()
    return rows


def read_threads(p):
    types = (count, text, count, count, count, count, count, count, count, count, count)
    if _header(p) == list(THREAD_COLUMNS[:-3]):      # an older folder's file: who started whom not known
        return [dict(r, pid=0, parent=0, joined=0) for r in _rows(p, THREAD_COLUMNS[:-3], types[:-3])]
    return _rows(p, THREAD_COLUMNS, types)


def read_hotins(p):
    return _rows(p, HOTINS_COLUMNS, (text, text, hexaddr, count, text))


def _num_list(meta, key, p, n, nullable):
    v = meta.get(key)
    if not isinstance(v, list) or len(v) != n or not all(
            (x is None and nullable) or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))
            for x in v):
        raise EvidenceError(f"{p}:1: {key} must be a list of {n} numbers")
    return v


def read_meta(folder):
    """meta.json, checked: the numbers are numbers, the statuses short strings."""
    p = os.path.join(folder, "meta.json")
    try:
        meta = json.loads(_text(p))
    except (ValueError, RecursionError):        # nested 100,000 deep: RecursionError, not a traceback
        raise EvidenceError(f"{p}:1: not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise EvidenceError(f"{p}:1: not an evidence meta.json of format {FORMAT}")
    runs = meta.get("runs")
    if not isinstance(runs, int) or isinstance(runs, bool) or not 0 <= runs <= MAX_RUNS:
        raise EvidenceError(f"{p}:1: runs must be a whole number from 0 to {MAX_RUNS}")
    if meta.get("unit") not in ("op", "run"):
        raise EvidenceError(f"{p}:1: unit must be op or run")
    for key, nullable in (("work", False), ("wall_s", False), ("value", True)):
        _num_list(meta, key, p, runs, nullable)
    if "repetitions" in meta:        # why_seconds: runs of the command per evidence run (older folders: 1)
        _num_list(meta, "repetitions", p, runs, False)
    for key in ("timed_median", "slowdown"):
        v = meta.get(key)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
            raise EvidenceError(f"{p}:1: {key} must be a number or null")
    if "runs_judged" in meta:
        _judged(meta["runs_judged"], p, runs)
    _hardware(meta.get("hardware", []), p)
    if not isinstance(meta.get("timed_suspect", ""), str) or len(meta.get("timed_suspect", "")) > 1024:
        raise EvidenceError(f"{p}:1: timed_suspect must be a short string")
    sample = meta.get("sample")     # the differential divides by hz: a KeyError, ZeroDivisionError or "0%" before
    hz = sample.get("hz") if isinstance(sample, dict) else None
    if (not isinstance(hz, (int, float)) or isinstance(hz, bool) or not math.isfinite(hz) or not 0 < hz <= MAX_HZ
            or not isinstance(sample.get("event"), str) or len(sample["event"]) > 64):
        raise EvidenceError(f"{p}:1: sample must hold event (a name) and hz (a number above 0, at most {MAX_HZ:g})")
    ev = meta.get("evidence")
    if not isinstance(ev, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(v) <= 1024
                                           for k, v in ev.items()):
        raise EvidenceError(f"{p}:1: evidence must map parts to short strings")
    return meta


def read_parallel(p):
    """{threads running: seconds} of parallel_r<N>.csv (the parallelism timeline, fold.Folder.running)."""
    return {r["running"]: r["seconds"] for r in _rows(p, PARALLEL_COLUMNS, (count, seconds))}


def read_cpus(p):
    """[{"tid", "comm", "cpu", "seconds"}] of cpus_r<N>.csv."""
    return _rows(p, CPUS_COLUMNS, (count, text, count, seconds))


def read_numa(p):
    try:
        return numamaps.read(p)
    except numamaps.NumaMapsError as e:
        raise EvidenceError(str(e)) from None


def seconds(v):
    x = float(v)
    if not (math.isfinite(x) and 0 <= x <= 1e7):
        raise ValueError(v)
    return x


def _judged(judged, p, runs):
    """runs_judged: one entry per attempt, {"of", "run" (its run files, or null when lost or cut), "tier",
    "hz", "verdict", "why", "speed"}, each recorded run judged once."""
    number = lambda v, none=False: (v is None and none) or (  # noqa: E731
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0)
    if not isinstance(judged, list) or len(judged) > 2 * MAX_RUNS:
        raise EvidenceError(f"{p}:1: runs_judged must be a list of at most {2 * MAX_RUNS} attempts")
    seen = []
    for j in judged:
        if not isinstance(j, dict) or j.get("verdict") not in VERDICTS or not isinstance(j.get("why"), str) or \
                len(j["why"]) > 1024 or not isinstance(j.get("tier"), str) or len(j["tier"]) > 64 or \
                not number(j.get("hz"), True) or not number(j.get("speed"), True) or \
                not (isinstance(j.get("of"), int) and not isinstance(j.get("of"), bool)) or \
                not (j.get("run") is None or (isinstance(j["run"], int) and not isinstance(j["run"], bool)
                                              and 1 <= j["run"] <= runs)):
            raise EvidenceError(f"{p}:1: runs_judged: each attempt needs of, run (1 to {runs} or null), tier, "
                                "hz, verdict (" + ", ".join(VERDICTS) + "), why and speed")
        if j["run"] is not None:
            seen.append(j["run"])
    if sorted(seen) != list(range(1, runs + 1)):
        raise EvidenceError(f"{p}:1: runs_judged must judge each of the {runs} recorded runs once")


def _double_cl(e):
    """A c2c entry's optional `double_cl`: {"file": HW_DOUBLE_CL or null, "why"} (absent before it existed)."""
    d = e.get("double_cl")
    return d is None or (e["kind"] == "c2c" and isinstance(d, dict) and d.get("file") in (None, HW_DOUBLE_CL)
                         and isinstance(d.get("why"), str) and len(d["why"]) <= 1024)


def _hardware(entries, p):
    """hardware: one entry per hardware-tier run (hardware.py), {"kind", "file" (HW_RAW[kind] or null),
    "verdict", "why", "speed"}, a c2c one with `double_cl` too; a file is only ever the kind's own name (a
    received name never names a path)."""
    ok = isinstance(entries, list) and len(entries) <= len(HW_RAW) and all(
        isinstance(e, dict) and e.get("kind") in HW_RAW and e.get("file") in (None, HW_RAW[e["kind"]])
        and e.get("verdict") in VERDICTS and isinstance(e.get("why"), str) and len(e["why"]) <= 1024
        and (e.get("speed") is None or (isinstance(e["speed"], (int, float)) and not isinstance(e["speed"], bool)
                                        and math.isfinite(e["speed"]) and e["speed"] > 0)) and _double_cl(e)
        for e in entries)
    if not ok or len({e["kind"] for e in entries}) != len(entries):
        raise EvidenceError(f"{p}:1: hardware must list at most one run of each of " + ", ".join(HW_RAW) +
                            " with kind, file, verdict, why and speed (c2c's double_cl: file and why)")


def read_hardware(folder, name):
    """A hardware-tier report's raw text (at most MAX_HW_RAW bytes, undecodable bytes replaced), or None."""
    p = os.path.join(folder, name)
    if name not in (*HW_RAW.values(), HW_DOUBLE_CL) or not os.path.isfile(p):
        return None
    with open(p, "rb") as f:
        return f.read(MAX_HW_RAW).decode("utf-8", "replace")


def read_run(folder, run):
    """Every file one evidence run left, as {kind: parsed} (a missing file is left out)."""
    out = {}
    for kind, reader in (("oncpu", read_folded), ("offcpu", read_folded), ("futex", read_futex),
                         ("threads", read_threads), ("hotins", read_hotins), ("alone", read_folded),
                         ("parallel", read_parallel), ("cpus", read_cpus), ("lock", read_lock),
                         ("doing", read_doing)):
        p = path(folder, kind, run)
        if os.path.exists(p):
            out[kind] = reader(p)
    if os.path.exists(numamaps.path(folder, run)):
        out["numa"] = read_numa(numamaps.path(folder, run))
    return out


def complete(folder, runs):
    """The folder holds a finished set of `runs` evidence runs (meta.json is written last), or says
    this host can record none."""
    try:
        meta = read_meta(folder)
    except EvidenceError:
        return False
    if "runs_judged" in meta:       # the gate judged every attempt: done unless it stopped early (lost)
        return len({j["of"] for j in meta["runs_judged"]}) >= runs or \
            str(meta["evidence"].get("oncpu", "")).startswith(NA)
    return meta["runs"] >= runs or str(meta["evidence"].get("oncpu", "")).startswith(NA)
