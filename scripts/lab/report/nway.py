"""N runs side by side (one per host of a fleet sweep): per point (experiment, variant, placement,
threads, metric) each host's median with its 95% CI and its ratio to the first host; noise readings
apart, never as ratios; the hosts' environments side by side; the two-run warnings (different build,
different specs) of every host against the first. compare.py's model (comparison.by_key, warnings)
generalised from two columns to N. The tables are built once (lab/report/view.py: fleet_*); this file
only lays them out as fleet.md and fleet.html."""
from markupsafe import Markup

from lab.core.stats import summary
from lab.report import html_page as hp
from lab.report import markdown as md
from lab.report import view
from lab.report.comparison import by_key, warnings


def order(k):
    return (k[0], k[4], k[1], k[2], int(k[3]) if k[3].isdigit() else 0)


def compare(runs):
    """runs: [(label, model)]; the first is the reference of the ratios."""
    keyed = [by_key(m) for _l, m in runs]
    keys = sorted({k for d in keyed for k in d}, key=order)
    rows, noise = [], []
    for k in keys:
        cells = [summary(d[k]["all"]) if k in d and d[k]["all"] else None for d in keyed]
        is_noise = any(d[k]["noise"] for d in keyed if k in d)
        suspect = [d[k]["suspect"] if k in d else 0 for d in keyed]
        ref = cells[0].median if cells[0] else None
        ratios = [c.median / ref if c and ref else None for c in cells]
        (noise if is_noise else rows).append({"key": k, "cells": cells, "ratios": ratios, "suspect": suspect})
    warn = []
    first_label, first = runs[0]
    for label, m in runs[1:]:
        warn += [f"{label} vs {first_label}: {w}" for w in warnings(first.path, m.path)]
    common = sum(1 for r in rows if all(r["cells"]))
    return {"labels": [lab for lab, _m in runs], "rows": rows, "noise": noise, "warnings": warn, "common": common}


def markdown(runs, cmp, title, missing=()):
    labels = cmp["labels"]
    out = [f"# {title}", ""]
    out += [f"**Not in this comparison:** {h}: {why}." for h, why in missing] + ([""] if missing else [])
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## Hosts", ""] + md.blocks([view.fleet_hosts(runs)])
    out += ["## Medians (95% CI), ratio to " + labels[0], ""]
    for name in names(runs):
        out += [f"#### {name}", ""] + md.blocks([t for t in (view.fleet_points(cmp, name),
                                                              view.fleet_noise(cmp, name)) if t])
    out += [f"{len(cmp['rows'])} points; {cmp['common']} measured on every host. Noise readings (steal, "
            "foreign CPU, involuntary switches, MHz) are never ratios.", ""]
    return "\n".join(out) + "\n"


def names(runs):
    return list(dict.fromkeys(e.name for _l, m in runs for e in m.experiments))


def html(runs, cmp, title, missing=(), links=()):
    """links: [(label, relative href of that host's report.html)]."""
    labels = cmp["labels"]
    first = {e.name: e for e in runs[0][1].experiments}
    exps = []
    for name in names(runs):
        per = [(lab, next((e for e in m.experiments if e.name == name), None)) for lab, m in runs]
        present = [(f"{lab} ", e, i > 0) for i, (lab, e) in enumerate(per) if e]
        charts_of = (first.get(name) or present[0][1]).charts
        charts = [hp.draw(present, k, mt, f"{name}: {mt} ({labels[0]} solid, others dashed)")
                  for k, mt in dict.fromkeys(charts_of) if k != "heatmap"]
        exps.append({"name": name, "charts": [Markup(c) for c in charts if c],     # svg.py escapes its text
                     "blocks": [t for t in (view.fleet_points(cmp, name), view.fleet_noise(cmp, name)) if t]})
    body = hp.TEMPLATES.get_template("fleet.html.j2").render(
        title=title, missing=missing, cmp=cmp, hosts=view.fleet_hosts(runs, links), exps=exps, embed=None)
    return hp.page(title, body)
