#!/usr/bin/env python3
"""How far a run folder's sweep is, as one JSON line: its state, whether its engine is alive, repeats
done, failed, suspect and re-measured, experiments finished, the point measured last, and the repeats
still to run with their ETA in seconds as the engine counted them from the dry run's price when it
started that point (`left`, `eta_s` of the last `started` event; null before any). fleet-sweep
runs it on each host between polls and before restarting a sweep (Ansible only reads it; the engine's
own timing is untouched).

  progress.py RUN
"""
import json
import sys

from lab.core.runfolder import RunFolder
from lab.engine.journal import JournalError, read
from lab.errors import program, run

# The programs that run the engine in their own process (lab/engine/api.py's callers): a pid in sweep/lock
# running one of them is the sweep's engine, any other is a pid reused since.
ENGINE_PROGRAMS = (b"lab.cli.sweep", b"lab.cli.scale", b"lab.cli.archive", b"lab.cli.bench_lab", b"lab.cli.bench_scale")


def engine_alive(rf):
    """Whether the sweep that wrote its pid into sweep/lock still runs. Read, never locked: taking the
    lock, even briefly, could make a sweep starting at that moment give up."""
    try:
        pid = int(rf.read("sweep/lock").split()[0])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
        return any(w.endswith(ENGINE_PROGRAMS) for w in words)
    except (OSError, ValueError, IndexError):
        return False


def progress(run):
    """What fleet-sweep polls: the run's state, whether its engine lives, event counts, the last point started."""
    rf = RunFolder(run)
    state = rf.state() or "not started"
    try:
        events = read(rf.journal_path)
    except JournalError as e:
        return {"state": state, "alive": engine_alive(rf), "error": str(e)}
    count = {}
    last, left, eta = "", None, None
    for ev in events:
        count[ev["event"]] = count.get(ev["event"], 0) + 1
        if ev["event"] == "started":
            last = (f"{ev.get('experiment', '?')} {ev.get('variant') or '-'} {ev.get('placement', '?')} "
                    f"threads={ev.get('threads', '?')} repeat={ev.get('repeat', '?')}")
            left, eta = ev.get("left"), ev.get("eta_s")
    return {"state": state, "alive": engine_alive(rf), "done": count.get("done", 0), "failed": count.get("failed", 0),
            "suspect": count.get("suspect", 0), "remeasured": count.get("remeasured", 0),
            "experiments_done": count.get("experiment_done", 0), "sweeps": count.get("sweep", 0),
            "last": last, "left": left, "eta_s": eta, "ts": events[-1]["ts"] if events else ""}


@program("progress")
def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(json.dumps(progress(argv[0])))
    return 0


if __name__ == "__main__":
    run(main)
