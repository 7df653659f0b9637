#!/usr/bin/env python3
"""How far a run folder's sweep is, as one JSON line: its state, whether its engine is alive, repeats
done, failed, suspect and re-measured, experiments finished, and the point measured last. fleet-sweep
runs it on each host between polls and before restarting a sweep (Ansible only reads it; the engine's
own timing is untouched).

  progress.py RUN
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine.journal import JournalError, read  # noqa: E402


def engine_alive(sweep):
    """Whether the sweep that wrote its pid into sweep/lock still runs. Read, never locked: taking the
    lock, even briefly, could make a sweep starting at that moment give up."""
    try:
        with open(os.path.join(sweep, "lock")) as f:
            pid = int(f.read().split()[0])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"sweep.py" in f.read()
    except (OSError, ValueError, IndexError):
        return False


def summary(run):
    sweep = os.path.join(run, "sweep")
    try:
        with open(os.path.join(sweep, "state")) as f:
            state = f.read().strip()
    except OSError:
        state = "not started"
    try:
        events = read(os.path.join(sweep, "journal.jsonl"))
    except JournalError as e:
        return {"state": state, "alive": engine_alive(sweep), "error": str(e)}
    count = {}
    last = ""
    for ev in events:
        count[ev["event"]] = count.get(ev["event"], 0) + 1
        if ev["event"] == "started":
            last = (f"{ev.get('experiment', '?')} {ev.get('variant') or '-'} {ev.get('placement', '?')} "
                    f"threads={ev.get('threads', '?')} repeat={ev.get('repeat', '?')}")
    return {"state": state, "alive": engine_alive(sweep), "done": count.get("done", 0), "failed": count.get("failed", 0),
            "suspect": count.get("suspect", 0), "remeasured": count.get("remeasured", 0),
            "experiments_done": count.get("experiment_done", 0), "sweeps": count.get("sweep", 0),
            "last": last, "ts": events[-1]["ts"] if events else ""}


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(json.dumps(summary(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
