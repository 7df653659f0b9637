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
measured program left in the caches, while the core chain read 68-100% (median 99%).

A spec's `server` (guard.py) is the measurement's own load, and it does not stop when the command does:
the lab's Cassandra is still busy on the point's CPUs when the probe runs after the window. Each probe
therefore asks for the server side's share of each probed CPU over the probe's run (every process the
`server` key names, summed; `--watch PID` per process: every thread's run time in ns, charged to the
CPU the thread last ran on; clock ticks, guard.py's unit, are too coarse for a probe of some 15 ms): a
server that took a fraction f of a CPU's time explains a chain
slowed to (1 - f) of its baseline, so the probe's times are judged net of it, time × (1 - f). What that
share does not explain (a burner beside the server, a hypervisor neighbour) is still lost capacity. Two
approximations: the share is over the probe's threads' whole life (their buffer set-up included, beside
the chain), and a thread that moved between CPUs during the probe is charged to the one it was on last.
A share above SHARE_CAP leaves too little of the probe's own run to judge by: no more is explained. The
share can only raise what is judged: a repeat's before/after change is the smaller of the measured and
the net one, and its capacity the net one (never below what was measured).

Both probes of a repeat come from one probe process (Session, `--serve`): the second starts no process
and opens only the server's threads that are new (c-probes/README.md, measured)."""
import contextlib
import csv
import io
import os
import selectors
import subprocess
import time

from lab.errors import LabError
from lab.topology.topo import cpu_list

PROBE = os.path.join("c-probes", "build", "capacity")
BASELINE_RUNS = 3
TIMEOUT = 20          # seconds: the probe takes milliseconds; this bounds a stuck one
KINDS = ("core", "memory")
SHARE_CAP = 0.9      # the largest share of a probed CPU a server may explain
METRICS = (("capacity_core_pct", "%"), ("capacity_memory_pct", "%"),
           ("capacity_core_change_pct", "%"), ("capacity_memory_change_pct", "%"),
           ("capacity_server_share_pct", "%"))


class ProbeError(LabError):
    pass


def build(root, log_path, probe=PROBE):
    """Build a c-probes program the engine runs (the probe, or child.py's launcher) when it is missing;
    returns "" or why it cannot be had."""
    if os.access(os.path.join(root, probe), os.X_OK):
        return ""
    with open(log_path, "a") as log:
        p = subprocess.run(["make", "-s", "-C", os.path.join(root, "c-probes"), os.path.relpath(probe, "c-probes")],
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    return "" if p.returncode == 0 else f"building {probe} failed (exit {p.returncode}): see sweep/setup.log"


def argv(root, cpus, servers=()):
    return [os.path.join(root, PROBE), "--cpus", cpu_list(cpus)] + [w for pid in servers for w in ("--watch", str(pid))]


def parse(text, cpus, watched):
    """The probe's CSV block as {cpu: {"core": ns, "memory": ns[, "server": share]}}; ProbeError when it
    is not one line per CPU asked for."""
    out = {}
    try:
        for r in csv.DictReader(io.StringIO(text)):
            out[int(r["cpu"])] = {"core": float(r["core_ns"]), "memory": float(r["memory_ns"]),
                                  **({"server": float(r["watched_share"])} if watched else {})}
    except (KeyError, ValueError, TypeError) as e:
        raise ProbeError(f"capacity probe printed something unexpected: {e}")
    if set(out) != set(cpus) or any(d[k] <= 0 for d in out.values() for k in KINDS):
        raise ProbeError("capacity probe did not report every CPU asked for")
    return out


def probe(root, cpus, servers=()):
    """{cpu: {"core": ns, "memory": ns}} measured now on `cpus`; ProbeError when the probe fails. With
    `servers` (PIDs) also "server": the share of each CPU those processes took while the probe ran."""
    try:
        p = subprocess.run(argv(root, cpus, servers), capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProbeError(f"capacity probe: {e}")
    if p.returncode != 0:
        raise ProbeError(f"capacity probe exited {p.returncode}: {p.stderr.strip()[:200]}")
    return parse(p.stdout, cpus, bool(servers))


class Session:
    """The probes around one repeat from one probe process (`--serve`, a line "probe" each): the probe
    after the window starts no process and opens only the server's threads that are new (its buffers are
    freed while the command runs), which per repeat cost more than the watch itself (c-probes/README.md,
    "capacity"). It sleeps on
    its input in between. `seconds`: its whole cost, start and end included."""

    def __init__(self, root, cpus, servers=()):
        self.cpus, self.watched, self.seconds = list(cpus), bool(servers), 0.0
        t0 = time.monotonic()
        try:
            self.p = subprocess.Popen(argv(root, cpus, servers) + ["--serve"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise ProbeError(f"capacity probe: {e}")
        finally:
            self.seconds += time.monotonic() - t0

    def probe(self):
        """The next reading (as probe()); ProbeError, the process ended, when it fails."""
        t0 = time.monotonic()
        try:
            return parse(self._block(t0 + TIMEOUT), self.cpus, self.watched)
        except ProbeError:
            self.close()
            raise
        finally:
            self.seconds += time.monotonic() - t0

    def _block(self, deadline):
        """Asks for a probe and reads its header and a line per CPU, bounded by the deadline."""
        want, buf = 1 + len(self.cpus), b""
        try:
            self.p.stdin.write(b"probe\n")
            self.p.stdin.flush()
            with selectors.DefaultSelector() as sel:
                sel.register(self.p.stdout, selectors.EVENT_READ)
                while buf.count(b"\n") < want:
                    left = deadline - time.monotonic()
                    if left <= 0 or not sel.select(left):
                        raise ProbeError(f"capacity probe: no reading in {TIMEOUT} s")
                    chunk = os.read(self.p.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
        except OSError as e:      # it ended: a broken pipe
            buf = b""
            why = str(e)
        else:
            why = ""
        if buf.count(b"\n") < want:
            self.p.kill()
            err = self.p.stderr.read().decode(errors="replace").strip()[:200]
            raise ProbeError(f"capacity probe exited {self.p.wait()}: {err or why}")
        return buf.decode(errors="replace")

    def close(self):
        """End of input: the probe exits (killed if it does not within TIMEOUT)."""
        t0 = time.monotonic()
        with contextlib.suppress(OSError):
            self.p.stdin.close()
        try:
            self.p.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        for f in (self.p.stdout, self.p.stderr):
            f.close()
        self.seconds += time.monotonic() - t0


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


def pct(base, before, after, kind):
    """% of the baseline, worst CPU and side; a CPU faster than its baseline reads above 100."""
    return min(100 * base[c][kind] / side[c][kind] for side in (before, after) for c in before)


def change(before, after, kind):
    """The largest difference between before and after on a CPU, in % of the slower."""
    return max(100 * abs(after[c][kind] - before[c][kind]) / max(after[c][kind], before[c][kind]) for c in before)


class Reading:
    """Before and after probes of one repeat, judged against the baseline."""

    def __init__(self, base, before, after, seconds):
        self.seconds = seconds            # both probes: the guard's cost for this repeat
        self.pct, self.change = {}, {}
        # None when the spec names no server (or it was not running); else its largest share, in %
        self.server_pct = max((100 * side[c]["server"] for side in (before, after) for c in side
                               if "server" in side[c]), default=None)
        # What the probe measured, worst CPU and side, before the server's share is taken out (journal).
        self.measured = {k: pct(base, before, after, k) for k in KINDS}
        # The time each chain would have taken without the server's share of its CPU: what is judged.
        net_before, net_after = ({c: {k: d[k] * (1 - min(d.get("server", 0.0), SHARE_CAP)) for k in KINDS}
                                  for c, d in side.items()} for side in (before, after))
        for k in KINDS:
            self.pct[k] = pct(base, net_before, net_after, k)
            # The server's share may explain a difference between before and after (idle before, busy
            # after); it must not make one where the probe's times did not differ: the smaller counts.
            self.change[k] = min(change(before, after, k), change(net_before, net_after, k))

    def loss(self, kind):
        return max(100 - self.pct[kind], self.change[kind])

    def disturbed(self, limits):
        """limits {kind: %}: a loss at 100% or more of the limit of 100 never judges (the memory walk's default)."""
        net = f" beyond the server's {self.server_pct:.0f}%" if self.server_pct and self.server_pct >= 0.5 else ""
        return "; ".join(f"capacity −{self.loss(k):.0f}% ({k}){net}" for k in KINDS
                         if limits[k] < 100 and self.loss(k) > limits[k])

    def rows(self):
        vals = (self.pct["core"], self.pct["memory"], self.change["core"], self.change["memory"], self.server_pct)
        return [{"metric": m, "value": f"{v:.4g}", "unit": u} for (m, u), v in zip(METRICS, vals) if v is not None]

    def as_dict(self):
        return {"core_pct": round(self.pct["core"], 1), "memory_pct": round(self.pct["memory"], 1),
                "core_change_pct": round(self.change["core"], 1),
                "memory_change_pct": round(self.change["memory"], 1), "probe_ms": round(self.seconds * 1000, 1),
                **({} if self.server_pct is None else {"server_share_pct": round(self.server_pct, 1),
                                                       "core_measured_pct": round(self.measured["core"], 1)})}
