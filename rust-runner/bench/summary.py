#!/usr/bin/env python3
"""summary.py RUNS.CSV [--goal-cpu 0.85] [--goal-rss-mb 27] [--one CPU] [--pair CPUS]: the table that
`bench.sh` prints, from the runs it recorded (`round,tool,metric,value`, one line per measured value).

Every figure is a median over the rounds, shown with its runs. Two tools are compared round by round
(each round's two runs ran minutes apart at most, so a slow phase of the host or the server weighs on
both), and the median of those per-round ratios gets a distribution-free 95% confidence interval (order
statistics of the binomial, no assumption about the noise). A goal is `met` only when the whole interval
is on the right side of it, `not met` when the whole interval is on the wrong side, and otherwise the
honest answer is `cannot tell`: more rounds, or a quieter host, are needed."""
import argparse
import csv
import math
import sys
from collections import defaultdict

TOOLS = ("runner", "before", "latte")
NAMES = {"runner": "runner", "before": "runner before", "latte": "Latte 0.29"}

# metric → (label, unit, format); {one} and {pair} are the CPUs the runs were pinned to.
METRICS = {
    "empty_1t_calls_per_s": ("empty workload, 1 thread (CPU {one})", "calls/s", "mega"),
    "empty_2t_shared_calls_per_s": ("empty workload, 2 threads (CPUs {pair}), one shared program", "calls/s", "mega"),
    "empty_2t_calls_per_s": ("empty workload, 2 threads (CPUs {pair}), a program per thread", "calls/s", "mega"),
    "insert_cpu_us": ("inserts: process CPU per insert (CPU {one})", "µs", "num"),
    "insert_rss_mib": ("inserts: peak RSS", "MiB", "mib"),
    "insert_wall_s": ("inserts: wall time of a run", "s", "num"),
}
# Compared round by round: (metric, numerator, denominator, goal kind).
RATIOS = (
    ("insert_cpu_us", "runner", "latte", "cpu"),
    ("insert_cpu_us", "runner", "before", None),
    ("empty_1t_calls_per_s", "runner", "latte", None),
    ("empty_1t_calls_per_s", "runner", "before", None),
    ("empty_2t_calls_per_s", "runner", "latte", None),
)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_ci(xs, level=0.95):
    """Distribution-free interval for the median: (lo, hi, coverage) from the order statistics, or
    None when there are too few values for `level` (fewer than 6 for 95%)."""
    s = sorted(xs)
    n = len(s)
    # P(Binomial(n, 1/2) <= j), cumulated: the interval [x(k), x(n-k+1)] misses the median with
    # probability 2 * P(B <= k - 1).
    cdf, acc = [], 0.0
    for j in range(n + 1):
        acc += math.comb(n, j) / 2 ** n
        cdf.append(acc)
    best = None
    for k in range(1, n // 2 + 1):
        if 2 * cdf[k - 1] <= 1 - level:
            best = k
    if best is None:
        return None
    return s[best - 1], s[n - best], 1 - 2 * cdf[best - 1]


def verdict(ci, goal, n):
    """Whether a ratio that should be at most `goal` is, given its interval."""
    if ci is None:
        return f"cannot tell: {n} round{'s give' if n != 1 else ' gives'} no 95% interval (6 do)"
    lo, hi, _ = ci
    if hi <= goal:
        return "met"
    if lo > goal:
        return "not met"
    return "cannot tell: the interval straddles the goal (more rounds, or a quieter host)"


def fmt(v, kind):
    if kind == "mega":
        return f"{v / 1e6:.2f}M"
    if kind == "mib":
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


def load(path):
    """({(metric, tool): {round: value}}, {noise metric: [values]}) from the runs file: a measurement
    once per tool and round, the host's noise once per run. A malformed line is an error with file:line."""
    data, noise = defaultdict(dict), defaultdict(list)
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header != ["round", "tool", "metric", "value"]:
            raise SystemExit(f"{path}:1: expected the header round,tool,metric,value")
        for line, row in enumerate(rows, start=2):
            try:
                rnd, tool, metric, value = row
                rnd, value = int(rnd), float(value)
            except ValueError:
                raise SystemExit(f"{path}:{line}: expected round,tool,metric,value, got {','.join(row)!r}")
            if metric.startswith("noise_"):
                noise[metric].append(value)
            elif rnd in data[(metric, tool)]:
                raise SystemExit(f"{path}:{line}: {metric} of {tool} in round {rnd} twice")
            else:
                data[(metric, tool)][rnd] = value
    return data, noise


def paired(data, metric, a, b):
    """Per-round a/b over the rounds both ran."""
    xa, xb = data.get((metric, a), {}), data.get((metric, b), {})
    return [xa[r] / xb[r] for r in sorted(set(xa) & set(xb)) if xb[r]]


def table(data, noise, goal_cpu, goal_rss_mb, one, pair):
    tools = [t for t in TOOLS if any(k[1] == t for k in data)]
    out = [f"| measurement: median (runs, sorted) | {' | '.join(NAMES[t] for t in tools)} |"]
    out.append("|---|" + "---|" * len(tools))
    for metric, (label, unit, kind) in METRICS.items():
        if not any((metric, t) in data for t in tools):
            continue
        cells = []
        for t in tools:
            xs = list(data.get((metric, t), {}).values())
            cells.append(f"{fmt(median(xs), kind)} ({' '.join(fmt(x, kind) for x in sorted(xs))})" if xs else "–")
        out.append(f"| {label.format(one=one, pair=pair)}, {unit} | {' | '.join(cells)} |")
    out.append("")
    out.append("| ratio, round by round | median | 95% interval | rounds (sorted) | goal |")
    out.append("|---|---|---|---|---|")
    for metric, a, b, goal in RATIOS:
        rs = paired(data, metric, a, b)
        if not rs:
            continue
        ci = median_ci(rs)
        interval = f"{ci[0]:.2f}–{ci[1]:.2f}× ({ci[2] * 100:.1f}%)" if ci else "none (fewer than 6 rounds)"
        goal_cell = f"≤ {goal_cpu:.2f}×: **{verdict(ci, goal_cpu, len(rs))}**" if goal == "cpu" else ""
        label = f"{METRICS[metric][0].format(one=one, pair=pair)}: {NAMES[a]} / {NAMES[b]}"
        out.append(f"| {label} | {median(rs):.2f}× | {interval} | {' '.join(f'{r:.2f}' for r in sorted(rs))} | {goal_cell} |")
    rss = list(data.get(("insert_rss_mib", "runner"), {}).values())
    if rss:
        limit = goal_rss_mb * 1e6 / 2 ** 20
        worst = max(rss)
        state = "met" if worst <= limit else "not met"
        out.append("")
        out.append(f"Peak RSS of the runner's insert runs: at most {worst:.1f} MiB; goal ≤ {goal_rss_mb:g} MB "
                   f"({limit:.1f} MiB): **{state}**"
                   + (f"; Latte 0.29 at least {min(data[('insert_rss_mib', 'latte')].values()):.1f} MiB"
                      if ("insert_rss_mib", "latte") in data else ""))
    seen = [f"{name} {min(noise[m]):.1f}–{max(noise[m]):.1f}%"
            for m, name in (("noise_steal_pct", "stolen by the hypervisor"), ("noise_foreign_pct", "other processes"))
            if noise.get(m)]
    if seen:
        out.append("")
        out.append("Noise during the runs, as a share of the host's CPU time: " + ", ".join(seen) + ".")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs")
    p.add_argument("--goal-cpu", type=float, default=0.85)
    p.add_argument("--goal-rss-mb", type=float, default=27)
    p.add_argument("--one", default="?")
    p.add_argument("--pair", default="?")
    a = p.parse_args(argv)
    print(table(*load(a.runs), a.goal_cpu, a.goal_rss_mb, a.one, a.pair))
    return 0


if __name__ == "__main__":
    sys.exit(main())
