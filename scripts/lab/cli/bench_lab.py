#!/usr/bin/env python3
"""Benchmark of the lab itself: can it repeat its own numbers, and what does its engine cost?

  bench_lab.py [KEY=VALUE…]     (default: the cache experiment, default profile, placements=compact)
  bench_lab.py --summary RUN_A RUN_B     the same summary of two runs made before

Runs the same sweep twice, back to back, into two run folders, then prints: the largest ratio between
the two runs' medians over points neither run flagged (a suspect repeat, or not confident; goal ≤ 1.15),
whether every point whose two runs differ by more than that was flagged in at least one run (the lab
knew it was unsure), how many repeats were measured again or kept as suspect and why, the noise the guard saw,
and the engine's own time per
point (the journal's overhead_ms: planning, bookkeeping and guard reads, not the measured command).
"""
import collections
import os
import sys

from lab.core.runfolder import RunFolder, hostname, results_dir, run_name, stamp_now
from lab.core.stats import median
from lab.core.term import visible
from lab.core.tidy import read
from lab.engine import api
from lab.engine import journal as jr
from lab.engine.guard import NOISE_METRICS
from lab.engine.spec import spec_charts
from lab.errors import program, run
from lab.report import front

SPEC = "experiments/cache-get.spec"


GOAL = 1.15


def medians(run, exp):
    """{(variant, placement, threads, cpus, metric): median} over every repeat, and the set of points
    that had a suspect repeat."""
    vals, suspect = collections.defaultdict(list), set()
    for r in read(RunFolder(run).data_csv(exp)):
        k = (r["variant"], r["placement"], r["threads"], r["cpus"], r["metric"])
        if r["suspect"]:
            suspect.add(k[:4])
        if r["metric"] not in NOISE_METRICS:
            vals[k].append(float(r["value"]))
    return {k: median(v) for k, v in vals.items()}, suspect


def unsure(events, exp):
    """The points of `exp` whose last confidence event says not confident, keyed like medians()."""
    last = {}
    for e in events:
        if e["event"] == "confidence" and e["experiment"] == exp:
            last[(e["variant"] or "", e["placement"], str(e["threads"]), e["cpus"])] = e["confident"]
    return {k for k, ok in last.items() if not ok}


@program("bench-lab")
def main(argv):
    args = ["placements=compact"] + argv
    specs = [a for a in args if a.endswith(".spec")] or [SPEC]
    args = [a for a in args if not a.endswith(".spec")]
    stamp = stamp_now()
    runs = [os.path.join(results_dir(), run_name(stamp, hostname(), f"bench-lab-{i}")) for i in (1, 2)]
    if len(argv) == 3 and argv[0] == "--summary":   # summarise two existing runs again
        return summarise(argv[1:], [], [])
    for dest in runs:
        print(f"bench-lab: sweep into {dest}", file=sys.stderr)
        try:
            outcome, _run = front.after_sweep(api.run(api.request([f"run={dest}", *args, *specs])))
        except api.EngineError as e:
            print(f"bench-lab: error: {visible(str(e))}", file=sys.stderr)
            return 2
        for line in outcome.lines():
            print(line, file=sys.stderr)
        if outcome.code not in (0, 1):
            print(f"bench-lab: the sweep stopped (exit {outcome.code})", file=sys.stderr)
            return outcome.code
    return summarise(runs, specs, args)


def summarise(runs, specs, args):
    events = [jr.read(RunFolder(r).journal_path) for r in runs]
    exps = sorted({e["experiment"] for ev in events for e in ev if e["event"] == "done"})
    what = f"{' '.join(specs)} {' '.join(args)}, twice back to back" if specs else f"summary of {' and '.join(runs)}"
    print(f"# bench-lab: {what} on {hostname()}")
    charted = set()
    for exp in exps:
        spec = RunFolder(runs[0]).spec_path(exp)
        charted |= {(exp, m) for _kind, m in spec_charts(spec)[1]}
    # A point is flagged when either run kept a suspect repeat of it or was not confident of it. The
    # goal's ratio is over points neither run flagged; and did the lab know when it was wrong: is every
    # charted point whose two runs differ by more than the goal flagged in at least one run?
    worst, apart, flagged = [], 0, 0
    for exp in exps:
        (a, sa), (b, sb) = medians(runs[0], exp), medians(runs[1], exp)
        doubt = sa | sb | unsure(events[0], exp) | unsure(events[1], exp)
        for k in sorted(set(a) & set(b)):
            if a[k] <= 0 or b[k] <= 0:
                continue
            ratio = max(a[k], b[k]) / min(a[k], b[k])
            if (exp, k[4]) in charted and ratio > GOAL:
                apart += 1
                flagged += k[:4] in doubt
            if k[:4] not in doubt:
                worst.append((ratio, exp, k, a[k], b[k]))
    worst.sort(reverse=True)
    headline = [w for w in worst if (w[1], w[2][4]) in charted]
    print(f"point-metrics compared (neither run flagged: suspect or not confident): {len(worst)}, "
          f"of them charted: {len(headline)}")
    print(f"charted point-metrics whose two runs differ by more than x{GOAL}: {apart}, flagged in at least "
          f"one run (suspect or not confident): {flagged}" + (" (the lab knew)" if flagged == apart else ""))
    for title, rows in (("charted metrics", headline), ("every metric", worst)):
        if not rows:
            continue
        print(f"largest ratio between the two runs' medians, {title}: {rows[0][0]:.3f} (goal <= {GOAL})")
        for ratio, exp, k, x, y in rows[:4]:
            print(f"  ratio {ratio:.3f}  {exp} {k[0]} {k[1]} threads={k[2]} {k[4]}: {x:.4g} vs {y:.4g}")
    for i, ev in enumerate(events, 1):
        reasons = collections.Counter(e["reason"].split(" ")[0] for e in ev if e["event"] in ("remeasured", "suspect"))
        again = sum(1 for e in ev if e["event"] == "remeasured")
        susp = sum(1 for e in ev if e["event"] == "suspect")
        done = [e for e in ev if e["event"] == "done"]
        steal = [e["noise"]["steal_pct"] for e in done]
        foreign = [e["noise"]["foreign_pct"] for e in done]
        over = [e["overhead_ms"] for e in done]
        plan = [e.get("plan_ms") for e in ev if e["event"] == "sweep"]
        conf = [e for e in ev if e["event"] == "confidence"]
        print(f"run {i}: {len(done)} repeats kept, {again} measured again, {susp} kept as suspect"
              + (f" (reasons: {', '.join(f'{k} x{n}' for k, n in reasons.items())})" if reasons else ""))
        if conf:
            print(f"  points: {len(conf)}, confident {sum(1 for c in conf if c['confident'])}, "
                  f"repeats per point median {median([c['n'] for c in conf]):g}")
        if done:
            print(f"  noise per kept repeat: steal median {median(steal):.1f}% max {max(steal):.1f}%, "
                  f"foreign median {median(foreign):.1f}% max {max(foreign):.1f}%")
            print(f"  engine overhead per repeat: median {median(over):.1f} ms, max {max(over):.1f} ms; "
                  f"planning {plan[0]} ms per sweep")
    return 0


if __name__ == "__main__":
    run(main)
