"""N runs side by side (one per host of a fleet sweep): per point (experiment, variant, placement,
threads, metric) each host's median with its 95% CI and its ratio to the first host; noise readings
apart, never as ratios; the hosts' environments side by side; the two-run warnings (different build,
different specs) of every host against the first. compare.py's model (comparison.by_key, warnings)
generalised from two columns to N."""
from html import escape as E

from stats import summary

from reporting import html_page as hp
from reporting.comparison import by_key, warnings
from reporting.fmt import ci, fmt


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
        ref = cells[0]["median"] if cells[0] else None
        ratios = [c["median"] / ref if c and ref else None for c in cells]
        (noise if is_noise else rows).append({"key": k, "cells": cells, "ratios": ratios, "suspect": suspect})
    warn = []
    first_label, first = runs[0]
    for label, m in runs[1:]:
        warn += [f"{label} vs {first_label}: {w}" for w in warnings(first["run"], m["run"])]
    common = sum(1 for r in rows if all(r["cells"]))
    return {"labels": [lab for lab, _m in runs], "rows": rows, "noise": noise, "warnings": warn, "common": common}


def cell_text(s, unit, suspect=0):
    """A host's median with its CI; ⚠ when some of its repeats are suspect (the host's report says why)."""
    if not s:
        return "–"
    return f"{fmt(s['median'])} {unit} ({ci(s)})" + (f" ⚠{suspect} suspect" if suspect else "")


def markdown(runs, cmp, title, missing=()):
    labels = cmp["labels"]
    out = [f"# {title}", ""]
    out += [f"**Not in this comparison:** {h}: {why}." for h, why in missing] + ([""] if missing else [])
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## Hosts", "", "| | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    keys = list(dict.fromkeys(k for _l, m in runs for k, _v in m["host"]["rows"]))
    for k in keys:
        out.append(f"| {k} | " + " | ".join(dict(m["host"]["rows"]).get(k, "") for _l, m in runs) + " |")
    out.append("| sweep | " + " | ".join(f"{m['state']}" for _l, m in runs) + " |")
    out += ["", "## Medians (95% CI), ratio to " + labels[0], "",
            "| experiment | variant | placement | threads | metric | " + " | ".join(labels) + " |",
            "|---|---|---|---|---|" + "---:|" * len(labels)]
    for r in cmp["rows"]:
        k = r["key"]
        cells = [cell_text(s, k[5], n) + (f" ×{q:.3f}" if q is not None and i else "")
                 for i, (s, q, n) in enumerate(zip(r["cells"], r["ratios"], r["suspect"]))]
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | " + " | ".join(cells) + " |")
    out += ["", f"{len(cmp['rows'])} points; {cmp['common']} measured on every host. Noise readings (steal, "
            "foreign CPU, involuntary switches, MHz) are in fleet.html, never as ratios.", ""]
    return "\n".join(out) + "\n"


def html(runs, cmp, title, missing=(), links=()):
    """links: [(label, relative href of that host's report.html)]."""
    labels = cmp["labels"]
    href = dict(links)
    body = [f"<h1>{E(title)}</h1>"]
    body += [f'<p class="warn">⚠ {E(h)} is not in this comparison: {E(why)}</p>' for h, why in missing]
    body += [f'<p class="warn">⚠ {E(w)}</p>' for w in cmp["warnings"]]
    keys = list(dict.fromkeys(k for _l, m in runs for k, _v in m["host"]["rows"]))
    envs = [dict(m["host"]["rows"]) for _l, m in runs]
    rows = "".join(f'<tr{" class=differs" if len({e.get(k) for e in envs}) > 1 else ""}><th>{E(k)}</th>'
                   + "".join(f"<td>{E(e.get(k, ''))}</td>" for e in envs) + "</tr>" for k in keys)
    rows += "<tr><th>sweep</th>" + "".join(f"<td>{E(m['state'])} · <code>{E(m['command'])}</code></td>"
                                           for _l, m in runs) + "</tr>"
    bld = lambda h: f"<pre>{E(h['build'])}</pre>" if h["build"] else '<span class="mute">not recorded</span>'  # noqa: E731
    rows += "<tr><th>build</th>" + "".join(f"<td>{bld(m['host'])}</td>" for _l, m in runs) + "</tr>"
    head = "".join(f'<th><a href="{E(href[lab])}">{E(lab)}</a></th>' if lab in href else f"<th>{E(lab)}</th>"
                   for lab in labels)
    body.append(f'<h2 style="border:0">The hosts</h2><table><tr><th></th>{head}</tr>{rows}</table>')
    first = {e["name"]: e for e in runs[0][1]["experiments"]}
    names = list(dict.fromkeys(e["name"] for _l, m in runs for e in m["experiments"]))
    for name in names:
        per = [(lab, next((e for e in m["experiments"] if e["name"] == name), None)) for lab, m in runs]
        present = [(f"{lab} ", e, i > 0) for i, (lab, e) in enumerate(per) if e]
        charts_of = (first.get(name) or present[0][1])["charts"]
        charts = [hp.draw(present, k, mt, f"{name}: {mt} ({labels[0]} solid, others dashed)")
                  for k, mt in dict.fromkeys(charts_of) if k != "heatmap"]
        body.append(f'<h2 id="exp-{E(name)}">{E(name)}</h2>')
        if any(charts):
            body.append('<div class="charts">' + "".join(f'<figure style="margin:0">{c}</figure>' for c in charts if c)
                        + "</div>")
        mine = [r for r in cmp["rows"] if r["key"][0] == name]
        head = ["variant", "placement", "threads", "metric"] + [f"{lab} median (CI)" for lab in labels]
        table_rows = []
        for r in mine:
            k = r["key"]
            cells = [hp.num(s["median"], cell_text(s, k[5], n) + (f" · ×{q:.3f}" if q is not None and i else ""))
                     if s else "–" for i, (s, q, n) in enumerate(zip(r["cells"], r["ratios"], r["suspect"]))]
            table_rows.append([E(k[1]), E(k[2]), hp.num(int(k[3]) if k[3].isdigit() else None, k[3]), E(k[4])] + cells)
        if table_rows:
            body.append(hp.table(head, table_rows))
        noise = [r for r in cmp["noise"] if r["key"][0] == name]
        if noise:
            body.append(f"<details><summary>noise per point ({len(noise)} rows; not results)</summary>" + hp.table(
                ["variant", "placement", "threads", "metric"] + labels,
                [[E(r["key"][1]), E(r["key"][2]), E(r["key"][3]), E(r["key"][4])]
                 + [hp.num(s["median"], f"{fmt(s['median'])} {r['key'][5]}") if s else "–" for s in r["cells"]]
                 for r in noise]) + "</details>")
    body.append(f'<p class="mute">{len(cmp["rows"])} points; {cmp["common"]} measured on every host. Each cell: '
                f'the median over all kept repeats, its 95% CI, ⚠ and how many of them are suspect (each host\'s '
                f'report says why; they count in the median, as there), and ×ratio to {E(labels[0])}. '
                'Noise metrics are never ratios.</p>')
    return hp.page(title, "\n".join(body))
