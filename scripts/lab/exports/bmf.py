"""Bencher's Metric Format (https://bencher.dev/docs/reference/bencher-metric-format):
{benchmark: {measure: {value, lower_value, upper_value}}} with the median and its 95% interval (the
bounds only where the lab has an interval: 3 repeats or more). A benchmark is
`experiment/variant/placement/tN`; a measure is the metric's name (Bencher allows 64 characters).
Noise readings are not results and are left out."""
MEASURE_MAX, BENCHMARK_MAX = 64, 1024


def name(exp, p):
    parts = [exp] + ([p["variant"]] if p["variant"] else []) + [p["placement"], f"t{p['threads']}"]
    return "/".join(parts)[:BENCHMARK_MAX]


def bmf(doc):
    out = {}
    for e in doc["experiments"]:
        for p in e["points"]:
            if p["noise"] or p["stats"]["median"] is None:
                continue
            s = p["stats"]
            m = {"value": s["median"]}
            if s["ci_lo"] is not None and s["ci_hi"] is not None:
                m.update(lower_value=s["ci_lo"], upper_value=s["ci_hi"])
            out.setdefault(name(e["name"], p), {})[p["metric"][:MEASURE_MAX]] = m
    return out
