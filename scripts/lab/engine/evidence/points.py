"""Where why=1's evidence runs are made (the spec key `why_points`): the one rule the engine schedules them
by (lab/engine/rounds.py) and the dry run prices them by (lab/engine/price.py).

`all`: every point. `differential` (the default): only the points the differential compares (lab/why/diff.py,
report/causes.py): per curve (variant × placement) of an experiment with scaling words, the fewest threads
measured and the knee, so that why=1 costs O(curves), not O(points); and, at each placement, the same thread
counts for its other variants: the stories contrast variants at one variant's base and knee (report/claims.py:
per-thread at shared-arc's, the other lock modes at global's). A curve of one thread count gets its one
point. An experiment without scaling words (no `speedup` or `scaling` chart) gets none: its report has no
why section to use them (a spec whose story reads them anyway says `why_points = all`: channel.spec). The
knee is known only from the curve's timed repeats, read with the report's own rules (spec.curve_metric,
spec.better_of, rules.knees), so the engine asks once they are done. A point measured once as another
placement (plan.shared) counts in its curve with its owner's rows, and its evidence is its owner's.
"""
from lab.core import rules
from lab.core.stats import summary
from lab.engine.spec import better_of, curve_metric

ALL, DIFFERENTIAL = "all", "differential"


def mode(spec):
    return spec.get("why_points") or DIFFERENTIAL


def metric(spec):
    """The metric of the experiment's scaling words with evidence, or None (no differential here)."""
    return curve_metric(spec.charts(), True)


def curves(points):
    """{(variant, placement): [point]} in plan order."""
    out = {}
    for p in points:
        out.setdefault((p.variant, p.placement), []).append(p)
    return out


def compared(spec, rows):
    """{(variant, placement): (base threads, knee threads, why)} the differential will compare, from the
    experiment's timed tidy rows (every repeat kept so far): what the report computes from the same rows."""
    name = metric(spec)
    by = {}
    for r in rows:
        if r["metric"] == name and str(r["threads"]).isdigit():
            by.setdefault(r["variant"], {}).setdefault(r["placement"], {}).setdefault(int(r["threads"]), []).append(r)
    if not by:
        return {}
    unit = next(r["unit"] for r in rows if r["metric"] == name)
    better = better_of(spec.path, name, unit)
    out = {}
    for variant, by_p in by.items():
        series = {pl: {t: summarised(rs) for t, rs in by_t.items()} for pl, by_t in by_p.items()}
        knees = {pl: kn[:3] for pl, kn in rules.knees(series, better).items()}    # (base, knee, why)
        for pl, by_t in by_p.items():
            out[(variant, pl)] = knees.get(pl) or (min(by_t), min(by_t), "the only thread count measured")
    return out


def summarised(rows):
    """A point's summary as the report's model makes it (lab/report/model.py points): its suspect repeats
    count, since the knee rule calls a point with one inconclusive."""
    return summary([float(r["value"]) for r in rows],
                   "; ".join(f"r{r['repeat']}: {r['suspect']}" for r in rows if r.get("suspect")))


def measured(points):
    """{id(point): the point measured for it}: itself, or for a point measured once as another placement
    (plan.shared: same_as) that placement's point; None for one the host cannot run."""
    by = {(p.variant, p.placement, p.threads): p for p in points if not p.skip}
    return {id(p): by.get((p.variant, p.same_as, p.threads)) if getattr(p, "same_as", "") else
            (None if p.skip else p) for p in points}


def owners(points, picked):
    """The measured points behind `picked` (a shared point's evidence is its owner's), once each, in plan order."""
    of = measured(points)
    want = {id(of[id(p)]) for p in picked if of[id(p)] is not None}
    return [p for p in points if id(p) in want]


def with_shared(points, rows):
    """rows plus, for each shared point, its owner's rows as its own placement's (as the report draws it in
    both curves: lab/report/model.py shared_points)."""
    of = measured(points)
    extra = []
    for p in points:
        o = of[id(p)]
        if o is not None and o is not p:
            extra += [dict(r, placement=p.placement) for r in rows
                      if (r["variant"], r["placement"], str(r["threads"])) == (o.variant, o.placement, str(o.threads))]
    return rows + extra


def chosen(spec, points, rows):
    """The measured points of one experiment that get evidence runs, in plan order, once its timed repeats
    are done: every point (all), or at each placement every variant at each curve's base and knee
    (differential) from `rows`. points: the plan's, shared ones included (their evidence is their owner's)."""
    if mode(spec) == ALL:
        return owners(points, points)
    if metric(spec) is None:
        return []
    counts = {}
    for (_v, pl), (b, k, _why) in compared(spec, with_shared(points, rows)).items():
        counts.setdefault(pl, set()).update((b, k))
    return owners(points, [p for p in points if p.threads in counts.get(p.placement, ())])


def priced(spec, points, cost):
    """(expected, most): the measured points the dry run prices evidence runs at, before anything is measured
    (points: the plan's, shared ones included: their evidence is their owner's). All:
    every point, both. Differential: per curve its fewest threads and, for the knee (unknown until the curve
    is measured), its dearest other point by cost(point) (the most threads among equals): 2 a curve when a
    placement's variants share their knee; at most, each variant's knee a different count, the fewest and
    as many dearest others as the placement has variants."""
    of = measured(points)
    points = [p for p in points if of[id(p)] is not None]
    if mode(spec) == ALL:
        return owners(points, points), owners(points, points)
    if metric(spec) is None:
        return [], []
    expected, most = [], []
    variants = {}
    for (v, pl) in curves(points):
        variants.setdefault(pl, set()).add(v)
    for (_v, pl), ps in curves(points).items():
        first = min(ps, key=lambda p: p.threads)
        rest = sorted((p for p in ps if p is not first), key=lambda p: (cost(p), p.threads), reverse=True)
        expected += [first] + rest[:1]
        most += [first] + rest[:len(variants[pl])]
    return owners(points, expected), owners(points, most)
