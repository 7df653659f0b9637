"""What one evidence run costs in wall time against the run it records (issue 53, item 5: the dry run's
price of why=1, lab/engine/price.py's WHY_RUN_*). Used to write docs/measured.md ("why=1: what an evidence
run costs, by phase"); it measures, so run it alone:

    flock /tmp/lab-bench.lock python3 -m lab.engine.evidence.runcost --rounds 3 \\
        --case lock1=2:tests/fixtures/why/build/lock,1 --case hash2=0:perf,bench,futex,hash,-r,6,-t,2

A case is NAME=SECONDS:ARGV (ARGV's words split at commas): SECONDS > 0 repeats the command for that long
(why_seconds' loop, collect.repeat_prefix), 0 runs it once (a command of set duration). Each round runs
every case in a shuffled order, and each case as a point's evidence does: the command unrecorded (its
own run), the counting calibration (collect.calibrate's perf stat, the loop for at most CALIBRATE_S),
one recorded run at the full tier planned from it (collect.plan, stopping at RECORD_BUDGET), then the
analysis (collect.evidence_run: perf script, fold, disassembly, the files written). Prints one JSON line
per case and round: each phase's wall seconds, the recorded loop's own seconds, the recording's bytes,
the on-CPU samples folded, and the host's load average before and after."""
import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time

from lab.engine import hostprep, perfstat, prefix
from lab.engine.evidence import collect
from lab.engine.evidence import store as ev


def timed_run(argv):
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t0


def one(name, seconds, argv, tmp, status, event):
    load0 = os.getloadavg()[0]
    reps = os.path.join(tmp, "reps")
    loop = (lambda s, budget: collect.repeat_prefix(s, reps, budget)) if seconds > 0 else (lambda s, b: [])
    plain = timed_run(loop(seconds, False) + argv)
    # the calibration, as collect.calibrate counts it
    stat = os.path.join(tmp, "stat.csv")
    events = [t for t, _s in collect.TRACEPOINTS] if status["offcpu"] == ev.OK else []
    cal = timed_run(perfstat.counting(stat, events + ["task-clock"]) + loop(min(seconds, collect.CALIBRATE_S), False)
                    + argv)
    n, looped = collect.repetitions(reps, elapsed=True) if seconds > 0 else (1, None)
    wall = looped or cal
    with open(stat) as f:
        counts = perfstat.counts(f.read())
    how = collect.plan(collect.TIERS[0], {t: counts.get(t, 0.0) / wall for t in events},
                       counts.get("task-clock", 0.0) / 1000 / wall, seconds or wall, collect.RECORD_BUDGET)
    data = os.path.join(tmp, "perf.data")
    recorded = timed_run(collect.record_prefix(data, event, status, how=how) + loop(seconds, True) + argv)
    n, span = collect.repetitions(reps, elapsed=True) if seconds > 0 else (1, None)
    size = os.path.getsize(data)
    folder = os.path.join(tmp, "ev")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    t0 = time.monotonic()
    collect.evidence_run(folder, 1, data, dict(os.environ), os.path.join(tmp, "log"), status)
    analysis = time.monotonic() - t0
    samples = sum(ev.read_folded(ev.path(folder, "oncpu", 1)).values()) \
        if os.path.exists(ev.path(folder, "oncpu", 1)) else 0
    os.remove(data)
    return {"case": name, "why_seconds": seconds, "plain_s": round(plain, 3), "calibration_s": round(cal, 3),
            "record_s": round(recorded, 3), "loop_s": round(span, 3) if span else None, "repetitions": n,
            "analysis_s": round(analysis, 3), "bytes": size, "samples": samples, "hz": how["hz"],
            "periods": how["periods"], "load": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def case(text):
    name, rest = text.split("=", 1)
    seconds, words = rest.split(":", 1)
    return name, float(seconds), words.split(",")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", type=case, action="append", required=True)
    a = ap.parse_args(argv)
    hostprep.prepare()
    event = prefix.perf_event()
    status = collect.availability(event)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(a.case)
            random.shuffle(order)
            for name, seconds, words in order:
                print(json.dumps(dict(one(name, seconds, words, tmp, status, event), round=r + 1)), flush=True)


if __name__ == "__main__":
    main()
