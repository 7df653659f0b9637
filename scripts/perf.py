#!/usr/bin/env python3
"""Summarise RAW/perf.data: the top symbols (RAW/perf-top.txt) and derived metrics as tidy rows.

  perf.py RAW [N]      prints metric,value,unit rows on stdout

mutex_cpu_share is the share of samples in lock slow paths: glibc's futex waits and wakes
(__lll_lock_wait, __lll_unlock_wake, the rwlock and mutex "full" paths), the kernel's futex code,
and user-space spin loops (symbols named *spin*): what the twemcache study summed as "mutex
functions". Kernel spinlocks are left out (only kernel futex code counts): _raw_spin_unlock_irqrestore
is where most wake-ups and interrupts end, so counting it would call a lock-free server "locky".
"""
import os
import re
import subprocess
import sys

LOCKY = re.compile(r"lll_lock_wait|lll_unlock_wake|futex|mutex_lock_full|mutex_lock_slow|"
                   r"rwlock_(rd|wr)lock_full|spin", re.I)
KERNEL_LOCKY = re.compile(r"futex", re.I)
ATOMIC = re.compile(r"atomic|arc.*(clone|drop)|refcount|fetch_add|fetch_sub", re.I)
LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.+?)(\s+-\s+-)?\s*$")


def symbols(raw):
    out = subprocess.run(["perf", "report", "-i", f"{raw}/perf.data", "--stdio", "--no-children",
                          "-g", "none", "--sort", "dso,symbol", "-q"],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(4), m.group(3) == "k"))
    return rows


def main(argv):
    raw, n = argv[0], int(argv[1]) if len(argv) > 1 else 10
    rows = symbols(raw)
    if not rows:
        print("perf: no samples in perf.data", file=sys.stderr)
        return 1
    with open(f"{raw}/perf-top.txt", "w") as f:
        event = os.environ.get("LAB_PERF_EVENT") or "unknown"
        note = " (no hardware counters on this host: time-based sampling)" if event == "cpu-clock" else ""
        f.write(f"# perf record -g -e {event}{note}; self time per symbol\n")
        f.write(f"{'pct':>7}  {'dso':<28} symbol\n")
        for pct, dso, sym, _kernel in rows[:n]:
            f.write(f"{pct:6.2f}%  {dso[:28]:<28} {sym}\n")
    mutex = sum(p for p, _, s, k in rows if (KERNEL_LOCKY if k else LOCKY).search(s))
    atomic = sum(p for p, _, s, k in rows if not k and ATOMIC.search(s))
    print("metric,value,unit")
    print(f"mutex_cpu_share,{mutex:.2f},%")
    print(f"atomic_cpu_share,{atomic:.2f},%")
    print(f"top_symbol_share,{rows[0][0]:.2f},%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
