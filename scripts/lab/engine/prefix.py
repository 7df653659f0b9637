"""The argv put before a measured command: perf record, numactl, taskset. One place for each wrapper,
so the order (perf outermost, then memory, then CPUs) is decided once."""
import subprocess
from functools import lru_cache

from lab.topology.topo import cpu_list


def perf_record(raw, event):
    return ["perf", "record", "-q", "-g", "-e", event, "-o", f"{raw}/perf.data", "--"]


def numactl(membind, nodes):
    if membind == "none" or not nodes:
        return []
    flag = "--membind" if membind == "local" else "--interleave"
    return ["numactl", f"{flag}={','.join(str(n) for n in nodes)}"]


def taskset(cpus):
    return ["taskset", "-c", cpu_list(cpus)]


@lru_cache(maxsize=1)
def perf_event():
    """Hardware cycles when the PMU is there; VMs and containers often lack it: then cpu-clock."""
    try:
        p = subprocess.run(["perf", "stat", "-x,", "-e", "cycles", "true"], capture_output=True, text=True)
    except FileNotFoundError:
        return "cpu-clock"
    return "cycles" if any(line.split(",")[0].isdigit() for line in p.stderr.splitlines()) else "cpu-clock"


def wrap(point_pin, pinned, membind, point, raw, perf_by_engine):
    """argv prefix for one run of a point."""
    out = perf_record(raw, perf_event()) if perf_by_engine else []
    if pinned:   # memory policy is inherited, so it applies whoever pins the threads
        out += numactl(membind, point.nodes)
    if point_pin == "taskset" and pinned:
        out += taskset(point.cpus)
    return out
