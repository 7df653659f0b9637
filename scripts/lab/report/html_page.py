"""report.html and compare.html from the run model: one self-contained page each (inline CSS, inline
SVG charts, a few lines of inline script to sort tables and open a folded row when a chart point links
to it). Nothing is fetched: no font, no script, no image from elsewhere."""
import base64
import hashlib
import os

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from lab.core.runfolder import RunFolder
from lab.report import chartmodel, svg, view
from lab.report.view import href, pid

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
.v{display:inline-block;white-space:nowrap;padding:1px 8px;border-radius:10px;font-weight:600;color:#fff;font-size:12px;background:#8c959f}
.v-yes,.v-significant{background:var(--yes)}.v-no{background:var(--no)}.v-inconclusive,.v-mixed{background:var(--inc)}
.v-–,.v-not{background:#8c959f}.stories td{font-size:14px}.stories td:first-child{font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:12px}
svg.chart,img.chart{width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px}
svg .ct{font:600 15px sans-serif;text-anchor:middle}svg .yt{font:12px sans-serif;text-anchor:end;fill:#444}
svg .xt{font:12px sans-serif;text-anchor:middle;fill:#444}svg .xl,svg .yl{font:13px sans-serif;text-anchor:middle}
svg .lg{font:12px sans-serif;fill:#333}svg .grid{stroke:#e6e9ed}svg a:hover circle,svg a:hover rect{stroke-width:3}
.marks li{margin:2px 0}.sus{color:var(--inc)}.warn{background:#fff8c5;border:1px solid #d4a72c;padding:8px 12px;border-radius:6px;margin:8px 0}
details>summary{cursor:pointer;color:#0969da;margin:4px 0}nav a{margin-right:12px}.badge{font-size:12px;color:var(--mute)}
tr.differs td{background:#fff8c5}
"""  # noqa: E501 (the CSS as the page embeds it)

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
    """A Figure of the run folder inside the page: an SVG the lab's own tools just drew (fig.ours) and
    that carries no script inline; any other PNG or SVG as a data: image (an <img> runs no script and
    fetches nothing); a file that is a link, lies outside the run folder, or is too big: a link."""
    path = os.path.join(run, fig.path)
    inside = os.path.realpath(path).startswith(os.path.realpath(run) + os.sep)
    size = os.path.getsize(path) if inside and os.path.isfile(path) and not os.path.islink(path) else None
    if size is None or size > FIGURE_BYTES:
        return Markup('<a href="{}">{}</a>').format(href(fig.path), fig.alt)
    with open(path, "rb") as f:
        data = f.read(FIGURE_BYTES + 1)
    if fig.path.endswith(".svg") and fig.ours and b"<script" not in data.lower():
        return Markup(data.decode("utf-8", "replace"))
    mime = {"png": "image/png", "svg": "image/svg+xml"}.get(fig.path.rsplit(".", 1)[-1])
    if not mime:
        return Markup('<a href="{}">{}</a>').format(href(fig.path), fig.alt)
    return Markup('<img class="chart" alt="{}" src="data:{};base64,{}">').format(
        fig.alt, mime, base64.b64encode(data).decode())


HEATMAP_SVG_CPUS = 64    # above this many CPUs a heatmap is inlined as the gnuplot PNG


# --- charts from the model --------------------------------------------------------------------------
def chart_points(e):
    """{id(point): href} for chart markers: the point's row in the table (or its raw folder)."""
    out = {}
    in_table = {id(p) for p in e.table}     # by identity: `p in list` of dicts is quadratic
    for i, p in enumerate(e.points):
        if id(p) in in_table:
            out[id(p)] = f"#{pid(e.name, i)}"
        else:
            raw = next((r.raw for r in p.repeats if r.raw), None)
            out[id(p)] = href(f"{raw}/") if raw else ""
    return out


def command_of(p):
    cmd = next((r.command for r in p.repeats if r.command), None)
    return f"command: {cmd}" if cmd else ""


def mark(p, hrefs, prefix):
    """(pooled point, href, tooltip line) of a chart mark: it links the first point it pools."""
    first = (p.members or [None])[0]
    if prefix:
        return p, "", f"run {prefix.strip()}"
    if first is None:
        return p, "", p.extra
    return p, hrefs.get(id(first), ""), p.extra or command_of(first)


def draw(run_label_sets, kind, metric, title, run=None):
    """run_label_sets: [(prefix, experiment model, dashed)] — one run for a report, two or more to compare.
    Every number comes from the chart objects of lab/report/chartmodel.py, as gnuplot's do."""
    topo = RunFolder(run).topology() if run and kind == "heatmap" else None
    charts = [(prefix, e, dash, chartmodel.build(kind, e, metric, topo)) for prefix, e, dash in run_label_sets]
    charts = [c for c in charts if c[3] is not None]
    if not charts:
        return ""
    title += chartmodel.left_out_words(charts[0][3])
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
            return svg.heatmap(f"{title} (rows: CPU node, columns: memory node)", ch.unit, cells, ch.order,
                               mirror=False)
        png = RunFolder(run).chart(e.name, "heatmap", metric, "png") if run else ""
        if len(ch.order) > HEATMAP_SVG_CPUS and os.path.exists(png):
            # A big matrix as SVG rects would weigh megabytes: the gnuplot PNG, inlined, stays self-contained.
            return embed(run, view.Figure(os.path.relpath(png, run), f"{title} heatmap, {len(ch.order)} CPUs"))
        return svg.heatmap(f"{title} ({ch.variant})", ch.unit, cells, ch.order, ch.bounds)
    return ""


# --- report.html ------------------------------------------------------------------------------------
def experiment(m, e):
    """What templates/report.html.j2 shows of one experiment: its marks, charts and view blocks."""
    charts = [draw([("", e, False)], k, mt, f"{e.name}: {mt}", m.path) for k, mt in dict.fromkeys(e.charts)]
    return {"e": e, "marks": view.marks(e), "charts": [Markup(c) for c in charts if c],   # svg.py escapes its text
            "imported": (e.relations or {}).get("imported"), "blocks": view.experiment(e),
            "perf": [(href(os.path.relpath(t["path"], m.path)), t["point"]) for t in e.perf]}


def report(m):
    exps = m.experiments
    body = TEMPLATES.get_template("report.html.j2").render(
        m=m, frame=view.frame(m), exps=[experiment(m, e) for e in exps],
        stories=view.stories(m).blocks if m.stories else [view.Paragraph(view.NO_STORY, flag="mute")],
        env=view.environment(m.host).blocks, embed=lambda f: embed(m.path, f))
    return page(f"Scaling lab run {m.name}", body)


# --- compare.html -----------------------------------------------------------------------------------
def compare(ma, mb, cmp):
    na, nb = ma.name, mb.name
    labels = [(f"A: {na}", ma), (f"B: {nb}", mb)]
    exps_b = {e.name: e for e in mb.experiments}
    exps = []
    for ea in ma.experiments:
        eb = exps_b.get(ea.name)
        if not eb:
            continue
        charts = [draw([("A ", ea, False), ("B ", eb, True)], k, mt, f"{ea.name}: {mt} (A solid, B dashed/light)")
                  for k, mt in dict.fromkeys(ea.charts) if k != "heatmap"]
        charted = {mt for _k, mt in ea.charts}
        mine = [r for r in cmp["rows"] if r["key"][0] == ea.name]
        shown = [r for r in mine if r["key"][4] in charted]
        rest = [r for r in mine if r["key"][4] not in charted]
        noise = [r for r in cmp["noise"] if r["key"][0] == ea.name]
        exps.append({"name": ea.name, "charts": [Markup(c) for c in charts if c],
                     "blocks": ([view.compare_points(shown)] if shown else []) +
                     ([view.compare_points(rest, f"{'other metrics' if shown else 'every metric'} ({len(rest)} rows)",
                                           open_=not shown)] if rest else []) +
                     ([view.compare_noise(noise, f"noise per point, A vs B ({len(noise)} rows; not results)")]
                      if noise else [])})
    # the hosts' rows where they differ stand out: that is what the comparison is about
    body = TEMPLATES.get_template("compare.html.j2").render(
        na=na, nb=nb, ma=ma, mb=mb, cmp=cmp, exps=exps, relations=view.compare_relations(cmp),
        hosts=view.fleet_hosts(labels, [(lab, m.path + "/report.html") for lab, m in labels]), embed=None)
    return page(f"{na} vs {nb}", body)
