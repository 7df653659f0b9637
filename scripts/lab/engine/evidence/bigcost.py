"""What one evidence run costs at a big host's thread counts (issue 53, item 6): per thread count, the
recording's size, perf script + fold's time and peak memory, for a command given with `{threads}`.
Used to write docs/measured.md ("why=1: recording size, analysis time and memory by thread count"); it
measures, so run it alone:

    flock /tmp/lab-bench.lock python3 -m lab.engine.evidence.bigcost --threads 1 2 64 -- \
        tests/fixtures/why/build/lock {threads}

Each count: one counting calibration (perf stat) and the full tier's plan from it (collect.plan), as an
evidence run's; the command once under that perf record; then the recording folded in a child process
(its peak RSS and perf script's, from getrusage). Prints one JSON line per count."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from lab.engine import hostprep, prefix
from lab.engine.evidence import collect

FOLD = ("import json, os, resource, sys, time\n"
        "from lab.engine.evidence import collect\n"
        "t = time.monotonic()\n"
        "f, why = collect.script(sys.argv[1], dict(os.environ), os.devnull)\n"
        "rows = f.lock_rows(collect.lock_name(f)) if f else []\n"
        "print(json.dumps({'fold_s': time.monotonic() - t, 'why': why, 'threads_seen': len(f.threads) if f else 0,"
        " 'stacks': len(f.oncpu) + len(f.offcpu) if f else 0, 'locks': len(rows),"
        " 'fold_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,"
        " 'perf_script_rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))\n")


def one(cmd, threads, tmp, status, event):
    argv = [w.replace("{threads}", str(threads)) for w in cmd]
    how, wall = collect.counted(argv, os.path.join(tmp, "stat.csv"), None)
    data = os.path.join(tmp, "perf.data")
    t0 = time.monotonic()
    subprocess.run(collect.record_prefix(data, event, status, how=how) + argv, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    recorded = time.monotonic() - t0
    size = os.path.getsize(data)
    p = subprocess.run([sys.executable, "-c", FOLD, data], capture_output=True, text=True, check=True)
    os.remove(data)
    return dict({"threads": threads, "unrecorded_s": round(wall, 3), "recorded_s": round(recorded, 3),
                 "bytes": size, "plan": how}, **json.loads(p.stdout))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", nargs="+", type=int, required=True)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args(argv)
    hostprep.prepare()
    event = prefix.perf_event()
    status = collect.availability(event)
    with tempfile.TemporaryDirectory() as tmp:
        for t in a.threads:
            print(json.dumps(one(a.cmd, t, tmp, status, event)), flush=True)


if __name__ == "__main__":
    main()
