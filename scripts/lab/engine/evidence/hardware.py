"""The hardware tier's evidence runs (issue 56 item 2; docs/design.md, "The hardware tier").

Where pmu.py *detected* a kind (c2c, topdown, memsource: "ok" from a counter that opens and counts, the
vendor, PEBS/IBS, perf's memory events and metric groups), each evidence point (the differential's fewest
threads and knee: points.py) gets one more run per kind, after its switch-recording runs and never stacked
onto them: perf c2c's and perf mem's sampling and perf stat's counting would each disturb the others and
the switch recording. Each run is the point's command inside its pinning, repeated for why_seconds as the
switch recording's runs are, under one thin command line built by pmu.py (`commands()` here: data, so it is
tested as argv), and is judged by the same validity gate (gate.judge against the point's unrecorded run):
a disturbed one is kept on disk but the read side does not use it (meta.json `hardware` says why).

The report's text is saved raw beside the run (RAW); the why layer parses it with the tested parsers
(why/c2creport.py, topdown.py, perfmem.py) when it reads the folder (why/hardware.py): a received run's
text is hostile input, and the engine (a lower layer) does not import the why layer's parsers.

Where perf c2c ran and this perf's `perf c2c report` takes --double-cl (pmu.double_cl() asks it), the same
recording is reported a second time with it (DOUBLE_CL: a report option, no second run; the dry run prices
that pass, second_reports): the engine does not parse, so whether the 64-byte report's hot lines pair up
(the rule: why/c2creport.adjacent_pairs) is decided on read, and the second text is read only then. Where
perf lacks the option the entry says so ("perf 6.1.187 lacks --double-cl"), for the words.

Where a kind is not available nothing of it runs (`wanted()` is empty: no extra run and no extra time) and
its status stays pmu.py's "not available here: <reason>". None of this has run on a host with a PMU (the
lab has had none): only the argv and the read side on recorded published text are tested.
"""
import os
import subprocess
import tempfile

from lab.core.runfolder import write_atomic_text
from lab.engine import child
from lab.engine import point as pt

from . import gate, pmu
from . import store as ev

KINDS = tuple(ev.HW_RAW)
RAW = ev.HW_RAW             # the raw texts' names, the format's (store.py checks them on read)
DOUBLE_CL = ev.HW_DOUBLE_CL
MAX_RAW = ev.MAX_HW_RAW     # bytes of a report's text kept (perf c2c's --stdio of a big run is a few MiB)
REPORT_TIMEOUT = 600        # seconds for perf c2c/mem report to read its recording
WORDS = {"c2c": "perf c2c", "topdown": "perf stat top-down", "memsource": "perf mem"}


def wanted(status):
    """The kinds this host can record, in order: those pmu.py detected ("ok"); [] on a host without a PMU."""
    return [k for k in KINDS if status.get(k) == ev.OK]


def second_reports(kinds, host):
    """The report passes the tier makes beyond each kind's own (the dry run prices them: price.py): one,
    c2c's recording reported again with --double-cl, where c2c runs and this perf takes it (run_kind)."""
    return 1 if "c2c" in kinds and host.double_cl else 0


def cpu_list(point):
    """The point's CPUs as perf's -C takes them ("0,1,4"), or None unpinned (AMD's IBS then records all)."""
    cpus = [str(c) for c in (point.cpus or [])] if point.placement != "unpinned" else []
    return ",".join(cpus) or None


def commands(kind, folder, vendor, cpus=None):
    """(the argv put before the command, the report's argv or None, the raw text's path) of one kind:
    c2c: `perf c2c record … --` then `perf c2c report --stdio` (its stdout saved raw); memsource: `perf mem
    record … --` then `perf mem report`; topdown: `perf stat --topdown | -M PipelineL1,PipelineL2 -o <raw>
    --` (perf stat writes its text itself). The recordings are removed once reported."""
    data = os.path.join(folder, f".{kind}.data")
    raw = os.path.join(folder, RAW[kind])
    if kind == "c2c":
        return pmu.c2c_record(data, [], vendor, cpus), pmu.c2c_report(data), raw
    if kind == "memsource":
        return pmu.mem_record(data, [], vendor, cpus), pmu.mem_report(data), raw
    return pmu.topdown_stat(raw, [], vendor, cpus), None, raw


def report(argv, raw, env, log):
    """Run a report command, its stdout into `raw` (at most MAX_RAW bytes: it goes to an anonymous temporary
    file first, so a huge report never sits in memory); "" or why it failed."""
    try:
        with open(log, "a") as err, tempfile.TemporaryFile() as full:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=full, stderr=err, env=env,
                               timeout=REPORT_TIMEOUT)
            full.seek(0)
            text = full.read(MAX_RAW)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{' '.join(argv[:3])}: {type(e).__name__}"
    write_atomic_text(raw, text.decode("utf-8", "replace"))
    return "" if p.returncode == 0 and text.strip() else f"{' '.join(argv[:3])} exited {p.returncode}" + \
        ("" if text.strip() else " and printed nothing")


def double_cl_report(data, folder, env, log, version, supported):
    """c2c's recording `data` reported again with --double-cl into DOUBLE_CL where perf takes it: meta.json's
    c2c `double_cl`, {"file": DOUBLE_CL or None, "why": "" or why there is none}."""
    if not supported:
        return {"file": None, "why": f"perf {version or '(its version unknown)'} lacks --double-cl"[:1000]}
    failed = report(pmu.c2c_report(data, double_cl=True), os.path.join(folder, DOUBLE_CL), env, log)
    return {"file": None, "why": f"its --double-cl report failed: {failed}"[:1000]} if failed else \
        {"file": DOUBLE_CL, "why": ""}


def run_kind(ctx, spec, point, folder, kind, vendor, seconds, judge, repeat):
    """One run of `kind` at the point: {"kind", "file", "verdict", "why", "speed"} for meta.json's
    `hardware`, and the kind's status ("ok" or "not available here: …"). judge(out, wall, reps) → the
    gate's (verdict, why, speed) (collect.py's rule, which owns the reference); repeat: collect.py's
    (repeat_prefix, repetitions), the why_seconds loop its own runs use (passed in: collect imports this)."""
    repeat_prefix, repetitions = repeat
    before, after, raw = commands(kind, folder, vendor, cpu_list(point))
    counted = os.path.join(folder, f".repeats_{kind}")
    rawdir = os.path.join(folder, f"raw_{kind}")
    os.makedirs(rawdir, exist_ok=True)
    # perf record is the loop's parent for c2c and mem (its bytes bound the loop); perf stat writes little
    inner = before + repeat_prefix(seconds, counted, kind != "topdown")
    argv, env, _w, _c, _v = pt.command_line(ctx, spec, point, 0, rawdir, inner=inner)
    out, err = os.path.join(folder, f"stdout_{kind}.txt"), os.path.join(folder, f"stderr_{kind}.log")
    entry = {"kind": kind, "file": None, "verdict": gate.LOST, "why": "", "speed": None}
    try:
        rc, usage, note = child.run(argv, env, ctx.root, out, err, float(spec["timeout"]), ctx.track,
                                    child.OUTPUT_CAP)
        # a repeated command's wall from the loop's own clock, as the switch runs' (perf's start-up left out)
        n, looped = repetitions(counted, elapsed=True) if seconds > 0 else (1, None)
        if rc != 0 or usage is None or not n:
            entry["why"] = f"exited {rc}" + (f" ({note})" if note else "") + f": {pt.tail(err)}"
        else:
            if after:
                failed = report(after, raw, env, err)
                if kind == "c2c" and not failed:
                    host = pmu.host()
                    entry["double_cl"] = double_cl_report(os.path.join(folder, ".c2c.data"), folder, env, err,
                                                          host.perf_version, bool(second_reports([kind], host)))
            else:
                failed = "" if os.path.exists(raw) and os.path.getsize(raw) else "perf stat wrote no text"
            if failed:
                entry["why"] = failed
            else:
                entry["verdict"], entry["why"], speed = judge(out, looped or usage.wall_s, n)
                entry.update(file=RAW[kind], speed=round(speed, 4) if speed else None)
    except OSError as e:
        entry["why"] = f"{type(e).__name__}: {e}"[:300]
    finally:
        for p in (os.path.join(folder, f".{kind}.data"), counted):
            if os.path.exists(p):
                os.remove(p)
    entry["why"] = entry["why"][:1000]       # the format's bound on a reason (store.py)
    status = ev.OK if entry["file"] else ev.NA + f"the {WORDS[kind]} run failed: {entry['why']}"[:900]
    return entry, status


def runs(ctx, spec, point, folder, status, seconds, judge, repeat, scope="tree", vendor=None):
    """Every kind this host can record, one run each: ({kind: status}, [meta.json `hardware` entries]).
    Nothing runs for a kind that is not "ok" (pmu.py's reason stays its status), nor for a spec whose
    measured program is its `server` (collect.scope): these command lines record the command's own tree."""
    kinds = wanted(status)
    if not kinds:
        return {}, []
    if scope != "tree":
        return {k: ev.NA + "the hardware tier records the command's own tree, and this spec's measured program "
                "is its server (not recorded by the tier yet)" for k in kinds}, []
    vendor = vendor or pmu.host().vendor
    out, entries = {}, []
    for kind in kinds:
        entry, out[kind] = run_kind(ctx, spec, point, folder, kind, vendor, seconds, judge, repeat)
        entries.append(entry)
    return out, entries
