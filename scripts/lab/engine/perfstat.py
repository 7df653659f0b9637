"""perf=stat: hardware and software counters of every measured repeat, where the host lets perf count them.

`perf stat` wraps the command (outermost, as perf record does) and writes `{raw}/perf-stat.csv`; each
counted event becomes a row `perf_<event>` (unit `count`). A VM without a virtual PMU counts no hardware
event ("<not supported>"): the sweep's journal says which at the start (event `perf_stat`), and the
report repeats it. perf itself is then part of the measured tree: its own few MiB can be the largest
process that max_rss_kib reports for a tiny command.
"""
import os
import subprocess
from functools import lru_cache

EVENTS = ("cycles", "instructions", "cache-references", "cache-misses", "LLC-load-misses", "context-switches",
          "cpu-migrations")
OUT = "perf-stat.csv"


def counting(out, events):
    """perf stat counting `events` into file `out` (-x,: one CSV line an event), as a command's prefix."""
    return ["perf", "stat", "-x,", "-o", out, "-e", ",".join(events), "--"]


def counts(text):
    """{event: count} of `perf stat -x,` output: the events perf counted (<not supported> ones left out)."""
    out = {}
    for line in text.splitlines():
        f = line.strip().split(",")
        if len(f) >= 3 and f[0].replace(".", "", 1).isdigit():
            out[f[2]] = float(f[0])
    return out


def prefix(raw):
    return counting(os.path.join(raw, OUT), EVENTS)


def parse(text):
    """(rows, [events perf could not count]) of `perf stat -x,` output."""
    rows, missing = [], []
    for line in text.splitlines():
        parts = line.split(",")
        if line.startswith("#") or len(parts) < 3 or parts[2] not in EVENTS:
            continue
        value, event = parts[0], parts[2]
        try:
            rows.append({"metric": "perf_" + event.replace("-", "_"), "value": f"{float(value):.10g}",
                         "unit": "count"})
        except ValueError:                   # <not supported>, <not counted>
            missing.append(event)
    return rows, missing


def read(raw):
    try:
        with open(os.path.join(raw, OUT)) as f:
            return parse(f.read())
    except OSError:
        return [], list(EVENTS)


@lru_cache(maxsize=1)
def probe():
    """(events counted here, events not): what this host's PMU and permissions allow."""
    try:
        p = subprocess.run(["perf", "stat", "-x,", "-e", ",".join(EVENTS), "--", "true"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return [], list(EVENTS)
    rows, missing = parse(p.stderr)
    counted = [e for e in EVENTS if e not in missing and "perf_" + e.replace("-", "_") in {r["metric"] for r in rows}]
    return counted, [e for e in EVENTS if e not in counted]
