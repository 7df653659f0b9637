"""What this host gives why=1's evidence, one owner: where the kernel's tracepoints are mounted, and the
perf settings that cut evidence for a user who is not root. The lab prepares the one thing it may
(mounting tracefs, as root, where the kernel has it: nothing on the host changes meaning) and never
changes a setting (perf_event_paranoid, kptr_restrict, perf_event_mlock_kb): it names the value that
would give the evidence instead (docs/design.md, "Why it stops scaling: evidence").
"""
import os
import subprocess

TRACING = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
MOUNT = ["mount", "-t", "tracefs", "nodev", TRACING[0]]
MOUNT_LINE = "mount -t tracefs nodev /sys/kernel/tracing"
SETTINGS = ("perf_event_paranoid", "kptr_restrict", "perf_event_mlock_kb")


def read_int(path, default=None):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return default


def setting(name):
    return read_int(f"/proc/sys/kernel/{name}")


def tracing_dir():
    """The mounted tracefs with the scheduler's events, or None."""
    return next((d for d in TRACING if os.path.isdir(d + "/events/sched")), None)


def kernel_has(fs):
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1:] == [fs] for line in f)
    except OSError:
        return False


def mounted(fs):
    """[mount point] of filesystem type `fs` (from /proc/self/mounts)."""
    try:
        with open("/proc/self/mounts") as f:
            return [p[1] for p in (line.split() for line in f) if len(p) > 2 and p[2] == fs]
    except OSError:
        return []


def root():
    return os.geteuid() == 0


def tracefs_problem():
    """None when the tracepoints are there, else why not and what would give them (one line)."""
    if tracing_dir():
        return None
    if not kernel_has("tracefs"):
        return "the kernel has no tracefs (its tracepoints are not built in): no command here gives them"
    return (f"the kernel's tracepoints (tracefs) are not mounted: as root, `{MOUNT_LINE}` "
            "(./lab and the just recipes that measure do it when run as root)")


def cuts():
    """[(setting, value, what it cuts, what would give it)] for the settings that cut evidence here."""
    out = []
    paranoid = setting("perf_event_paranoid")
    if not root() and paranoid is not None:
        if paranoid > 2:
            out.append(("perf_event_paranoid", paranoid, "every recording (on-CPU stacks too)",
                        "2 or lower (`sysctl kernel.perf_event_paranoid=2`), or run as root"))
        elif paranoid > -1:
            out.append(("perf_event_paranoid", paranoid, "the scheduler and futex tracepoints (off-CPU, futex waits)"
                        + ("; kernel frames of on-CPU stacks" if paranoid > 1 else ""),
                        "-1 (`sysctl kernel.perf_event_paranoid=-1`), or run as root"))
    kptr = setting("kptr_restrict")
    if kptr is not None and (kptr >= 2 or (kptr == 1 and not root())):
        out.append(("kptr_restrict", kptr, "the names of kernel frames (shown as addresses)",
                    "0 (`sysctl kernel.kptr_restrict=0`)" + ("" if kptr >= 2 else ", or run as root")))
    mlock = setting("perf_event_mlock_kb")
    if not root() and mlock is not None and mlock < 16384:
        out.append(("perf_event_mlock_kb", mlock, "events at high rates (perf may lock only this much ring buffer)",
                    "16384 (`sysctl kernel.perf_event_mlock_kb=16384`), or run as root"))
    return out


def prepare():
    """Mount tracefs where the kernel has it, it is not mounted and we are root; [line] to say either way
    (empty when there is nothing to say)."""
    lines = []
    if tracing_dir() is None and kernel_has("tracefs"):
        if root():
            try:
                p = subprocess.run(MOUNT, capture_output=True, text=True, timeout=30)
                ok = p.returncode == 0 and tracing_dir() is not None
                err = (p.stderr or "").strip().splitlines()[-1:] or [f"exit {p.returncode}"]
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, err = False, [str(e)]
            lines.append(f"mounted tracefs at {TRACING[0]} (why=1's scheduler and futex evidence needs it)" if ok
                         else f"could not mount tracefs at {TRACING[0]} ({err[0][:200]}): why=1 records on-CPU "
                              "stacks only")
        else:
            lines.append(f"why=1's off-CPU and futex evidence needs the kernel's tracepoints: `sudo {MOUNT_LINE}` "
                         "(only why=1 needs it)")
    elif tracing_dir() is None:
        lines.append("this kernel has no tracefs: why=1 records on-CPU stacks only")
    for name, value, what, fix in cuts():
        lines.append(f"{name} is {value}: why=1 loses {what}; {fix} gives it (the lab never changes it)")
    return lines


def record():
    """The facts env/tracing.txt keeps, `key=value` a line: a received run that lacks evidence says why."""
    facts = [("tracefs", ",".join(mounted("tracefs"))
              or ("not mounted" if kernel_has("tracefs") else "not in this kernel")),
             ("debugfs", ",".join(mounted("debugfs"))
              or ("not mounted" if kernel_has("debugfs") else "not in this kernel")),
             ("tracepoints", tracing_dir() or "none"), ("euid", os.geteuid())]
    facts += [(n, setting(n) if setting(n) is not None else "unreadable") for n in SETTINGS]
    facts += [(f"cuts {n}", f"{what}; {fix}") for n, _v, what, fix in cuts()]
    return "".join(f"{k}={v}\n" for k, v in facts)
