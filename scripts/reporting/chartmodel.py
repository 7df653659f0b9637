"""The shape of every chart, decided once: gnuplot (scripts/charts.py, report.md's PNG) and the page's SVG
(reporting/html_page.py, report.html) both draw from these rules, so the two pictures of one run cannot
disagree on a whisker, an ideal line, the order of bars or the rows of a heatmap."""
from topo import POLICIES, borders


def whisker(s):
    """(lo, hi, from_ci) of an error bar: the median's 95% CI where it exists (n >= 3), else min..max."""
    if s["n"] >= 3 and s["ci_lo"] == s["ci_lo"]:
        return max(s["ci_lo"], 0.0), s["ci_hi"], True
    return s["min"], s["max"], False


def is_rate(metric, unit):
    """Ideal scaling only means something for a rate: N threads should do N times the 1-thread work."""
    return metric.endswith("per_s") or unit in ("1/s", "MB/s", "ops/s")


def ideal(medians):
    """{threads: ideal value} of one series ({threads: median}): its fewest-thread point scaled linearly."""
    if not medians:
        return {}
    t0 = min(medians)
    base = medians[t0] / t0
    return {t: base * t for t in medians}


def series_label(variant, placement):
    return f"{variant} {placement}".strip() if variant not in ("", "-") else placement


def bar_category(placement, threads, several):
    """A bar is one point: when several thread counts are measured, each is its own category."""
    return f"{placement} t{threads}" if several else placement


def category_order(category):
    """Placements in the lab's order (pairs from near to far: smt, same-l2, …, cross-package), then
    thread counts; a placement the lab does not know goes last, alphabetically."""
    placement, _, threads = category.partition(" t")
    rank = POLICIES.index(placement) if placement in POLICIES else len(POLICIES)
    return (rank, placement, int(threads) if threads.isdigit() else 0)


def heatmap_variant(variants):
    """A heatmap draws one matrix: the first variant by name."""
    vs = sorted(v for v in variants if v is not None)
    return vs[0] if vs else None


def heatmap_axis(topo, seen):
    """(CPUs in display order, indexes i after which a domain line is drawn). hwloc's logical order keeps
    each L3 domain contiguous (Intel numbers sockets interleaved); CPUs the topology does not know go
    last, in number order; a line where the package, NUMA node, die or L3 changes."""
    order = [p.os for p in topo.pus if p.os in seen] if topo else []
    order += sorted(set(seen) - set(order))
    return order, (borders(topo, order) if topo else [])
