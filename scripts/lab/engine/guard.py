"""The interference guard: what else happened on a point's CPUs while it was measured.

Read around every measured run:
- /proc/stat per CPU: steal (the hypervisor ran someone else) and busy time (user + nice + system);
- getrusage(RUSAGE_CHILDREN): CPU time and involuntary context switches of the measured process tree
  (every descendant the command waited for, servers and load generators included);
- the CPU frequency from cpufreq, where the host exposes it.
And from the instrument itself, where it reports one: `corun_pct`, the share of the run during which
all its threads were running (c-probes/corun.h). A hypervisor that runs two vCPUs one after the other
leaves no trace in the guest's /proc/stat, but a "contention" run whose threads never overlapped
measured none.

foreign = busy time on the point's CPUs that the measured tree did not use, nor the engine itself while
it measured (its threads copy an `exec` command's output from pipes: the measurement's own work). irq and
softirq time is
left out of busy: loopback traffic is the measurement's own, and the kernel does not charge it to the
process. A lower bound, then: it catches a competing process, not interrupt storms.

neighbour = the same on the host's other CPUs (those outside the point's span): a process there does not
take the point's CPUs, but it shares their L3 and memory bandwidth, which no tick of the point's CPUs
shows and the capacity probe's memory walk cannot tell from the cache state the measured program left
(capacity.py). Busy time there, less the engine's own and any of the measured tree's that did not fit
on its span, as a share of those CPUs' time (their mean: a lone neighbour on a large host is diluted).

A spec's `server` (pidfiles, globs allowed) names the processes the command talks to without having
started them, such as the lab's Cassandra, or with `nodes` set `nodes_server`'s, such as every node of a local
cluster (`.work/cluster/node*/cassandra.pid`; lab/engine/point.py server_pidfiles chooses):
their CPU time counts as the measured tree's, and the CPUs they may run on join the ones watched, so that
a competing process is still seen while the server side's own work is not mistaken for one.
"""
import glob
import itertools
import os
import resource
import time
from dataclasses import dataclass

from lab.topology.topo import cpu_ranges

from . import capacity, cgroup

HZ = os.sysconf("SC_CLK_TCK")
METRICS = (("noise_steal_pct", "%"), ("noise_foreign_pct", "%"), ("noise_invol_cs", "1/s"), ("cpu_mhz", "MHz"),
           ("noise_forced_cs", "1/s"), ("noise_neighbour_pct", "%"))
# Rows an instrument reports about its own run: conditions of the measurement, not results.
INSTRUMENT_METRICS = ("corun_pct",)
NOISE_METRICS = tuple(m for m, _u in METRICS + capacity.METRICS) + INSTRUMENT_METRICS


def corun_short(rows, limit):
    """Why the instrument's threads did not run together enough, or "" when they did (or it does not say).
    Worded for any thread count: the command's threads need not be the point's `threads`."""
    vals = [float(r["value"]) for r in rows if r.get("metric") == "corun_pct"]
    if vals and min(vals) < limit:
        return f"all threads running {min(vals):.0f}% of the run < {limit:g}%"
    return ""


def cpu_ticks():
    """{cpu: (busy, steal, total, irq + softirq)} in clock ticks since boot."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *vals = line.split()
                v = [int(x) for x in vals[:8]] + [0] * (8 - len(vals[:8]))
                user, nice, system, idle, iowait, irq, softirq, steal = v
                out[int(name[3:])] = (user + nice + system, steal, sum(v), irq + softirq)
    return out


def context_switches():
    """Context switches on every CPU since boot (/proc/stat `ctxt`), None where it is not shown."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return None


def mhz(cpus):
    vals = []
    for c in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq") as f:
                vals.append(int(f.read()) / 1000)
        except (OSError, ValueError):
            return None
    return sum(vals) / len(vals) if vals else None


@dataclass
class Reading:
    steal_pct: float
    foreign_pct: float
    invol_cs: float
    mhz: object          # None where cpufreq is absent (most VMs)
    seconds: float
    forced_cs: float = 0.0  # the share of invol_cs that other processes forced (Window.stop)
    servers: int = 0        # processes of the spec's `server` counted as the measurement's own
    neighbour_pct: object = None  # busy share of the other CPUs (None when the span is every CPU)
    neighbours: str = ""          # those CPUs, as a list ("1", "2-127")
    strayed: str = ""             # where the pinned tree ran outside its CPUs, in words ("" when it did not)
    outside_s: float = 0.0        # the measured tree's CPU seconds that its span cannot hold

    def rows(self):
        vals = (self.steal_pct, self.foreign_pct, self.invol_cs, self.mhz, self.forced_cs, self.neighbour_pct)
        return [{"metric": m, "value": f"{v:.4g}", "unit": u} for (m, u), v in zip(METRICS, vals) if v is not None]

    def disturbed(self, limits):
        """Why this run cannot be trusted, or "" when it can."""
        why = []
        if self.steal_pct > limits["max_steal"]:
            why.append(f"steal {self.steal_pct:.0f}% > {limits['max_steal']:g}%")
        if self.foreign_pct > limits["max_foreign"]:
            why.append(f"foreign {self.foreign_pct:.0f}% > {limits['max_foreign']:g}%")
        if self.forced_cs > limits["max_invol_cs"]:
            why.append(f"involuntary switches forced by other processes {self.forced_cs:.0f}/s "
                       f"> {limits['max_invol_cs']:g}/s")
        if self.neighbour_pct is not None and self.neighbour_pct > limits["max_neighbour"]:
            where = f"CPU {self.neighbours}" if self.neighbours.isdigit() else f"CPUs {self.neighbours}"
            why.append(f"neighbour {self.neighbour_pct:.0f}% on {where} > {limits['max_neighbour']:g}%")
        if self.strayed:
            why.append(self.strayed)
        return "; ".join(why)

    def as_dict(self):
        return {"steal_pct": round(self.steal_pct, 2), "foreign_pct": round(self.foreign_pct, 2),
                "invol_cs": round(self.invol_cs, 1), "forced_cs": round(self.forced_cs, 1), "mhz": self.mhz,
                **({"servers": self.servers} if self.servers else {}),
                **({"outside_s": round(self.outside_s, 3)} if self.outside_s else {}),
                **({} if self.neighbour_pct is None else {"neighbour_pct": round(self.neighbour_pct, 2)})}


MOST_SERVERS = 64       # processes a `server` may name (the pidfiles its globs match, in name order)
MOST_PATHS = 256        # paths one `server` word's glob may look at, per repeat: a received run's
                        # override such as `*/*/*/*` must not walk the whole project each time


def server_pids(root, pidfiles):
    """The running processes whose PIDs a spec's `server` pidfiles (words, each a path or a glob from the
    project root; lab/engine/spec.py checks them) hold, each once; a missing, stale or unreadable pidfile
    names none."""
    pids = []
    for word in (pidfiles or "").split():
        for path in sorted(itertools.islice(glob.iglob(os.path.join(root, word)), MOST_PATHS)):
            try:
                with open(path) as f:
                    pid = int(f.read(64).split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if pid > 0 and pid not in pids and os.path.exists(f"/proc/{pid}") and len(pids) < MOST_SERVERS:
                pids.append(pid)
    return pids


def process_ticks(pid):
    """User + system clock ticks of a process, all its threads; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime and stime, fields 14 and 15 of proc(5)
    except (OSError, IndexError, ValueError):
        return None


# Where the measured tree ran. Exactly, from the sweep's cgroup v1 cpuacct group where there is one
# (lab/engine/cgroup.py): the scheduler's own sum of the tree's time on each CPU. Without it, the per-CPU counts of
# /proc/stat, read anyway: the tree's CPU time that the span's busy and interrupt time cannot hold ran
# elsewhere; a lower bound, since a competing process on the span hides as much. Not sampling each
# thread's last CPU (/proc/<pid>/task/<tid>/stat field 39): a /proc walk on the measured host that still
# misses a thread which left and came back, or lived between two samples. The wrappers before the pinning
# (the cgroup's shell, the launcher, perf) run anywhere for a moment, hence the margins.
STRAY_S = 0.05           # CPU seconds outside the span that are never a finding
STRAY_SHARE = 0.1        # nor less than this share of the tree's CPU time


def strayed(away, tree_s, fence, span):
    """Why a pinned tree ran outside its span, or "": `away` {cpu: CPU seconds} outside the span (the
    CPUs named are the busiest that hold it), `fence` the placement's name."""
    outside = sum(away.values())
    if outside <= max(STRAY_S, STRAY_SHARE * tree_s):
        return ""
    where, held = [], 0.0
    for cpu, secs in sorted(away.items(), key=lambda kv: (-kv[1], kv[0])):
        if held >= outside or secs <= 0:
            break
        where.append(cpu)
        held += secs
    on = f" on CPU {where[0]}" if len(where) == 1 else f" on CPUs {cpu_ranges(sorted(where))}" if where else ""
    return f"ran {outside:.2g} s{on}, outside {fence}'s {{{cpu_ranges(span)}}}"


class Window:
    """Start before the command, stop after it: steal over `cpus`, foreign over `span` (the CPUs the
    measured tree may use, and the server side's). With `fence` (the placement's name, when the tree is
    pinned to its span) the tree's CPU time outside the span is a disturbance; `group` is the sweep's
    control groups, which hold the measured tree (lab/engine/cgroup.py)."""

    def __init__(self, cpus, span, servers=(), fence=None, groups=()):
        self.fence, self.groups = fence, groups
        self.group0 = cgroup.usage(groups) if fence else None
        self.servers0 = {}
        for pid in servers:
            ticks = process_ticks(pid)
            if ticks is not None:
                self.servers0[pid] = ticks
                try:
                    span = set(span) | os.sched_getaffinity(pid)
                except OSError:
                    pass
        self.cpus, self.span = list(cpus), sorted(set(span))
        self.t0 = time.monotonic()
        self.ticks0 = cpu_ticks()
        self.ctxt0 = context_switches()
        self.ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.self0 = resource.getrusage(resource.RUSAGE_SELF)

    def stop(self):
        group1 = cgroup.usage(self.groups) if self.group0 else None
        ticks1, ctxt1, ru1 = cpu_ticks(), context_switches(), resource.getrusage(resource.RUSAGE_CHILDREN)
        self1 = resource.getrusage(resource.RUSAGE_SELF)
        seconds = time.monotonic() - self.t0

        def delta(cpus, i):
            return sum(ticks1[c][i] - self.ticks0[c][i] for c in cpus if c in ticks1 and c in self.ticks0)

        total = delta(self.cpus, 2)
        steal = delta(self.cpus, 1) / total * 100 if total > 0 else 0.0
        tree = (ru1.ru_utime - self.ru0.ru_utime + ru1.ru_stime - self.ru0.ru_stime) * HZ
        engine = (self1.ru_utime - self.self0.ru_utime + self1.ru_stime - self.self0.ru_stime) * HZ
        servers = 0
        for pid, before in self.servers0.items():
            after = process_ticks(pid)      # None: it ended meanwhile, and its last ticks are not known
            if after is not None:
                tree += after - before
                servers += 1
        span_total = delta(self.span, 2) - delta(self.span, 1)
        busy = delta(self.span, 0)
        foreign_ticks = max(0.0, busy - tree - engine)
        foreign = foreign_ticks / span_total * 100 if span_total > 0 else 0.0
        others = sorted(set(ticks1) & set(self.ticks0) - set(self.span))
        neighbour, stray, outside_s = None, "", 0.0
        # The measured tree's time that cannot have been on its span (a task's system time holds the
        # interrupt ticks that /proc/stat counts apart).
        outside = max(0.0, tree - busy - delta(self.span, 3))
        if others:
            others_total = delta(others, 2) - delta(others, 1)
            busy_others = max(0.0, delta(others, 0) - engine - outside)
            neighbour = min(100.0, busy_others / others_total * 100) if others_total > 0 else 0.0
            ns = [b - a for a, b in zip(self.group0, group1)] if group1 and len(group1) == len(self.group0) else []
            # Only the scheduler's own record says where the tree ran: /proc/stat's ticks against the tree's
            # rusage flagged 0.2 s "outside" for a taskset-pinned run in the simulated hosts (emulated
            # guests: ticks and rusage disagree), so without a cpuacct group nothing is said.
            if sum(ns) > 0:
                away = {c: ns[c] / 1e9 for c in others if c < len(ns)}
                stray, outside_s = strayed(away, sum(ns) / 1e9, self.fence, self.span), sum(away.values())
        invol = (ru1.ru_nivcsw - self.ru0.ru_nivcsw) / seconds if seconds > 0 else 0.0
        # A preempted measured thread gave the CPU to whoever ran next: its own sibling (a server and its
        # load generator sharing CPUs: the point's design) or another process. Each preemption is
        # attributed in proportion to the CPU time those others took on the span, so only switches
        # forced from outside count against the limit, and a quiet span forces none whatever the design.
        forced = invol * foreign_ticks / busy if busy > 0 else 0.0
        if self.ctxt0 is not None and ctxt1 is not None and seconds > 0:
            # And never more than the switches nobody measured made anywhere (a task that took the CPU
            # from a measured thread leaves it again, one switch each; the idle task's count too): on a
            # busy span other processes run long slices, so their share of the time overstates their
            # share of the switches.
            own = sum(ru1[i] - self.ru0[i] + self1[i] - self.self0[i] for i in (14, 15))  # nvcsw, nivcsw
            forced = min(forced, max(0.0, ctxt1 - self.ctxt0 - own) / seconds)
        return Reading(steal, min(foreign, 100.0), invol, mhz(self.cpus), seconds, forced, servers, neighbour,
                       cpu_ranges(others), stray, outside_s)
