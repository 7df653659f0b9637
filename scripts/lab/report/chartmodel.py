"""The shape of every chart, decided once: gnuplot (scripts/lab/report/charts.py, report.md's PNG) and the page's SVG
(lab/report/html_page.py, report.html) both draw from these rules, so the two pictures of one run cannot
disagree on a whisker, an ideal line, the order of bars or the rows of a heatmap."""
import dataclasses
from dataclasses import dataclass, field

from lab.core.run import Point
from lab.core.stats import Summary, median
from lab.report import numa
from lab.report.scaling import curves
from lab.topology.topo import POLICIES, borders


def whisker(s):
    """(lo, hi, from_ci) of an error bar: the median's 95% CI where it exists (n >= 3), else min..max."""
    if s.n >= 3 and s.ci_lo == s.ci_lo:
        return max(s.ci_lo, 0.0), s.ci_hi, True
    return s.min, s.max, False


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


# --- the chart objects ------------------------------------------------------------------------------
# Built once from the run model's points (lab/report/model.py); charts.py writes gnuplot's data files
# from them (report.md's PNG), lab/report/svg.py draws them (report.html). A new chart kind is one
# builder in KINDS here, one gnuplot script and one SVG drawing.
NAN = float("nan")


@dataclass(frozen=True)
class Mark(Point):
    """What a chart draws at one place (a line's point, a bar, a heatmap cell): a point of the model, or
    several pooled into one, with the points it stands for (their rows, raw folders, commands)."""
    members: tuple = ()
    extra: str = ""                 # one more line of its tooltip (a speedup mark's efficiency)
    ideal: float | None = None      # a speedup mark's ideal

    def __post_init__(self):
        """Made from the model's points, already checked (Point's rule is for a received run); a speedup
        mark's threads is a number."""


def mark(p, **changes):
    """The Mark of point p (its fields, these changed)."""
    return Mark(**{f.name: getattr(p, f.name) for f in dataclasses.fields(Point)} | changes)


def pooled(points):
    """THE pooling rule of every chart: one mark (a bar, a line's point, a heatmap cell) that gathers
    several points (several CPU sets of one relation, as c2c measures several pairs per relation) is
    the median of the points' medians; its whisker is the range of those medians (no CI: the sets are
    not repeats of one measurement), and it is suspect when any of them is. One point is itself.
    The returned Mark's members are the points it pools."""
    if len(points) == 1:
        return mark(points[0], members=tuple(points))
    meds = [p.summary.median for p in points]
    m = median(meds)
    s = Summary(median=m, min=min(meds), max=max(meds), n=len(meds),
                spread_pct=(max(meds) - min(meds)) / abs(m) * 100 if m else NAN,
                ci_lo=NAN, ci_hi=NAN, ci_pct=NAN, ci_method="none (a median of CPU sets' medians)",
                suspect="; ".join(f"CPUs {p.cpus}: {p.summary.suspect}" for p in points if p.summary.suspect))
    sets = " ".join(p.cpus for p in points[:8]) + (" …" if len(points) > 8 else "")
    return mark(points[0], summary=s, cpus=f"median of {len(points)} CPU sets ({sets})", members=tuple(points))


@dataclass
class Line:
    label: str
    variant: str
    placement: str
    marks: dict            # {threads: pooled point}


@dataclass
class Series:
    """Lines over thread counts (a scaling or a speedup chart)."""
    kind: str
    metric: str
    unit: str
    lines: list
    ideal: bool            # draw each line's ideal (linear from its fewest threads)
    left_out: int = 0      # lines beyond MAX_SERIES, not drawn (the tables and the CSV have them)


@dataclass
class Bars:
    """One bar per (category, variant): categories in the lab's placement order, variants by name."""
    kind: str
    metric: str
    unit: str
    categories: list       # [category name]
    variants: list         # [variant]
    cells: dict            # {(category, variant): pooled point}
    left_out: int = 0      # variants and categories beyond MAX_SERIES and MAX_CATEGORIES, not drawn


@dataclass
class Matrix:
    """A CPU x CPU pair matrix (one variant) or a CPU node x memory node matrix."""
    kind: str
    metric: str
    unit: str
    order: list            # axis labels in display order (CPU numbers or node numbers)
    cells: dict            # {(row, column): pooled point}
    bounds: list = field(default_factory=list)   # indexes after which a topology domain changes
    variant: str = ""
    nodes: bool = False    # a node x node matrix: (a, b) is not (b, a)

    def at(self, a, b):
        """The cell (a, b); a pair matrix shows an unmeasured (a, b) as (b, a) (a pair latency is symmetric)."""
        return self.cells.get((a, b)) or (None if self.nodes else self.cells.get((b, a)))


def _groups(points, key):
    out = {}
    for p in points:
        out.setdefault(key(p), []).append(p)
    return out


def scaling_chart(points, metric, **_):
    pts = [p for p in points if p.metric == metric and str(p.threads).isdigit()]
    if not pts:
        return None
    unit = pts[0].unit
    lines = [Line(series_label(v, pl), v, pl, dict(sorted(marks.items())))
             for v, by_p in sorted(curves(pts, metric, pool=pooled).items())
             for pl, marks in sorted(by_p.items())]
    return Series("scaling", metric, unit, lines, ideal=is_rate(metric, unit))


def bars_chart(points, metric, **_):
    pts = [p for p in points if p.metric == metric]
    if not pts:
        return None
    several = len({p.threads for p in pts}) > 1
    groups = _groups(pts, lambda p: (bar_category(p.placement, p.threads, several), p.variant))
    return Bars("bars", metric, pts[0].unit, sorted({c for c, _v in groups}, key=category_order),
                sorted({v for _c, v in groups}), {k: pooled(ms) for k, ms in groups.items()})


def speedup_chart(points, metric, scaling=None, **_):
    """The speedup rows of lab/report/scaling.py (the numbers the words beside the chart rest on)."""
    if not scaling or not scaling.rows:
        return None
    lines = []
    for pl in sorted(dict.fromkeys(r.placement for r in scaling.rows), key=category_order):
        marks = {}
        for r in (r for r in scaling.rows if r.placement == pl):
            bounded = r.summary.n >= 3 and r.lo == r.lo and r.hi < float("inf")
            s = Summary(median=r.speedup, min=r.speedup, max=r.speedup, n=r.summary.n,
                        ci_lo=r.lo if bounded else NAN, ci_hi=r.hi if bounded else NAN,
                        ci_pct=NAN, spread_pct=NAN, ci_method="the speedup's 95% range", suspect=r.summary.suspect)
            marks[r.threads] = Mark("", pl, r.threads, "", f"speedup of {metric}", "×", s, ideal=r.ideal,
                                    extra=f"efficiency {r.eff * 100:.0f}% (95% CI {r.eff_lo * 100:.0f}–"
                                          f"{r.eff_hi * 100:.0f}%)")
        lines.append(Line(pl, "", pl, marks))
    return Series("speedup", metric, f"x, {metric} {scaling.better} is better", lines, ideal=True)


def heatmap_chart(points, metric, topo=None, **_):
    """A node x node memory matrix (lab/report/numa.py: per cell the most threads), else the pair matrix
    of the first variant by name over the CPUs seen, in hwloc's order with its domain lines."""
    pts = [p for p in points if p.metric == metric]
    per = _groups(pts, lambda p: (p.variant, p.threads))
    nodes = numa.matrix([(v, t, metric, pooled(ms)) for (v, t), ms in per.items()], metric)
    if nodes:
        order = sorted({n for cell in nodes for n in cell})
        return Matrix("heatmap", metric, next(iter(nodes.values())).unit, order, nodes, nodes=True,
                      variant="CPU node x memory node; bandwidth: all CPUs of a node")
    pair = [p for p in pts if p.cpus.count(",") == 1 and all(x.isdigit() for x in p.cpus.split(","))]
    first = heatmap_variant(p.variant for p in pair)
    cells = {k: pooled(ms) for k, ms in _groups([p for p in pair if p.variant == first],
                                                lambda p: tuple(int(x) for x in p.cpus.split(","))).items()}
    if not cells:
        return None
    order, bounds = heatmap_axis(topo, {c for k in cells for c in k})
    return Matrix("heatmap", metric, next(iter(cells.values())).unit, order, cells, list(bounds), first or "")


KINDS = {"scaling": scaling_chart, "speedup": speedup_chart, "bars": bars_chart, "heatmap": heatmap_chart}


# What one chart draws at most: a received file of 16,000 variants made one gnuplot call of 149 s and a
# 97 MB page; past these a chart draws the first by name and says how many it left out.
MAX_SERIES = 48
MAX_CATEGORIES = 64


def build(kind, e, metric, topo=None):
    """The chart object of `chart = KIND METRIC` for an experiment of the run model, or None (no rows)."""
    f = KINDS.get(kind)
    chart = f(e.points, metric, scaling=e.scaling, topo=topo) if f else None
    if isinstance(chart, Series) and len(chart.lines) > MAX_SERIES:
        chart.left_out, chart.lines = len(chart.lines) - MAX_SERIES, chart.lines[:MAX_SERIES]
    if isinstance(chart, Bars) and (len(chart.variants) > MAX_SERIES or len(chart.categories) > MAX_CATEGORIES):
        chart.left_out = max(0, len(chart.variants) - MAX_SERIES) + max(0, len(chart.categories) - MAX_CATEGORIES)
        chart.variants, chart.categories = chart.variants[:MAX_SERIES], chart.categories[:MAX_CATEGORIES]
        kept_v, kept_c = set(chart.variants), set(chart.categories)
        chart.cells = {(c, v): p for (c, v), p in chart.cells.items() if c in kept_c and v in kept_v}
    return chart


def left_out_words(chart):
    """The title's note of a chart that draws only part of its series: "" when it draws every one."""
    n = getattr(chart, "left_out", 0)
    return f" (the first {MAX_SERIES} series; {n} more in the tables and the CSV)" if n else ""
