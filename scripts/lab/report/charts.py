#!/usr/bin/env python3
"""Render every chart a run's specs ask for (`chart = KIND METRIC`), as PNG and SVG, with gnuplot.

  charts.py RUN

The numbers come from the run model (lab/report/model.py) through the chart objects of
lab/report/chartmodel.py, the same objects report.html's SVG draws; this file only writes them as
gnuplot data files (RUN/plots/*.dat) and the scripts in plots/ draw them.
"""
import os
import subprocess

from lab import ROOT
from lab.core.runfolder import RunFolder, output_of, writing
from lab.engine.spec import spec_charts
from lab.report import chartmodel
from lab.report.chartmodel import KINDS, ideal, whisker

GNUPLOT_TIMEOUT = 120      # seconds for one chart; a chart draws at most chartmodel.MAX_SERIES series


def plain(text):
    """text with every control character (a line break, a NUL, ESC) as a space: what a run's name or cell
    may be in gnuplot's data and argv (a NUL in an argument was a ValueError of subprocess)."""
    return "".join(" " if c < " " or c == "\x7f" else c for c in str(text))


def quoted(label):
    """A label as one quoted gnuplot data field: gnuplot's data files have no escape for a quote or a
    line break, so a name from a run folder that holds one is shown with them replaced."""
    return '"' + plain(label).replace('"', "'") + '"'


def suspect(p):
    return bool(p.summary.suspect)


def series(chart, dat):
    """Series (scaling, speedup) → one gnuplot block per line: threads median lo hi ideal clean suspect.

    With many lines over several placements, one panel per placement (a line per variant, the same
    colour for a variant in every panel, one y scale) keeps the chart readable."""
    lines = chart.lines
    placements = sorted({ln.placement for ln in lines})
    panels = placements if chart.kind == "scaling" and len(lines) > 6 and len(placements) > 1 else []
    colour = {v: i + 1 for i, v in enumerate(sorted({ln.variant for ln in lines}))}
    if panels:
        lines = sorted(lines, key=lambda ln: (ln.placement, ln.variant))
    ymax = 0.0
    with writing(dat) as f:
        for ln in lines:
            f.write(quoted(ln.variant or chart.metric if panels else ln.label) + "\n")
            line = ideal({t: p.summary.median for t, p in ln.marks.items()}) if chart.ideal else {}
            for t, p in sorted(ln.marks.items()):
                s = p.summary
                best = p.ideal if p.ideal is not None else line.get(t, float("nan"))
                lo, hi, _ci = whisker(s)
                lo, hi = max(lo, 0) if chart.kind == "speedup" else lo, min(hi, 1e6) if chart.kind == "speedup" else hi
                ymax = max(ymax, hi, best if chart.ideal else 0)
                clean, hollow = ("NaN", f"{s.median:.6g}") if suspect(p) else (f"{s.median:.6g}", "NaN")
                f.write(f"{t} {s.median:.6g} {lo:.6g} {hi:.6g} {best:.6g} {clean} {hollow}\n")
            f.write("\n\n")
    info = {"n": len(lines), "unit": chart.unit, "ideal": int(chart.ideal),
            "suspect": int(any(suspect(p) for ln in lines for p in ln.marks.values()))}
    if panels:
        info.update(panels=panels, ymax=f"{ymax * 1.05:.6g}",
                    starts=[next(i for i, ln in enumerate(lines) if ln.placement == p) for p in panels],
                    counts=[sum(1 for ln in lines if ln.placement == p) for p in panels],
                    colours=[colour[ln.variant] for ln in lines])
    return info


def bars(chart, dat):
    """Rows: category; column quadruples per variant: median lo hi suspect."""
    with writing(dat) as f:
        f.write("category " + " ".join(f'{quoted(v or chart.metric)} lo hi suspect' for v in chart.variants) + "\n")
        for cat in chart.categories:
            vals = []
            for v in chart.variants:
                p = chart.cells.get((cat, v))
                if p is None:
                    vals += ["NaN"] * 3 + ["0"]
                    continue
                lo, hi, _ci = whisker(p.summary)
                vals += [f"{p.summary.median:.6g}", f"{lo:.6g}", f"{hi:.6g}", str(int(suspect(p)))]
            f.write(quoted(cat) + " " + " ".join(vals) + "\n")
    return {"n": len(chart.variants), "unit": chart.unit,
            "suspect": int(any(suspect(p) for p in chart.cells.values()))}


def heatmap(chart, dat):
    """A full matrix over the axis, the cell's median, NaN (and a blank label) where nothing was measured.
    A node matrix: rows CPU nodes, columns memory nodes."""
    with writing(dat) as f:
        for i, a in enumerate(chart.order):
            for j, b in enumerate(chart.order):
                p = chart.at(a, b)
                m = p.summary.median if p else None
                x, y = (j, i) if chart.nodes else (i, j)
                label = f"{m:.3g}" if chart.nodes else f"{m:.0f}" if p else ""
                f.write(f'{x} {y} {m:.6g} "{label}"\n' if p else f'{x} {y} NaN ""\n')
            f.write("\n")
    return {"n": len(chart.order), "unit": chart.unit, "cpus": " ".join(map(str, chart.order)),
            "bounds": " ".join(f"{i + 0.5}" for i in chart.bounds), "variant": chart.variant,
            "axes": "node" if chart.nodes else "cpu"}


WRITERS = {"scaling": series, "speedup": series, "bars": bars, "heatmap": heatmap}


def xrange_of(chart):
    """A thread axis around the one thread count a metric was measured at ("lo hi", a factor of two
    either way on the log axis), where gnuplot would autoscale to an empty range; else "" (autoscale)."""
    threads = {t for ln in chart.lines for t in ln.marks}
    if len(threads) != 1:
        return ""
    t = threads.pop()
    return f"{t / 2:g} {t * 2:g}"


def render(run, e, kind, metric, topo):
    chart = chartmodel.build(kind, e, metric, topo)
    exp = e.name
    if chart is None:
        return None, f"charts: {exp}: no rows for {metric}, no {kind} chart"
    base = RunFolder(run).chart(exp, kind, metric)
    info = WRITERS[kind](chart, base + ".dat")
    title = f"{exp}: {metric}" + (f" ({info['variant']})" if info.get("variant") else "")
    if kind == "speedup":
        title = f"{exp}: speedup of {metric} over the fewest threads (dashed: ideal)"
    title += chartmodel.left_out_words(chart)
    width = 1280 if info.get("panels") else 960
    script = os.path.join(ROOT, "plots", f"{'scaling' if kind == 'speedup' else kind}.gp")   # speedup: ratios
    # Every value goes to gnuplot as a `-c` argument, a string the scripts only use as a value: a
    # cell, a variant or a run folder's name is data there, never gnuplot text (no -e, no macro).
    ylabel = f"speedup [{info['unit']}]" if kind == "speedup" else f"{metric} [{info['unit']}]"
    if kind in ("scaling", "speedup"):   # gnuplot takes 9 arguments at most: the numbers travel as one list
        nums = (info["n"], info["ideal"], info["suspect"], info.get("ymax", 0), len(info.get("panels", [])),
                *info.get("starts", []), *info.get("counts", []), *info.get("colours", []))
        args = [title, ylabel, " ".join(map(str, nums)), " ".join(info.get("panels", [])), xrange_of(chart)]
    elif kind == "bars":
        args = [title, ylabel, str(info["n"]), str(info["suspect"])]
    else:
        args = [title, ylabel, f"{info['n']} {info['axes']}", info["cpus"], info["bounds"]]
    for ext in ("png", "svg"):
        with output_of(f"{base}.{ext}") as out:     # gnuplot writes a fresh name, renamed into place
            subprocess.run(["gnuplot", "-c", script, base + ".dat", out, ext, str(width), *map(plain, args)],
                           check=True, timeout=GNUPLOT_TIMEOUT)
    return f"{base}.png", None


def draw_all(rf, exps):
    """Every chart the experiments' chart lines ask for: ([PNG written], [line said]). A spec with no data
    is read only for what it says is wrong with it; RunFolderError when a folder of the run is a link."""
    said = []
    by_name = {e.name: e for e in exps}
    specs = {os.path.realpath(rf.spec_path(name)) for name in by_name}
    for spec in rf.spec_paths():
        if os.path.realpath(spec) not in specs:
            spec_charts(spec)
    wanted = []
    for name, e in by_name.items():
        for kind, metric in e.charts:
            if kind in KINDS:
                wanted.append((name, kind, metric))
            else:
                said.append(f"charts: {name}: unknown chart kind {kind!r} (known: {', '.join(KINDS)})")
    topo = rf.topology()
    made = []
    for exp, kind, metric in dict.fromkeys(wanted):
        png, why = render(rf.path, by_name[exp], kind, metric, topo)
        made += [png] if png else []
        said += [why] if why else []
    return made, said
