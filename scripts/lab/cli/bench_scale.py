#!/usr/bin/env python3
"""Benchmark of `./lab scale` itself: the engine's 1-thread wall time of one real command beside
hyperfine's, interleaved in one session, with the host's noise and the engine's own overhead per repeat.

  bench_scale.py [rounds=5] [runs=3] [lines=400000] [keep=DIR]

Each round measures `sort --parallel=1` of a fixed generated file `runs` times with the lab (a sweep of an
exec spec, unpinned, 1 thread, repeats growing by `runs` each round in one run folder) and `runs` times
with `hyperfine -N` (no shell either), alternating which goes first. Prints both medians with their 95%
CIs (scripts/lab/core/stats.py), their ratio's range, steal and load over the session, the lab's guard readings,
and the journal's overhead_ms (the engine's time per repeat outside the command). Goal: the same median
within the noise, overhead <= 50 ms per repeat.
"""
import contextlib
import io
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from lab.core.rules import quotient_range
from lab.core.runfolder import RunFolder
from lab.core.stats import summary
from lab.core.tidy import read
from lab.engine import api
from lab.engine import journal as jr
from lab.errors import LabError, program, run
from lab.report import front

LIMITS = {"rounds": 50, "runs": 20, "lines": 5_000_000}


def stat_cpu():
    """(steal, total) clock ticks of all CPUs since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[7], sum(v)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def ci_text(s, unit="s"):
    lo, hi = s.ci_lo, s.ci_hi
    return f"median {s.median:.4f} {unit} (95% CI {lo:.4f}–{hi:.4f}, n={s.n}, min {s.min:.4f}, max {s.max:.4f})"


@program("bench-scale: error")
def main(argv):
    opts = {"rounds": "5", "runs": "3", "lines": "400000", "keep": ""}
    for a in argv:
        k, sep, v = a.partition("=")
        if not sep or k not in opts:
            raise LabError(f"unknown argument {a!r} (rounds=N runs=N lines=N keep=DIR)")
        opts[k] = v
    for k, most in LIMITS.items():
        if not opts[k].isdigit() or not 0 < int(opts[k]) <= most:
            raise LabError(f"{k} must be a whole number from 1 to {most}, not {opts[k]!r}")
    rounds, runs, lines = (int(opts[k]) for k in ("rounds", "runs", "lines"))
    if not shutil.which("hyperfine"):
        raise LabError("hyperfine is not on PATH (./lab installs it; the Nix shell has it)")
    work = opts["keep"] or tempfile.mkdtemp(prefix="lab-bench-scale-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "input.txt")
    rnd = random.Random(23)           # the same file every time: the command's work is fixed
    with open(data, "w") as f:
        for _ in range(lines):
            f.write("".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(24)) + "\n")
    words = ["sort", "--parallel=1", "-S", "256M", data, "-o", "/dev/null"]
    spec = os.path.join(work, "bench-scale.spec")

    def write_spec(repeats):
        # the repeats in the spec, not as an override: an override is part of the run's signature, and a
        # run is resumed only with its own arguments
        with open(spec, "w") as f:
            f.write(f"experiment = bench-scale\nexec = {json.dumps(words)}\nplacements = unpinned\nthreads = 1\n"
                    f"warmup = 0\nretries = 0\nrepeats = {repeats}\nchart = scaling wall_s\n")
    run = os.path.join(work, "run")
    hyper = []
    steal0, total0 = stat_cpu()
    load0 = loadavg()
    t0 = time.monotonic()
    for rnd_i in range(1, rounds + 1):
        def lab():
            said = io.StringIO()            # the engine's progress and journal lines, kept for the error only
            write_spec(rnd_i * runs)
            try:
                with contextlib.redirect_stderr(said):
                    outcome, _run = front.after_sweep(api.run(api.request([f"run={run}", spec]), out=said, quiet=True),
                                                      out=said, quiet=True)
            except api.EngineError as e:
                raise LabError(f"the lab's sweep refused to run: {e}; the checkout must not change during the "
                               "benchmark (a run is resumed only by the same code)") from None
            if outcome.code not in (0, 1):      # 1: a repeat failed, the others still count
                raise LabError(f"the lab's sweep stopped (exit {outcome.code}): "
                               f"{said.getvalue().strip().splitlines()[-1:]}")

        def hf():
            out = os.path.join(work, f"hyperfine-{rnd_i}.json")
            subprocess.run(["hyperfine", "-N", "--runs", str(runs), "--warmup", "0", "--export-json", out,
                            shlex.join(words)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(out) as f:
                hyper.extend(json.load(f)["results"][0]["times"])
        for step in ((lab, hf) if rnd_i % 2 else (hf, lab)):
            step()
        print(f"bench-scale: round {rnd_i}/{rounds} done", file=sys.stderr)
    secs = time.monotonic() - t0
    steal1, total1 = stat_cpu()
    rf = RunFolder(run)
    rows = read(rf.data_csv("bench-scale"))
    labs = [float(r["value"]) for r in rows if r["metric"] == "wall_s"]
    foreign = [float(r["value"]) for r in rows if r["metric"] == "noise_foreign_pct"]
    events = jr.read(rf.journal_path)
    over = [e["overhead_ms"] for e in events if e["event"] == "done"]
    a, b = summary(labs), summary(hyper)
    lo, hi = quotient_range(a, b)
    same = "yes" if lo <= 1 <= hi else "no"
    print(f"command: {shlex.join(words)} ({lines} lines; {rounds} rounds x {runs} runs each, interleaved)")
    print(f"lab (engine wall_s, unpinned, 1 thread): {ci_text(a)}")
    print(f"hyperfine -N:                            {ci_text(b)}")
    print(f"lab / hyperfine: x{a.median / b.median:.3f} (95% range x{lo:.3f}–x{hi:.3f}); "
          f"the same within the noise: {same}")
    print(f"engine overhead per repeat (journal overhead_ms): median {summary(over).median:.1f} ms, "
          f"max {max(over):.1f} ms, n={len(over)}")
    print(f"noise: session {secs:.0f} s, steal {100 * (steal1 - steal0) / max(total1 - total0, 1):.2f}% of all CPU "
          f"time, load average {load0} → {loadavg()}, the guard's foreign load per lab repeat median "
          f"{summary(foreign).median:.0f}% (max {max(foreign):.0f}%)")
    print(f"raw: {work}" if opts["keep"] else "")
    if not opts["keep"]:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    run(main)
