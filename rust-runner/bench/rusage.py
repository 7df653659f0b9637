#!/usr/bin/env python3
"""rusage.py LOG CMD [ARG...]: runs CMD (no shell; its output goes to LOG) and prints one line:
`cpu_s max_rss_kb wall_s steal_pct load1 status` - the child's own user+system CPU and peak RSS from
wait4(2), so that every tool is measured the same way whatever it reports about itself, plus the host's
noise over the run: the share of CPU time stolen by the hypervisor (/proc/stat) and the 1-minute load."""
import os
import subprocess
import sys
import time


def cpu_ticks():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    steal = fields[7] if len(fields) > 7 else 0
    # guest time is already counted in user/nice: total is the first eight fields
    return steal, sum(fields[:8])


def main():
    if len(sys.argv) < 3:
        print("usage: rusage.py LOG CMD [ARG...]", file=sys.stderr)
        return 2
    log, cmd = sys.argv[1], sys.argv[2:]
    load1 = os.getloadavg()[0]
    steal0, total0 = cpu_ticks()
    t0 = time.monotonic()
    with open(log, "ab") as out:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        _, status, ru = os.wait4(child.pid, 0)
    wall = time.monotonic() - t0
    steal1, total1 = cpu_ticks()
    steal_pct = 100.0 * (steal1 - steal0) / max(1, total1 - total0)
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped by wait4 above
    print(f"{ru.ru_utime + ru.ru_stime:.3f} {ru.ru_maxrss} {wall:.2f} {steal_pct:.1f} {load1:.2f} {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
