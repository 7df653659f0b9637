"""report.html and compare.html from the run model: one self-contained page each (inline CSS, inline
SVG charts, a few lines of inline script to sort tables and open a folded row when a chart point links
to it). Nothing is fetched: no font, no script, no image from elsewhere."""
import base64
import hashlib
import os
from html import escape as E

from runfolder import RunFolder


from reporting import chartmodel, goals, numa, svg
from reporting.fmt import ci, fmt, spread

CSS = """
:root{--ink:#1b1f24;--mute:#5b6470;--line:#d8dde3;--bg:#f6f8fa;--yes:#1a7f37;--no:#cf222e;--inc:#9a6700}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
margin:0;background:#fff}main{max-width:1180px;margin:0 auto;padding:18px 24px 60px}
h1{font-size:22px;margin:6px 0 2px}h2{font-size:19px;margin:34px 0 8px;padding-top:10px;border-top:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}.host{font-size:15px;color:var(--ink);background:var(--bg);padding:8px 12px;
border-radius:6px;border:1px solid var(--line)}.mute{color:var(--mute)}code,pre{font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:var(--bg);padding:8px;border-radius:4px;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid var(--line);
padding:4px 8px;text-align:left;vertical-align:top}th{background:var(--bg);position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}table.sortable th{cursor:pointer}
table.sortable th:after{content:" ⇅";color:#aab}tr:target{background:#fff8c5}
.v{display:inline-block;white-space:nowrap;padding:1px 8px;border-radius:10px;font-weight:600;color:#fff;font-size:12px}
.v-yes{background:var(--yes)}.v-no{background:var(--no)}.v-inconclusive,.v-mixed{background:var(--inc)}
.v-–,.v-not{background:#8c959f}.stories td{font-size:14px}.stories td:first-child{font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:12px}
svg.chart,img.chart{width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px}
svg .ct{font:600 15px sans-serif;text-anchor:middle}svg .yt{font:12px sans-serif;text-anchor:end;fill:#444}
svg .xt{font:12px sans-serif;text-anchor:middle;fill:#444}svg .xl,svg .yl{font:13px sans-serif;text-anchor:middle}
svg .lg{font:12px sans-serif;fill:#333}svg .grid{stroke:#e6e9ed}svg a:hover circle,svg a:hover rect{stroke-width:3}
.marks li{margin:2px 0}.sus{color:var(--inc)}.warn{background:#fff8c5;border:1px solid #d4a72c;padding:8px 12px;border-radius:6px;margin:8px 0}
details>summary{cursor:pointer;color:#0969da;margin:4px 0}nav a{margin-right:12px}.badge{font-size:12px;color:var(--mute)}
tr.differs td{background:#fff8c5}
"""

JS = """
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th),
d=th.dataset.dir==='a'?-1:1;th.dataset.dir=d>0?'a':'d';
var k=function(r){var c=r.children[i];var s=c?(c.dataset.v||c.textContent):'';var f=parseFloat(s);return isNaN(f)?s:f;};
Array.prototype.slice.call(b.rows).sort(function(x,y){var p=k(x),q=k(y);return (p>q?1:p<q?-1:0)*d;})
.forEach(function(r){b.appendChild(r);});});});
function openTarget(){var h=location.hash.slice(1);if(!h)return;var el=document.getElementById(h);
for(var p=el;p;p=p.parentElement){if(p.tagName==='DETAILS')p.open=true;}if(el)el.scrollIntoView();}
window.addEventListener('hashchange',openTarget);openTarget();
"""


# The page runs only its own script (by hash) and fetches nothing: whatever a received run's names or
# cells smuggle past the escaping, the browser refuses to run or load it.
CSP = ("default-src 'none'; script-src 'sha256-" + base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()
       + "'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")


def href(path):
    """A link into the run folder: relative, so a name like `javascript:…` stays a file name."""
    return path if path.startswith(("#", "./", "../")) else "./" + path


def page(title, body):
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{E(title)}</title>'
            f'<style>{CSS}</style></head><body><main>\n{body}\n</main><script>{JS}</script></body></html>\n')


def badge(word, why=""):
    cls = word.split()[0] if word else "–"
    t = f' title="{E(why)}"' if why else ""
    return f'<span class="v v-{E(cls)}"{t}>{E(word)}</span>'


def table(head, rows, sortable=True, num=()):
    """head: column names; rows: lists of cells (already HTML); num: indexes of numeric columns."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = []
    for r in rows:
        rid = ""
        if isinstance(r, tuple):
            rid, r = f' id="{E(r[0])}"', r[1]
        body.append(f"<tr{rid}>" + "".join(
            f'<td class="n"{c[1]}>{c[0]}</td>' if isinstance(c, tuple) else
            (f'<td class="n">{c}</td>' if i in num else f"<td>{c}</td>") for i, c in enumerate(r)) + "</tr>")
    return (f'<table class="{"sortable" if sortable else ""}"><thead><tr>{th}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def num(x, text=None):
    """A numeric cell that sorts by its value."""
    v = "" if x is None or x != x else f' data-v="{x:.6g}"'
    return (E(text if text is not None else fmt(x)), v)


HEATMAP_SVG_CPUS = 64    # above this many CPUs a heatmap is inlined as the gnuplot PNG


def pid(exp, i):
    return f"pt-{exp}-{i}"


# --- charts from the model --------------------------------------------------------------------------
def chart_points(e):
    """{id(point): href} for chart markers: the point's row in the table (or its raw folder)."""
    out = {}
    in_table = {id(p) for p in e["table"]}     # by identity: `p in list` of dicts is quadratic
    for i, p in enumerate(e["points"]):
        if id(p) in in_table:
            out[id(p)] = f"#{pid(e['name'], i)}"
        else:
            raw = next((r["raw"] for r in p["repeats"] if r["raw"]), None)
            out[id(p)] = href(f"{raw}/") if raw else ""
    return out


def command_of(p):
    cmd = next((r["command"] for r in p["repeats"] if r["command"]), None)
    return f"command: {cmd}" if cmd else ""


def draw(run_label_sets, kind, metric, title, run=None):
    """run_label_sets: [(prefix, experiment model, dashed)] — one run for a report, two for compare."""
    series, palette = [], {}
    if kind == "scaling":
        for prefix, e, dash in run_label_sets:
            hrefs = chart_points(e)
            by = {}
            for p in e["points"]:
                if p["metric"] == metric and str(p["threads"]).isdigit():
                    by.setdefault((p["variant"], p["placement"]), []).append(
                        (p, hrefs[id(p)] if not prefix else "", f"run {prefix.strip()}" if prefix else command_of(p)))
            for (v, pl), pts in sorted(by.items()):
                c = palette.setdefault((v, pl), len(palette))
                series.append({"label": f"{prefix}{v + ' ' if v not in ('', '-') else ''}{pl}", "colour": c,
                               "dash": dash, "pts": pts})
        if not series:
            return ""
        unit = series[0]["pts"][0][0]["unit"]
        return svg.scaling(title, f"{metric} [{unit}]", series,
                           ideal=chartmodel.is_rate(metric, unit) and len(run_label_sets) == 1)
    if kind == "speedup":        # the numbers of reporting/scaling.py, the same as the words beside it
        sc = run_label_sets[0][1].get("scaling")
        if not sc:
            return ""
        for i, pl in enumerate(dict.fromkeys(r["placement"] for r in sc["rows"])):
            pts = []
            for r in (r for r in sc["rows"] if r["placement"] == pl):
                bounded = r["s"]["n"] >= 3 and r["lo"] == r["lo"] and r["hi"] < float("inf")
                s = {"median": r["speedup"], "min": r["speedup"], "max": r["speedup"], "n": r["s"]["n"],
                     "ci_lo": r["lo"] if bounded else float("nan"), "ci_hi": r["hi"] if bounded else float("nan"),
                     "ci_pct": float("nan"), "suspect": r["s"]["suspect"]}
                p = {"variant": "", "placement": pl, "threads": r["threads"], "cpus": "", "s": s,
                     "metric": f"speedup of {metric}", "unit": "×"}
                pts.append((p, "", f"efficiency {r['eff'] * 100:.0f}% (95% CI {r['eff_lo'] * 100:.0f}–"
                                   f"{r['eff_hi'] * 100:.0f}%)"))
            series.append({"label": pl, "colour": i, "dash": False, "pts": pts})
        return svg.scaling(title + " (speedup; thin dots: ideal)", "speedup [×]", series, ideal=True)
    if kind == "bars":
        cats, variants = {}, []
        for prefix, e, dash in run_label_sets:
            hrefs = chart_points(e)
            pts = [p for p in e["points"] if p["metric"] == metric]
            several = len({p["threads"] for p in pts}) > 1
            for p in pts:
                cat = chartmodel.bar_category(p["placement"], p["threads"], several)
                label = f"{prefix}{p['variant'] or metric}"
                if (label, dash) not in [(v[0], v[2]) for v in variants]:
                    variants.append((label, palette.setdefault(p["variant"], len(palette)), dash))
                cats.setdefault(cat, {})[label] = (p, hrefs[id(p)] if not prefix else "",
                                                   f"run {prefix.strip()}" if prefix else command_of(p))
        if not cats:
            return ""
        unit = next(iter(next(iter(cats.values())).values()))[0]["unit"]
        variants.sort(key=lambda v: (v[1], v[2]))
        return svg.bars(title, f"{metric} [{unit}]", sorted(cats.items(), key=lambda c: chartmodel.category_order(c[0])),
                        variants)
    if kind == "heatmap":
        _prefix, e, _d = run_label_sets[0]
        hrefs = chart_points(e)
        nodes = numa.matrix([(p["variant"], p["threads"], p["metric"], (p, hrefs[id(p)])) for p in e["points"]], metric)
        if nodes:
            order = sorted({n for cell in nodes for n in cell})
            unit = next(iter(nodes.values()))[0]["unit"]
            return svg.heatmap(f"{title} (rows: CPU node, columns: memory node)", unit, nodes, order, mirror=False)
        pair = [p for p in e["points"] if p["metric"] == metric and len(p["cpus"].split(",")) == 2
                and all(x.isdigit() for x in p["cpus"].split(","))]
        first = chartmodel.heatmap_variant(p["variant"] for p in pair)
        cells = {tuple(int(x) for x in p["cpus"].split(",")): (p, hrefs[id(p)]) for p in pair if p["variant"] == first}
        if not cells:
            return ""
        seen = {c for pair in cells for c in pair}
        order, lines = chartmodel.heatmap_axis(RunFolder(run).topology() if run else None, seen)
        unit = next(iter(cells.values()))[0]["unit"]
        png = RunFolder(run).chart(e["name"], "heatmap", metric, "png") if run else ""
        if len(order) > HEATMAP_SVG_CPUS and os.path.exists(png):
            # A big matrix as SVG rects would weigh megabytes: the gnuplot PNG, inlined, stays self-contained.
            with open(png, "rb") as f:
                data = base64.b64encode(f.read()).decode()
            return (f'<img class="chart" alt="{E(title)} heatmap, {len(order)} CPUs" '
                    f'src="data:image/png;base64,{data}">')
        return svg.heatmap(f"{title} ({first})", unit, cells, order, lines)
    return ""


# --- report.html ------------------------------------------------------------------------------------
def stories_table(m):
    if not m["stories"]:
        return ('<p class="mute">No seed story\'s experiment is in this run (runner-empty, cache-get, channel, '
                'c2c…): nothing to set beside the published effects.</p>')
    rows = []
    for s in m["stories"]:
        details = "<br>".join(f"{E(c[0])} {badge(c[1], c[2])}" for c in s["checks"])
        rows.append([f"{E(s['source'])}<br>{E(s['title'])}", E(s["claim"]), E(s["published"] or "–"),
                     E(s["measured"] or "–") + (f'<details><summary>per-point comparisons</summary>{details}</details>'
                                                 if details else ""),
                     badge(s["verdict"], s["why"]) + f'<br><span class="badge">{E(s["why"])}</span>',
                     " ".join(f'<a href="#exp-{E(x)}">{E(x)} →</a>' for x in s["experiments"])])
    return ('<table class="stories" id="verdicts"><thead><tr><th>story</th><th>claim</th><th>published</th>'
            '<th>measured here</th><th>verdict</th><th>details</th></tr></thead><tbody>'
            + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</tbody></table>")


def repeats_cell(p):
    items = []
    for r in p["repeats"]:
        link = f'<a href="{E(href(r["raw"] + "/"))}">r{E(r["repeat"])}</a>' if r["raw"] else f"r{E(r['repeat'])}"
        cmd = f' <code>{E(r["command"])}</code>' if r["command"] else ""
        sus = f' <span class="sus">suspect: {E(r["suspect"])}</span>' if r["suspect"] else ""
        items.append(f"<li>{link} {E(fmt(r['value']))}{sus}{cmd}</li>")
    n = len(p["repeats"])
    return f'<details><summary>{n} repeat{"s" if n != 1 else ""}</summary><ul>{"".join(items)}</ul></details>'


def points_table(e):
    rows = []
    in_table = {id(p) for p in e["table"]}
    for i, p in enumerate(e["points"]):
        if id(p) not in in_table:
            continue
        s = p["s"]
        bad = sum(1 for r in p["repeats"] if r["suspect"])
        # short in the row (the reasons are in the list above, in the tooltip and per repeat)
        mark = f'<span class="sus" title="{E(s["suspect"])}">⚠ {bad} suspect</span>' if bad else ""
        node = [E(p["mem_node"] or "–")] if e.get("mem_column") else []
        rows.append((pid(e["name"], i), [E(p["variant"]), E(p["placement"]), num(int(p["threads"]) if str(p["threads"]).isdigit() else None, p["threads"]),
                     E(p["cpus"])] + node + [E(p["metric"]), num(s["median"]), E(f"{fmt(s['min'])} – {fmt(s['max'])}"),
                     num(s["spread_pct"], spread(s)), num(s["n"], str(s["n"])), num(s["ci_pct"], ci(s)), E(p["unit"]),
                     mark, repeats_cell(p)]))
    # the node(s) the instrument said the measured memory was on (ran-on.csv), when one said
    return table(["variant", "placement", "threads", "cpus"] + (["memory node"] if e.get("mem_column") else []) +
                 ["metric", "median", "min – max", "spread", "n", "95% CI", "unit", "", "repeats: raw folder, command"], rows)


def glance_table(g):
    rows = []
    for r in g["rows"]:
        cells = []
        for s in r["cells"]:
            if s is None:
                cells.append("")
                continue
            t = fmt(s["median"]) + (f" ({ci(s)})" if s["n"] >= 3 else f" (n={s['n']})")
            cells.append((E(t) + (f' <span class="sus" title="{E(s["suspect"])}">⚠</span>' if s["suspect"] else ""),
                          f' data-v="{s["median"]:.6g}"'))
        rows.append([E(r["metric"]), E(r["placement"]), num(int(r["threads"]) if r["threads"].isdigit() else None, r["threads"])]
                    + cells + [E(r["unit"])])
    return table(["metric", "placement", "threads"] + [E(v or "–") for v in g["variants"]] + ["unit"], rows)


def noise_table(e):
    by = {}
    for p in e["noise"]:
        by.setdefault((p["variant"], p["placement"], p["threads"], p["cpus"]), {})[p["metric"]] = p
    if not by:
        return ""
    metrics = sorted({p["metric"] for p in e["noise"]})
    rows = [[E(k[0]), E(k[1]), E(k[2]), E(k[3])] +
            [num(ms[m]["s"]["median"], f"{fmt(ms[m]['s']['median'])} (max {fmt(ms[m]['s']['max'])}) {ms[m]['unit']}")
             if m in ms else "" for m in metrics] for k, ms in sorted(by.items())]
    return (f'<details><summary>noise per point ({len(by)} points; guard readings, not results)</summary>'
            + table(["variant", "placement", "threads", "cpus"] + [E(m) for m in metrics], rows) + "</details>")


def published_html(e):
    out = []
    if e["shapes"]:
        rows = [[E(r["source"]), E(r["host"]), E(r["variant"]), E(f"{r['lo']} → {r['hi']}"),
                 E(f"×{r['pub_factor']:.2f} ({r['pub_word']})"), E(f"×{r['factor']:.2f} ({r['word']})"),
                 badge(r["verdict"]), E(r["why"])] for r in e["shapes"]]
        out.append("<h3>Does the shape reproduce?</h3>" + table(
            ["source", "published on", "variant", "threads", "published growth", "measured growth", "verdict", "why"], rows))
    if e["ratios"]:
        rows, unmeasured = [], [r for r in e["ratios"] if r["ratio"] is None]
        for r in (r for r in e["ratios"] if r["ratio"] is not None):
            where = r["threads"] if r["here"] is None or str(r["here"]) == r["threads"] else f"{r['threads']} → {r['here']} here"
            meas = E(f"×{r['ratio']:.2f} ({r['word']})") if r["ratio"] is not None else E(r["why"])
            rows.append([E(r["source"]), E(r["host"]), E(r["metric"]), E(r["name"]), E(where),
                         E(f"×{r['pub_ratio']:.2f} ({r['pub_word']})"), meas, badge(r["verdict"]),
                         E(r["why"]) if r["ratio"] is not None else ""])
        out.append("<h3>Published ratios between variants</h3>" + (table(
            ["source", "published on", "metric", "ratio", "threads", "published", "measured", "same direction", "why"], rows)
            if rows else '<p class="mute">none measured here</p>'))
        if unmeasured:
            out.append(f'<details><summary>{len(unmeasured)} published ratios not measured here</summary><ul>' + "".join(
                f"<li>{E(r['source'])} {E(r['name'])}: published ×{r['pub_ratio']:.2f} ({E(r['pub_word'])}); {E(r['why'])}</li>"
                for r in unmeasured) + "</ul></details>")
    if e["beside"]:
        rows = [[E(b["pub"]["source"]), E(b["pub"]["host"]), E(b["pub"]["variant"]), E(b["pub"]["threads"]),
                 E(b["pub"]["metric"]), num(float(b["pub"]["value"]), f"{fmt(float(b['pub']['value']))} {b['pub']['unit']}"),
                 num(b["s"]["median"], f"{fmt(b['s']['median'])} {b['unit']} ({b['label'] or '-'})"),
                 num(b["ratio"], f"{b['ratio']:.2f}"), num(b["s"]["n"], str(b["s"]["n"])), num(b["s"]["ci_pct"], ci(b["s"]))]
                for b in e["beside"]]
        out.append(f'<details><summary>published figures beside the measured ones ({len(rows)} rows)</summary>'
                   + table(["source", "published on", "variant", "threads", "metric", "published", "measured",
                            "measured / published", "n", "95% CI"], rows) + "</details>")
    return "".join(out)


def relations_html(e):
    """Per relation, the home-socket split in words, and the catalogued published machines beside."""
    r = e.get("relations")
    if not r:
        return ""
    body = [f"<h3>Per relation ({E(r['variant'])}, one_way_ns over pairs)</h3>" + table(
        ["relation", "pairs", "median ns", "p10", "p90"],
        [[E(x["relation"]), num(x["pairs"], str(x["pairs"])), num(x["median_ns"]), num(x["p10_ns"]), num(x["p90_ns"])]
         for x in r["rows"]])]
    body.append(f'<p class="mute">Home-node split: {E(r["home_note"])}.</p>')
    if r["split"]:
        body.append("<ul>" + "".join(f"<li>{E(x['relation'])}: do the halves differ? <b>{'yes' if x['differ'] else 'no'}</b>: "
                                     f"{E(x['words'])}</li>"
                                     for x in r["split"]) + "</ul>")
    b = r["beside"]
    if b.get("error"):
        body.append(f'<p class="warn">{E(b["error"])}</p>')
    elif b["machines"]:
        ms = b["machines"]
        cell = lambda x: num(x["median_ns"], f"{fmt(x['median_ns'])} ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])})") if x else "–"  # noqa: E731
        body.append("<h3>Beside the published machines</h3>" + table(
            ["relation", "this run"] + [f'{E(m["cpu"])}<br><span class="badge">{E(m["uarch"])}'
                                        + (f" · same {E(m['same'])}" if m["same"] else "") + "</span>" for m in ms],
            [[E(rel), cell(b["here"].get(rel))] + [cell(m["rows"].get(rel)) for m in ms] for rel in b["relations"]],
            sortable=False))
        body.append('<p class="mute">Median ns (p10–p90) over pairs; same vendor and family first. Sources: '
                    + "; ".join(f"{E(m['cpu'])}: {E(m['cite'])}" for m in ms) + " (CAS ping-pong, mean over samples).</p>")
    return "".join(body)


def marks(e):
    items = []
    for p, metrics in e["suspect_points"]:
        i = next(i for i, q in enumerate(e["points"]) if q is p)
        items.append(f'<li class="sus">suspect: <a href="#{E(pid(e["name"], i))}">{E(p["variant"] or "–")} '
                     f'{E(p["placement"])} t{E(p["threads"])}</a> ({E(", ".join(metrics))}) — {E(p["s"]["suspect"])}</li>')
    items += [f'<li class="sus">{E(b["variant"] or "–")} {E(b["placement"])} t{E(b["threads"])}: {E(b["words"])}</li>'
              for b in e["rate_bound"]]
    items += [f'<li class="goal">{E(s)}</li>' for s in goals.sentences(e["goals"])]
    items += [f"<li>re-measured: {E(s)}" + (f' (<a href="{E(href(raw + "/"))}">discarded attempt</a>)' if raw else "") + "</li>"
              for s, raw in zip(e["remeasured"], e["remeasured_raw"])]
    items += [f"<li>failed: {E(s)}</li>" for s in e["failed"]]
    items += [f"<li>skipped: {E(s)}</li>" for s in e["skipped"]]
    items += [f"<li>not confident: {E(str(c.get('variant', '')))} {E(str(c.get('placement', '')))} "
              f"t{E(str(c.get('threads', '')))} {E(str(c.get('metric', '')))}: n={E(str(c.get('n')))}, "
              f"CI ±{E(str(c.get('ci_pct')))}%</li>" for c in e["unconfident"]]
    items += [f"<li class=\"mute\">{E(s)}</li>" for s in e["missing_charts"]]
    if len(items) > 12:      # a matrix of disturbed pairs must not push the charts off the screen
        return (f'<details><summary>{len(items)} marks: suspect, re-measured, failed, skipped points</summary>'
                f'<ul class="marks">{"".join(items)}</ul></details>')
    return f'<ul class="marks">{"".join(items)}</ul>' if items else ""


def bold(text):
    """A sentence of reporting/scaling.py, escaped, its **words** in bold."""
    parts = E(text).split("**")
    return "".join(f"<b>{x}</b>" if i % 2 else x for i, x in enumerate(parts))


def numa_html(n):
    """A node x node memory matrix's verdict and the firmware's distance table (reporting/numa.py)."""
    if not n:
        return ""
    out = "".join(f"<p>{E(line)}</p>" for line in n["lines"])
    if n["distances"]:
        head, rows = numa.distance_table(n["distances"])
        out += ("<p class=\"mute\">Firmware distances (<code>numactl --hardware</code>, env/numa.txt; 10 = local):</p>"
                + table([E(h) for h in head], [[E(c) for c in r] for r in rows], sortable=False))
    return out


def scaling_html(sc):
    """How the command scales, in words, then the numbers the words rest on (reporting/scaling.py)."""
    if not sc:
        return ""
    rows = [[E(r["placement"]), num(r["threads"]), num(r["s"]["median"], f"{fmt(r['s']['median'])} {sc['unit']}"),
             num(r["s"]["n"]), num(r["speedup"], f"×{r['speedup']:.2f} (×{r['lo']:.2f}–×{r['hi']:.2f})"),
             num(r["eff"], f"{r['eff'] * 100:.0f}% ({r['eff_lo'] * 100:.0f}–{r['eff_hi'] * 100:.0f}%)"),
             E(r["doubt"])] for r in sc["rows"]]
    return ('<h3>How it scales</h3><ul class="scaling">' + "".join(f"<li>{bold(s)}</li>" for s in sc["sentences"])
            + f'</ul><p class="mute">Speedup of {E(sc["metric"])} ({E(sc["better"])} is better) over the '
            f'placement\'s fewest threads; efficiency = speedup / ideal; scaling stops where efficiency is below '
            f'{sc["threshold"] * 100:.0f}% over its whole 95% CI. Words resting on a suspect point or one with '
            'fewer than 3 repeats are inconclusive.</p>'
            + table(["placement", "threads", f"{E(sc['metric'])} median", "n", "speedup (95% CI)",
                     "efficiency (95% CI)", "doubt"], rows, num=(1, 2, 3, 4, 5)))


def experiment_html(m, e):
    n_sus = len(e["suspect"])
    head = (f'<h2>{E(e["name"])}</h2><p class="badge">{len(e["points"])} points · '
            f'{n_sus} suspect · {len(e["remeasured"])} re-measured · {len(e["skipped"])} skipped · '
            f'data: <a href="./data/{E(e["name"])}.csv">data/{E(e["name"])}.csv</a> · raw: '
            f'<a href="./raw/{E(e["name"])}/">raw/{E(e["name"])}/</a></p>')
    charts = [draw([("", e, False)], k, mt, f"{e['name']}: {mt}", m["run"]) for k, mt in dict.fromkeys(e["charts"])]
    body = [head, marks(e)]
    if any(charts):
        body.append('<div class="charts">' + "".join(f"<figure style=\"margin:0\">{c}</figure>" for c in charts if c) + "</div>")
    body.append(scaling_html(e.get("scaling")))
    body.append(numa_html(e.get("numa")))
    rec = (e.get("relations") or {}).get("imported")
    if rec:     # every published number shown names where it was published
        body.append(f'<p class="warn">Published numbers, not measured here: {E(str(rec.get("source", "?")))} '
                    f'(file {E(str(rec.get("file", "?")))}).</p>')
    if not e["points"]:
        return section(e, "".join(body) + "<p>No measured rows.</p>")
    if e["glance"]:
        body.append("<h3>At a glance</h3>" + glance_table(e["glance"]) +
                    '<p class="mute">Median over repeats (95% CI of the median as ±%); ⚠ = a suspect repeat.</p>')
    body.append(relations_html(e))
    body.append(published_html(e))
    if e["table"]:      # a matrix's pairs are all in the heatmap: no empty table
        body.append(f'<details{" open" if len(e["table"]) <= 12 else ""}><summary>every point: median, min–max, n, '
                    f'95% CI, raw folders and commands ({len(e["table"])} rows)</summary>' + points_table(e) + "</details>")
    if e["pair_rows"]:
        body.append(f'<p class="mute">{e["pair_rows"]} per-pair rows are in the heatmap (hover a cell) and the CSV.</p>')
    body.append(noise_table(e))
    if e["perf"]:
        body.append("<p>perf top symbols: " + " ".join(
            f'<a href="{E(href(os.path.relpath(p, m["run"])))}">{E(os.path.basename(os.path.dirname(p)))}</a>' for p in e["perf"]) + "</p>")
    if e["spec"]:
        body.append("<details><summary>spec as run</summary><pre>" + E("\n".join(e["spec"])) + "</pre></details>")
    return section(e, "".join(body))


def section(e, html):
    return f'<section id="exp-{E(e["name"])}">{html}</section>'


def env_html(h):
    rows = "".join(f"<tr><th>{E(k)}</th><td>{E(v)}</td></tr>" for k, v in h["rows"])
    build = f"<pre>{E(h['build'])}</pre>" if h["build"] else '<span class="mute">not recorded</span>'
    return (f'<table>{rows}<tr><th>build</th><td>{build}</td></tr></table>'
            '<p class="mute">Everything else (lstopo XML, lscpu, versions, NUMA distances, configs) is in '
            '<a href="env/">env/</a>.</p>')


def disturbed(exps):
    """A banner when much of the run was measured while the host was busy: verdicts will say so too."""
    total = sum(len(e["points"]) for e in exps)
    bad = sum(len(e["suspect"]) for e in exps)
    if not total or bad / total < 0.25:
        return ""
    return (f'<p class="warn">⚠ {bad} of {total} points have suspect repeats: the interference guard saw steal or '
            'other processes on their CPUs (reasons per point below). Verdicts that rest on them are '
            '<b>inconclusive</b>; measure again on a quiet host for an answer.</p>')


def report(m):
    exps = m["experiments"]
    tally = (f'{sum(len(e["points"]) for e in exps)} points · {sum(len(e["suspect"]) for e in exps)} suspect · '
             f'{sum(len(e["remeasured"]) for e in exps)} re-measured · {sum(len(e["skipped"]) for e in exps)} skipped · '
             f'{sum(len(e["failed"]) for e in exps)} failed · {len(m["not_measured"])} experiments not measured')
    body = [f'<h1>Scaling lab run {E(m["name"])}</h1>',
            f'<p class="host">{E(m["host"]["one_line"])}</p>',
            f'<p class="badge">{E(tally)}</p>',
            "".join(f'<p class="warn">⚠ {E(w)}.</p>' for w in m["host"].get("warnings", [])),
            disturbed(exps),
            (f'<p class="mute">Sweep complete · command <code>{E(m["command"])}</code> · journal: {E(m["journal"])}</p>'
             if m["state"] == "complete" else
             f'<p class="mute">Imported published matrix, not measured here · command <code>{E(m["command"])}</code></p>'
             if m["state"] == "imported" else
             f'<p class="warn">Sweep state: {E(m["state"])} (the numbers below are what was measured so far) · '
             f'command <code>{E(m["command"])}</code> · journal: {E(m["journal"])}</p>'),
            "<h2 style=\"border:0;margin-top:14px\">Does each story's claim hold here?</h2>", stories_table(m),
            '<p class="mute">yes / no judge the story\'s claim at the spans measured here, from the 95% CIs of the medians involved. '
            '<b>inconclusive</b>: a compared median\'s 95% CI straddles the threshold, a point has fewer than 3 '
            'repeats, or a point is suspect (disturbed by steal or other processes). Hover a verdict for why.</p>',
            "<nav>" + "".join(f'<a href="#exp-{E(e["name"])}">{E(e["name"])}</a>' for e in m["experiments"])
            + '<a href="#env">environment</a></nav>']
    body += [experiment_html(m, e) for e in m["experiments"]]
    if m["not_measured"]:
        body.append("<h2>Not measured</h2><ul>" + "".join(
            f"<li>{E(x)}: {E(w)}</li>" for x, w in sorted(m["not_measured"].items())) + "</ul>")
    body.append('<h2 id="env">Environment</h2>' + env_html(m["host"]))
    body.append('<p class="mute">Written by scripts/report.py from data/*.csv, sweep/ and env/ of this folder; '
                'report.md holds the same numbers as text.</p>')
    return page(f"Scaling lab run {m['name']}", "\n".join(body))


# --- compare.html -----------------------------------------------------------------------------------
def ratio_row(r):
    k = r["key"]
    return [E(k[1]), E(k[2]), num(int(k[3]) if k[3].isdigit() else None, k[3]), E(k[4]),
            num(r["a"]["median"], f"{fmt(r['a']['median'])} {k[5]} ({ci(r['a'])})"),
            num(r["b"]["median"], f"{fmt(r['b']['median'])} {k[5]} ({ci(r['b'])})"),
            num(r["ratio"], f"{r['ratio']:.3f}"), num(r["p"], "–" if r["p"] != r["p"] else f"{r['p']:.3g}"),
            f'<span class="v v-{"yes" if r["sig"] == "significant" else "–"}">{E(r["sig"])}</span>'
            + (f' <span class="badge">{r["skipped"]} suspect repeats left out</span>' if r["skipped"] else "")]


def compare(ma, mb, cmp):
    na, nb = ma["name"], mb["name"]
    body = [f"<h1>{E(na)} vs {E(nb)}</h1>",
            f'<p class="host"><b>A</b> {E(ma["host"]["one_line"])}<br><b>B</b> {E(mb["host"]["one_line"])}</p>']
    body += [f'<p class="warn">⚠ {E(w)}</p>' for w in cmp["warnings"]]
    keys = [k for k, _v in ma["host"]["rows"]]
    ha, hb = dict(ma["host"]["rows"]), dict(mb["host"]["rows"])
    # rows where the hosts differ stand out: that is what the comparison is about
    rows = "".join(f'<tr{" class=differs" if ha.get(k) != hb.get(k) else ""}><th>{E(k)}</th>'
                   f"<td>{E(ha.get(k, ''))}</td><td>{E(hb.get(k, ''))}</td></tr>" for k in keys)
    rows += (f"<tr><th>sweep</th><td>{E(ma['state'])} · <code>{E(ma['command'])}</code></td>"
             f"<td>{E(mb['state'])} · <code>{E(mb['command'])}</code></td></tr>")
    bld = lambda h: f"<pre>{E(h['build'])}</pre>" if h["build"] else '<span class="mute">not recorded</span>'  # noqa: E731
    body.append(f'<h2 style="border:0">The two hosts</h2><table><tr><th></th><th>A: <a href="{E(ma["run"])}/report.html">{E(na)}</a></th>'
                f'<th>B: <a href="{E(mb["run"])}/report.html">{E(nb)}</a></th></tr>{rows}'
                f'<tr><th>build</th><td>{bld(ma["host"])}</td><td>{bld(mb["host"])}</td></tr></table>')
    if cmp.get("relations"):
        cell = lambda x: num(x["median_ns"], f"{fmt(x['median_ns'])} ns ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])}, {x['pairs']} pairs)") if x else "–"  # noqa: E731
        r0 = cmp["relations"][0]
        body.append(f'<h2 id="relations">Core-to-core latency by relation</h2><p class="mute">A: {E(r0["exp_a"])}, '
                    f'B: {E(r0["exp_b"])}; median over pairs (p10–p90). The matrices differ in size: compared by '
                    'relation, not by CPU pair.</p>' + table(
                        ["relation", "A", "B", "B / A"],
                        [[E(r["relation"]), cell(r["a"]), cell(r["b"]),
                          num(r["ratio"], "–" if r["ratio"] is None else f"{r['ratio']:.2f}")] for r in cmp["relations"]]))
    exps_b = {e["name"]: e for e in mb["experiments"]}
    for ea in ma["experiments"]:
        eb = exps_b.get(ea["name"])
        if not eb:
            continue
        charts = [draw([("A ", ea, False), ("B ", eb, True)], k, mt, f"{ea['name']}: {mt} (A solid, B dashed/light)")
                  for k, mt in dict.fromkeys(ea["charts"]) if k != "heatmap"]
        body.append(f'<h2 id="exp-{E(ea["name"])}">{E(ea["name"])}</h2>')
        if any(charts):
            body.append('<div class="charts">' + "".join(f'<figure style="margin:0">{c}</figure>' for c in charts if c) + "</div>")
        charted = {mt for _k, mt in ea["charts"]}
        mine = [r for r in cmp["rows"] if r["key"][0] == ea["name"]]
        head = ["variant", "placement", "threads", "metric", "A median (CI)", "B median (CI)", "B / A", "p (Welch)",
                "difference"]
        shown = [ratio_row(r) for r in mine if r["key"][4] in charted]
        rest = [ratio_row(r) for r in mine if r["key"][4] not in charted]
        if shown:
            body.append(table(head, shown))
        if rest:
            body.append(f'<details{" open" if not shown else ""}><summary>{"other metrics" if shown else "every metric"}'
                        f' ({len(rest)} rows)</summary>' + table(head, rest) + "</details>")
        noise = [r for r in cmp["noise"] if r["key"][0] == ea["name"]]
        if noise:
            body.append(f"<details><summary>noise per point, A vs B ({len(noise)} rows; not results)</summary>" + table(
                ["variant", "placement", "threads", "metric", "A", "B"],
                [[E(r["key"][1]), E(r["key"][2]), E(r["key"][3]), E(r["key"][4]),
                  num(r["a"]["median"], f"{fmt(r['a']['median'])} {r['key'][5]}") if r["a"] else "–",
                  num(r["b"]["median"], f"{fmt(r['b']['median'])} {r['key'][5]}") if r["b"] else "–"]
                 for r in noise]) + "</details>")
    body.append(f'<p class="mute">{len(cmp["rows"])} points in common; {cmp["only_a"]} only in A, {cmp["only_b"]} only in B. '
                'Welch\'s t-test over the repeats not marked suspect; p &lt; 0.05 is called significant. '
                'Noise metrics (steal, foreign CPU time, involuntary switches, MHz) are never in the ratios.</p>')
    return page(f"{na} vs {nb}", "\n".join(body))
