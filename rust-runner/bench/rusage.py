#!/usr/bin/env python3
"""rusage.py [--server PID] LOG CMD [ARG...]: runs CMD (no shell; its output goes to LOG) and prints one
line: `cpu_s max_rss_kb wall_s steal_pct foreign_pct status` - the child's own user+system CPU and peak
RSS from wait4(2), so that every tool is measured the same way whatever it reports about itself, plus the
host's noise over the run, as shares of the host's CPU time (/proc/stat): stolen by the hypervisor, and
used by processes other than the child and the server PID (the benchmark's Cassandra), which is what
would slow one side of a comparison and not the other."""
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def host_ticks():
    """(busy, steal, total) clock ticks of the whole host so far; busy is processes' time only."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:]]
    t += [0] * (8 - len(t))
    # user nice system idle iowait irq softirq steal (guest time is already in user and nice). irq and
    # softirq are left out of busy, as in the lab's guard: the loopback traffic to the server is the
    # benchmark's own and is charged to no process.
    return t[0] + t[1] + t[2], t[7], sum(t[:8])


def process_ticks(pid):
    """User+system ticks of a process (all its threads), 0 when it is gone or not given."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


def main(argv):
    server = None
    if argv[:1] == ["--server"]:
        if len(argv) < 2 or not argv[1].isdigit():
            print("rusage.py: --server needs a PID", file=sys.stderr)
            return 2
        server, argv = int(argv[1]), argv[2:]
    if len(argv) < 2:
        print("usage: rusage.py [--server PID] LOG CMD [ARG...]", file=sys.stderr)
        return 2
    log, cmd = argv[0], argv[1:]
    busy0, steal0, total0 = host_ticks()
    server0 = process_ticks(server)
    t0 = time.monotonic()
    with open(log, "ab") as out:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        _, status, ru = os.wait4(child.pid, 0)
    wall = time.monotonic() - t0
    busy1, steal1, total1 = host_ticks()
    server1 = process_ticks(server)
    total = max(1, total1 - total0)
    cpu = ru.ru_utime + ru.ru_stime
    # /proc/stat counts in ticks and the child's rusage in microseconds: a share under one tick is noise.
    foreign = max(0.0, (busy1 - busy0) - cpu * HZ - (server1 - server0))
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped by wait4 above
    print(f"{cpu:.3f} {ru.ru_maxrss} {wall:.2f} {100.0 * (steal1 - steal0) / total:.1f} "
          f"{100.0 * foreign / total:.1f} {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
