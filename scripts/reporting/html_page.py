"""report.html and compare.html from the run model: one self-contained page each (inline CSS, inline
SVG charts, a few lines of inline script to sort tables and open a folded row when a chart point links
to it). Nothing is fetched: no font, no script, no image from elsewhere."""
import base64
import hashlib
import os
from html import escape as E

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from runfolder import RunFolder

from reporting import chartmodel, goals, numa, svg, view
from reporting.fmt import ci, fmt
from reporting.view import href, pid

# Autoescape on: a value from the run folder is text unless the code marks it Markup (our own SVG).
TEMPLATES = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
                        autoescape=True, keep_trailing_newline=True)

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


def page(title, body):
    """The page's shell (templates/page.html.j2) around a body of already-escaped HTML."""
    return TEMPLATES.get_template("page.html.j2").render(title=title, body=Markup(body), csp=CSP, css=Markup(CSS),
                                                         js=Markup(JS))


FIGURE_BYTES = 8 << 20      # an image larger than this is linked, not carried inside the page


def embed(run, fig):
    """A Figure of the run folder inside the page: an SVG the lab's own tools just drew (fig.ours) inline;
    any other PNG or SVG as a data: image (an <img> runs no script and fetches nothing); else a link."""
    path = os.path.join(run, fig.path)
    size = os.path.getsize(path) if os.path.isfile(path) and not os.path.islink(path) else None
    if size is None or size > FIGURE_BYTES:
        return Markup('<a href="{}">{}</a>').format(href(fig.path), fig.alt)
    with open(path, "rb") as f:
        data = f.read()
    if fig.path.endswith(".svg") and fig.ours:
        return Markup(data.decode("utf-8", "replace"))
    mime = {"png": "image/png", "svg": "image/svg+xml"}.get(fig.path.rsplit(".", 1)[-1])
    if not mime:
        return Markup('<a href="{}">{}</a>').format(href(fig.path), fig.alt)
    return Markup('<img class="chart" alt="{}" src="data:{};base64,{}">').format(
        fig.alt, mime, base64.b64encode(data).decode())


def blocks(run, items):
    """The view's blocks (reporting/view.py) as HTML, through templates/blocks.html.j2."""
    return TEMPLATES.get_template("blocks.html.j2").render(blocks=items, embed=lambda f: embed(run, f))


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


def mark(p, hrefs, prefix):
    """(pooled point, href, tooltip line) of a chart mark: it links the first point it pools."""
    first = (p.get("members") or [None])[0]
    if prefix:
        return p, "", f"run {prefix.strip()}"
    if first is None:
        return p, "", p.get("extra", "")
    return p, hrefs.get(id(first), ""), p.get("extra") or command_of(first)


def draw(run_label_sets, kind, metric, title, run=None):
    """run_label_sets: [(prefix, experiment model, dashed)] — one run for a report, two or more to compare.
    Every number comes from the chart objects of reporting/chartmodel.py, as gnuplot's do."""
    topo = RunFolder(run).topology() if run and kind == "heatmap" else None
    charts = [(prefix, e, dash, chartmodel.build(kind, e, metric, topo)) for prefix, e, dash in run_label_sets]
    charts = [c for c in charts if c[3] is not None]
    if not charts:
        return ""
    if kind in ("scaling", "speedup"):
        series, palette = [], {}
        for prefix, e, dash, ch in charts:
            hrefs = chart_points(e)
            for ln in ch.lines:
                c = palette.setdefault((ln.variant, ln.placement), len(palette))
                series.append({"label": prefix + ln.label, "colour": c, "dash": dash,
                               "pts": [mark(p, hrefs, prefix) for _t, p in sorted(ln.marks.items())]})
        if kind == "speedup":
            return svg.scaling(title + " (speedup; thin dots: ideal)", "speedup [×]", series, ideal=True)
        return svg.scaling(title, f"{metric} [{charts[0][3].unit}]", series,
                           ideal=charts[0][3].ideal and len(run_label_sets) == 1)
    if kind == "bars":
        cats, variants, palette = {}, [], {}
        for prefix, e, dash, ch in charts:
            hrefs = chart_points(e)
            for v in ch.variants:
                variants.append((f"{prefix}{v or metric}", palette.setdefault(v, len(palette)), dash))
            for (cat, v), p in ch.cells.items():
                cats.setdefault(cat, {})[f"{prefix}{v or metric}"] = mark(p, hrefs, prefix)
        variants.sort(key=lambda v: (v[1], v[2]))
        return svg.bars(title, f"{metric} [{charts[0][3].unit}]",
                        sorted(cats.items(), key=lambda c: chartmodel.category_order(c[0])), variants)
    if kind == "heatmap":
        _prefix, e, _dash, ch = charts[0]
        hrefs = chart_points(e)
        cells = {k: mark(p, hrefs, "")[:2] for k, p in ch.cells.items()}
        if ch.nodes:
            return svg.heatmap(f"{title} (rows: CPU node, columns: memory node)", ch.unit, cells, ch.order, mirror=False)
        png = RunFolder(run).chart(e["name"], "heatmap", metric, "png") if run else ""
        if len(ch.order) > HEATMAP_SVG_CPUS and os.path.exists(png):
            # A big matrix as SVG rects would weigh megabytes: the gnuplot PNG, inlined, stays self-contained.
            return embed(run, view.Figure(os.path.relpath(png, run), f"{title} heatmap, {len(ch.order)} CPUs"))
        return svg.heatmap(f"{title} ({ch.variant})", ch.unit, cells, ch.order, ch.bounds)
    return ""


# --- report.html ------------------------------------------------------------------------------------
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
    rec = (e.get("relations") or {}).get("imported")
    if rec:     # every published number shown names where it was published
        body.append(f'<p class="warn">Published numbers, not measured here: {E(str(rec.get("source", "?")))} '
                    f'(file {E(str(rec.get("file", "?")))}).</p>')
    body.append(blocks(m["run"], view.experiment(e)))
    if not e["points"]:
        body.append("<p>No measured rows.</p>")
    if e["perf"]:
        body.append("<p>perf top symbols: " + " ".join(
            f'<a href="{E(href(os.path.relpath(p, m["run"])))}">{E(os.path.basename(os.path.dirname(p)))}</a>' for p in e["perf"]) + "</p>")
    if e["spec"]:
        body.append("<details><summary>spec as run</summary><pre>" + E("\n".join(e["spec"])) + "</pre></details>")
    return section(e, "".join(body))


def section(e, html):
    return f'<section id="exp-{E(e["name"])}">{html}</section>'


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
            "<h2 style=\"border:0;margin-top:14px\">Does each story's claim hold here?</h2>",
            blocks(m["run"], view.stories(m).blocks if m["stories"] else [view.Paragraph(view.NO_STORY, flag="mute")]),
            "<nav>" + "".join(f'<a href="#exp-{E(e["name"])}">{E(e["name"])}</a>' for e in m["experiments"])
            + '<a href="#env">environment</a></nav>']
    body += [experiment_html(m, e) for e in m["experiments"]]
    if m["not_measured"]:
        body.append("<h2>Not measured</h2><ul>" + "".join(
            f"<li>{E(x)}: {E(w)}</li>" for x, w in sorted(m["not_measured"].items())) + "</ul>")
    body.append('<h2 id="env">Environment</h2>' + blocks(m["run"], view.environment(m["host"]).blocks))
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
