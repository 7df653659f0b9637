"""What `perf=1` adds to a point: the top symbols of raw/perf.data (raw/perf-top.txt) and the derived
metrics, whose names (METRICS) the report imports from here.

mutex_cpu_share is the share of samples in lock slow paths: glibc's futex waits and wakes
(__lll_lock_wait, __lll_unlock_wake, the rwlock and mutex "full" paths), the kernel's futex code,
and user-space spin loops (symbols named *spin*): what the twemcache study summed as "mutex
functions". Kernel spinlocks are left out (only kernel futex code counts): _raw_spin_unlock_irqrestore
is where most wake-ups and interrupts end, so counting it would call a lock-free server "locky".
"""
import re
import subprocess

from lab.errors import LabError

MUTEX, ATOMIC_SHARE, TOP = "mutex_cpu_share", "atomic_cpu_share", "top_symbol_share"
METRICS = (MUTEX, ATOMIC_SHARE, TOP)
LOCKY = re.compile(r"lll_lock_wait|lll_unlock_wake|futex|mutex_lock_full|mutex_lock_slow|"
                   r"rwlock_(rd|wr)lock_full|spin", re.I)
KERNEL_LOCKY = re.compile(r"futex", re.I)
ATOMIC = re.compile(r"atomic|arc.*(clone|drop)|refcount|fetch_add|fetch_sub", re.I)
LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.+?)(\s+-\s+-)?\s*$")


REPORT_TIMEOUT = 600        # seconds for perf report to read one point's perf.data


class PerfError(LabError):
    """perf report failed or found no samples; str() is one line."""


def summarise(raw, event, env=None, n=10):
    """Write raw/perf-top.txt (the first n symbols) and return the derived rows as tidy CSV text; the
    engine calls it in process (no program's output is parsed), cli/perf.py is a shim over it."""
    from lab.core.runfolder import write_atomic_text
    rows = symbols(raw, env)
    if not rows:
        raise PerfError("perf: no samples in perf.data")
    write_atomic_text(f"{raw}/perf-top.txt", top_table(rows, n, event or "unknown"))
    return metrics(rows)


def symbols(raw, env=None):
    """[(pct, dso, symbol, is_kernel)] of raw/perf.data, self time, most first."""
    try:
        p = subprocess.run(["perf", "report", "-i", f"{raw}/perf.data", "--stdio", "--no-children",
                            "-g", "none", "--sort", "dso,symbol", "-q"],
                           capture_output=True, text=True, errors="replace", env=env, timeout=REPORT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PerfError(f"perf report: {e}") from None
    if p.returncode != 0:
        raise PerfError(f"perf report exited {p.returncode}: {' '.join(p.stderr.split())[-300:]}")
    out = p.stdout
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(4), m.group(3) == "k"))
    return rows


def top_table(rows, n, event):
    """perf-top.txt's text: the first n symbols."""
    note = " (no hardware counters on this host: time-based sampling)" if event == "cpu-clock" else ""
    lines = [f"# perf record -g -e {event}{note}; self time per symbol", f"{'pct':>7}  {'dso':<28} symbol"]
    lines += [f"{pct:6.2f}%  {dso[:28]:<28} {sym}" for pct, dso, sym, _kernel in rows[:n]]
    return "\n".join(lines) + "\n"


def metrics(rows):
    """The derived rows as tidy CSV text (metric,value,unit)."""
    mutex = sum(p for p, _, s, k in rows if (KERNEL_LOCKY if k else LOCKY).search(s))
    atomic = sum(p for p, _, s, k in rows if not k and ATOMIC.search(s))
    vals = {MUTEX: mutex, ATOMIC_SHARE: atomic, TOP: rows[0][0]}
    return "metric,value,unit\n" + "".join(f"{m},{vals[m]:.2f},%\n" for m in METRICS)
