"""Bencher's Metric Format (https://bencher.dev/docs/reference/bencher-metric-format):
{benchmark: {measure: {value, lower_value, upper_value}}} with the median and its 95% interval (the
bounds only where the lab has an interval: 3 repeats or more). A benchmark is
`experiment/variant/placement/tN`; a measure is the metric's name (Bencher allows 64 characters).
Read from the Run (lab/core/run.py): its points' Summaries, never recomputed. Noise readings are not
results and are left out; a point measured once for several placements (Point.shared) is its own
placement's only, as in the JSON document."""
import math

MEASURE_MAX, BENCHMARK_MAX = 64, 1024


def name(exp, p):
    parts = [exp] + ([p.variant] if p.variant else []) + [p.placement, f"t{int(p.threads)}"]
    return "/".join(parts)[:BENCHMARK_MAX]


def bmf(run):
    out = {}
    for e in run.experiments:
        for p in e.points:
            s = p.summary
            if p.shared or not math.isfinite(s.median):
                continue
            m = {"value": s.median}
            if math.isfinite(s.ci_lo) and math.isfinite(s.ci_hi):
                m.update(lower_value=s.ci_lo, upper_value=s.ci_hi)
            out.setdefault(name(e.name, p), {})[p.metric[:MEASURE_MAX]] = m
    return out
