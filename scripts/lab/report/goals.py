"""Goals: a target ratio between two variants' medians that a spec states (`goal = …`) and every report
judges met / not met / inconclusive from the 95% intervals, the way the issues state a benchmark's goal
("the best lock mode ≥ 1.3× memcached in GET/s at one server thread").

    goal = NUM[|NUM…] / DEN METRIC >=|<= RATIO [threads=N] [placement=P]

NUM with several variants takes the best of them by METRIC's median at that point (higher for >=, lower
for <=), and says which. One verdict per placement where both sides were measured at that thread count
(every thread count when `threads=` is absent). The interval of the ratio is the quotient of the two
medians' 95% intervals (lab/core/rules.py), so a goal is met only when all of it is on the goal's
side, and a suspect point or one with fewer than 3 repeats makes it inconclusive.

The line's grammar is the spec's (lab/engine/goals.py); this module judges and words parsed goals.

A row whose points' server was not saturated (lab/report/client.py: client-bound with the server below
its limit, or latency-bound) keeps its verdict and says so: its ratio is one of round trips or of
lower bounds, not of what the servers can do.
"""
import os
import re

from lab.core import rules as V
from lab.core.rules import merged
from lab.core.run import Goal, GoalRow
from lab.engine.goals import MOST_GOALS, parse, text  # noqa: F401 (the spec's grammar; text for callers)
from lab.engine.spec import spec_text


def _summaries(pts, metric):
    """{(variant, placement, threads): summary over that point's repeats (every CPU set merged)}."""
    by = {}
    for p in pts:
        if p.metric == metric:
            by.setdefault((p.variant, p.placement, str(p.threads)), []).append(p)
    return {k: merged(v) for k, v in by.items()}


def judge(goal, pts, doubts=None):
    """[GoalRow] for one parsed goal;
    doubts: {(variant, placement, threads): words} of points whose server was not saturated
    (client.capacity_doubts)."""
    doubts = doubts or {}
    s = _summaries(pts, goal["metric"])
    higher = goal["op"] == ">="
    keys = sorted({(pl, t) for (_v, pl, t) in s
                   if (goal["threads"] is None or t == str(goal["threads"]))
                   and (goal["placement"] is None or pl == goal["placement"])},
                  key=lambda k: (k[0], int(k[1]) if k[1].isdigit() else 0))
    out = []
    for pl, t in keys:
        den = s.get((goal["den"], pl, t))
        nums = [(v, s[(v, pl, t)]) for v in goal["num"] if (v, pl, t) in s]
        if den is None or not nums:
            continue
        picked, num = (max if higher else min)(nums, key=lambda x: x[1].median)
        caveat = "; ".join(f"{v} {pl} t{t} {doubts[(v, pl, t)]}" for v in (picked, goal["den"]) if (v, pl, t) in doubts)
        doubt = V.doubt_of([(f"{picked} {pl} t{t}", num), (f"{goal['den']} {pl} t{t}", den)])
        ratio = lo = hi = None
        if V.ci_bounds(den)[0] <= 0:
            verdict, why = "inconclusive", f"{goal['den']} {pl} t{t}: its 95% CI reaches 0"
        else:
            ratio = num.median / den.median
            lo, hi = V.quotient_range(num, den)
            r = goal["ratio"]
            where, sign = f"95% CI ×{lo:.2f}–×{hi:.2f}", "≥" if higher else "≤"
            if doubt:
                verdict, why = "inconclusive", doubt
            elif (lo >= r) if higher else (hi <= r):
                verdict, why = "met", f"{where}: all of it {sign} ×{r:g}"
            elif (hi < r) if higher else (lo > r):
                verdict, why = "not met", f"{where}: none of it {sign} ×{r:g}"
            else:
                verdict, why = "inconclusive", f"{where} straddles ×{r:g}"
        out.append(GoalRow(pl, t, picked, ratio, lo, hi, caveat, verdict, why))
    return out


def of_experiment(spec_path, pts, doubts=None):
    """[Goal] for the goal lines of a run's saved spec. A line this
    parser refuses (a received run's, or one written by a later lab) is shown as such, not judged."""
    out = []
    if not os.path.lexists(spec_path):
        return out
    # the run's snapshot through the safe reader (spec.spec_text): a refused one is one line, exit 2
    lines = [ln for ln in spec_text(spec_path).splitlines() if re.match(r"\s*goal\s*=", ln)][:MOST_GOALS]
    for n, ln in enumerate(lines, 1):
        try:
            g = parse(ln.split("=", 1)[1].strip())
        except ValueError as e:     # its text is not shown: a received file's words are not the report's
            out.append(Goal(f"line {n}", (), f"not a goal this lab reads: {e}"))
            continue
        rows = judge(g, pts, doubts)
        out.append(Goal(text(g), tuple(rows),
                        "" if rows else f"not measured here: no {g['metric']} of both sides at one point"))
    return out


def sentences(goals):
    """One line per judged goal row, for the report and the sweep's last words."""
    out = []
    for g in goals:
        if not g.rows:
            out.append(f"goal {g.goal}: {g.error}")
        for r in g.rows:
            ratio = f"{r.picked} ×{r.ratio:.2f}" if r.ratio is not None else r.picked
            caveat = f"; not server-bound: {r.caveat}" if r.caveat else ""
            out.append(f"goal {g.goal} at {r.placement} t{r.threads}: {ratio}: {r.verdict} ({r.why}{caveat})")
    return out
