"""The capacity probe: what the point's CPUs deliver just before and just after a repeat, against what
they delivered at the start of the sweep.

CPU accounting (guard.py) sees other processes in this guest; it cannot see the hypervisor's other
tenants beyond steal, nor a neighbour thrashing the shared cache or memory bandwidth from other CPUs.
A fixed workload timed by the wall clock sees both: c-probes/build/capacity runs a dependent
multiply-add chain (core) and a dependent random chase through 4 × L2 (memory) on each CPU given,
a few milliseconds each, and prints ns per step. The probe is C, not Python: an interpreted loop's time
is the interpreter's, its jitter larger than the effects sought, and ten times longer to run.

The baseline is taken once per sweep on every CPU of the host, the best of BASELINE_RUNS runs per CPU.
A repeat's capacity is baseline / probe time, in %, for its worst CPU and the worse of before and
after; its loss is 100 - that, or the before/after difference when larger. A core loss above the spec's
`max_capacity_loss` makes the repeat disturbed: "capacity -N% (core)". The memory walk is recorded but
judges only under `max_memory_capacity_loss` < 100: on this project's VM, on a quiet host, it read
10-104% of its baseline (median 32%, 49 repeats of bench-probes) because its time depends on what the
measured program left in the caches, while the core chain read 68-100% (median 99%)."""
import csv
import io
import os
import subprocess
import time

from topo import cpu_list

PROBE = os.path.join("c-probes", "build", "capacity")
BASELINE_RUNS = 3
TIMEOUT = 20          # seconds: the probe takes milliseconds; this bounds a stuck one
KINDS = ("core", "memory")
METRICS = (("capacity_core_pct", "%"), ("capacity_memory_pct", "%"),
           ("capacity_core_change_pct", "%"), ("capacity_memory_change_pct", "%"))


class ProbeError(Exception):
    pass


def build(root, log_path):
    """Build the probe when it is missing; returns "" or why it cannot be had."""
    if os.access(os.path.join(root, PROBE), os.X_OK):
        return ""
    with open(log_path, "a") as log:
        p = subprocess.run(["make", "-s", "-C", os.path.join(root, "c-probes"), "build/capacity"],
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    return "" if p.returncode == 0 else f"building {PROBE} failed (exit {p.returncode}): see sweep/setup.log"


def probe(root, cpus):
    """{cpu: {"core": ns, "memory": ns}} measured now on `cpus`; ProbeError when the probe fails."""
    try:
        p = subprocess.run([os.path.join(root, PROBE), "--cpus", cpu_list(cpus)], capture_output=True,
                           text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProbeError(f"capacity probe: {e}")
    if p.returncode != 0:
        raise ProbeError(f"capacity probe exited {p.returncode}: {p.stderr.strip()[:200]}")
    out = {}
    try:
        for r in csv.DictReader(io.StringIO(p.stdout)):
            out[int(r["cpu"])] = {"core": float(r["core_ns"]), "memory": float(r["memory_ns"])}
    except (KeyError, ValueError, TypeError) as e:
        raise ProbeError(f"capacity probe printed something unexpected: {e}")
    if set(out) != set(cpus) or any(v <= 0 for d in out.values() for v in d.values()):
        raise ProbeError("capacity probe did not report every CPU asked for")
    return out


def baseline(root, cpus, runs=BASELINE_RUNS):
    """The host's best per CPU over `runs` probes: (baseline, seconds taken)."""
    t0 = time.monotonic()
    best = {}
    for _ in range(runs):
        for cpu, d in probe(root, cpus).items():
            b = best.setdefault(cpu, dict(d))
            for k in KINDS:
                b[k] = min(b[k], d[k])
    return best, time.monotonic() - t0


class Reading:
    """Before and after probes of one repeat, judged against the baseline."""

    def __init__(self, base, before, after, seconds):
        self.seconds = seconds            # both probes: the guard's cost for this repeat
        self.pct, self.change = {}, {}
        for k in KINDS:
            # % of the baseline, worst CPU and side; a CPU faster than its baseline reads above 100
            self.pct[k] = min(100 * base[c][k] / side[c][k] for side in (before, after) for c in before)
            self.change[k] = max(100 * abs(after[c][k] - before[c][k]) / max(after[c][k], before[c][k])
                                 for c in before)

    def loss(self, kind):
        return max(100 - self.pct[kind], self.change[kind])

    def disturbed(self, limits):
        """limits {kind: %}: a loss at 100% or more of the limit of 100 never judges (the memory walk's default)."""
        return "; ".join(f"capacity −{self.loss(k):.0f}% ({k})" for k in KINDS
                         if limits[k] < 100 and self.loss(k) > limits[k])

    def rows(self):
        vals = (self.pct["core"], self.pct["memory"], self.change["core"], self.change["memory"])
        return [{"metric": m, "value": f"{v:.4g}", "unit": u} for (m, u), v in zip(METRICS, vals)]

    def as_dict(self):
        return {"core_pct": round(self.pct["core"], 1), "memory_pct": round(self.pct["memory"], 1),
                "core_change_pct": round(self.change["core"], 1),
                "memory_change_pct": round(self.change["memory"], 1), "probe_ms": round(self.seconds * 1000, 1)}
