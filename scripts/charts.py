#!/usr/bin/env python3
"""Render every chart a run's specs ask for (`chart = KIND METRIC`), as PNG and SVG, with gnuplot.

  charts.py RUN

The numbers come only from RUN/data/<experiment>.csv; this file shapes them into gnuplot data files
(RUN/plots/*.dat) and the scripts in plots/ draw them.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from stats import group, summary  # noqa: E402
from tidy import read, row_problem  # noqa: E402
from engine.spec import spec_charts  # noqa: E402
from runfolder import RunFolder, RunFolderError, output_of, writing  # noqa: E402
from term import visible  # noqa: E402
from c2c_published import imported_charts  # noqa: E402
from reporting import scaling as scaling_words  # noqa: E402
from reporting import numa  # noqa: E402
from reporting.chartmodel import (bar_category, category_order, heatmap_axis, heatmap_variant, ideal,  # noqa: E402
                                  is_rate, series_label, whisker)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quoted(label):
    """A label as one quoted gnuplot data field: gnuplot's data files have no escape for a quote or a
    line break, so a name from a run folder that holds one is shown with them replaced."""
    return '"' + "".join("'" if c == '"' else " " if c < " " or c == "\x7f" else c for c in label) + '"'


def point(xs, suspects, key):
    """summary() of a point's repeats, with "suspect": True when any repeat of it is suspect."""
    s = summary(xs)
    s["suspect"] = bool((suspects or {}).get(key))
    return s


def load(data):
    """(groups, {point key: number of suspect repeats}) of a tidy CSV; noise metrics are not charted."""
    rows = read(data)
    for n, r in enumerate(rows, start=2):
        why = row_problem(r)
        if why:
            raise ValueError(f"{data}:{n}: {why}")
    keys = ("variant", "placement", "threads", "cpus", "metric", "unit")
    suspects = {}
    for r in rows:
        if r["suspect"]:
            k = tuple(r[x] for x in keys)
            suspects[k] = suspects.get(k, 0) + 1
    return group(rows, keys), suspects


def scaling(groups, metric, dat, suspects=None):
    """One gnuplot block per variant × placement: threads median min max ideal.

    With many series over several placements, one panel per placement (a line per variant, the
    same colour for a variant in every panel, one y scale) keeps the chart readable."""
    series, variants, placements = {}, set(), set()
    unit = ""
    for (variant, placement, threads, _cpus, m, u), xs in groups.items():
        if m == metric:
            series.setdefault((placement, variant), {})[int(threads)] = point(xs, suspects, (variant, placement, threads, _cpus, m, u))
            variants.add(variant)
            placements.add(placement)
            unit = u
    if not series:
        return None
    rate = is_rate(metric, unit)
    panels = sorted(placements) if len(series) > 6 and len(placements) > 1 else []
    colour = {v: i + 1 for i, v in enumerate(sorted(variants))}
    order = sorted(series, key=lambda k: k if panels else series_label(k[1], k[0]))
    ymax = 0.0
    with writing(dat) as f:
        for placement, variant in order:
            pts = series[(placement, variant)]
            f.write(quoted(variant or metric if panels else series_label(variant, placement)) + "\n")
            line = ideal({t: s["median"] for t, s in pts.items()}) if rate else {}
            for t in sorted(pts):
                s = pts[t]
                best = line.get(t, float("nan"))
                lo, hi, _ci = whisker(s)
                ymax = max(ymax, hi, best if rate else 0)
                clean, hollow = ("NaN", f"{s['median']:.6g}") if s["suspect"] else (f"{s['median']:.6g}", "NaN")
                f.write(f"{t} {s['median']:.6g} {lo:.6g} {hi:.6g} {best:.6g} {clean} {hollow}\n")
            f.write("\n\n")
    info = {"n": len(series), "unit": unit, "ideal": int(rate),
            "suspect": int(any(s["suspect"] for pts in series.values() for s in pts.values()))}
    if panels:
        info.update(panels=panels, ymax=f"{ymax * 1.05:.6g}",
                    starts=[next(i for i, k in enumerate(order) if k[0] == p) for p in panels],
                    counts=[sum(1 for k in order if k[0] == p) for p in panels],
                    colours=[colour[v] for _p, v in order])
    return info


def bars(groups, metric, dat, suspects=None):
    """Rows: placement (category); column triples per variant: median min max."""
    cells, flagged, variants, unit = {}, {}, [], ""
    # A bar is one point: when several thread counts are measured, each is its own category.
    several = len({t for (_v, _p, t, _c, m, _u) in groups if m == metric}) > 1
    for (variant, placement, threads, _cpus, m, u), xs in groups.items():
        if m == metric:
            category = bar_category(placement, threads, several)
            cells.setdefault(category, {}).setdefault(variant, []).extend(xs)
            flagged.setdefault(category, {}).setdefault(variant, False)
            if (suspects or {}).get((variant, placement, threads, _cpus, m, u)):
                flagged[category][variant] = True
            if variant not in variants:
                variants.append(variant)
            unit = u
    if not cells:
        return None
    variants.sort()
    with writing(dat) as f:
        f.write("category " + " ".join(f'{quoted(v or metric)} lo hi suspect' for v in variants) + "\n")
        for placement in sorted(cells, key=category_order):
            vals = []
            for v in variants:
                xs = cells[placement].get(v)
                s = summary(xs) if xs else None
                lo, hi, _ci = whisker(s) if s else (0, 0, False)
                vals += [f"{s['median']:.6g}", f"{lo:.6g}", f"{hi:.6g}", str(int(flagged[placement][v]))] \
                    if s else ["NaN"] * 3 + ["0"]
            f.write(quoted(placement) + " " + " ".join(vals) + "\n")
    return {"n": len(variants), "unit": unit,
            "suspect": int(any(f for row in flagged.values() for f in row.values()))}


def node_heatmap(groups, metric, dat):
    """Rows of a CPU node x memory node matrix (variant cpuC-memM, reporting/numa.py): rows CPU nodes,
    columns memory nodes, the node's figure (most threads) per cell; None when there are none."""
    cells = numa.matrix([(v, t, m, (xs, u)) for (v, _p, t, _c, m, u), xs in groups.items()], metric)
    if not cells:
        return None
    nodes = sorted({n for cell in cells for n in cell})
    with writing(dat) as f:
        for i, a in enumerate(nodes):
            for j, b in enumerate(nodes):
                got = cells.get((a, b))
                m = summary(got[0])["median"] if got else None
                f.write(f'{j} {i} {m:.6g} "{m:.3g}"\n' if got else f'{j} {i} NaN ""\n')
            f.write("\n")
    return {"n": len(nodes), "unit": next(iter(cells.values()))[1], "cpus": " ".join(map(str, nodes)), "bounds": "",
            "axes": "node", "variant": "CPU node x memory node; bandwidth: all CPUs of a node"}


def heatmap(groups, metric, dat, run_dir=None):
    """Pair rows (cpus "a,b") → a full matrix over the CPUs seen, median per pair, NaN elsewhere."""
    nodes = node_heatmap(groups, metric, dat)
    if nodes:
        return nodes
    cell, unit = {}, ""
    variant_seen = heatmap_variant(v for (v, _p, _t, cpus, m, _u) in groups if m == metric and len(cpus.split(",")) == 2)
    for (variant, _p, _t, cpus, m, u), xs in groups.items():
        parts = cpus.split(",")
        if m != metric or len(parts) != 2 or variant != variant_seen:     # one matrix per chart
            continue
        a, b = int(parts[0]), int(parts[1])
        cell.setdefault((a, b), []).extend(xs)
        unit = u
    if not cell:
        return None
    seen = {c for pair in cell for c in pair}
    cpus, lines = heatmap_axis(RunFolder(run_dir).topology() if run_dir else None, seen)
    bounds = " ".join(f"{i + 0.5}" for i in lines)
    with writing(dat) as f:
        for i, a in enumerate(cpus):
            for j, b in enumerate(cpus):
                xs = cell.get((a, b)) or cell.get((b, a))
                # column 4 is the cell's label: blank where the pair was not measured (the diagonal)
                m = summary(xs)["median"] if xs else None
                f.write(f'{i} {j} {m:.6g} "{m:.0f}"\n' if xs else f'{i} {j} NaN ""\n')
            f.write("\n")
    return {"n": len(cpus), "unit": unit, "cpus": " ".join(map(str, cpus)), "variant": variant_seen, "bounds": bounds}


def speedup(groups, metric, dat, suspects=None, better="higher"):
    """Speedup over each placement's smallest thread count (reporting/scaling.py's formula), one
    block per placement in scaling.gp's columns, the ideal line n / b in column 5."""
    series, flagged, variant = {}, {}, None
    for (v, placement, threads, cpus, m, u), xs in sorted(groups.items()):
        if m == metric and threads.isdigit() and (variant is None or v == variant):
            variant = v
            series.setdefault(placement, {})[int(threads)] = summary(xs)
            flagged[(placement, int(threads))] = bool((suspects or {}).get((v, placement, threads, cpus, m, u)))
    if not series:
        return None
    rows = scaling_words.speedups(series, better)
    with writing(dat) as f:
        for placement in sorted(rows, key=lambda p: category_order(p)):
            f.write(quoted(placement) + "\n")
            for r in rows[placement]:
                lo, hi = (r["lo"], r["hi"]) if r["s"]["n"] >= 3 and r["lo"] == r["lo"] else (r["speedup"],) * 2
                clean, hollow = ((f"{r['speedup']:.6g}", "NaN") if not flagged[(placement, r["threads"])]
                                 else ("NaN", f"{r['speedup']:.6g}"))
                f.write(f"{r['threads']} {r['speedup']:.6g} {max(lo, 0):.6g} {min(hi, 1e6):.6g} {r['ideal']:.6g} "
                        f"{clean} {hollow}\n")
            f.write("\n\n")
    return {"n": len(rows), "unit": f"x, {metric} {'higher' if better == 'higher' else 'lower'} is better",
            "ideal": 1, "suspect": int(any(flagged.values()))}


KINDS = {"scaling": scaling, "speedup": speedup, "bars": bars, "heatmap": heatmap}


def xrange_of(groups, metric):
    """A thread axis around the one thread count a metric was measured at ("lo hi", a factor of two
    either way on the log axis), where gnuplot would autoscale to an empty range; else "" (autoscale)."""
    threads = {int(k[2]) for k in groups if k[4] == metric}
    if len(threads) != 1:
        return ""
    t = threads.pop()
    return f"{t / 2:g} {t * 2:g}"


def render(run, exp, kind, metric):
    rf = RunFolder(run)
    data = rf.data_csv(exp)
    if not os.path.exists(data):
        return None
    base = rf.chart(exp, kind, metric)
    groups, suspects = load(data)
    if kind == "speedup":
        unit = next((k[5] for k in groups if k[4] == metric), "")
        better = scaling_words.better_of(rf.spec_path(exp), metric, unit)
        info = speedup(groups, metric, base + ".dat", suspects, better)
    else:
        info = (heatmap(groups, metric, base + ".dat", run) if kind == "heatmap"
                else KINDS[kind](groups, metric, base + ".dat", suspects))
    if info is None:
        print(visible(f"charts: {exp}: no rows for {metric}, no {kind} chart"), file=sys.stderr)
        return None
    title = f"{exp}: {metric}" + (f" ({info['variant']})" if info.get("variant") else "")
    if kind == "speedup":
        title = f"{exp}: speedup of {metric} over the fewest threads (dashed: ideal)"
    width = 1280 if info.get("panels") else 960
    script = os.path.join(ROOT, "plots", f"{'scaling' if kind == 'speedup' else kind}.gp")   # speedup: ratios
    # Every value goes to gnuplot as a `-c` argument, a string the scripts only use as a value: a
    # cell, a variant or a run folder's name is data there, never gnuplot text (no -e, no macro).
    ylabel = f"speedup [{info['unit']}]" if kind == "speedup" else f"{metric} [{info['unit']}]"
    if kind in ("scaling", "speedup"):   # gnuplot takes 9 arguments at most: the numbers travel as one list
        nums = (info["n"], info["ideal"], info["suspect"], info.get("ymax", 0), len(info.get("panels", [])),
                *info.get("starts", []), *info.get("counts", []), *info.get("colours", []))
        args = [title, ylabel, " ".join(map(str, nums)), " ".join(info.get("panels", [])), xrange_of(groups, metric)]
    elif kind == "bars":
        args = [title, ylabel, str(info["n"]), str(info["suspect"])]
    else:
        args = [title, ylabel, f"{info['n']} {info.get('axes', 'cpu')}", info["cpus"], info["bounds"]]
    for ext in ("png", "svg"):
        with output_of(f"{base}.{ext}") as out:     # gnuplot writes a fresh name, renamed into place
            subprocess.run(["gnuplot", "-c", script, base + ".dat", out, ext, str(width), *args], check=True)
    return f"{base}.png"


def main(argv):
    run = argv[0]
    made = []
    rf = RunFolder(run)
    for spec in rf.spec_paths():
        exp, charts = spec_charts(spec)
        for kind, metric in charts:
            if kind not in KINDS:
                print(visible(f"charts: {exp}: unknown chart kind {kind!r} (known: {', '.join(KINDS)})"),
                      file=sys.stderr)
                continue
            try:
                png = render(run, exp, kind, metric)
            except (ValueError, RunFolderError) as e:   # a row no chart can show, a folder not written into
                print(visible(f"charts: {e}"), file=sys.stderr)
                return 2
            if png:
                made.append(png)
    # An imported published matrix has no spec: its one chart is the heatmap (c2c_published.py).
    try:
        imports = imported_charts(run)
    except RunFolderError as e:
        print(visible(f"charts: {e}"), file=sys.stderr)
        return 2
    for exp, kind, metric in imports:
        png = render(run, exp, kind, metric)
        if png:
            made.append(png)
    print(f"charts: {len(made)} chart(s) in {rf.plots_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
