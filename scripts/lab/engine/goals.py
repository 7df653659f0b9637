"""The spec's `goal` key: its grammar. A goal is a target ratio between two variants' medians; the
reports judge it (lab/report/goals.py). The spec owns the line's shape, so the engine checks a goal
before anything runs without importing the reading side.

    goal = NUM[|NUM…] / DEN METRIC >=|<= RATIO [threads=N] [placement=P]

A goal line is parsed, never run: it comes from a spec file or from a received run's sweep/specs/, and
only names (of variants, a metric and a placement) and two numbers are read from it.
"""
import re

NAME = r"[A-Za-z0-9][A-Za-z0-9._~-]*"
GOAL = re.compile(rf"({NAME}(?:\|{NAME}){{0,31}})\s*/\s*({NAME})\s+({NAME})\s+(>=|<=)\s+(\d+(?:\.\d+)?)"
                  rf"((?:\s+(?:threads=\d{{1,4}}|placement={NAME}))*)\s*")
MOST_GOALS = 32         # goal lines read from one spec: a received run cannot ask for more


def parse(text):
    """{num: [variants], den, metric, op, ratio, threads: int|None, placement: str|None}; ValueError
    with what a goal must be."""
    m = GOAL.fullmatch(text)
    if not m or len(text) > 1024:
        raise ValueError("NUM[|NUM…] / DEN METRIC >= RATIO (or <=) [threads=N] [placement=P], "
                         "e.g. `sharded|global / memcached ops_per_s >= 1.3 threads=1`")
    num, den, metric, op, ratio, opts = m.groups()
    ratio = float(ratio)
    if not 0 < ratio <= 1000:
        raise ValueError(f"a ratio above 0 and at most 1000, not {ratio:g}")
    got = {"threads": None, "placement": None}
    for opt in opts.split():
        k, v = opt.split("=", 1)
        if got[k] is not None:
            raise ValueError(f"{k}= given twice")
        got[k] = int(v) if k == "threads" else v
    return {"num": num.split("|"), "den": den, "metric": metric, "op": op, "ratio": ratio, **got}


def text(goal):
    """The goal as a reader sees it: `best of (a, b) ÷ c, METRIC ≥ ×R`."""
    num = goal["num"][0] if len(goal["num"]) == 1 else f"best of ({', '.join(goal['num'])})"
    sign = "≥" if goal["op"] == ">=" else "≤"
    return f"{num} ÷ {goal['den']}, {goal['metric']} {sign} ×{goal['ratio']:g}"
