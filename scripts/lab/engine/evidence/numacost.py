"""What sampling numa_maps costs the program an evidence run records (docs/measured.md, "why=1: reading
numa_maps"): `python3 -m lab.engine.evidence.numacost --rounds N --interval S -- CMD…` runs CMD
unrecorded and with the numa_maps sampler beside it, in shuffled order each round, and prints per round
its work done unrecorded and sampled (tests/fixtures/why/remote.c's `passes=`, a program of set duration;
else 1 / wall time), the slowdown (unrecorded ÷ sampled) and what the sampler read (reads, bytes,
milliseconds). `--read-cost MIB…`: one numa_maps read of a process holding MIB MiB it wrote, and one
listing of the processes below this one, each timed READS times (median, range). Run it under
`flock /tmp/lab-bench.lock`."""
import argparse
import random
import re
import statistics
import subprocess
import time

from . import numamaps


def once(cmd, sample, interval):
    s = numamaps.Sampler(interval=interval) if sample else None
    t = time.monotonic()
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    finally:
        wall = time.monotonic() - t
        if s:
            s.stop()
    passes = re.search(r"passes=(\d+)", out)
    return (int(passes.group(1)) if passes else 1 / wall), s


READS = 10


def read_cost(mibs):
    print("resident_mib,numa_maps_ms_median,numa_maps_ms_range,bytes,listing_ms_median")
    for mib in mibs:
        held = subprocess.Popen(["python3", "-c", f"import sys, time; b = bytearray({mib} << 20); "
                                 "print(1, flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
        try:
            held.stdout.readline()             # its buffer is written: resident
            reads, lists, size = [], [], 0
            for _ in range(READS):
                t = time.monotonic()
                got = numamaps.read_live(held.pid)
                reads.append((time.monotonic() - t) * 1000)
                size = got[2]
                t = time.monotonic()
                numamaps.descendants(numamaps.os.getpid())
                lists.append((time.monotonic() - t) * 1000)
        finally:
            held.kill()
            held.wait()
        print(f"{mib},{statistics.median(reads):.2f},{min(reads):.2f}-{max(reads):.2f},{size},"
              f"{statistics.median(lists):.2f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--interval", type=float, default=numamaps.INTERVAL)
    ap.add_argument("--read-cost", nargs="+", type=int, metavar="MIB")
    ap.add_argument("cmd", nargs="*")
    a = ap.parse_args(argv)
    if a.read_cost:
        return read_cost(a.read_cost)
    rng = random.Random(56)
    ratios = []
    print("round,plain_work,sampled_work,slowdown,samples,reads,read_kb,read_ms,ms_per_sample")
    for r in range(1, a.rounds + 1):
        got = {}
        for sample in rng.sample([False, True], 2):
            got[sample] = once(a.cmd, sample, a.interval)
        (plain, _), (sampled, s) = got[False], got[True]
        ratios.append(plain / sampled)
        print(f"{r},{plain:.4g},{sampled:.4g},{plain / sampled:.3f},{s.samples},{s.reads},{s.read_bytes // 1024},"
              f"{s.read_s * 1000:.1f},{s.read_s * 1000 / max(1, s.samples):.2f}", flush=True)
    print(f"median slowdown {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})"
          f" over {a.rounds} rounds")


if __name__ == "__main__":
    main()
