"""The report's view: every section of report.md / report.html built ONCE from the run model
(lab/report/model.py) as plain objects, which the writers only draw (lab/report/markdown.py says how a
row looks as text, lab/report/html_page.py through the Jinja2 templates in templates/).

- `Table`: a title, columns, rows of `Cell`s (value to sort by, text, optional link, flag, note);
- `Paragraph`: a sentence or a list of them; `Figure`: an image file of the run folder;
- `Section`: a titled list of those blocks; `Mark`: a line of an experiment's marks (suspect, failed …).

A new section of an experiment is one builder function of the experiment model appended to
EXPERIMENT_SECTIONS: both writers pick it up, in that order. The run's own blocks (stories(),
environment()) and the comparisons' (fleet_*, compare_*) are builders here too; each page's layout
places them. Charts are built in lab/report/chartmodel.py."""
import os
import re
from dataclasses import dataclass, field

from lab.core.term import visible
from lab.report import chartmodel, goals, numa
from lab.report.fmt import ci, fmt, spread
from lab.why import usl
from lab.why.model import NO_FLAMES


@dataclass
class Cell:
    text: str = ""
    value: float | None = None      # what a numeric column sorts by (None: by its text)
    link: str | None = None          # a link into the run folder or the page
    flag: str | None = None          # "suspect", or "badge" (a verdict word shown as a coloured badge)
    note: str = ""                   # shown beside the text: in brackets in markdown, a second line in HTML
    tip: str = ""                    # a tooltip (HTML only): the reasons behind a short mark
    strong: bool = False
    code: bool = False
    command: str = ""                # a list item's command line (the repeats)
    items: list = field(default_factory=list)   # sub-cells: links in a row, or a folded list
    fold: str = ""                   # items folded under this summary (HTML only: a point's repeats)


@dataclass
class Column:
    name: str
    numeric: bool = False
    note: str = ""                   # a second line under the name
    html_only: bool = False          # details only the page has room for (a row's repeats)
    link: str | None = None          # the name links there (a host's own report)


@dataclass
class Row:
    cells: list
    id: str | None = None            # a chart point links here
    flag: str | None = None          # "differs": a row where hosts differ stands out


@dataclass
class Table:
    kind = "table"
    title: str
    columns: list
    rows: list
    note: str = ""                   # a sentence under the table
    fold: str = ""                   # folded under this summary ("": shown open)
    open: bool = False
    sortable: bool = True
    id: str | None = None


@dataclass
class Paragraph:
    kind = "paragraph"
    text: str = ""
    items: list = field(default_factory=list)   # a bulleted list (bold between ** **)
    flag: str = ""                   # "", "mute", "warn"


@dataclass
class Figure:
    kind = "figure"
    path: str                        # relative to the run folder
    alt: str
    ours: bool = False               # drawn by the lab's own tools in this run of the report: may be inlined


@dataclass
class Mark:
    """One line of an experiment's marks (suspect, re-measured, failed, skipped points, goals)."""
    head: str
    label: str = ""                  # the point it is about (linked to its row in HTML)
    link: str | None = None
    tail: str = ""
    reason: str = ""
    cls: str = ""                    # "sus", "goal", "mute"
    attach: tuple | None = None      # (text, link) of a further link (a discarded attempt's raw folder)


@dataclass
class Section:
    kind = "section"
    title: str
    blocks: list
    level: int = 3


def num(x, text=None, **kw):
    """A numeric cell: sorts by x, shows text (fmt(x) by default)."""
    v = None if x is None or x != x else x
    return Cell(text if text is not None else fmt(x), value=v, **kw)


def tnum(t):
    """A thread count as a numeric cell (a non-number sorts as text)."""
    return num(int(t) if str(t).isdigit() else None, str(t))


def cols(*names, numeric=()):
    return [Column(n, numeric=i in numeric) for i, n in enumerate(names)]


def pid(exp, i):
    """The id of a point's row: the charts' markers link to it."""
    return f"pt-{exp}-{i}"


def href(path):
    """A link into the run folder: relative, so a name like `javascript:…` stays a file name."""
    return path if path.startswith(("#", "./", "../")) else "./" + path


def numeric_threads(k):
    """Sort key of (variant, placement, threads, …): threads as numbers (2 before 10), one rule for both writers."""
    return (k[0], k[1], int(k[2]) if str(k[2]).isdigit() else 0) + tuple(k[3:])


STORIES = "Does each story's claim hold here?"
NO_STORY = ("No seed story's experiment is in this run (runner-empty, cache-get, channel, c2c…): nothing to set "
            "beside the published effects.")


# --- run sections -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """What opens both pages (report.md and report.html), one owner: the tally, the warnings (the host's,
    and a run measured while the host was busy), and the sweep's state: its kind (ok, imported, warn), its
    words, the command and the journal (None for an import)."""
    tally: str
    warnings: tuple
    state: str
    head: str
    command: str
    journal: object


DISTURBED_SHARE = 0.25      # a run with this share of its points suspect is said to have been measured busy


def frame(m):
    exps = m.experiments
    total, bad = sum(len(e.points) for e in exps), sum(len(e.suspect) for e in exps)
    tally = (f'{total} points · {bad} suspect · {sum(len(e.remeasured) for e in exps)} re-measured · '
             f'{sum(len(e.skipped) for e in exps)} skipped · {sum(len(e.failed) for e in exps)} failed · '
             f'{len(m.not_measured)} experiments not measured')
    warnings = list(m.host.warnings)
    if total and bad / total >= DISTURBED_SHARE:
        warnings.append(f"{bad} of {total} points have suspect repeats: the interference guard saw steal or other "
                        "processes on their CPUs (reasons per point below). Verdicts that rest on them are "
                        "inconclusive; measure again on a quiet host for an answer")
    if m.state == "complete":
        state, head, journal = "ok", "Sweep complete", m.journal
    elif m.state == "imported":
        rec = m.host.imported or {}     # a tool's import names its format and source; a c2c matrix neither
        what = f"Imported {rec['source']}" if rec.get("format") and rec.get("source") else "Imported published matrix"
        state, head, journal = "imported", f"{visible(str(what))}, not measured here", None
    else:
        state, head, journal = "warn", f"Sweep state: {m.state} (the numbers below are what was measured so far)", \
            m.journal
    return Frame(tally, tuple(warnings), state, head, m.command, journal)


def stories(m):
    if not m.stories:
        return None
    rows = []
    for s in m.stories:
        rows.append(Row([
            Cell(f"{s.source} {s.title}", items=[Cell(x, link=f"#exp-{x}") for x in s.experiments]),
            Cell(s.claim), Cell(s.published or "–"), Cell(s.measured or "–"),
            Cell(s.verdict, flag="badge", note=s.why, tip=s.why, strong=True),
            Cell(s.cause, note=s.cause_why, tip=s.cause_why),
        ]))
    details = [f"{s.source}: " + "; ".join(f"{c[0]}: {c[1]} ({c[2]})" for c in s.checks)
               for s in m.stories if s.checks]
    table = Table("", cols("story", "claim", "published", "measured here", "verdict", "cause"),
                  rows, id="verdicts", sortable=False,
                  note="yes / no judge the story's claim at the spans measured here, from the 95% CIs of the "
                       "medians involved. A verdict is inconclusive when a compared median's 95% CI straddles the "
                       "threshold, a point has fewer than 3 repeats, or a point is suspect (disturbed by steal or "
                       "other processes; see docs/design.md). cause: whether the why=1 evidence names the seed's cause "
                       "(found / not found / no evidence; the rules: docs/design.md, \"The stories' causes\").")
    return Section(STORIES, [table] + ([Paragraph("Per-point comparisons with the published figures (details in each "
                                              "experiment; they do not decide the claim):", items=details,
                                              flag="mute")] if details else []), level=2)


def environment(h):
    """The host's rows, then one row per instrument's build (env/build.txt)."""
    rows = []
    for k, v in h.rows:
        if k == "host kind":       # the first word (vm, bare-metal, container) is what a reader must not miss
            kind, _, rest = v.partition(" ")
            rows.append(Row([Cell(k), Cell(kind, strong=True, note=rest.removeprefix("(").removesuffix(")"))]))
        else:
            rows.append(Row([Cell(k), Cell(v)]))
    builds = [ln.split(": ", 1) for ln in (h.build or "").splitlines() if ": " in ln]
    # every line of env/build.txt but the compiler wrapper's and the compiler's defaults is an instrument
    rows += [Row([Cell("build"), Cell(f"{name}: {how}", code=True)]) for name, how in builds
             if name != "wrapper" and not name.endswith(" defaults")] or [Row([Cell("build"), Cell("not recorded")])]
    return Section("Environment", [Table("", cols("", ""), rows, sortable=False,
                                         note="Everything else (lstopo XML, lscpu, versions, NUMA distances, "
                                              "configs) is in env/.")], level=2)


PLANNED = re.compile(r"^(\S+) threads=(\d+): (adaptive|budget): (.*)$")
PLAN_WORDS = {"adaptive": "the adaptive plan did not need them", "budget": "left out to fit the budget"}


def folded_skips(skipped):
    """The skipped points, a line each, but those the adaptive plan or the budget left out folded into one
    line per placement and kind (an adaptive curve of 256 candidates leaves ~30): the thread counts, and
    the first point's reason (each point's own is in the journal's skipped events)."""
    out, groups = [], {}
    for s in skipped:
        m = PLANNED.match(s)
        if not m:
            out.append(s)
            continue
        key = (m.group(1), m.group(3))
        if key not in groups:
            groups[key] = {"key": key, "threads": [], "first": m.group(4)}
            out.append(groups[key])
        groups[key]["threads"].append(int(m.group(2)))
    return [s if isinstance(s, str) else folded(*s["key"], sorted(s["threads"]), s["first"]) for s in out]


def folded(placement, kind, threads, first):
    if len(threads) == 1:
        return f"{placement} threads={threads[0]}: {kind}: {first}"
    return (f"{placement} at {len(threads)} thread counts ({', '.join(map(str, threads))}): {PLAN_WORDS[kind]} "
            f"(the first: {first}; each one's reason: the journal's skipped events)")


def marks(e):
    """What the reader must know before the numbers: suspect points, rate-bound points, goals,
    re-measured, failed, skipped and not-confident points, charts that could not be drawn."""
    out = []
    for p, metrics in e.suspect_points:
        i = next(i for i, q in enumerate(e.points) if q is p)
        out.append(Mark("suspect: ", f"{p.variant or '–'} {p.placement} t{p.threads}", f"#{pid(e.name, i)}",
                        f" ({', '.join(metrics)})", p.summary.suspect, "sus"))
    out += [Mark("", f"{b['variant'] or '–'} {b['placement']} t{b['threads']}", reason=b["words"], cls="sus")
            for b in e.rate_bound]
    out += [Mark(s, cls="goal") for s in goals.sentences(e.goals)]
    out += [Mark(f"re-measured: {s}", attach=("discarded attempt", href(raw + "/")) if raw else None)
            for s, raw in zip(e.remeasured, e.remeasured_raw)]
    out += [Mark(f"failed: {s}") for s in e.failed]
    out += [Mark(f"skipped: {s}") for s in folded_skips(e.skipped)]
    out += [Mark(f"not confident: {c.get('variant', '')} {c.get('placement', '')} t{c.get('threads', '')} "
                 f"{c.get('metric', '')}: n={c.get('n')}, CI ±{c.get('ci_pct')}%"
                 + (" (stopped at its floor: the budget's re-plan)" if c.get("at_floor") is True else ""))
            for c in e.unconfident]
    out += [Mark(s, cls="mute") for s in e.missing_charts]
    return out


# --- experiment sections ----------------------------------------------------------------------------
def scaling(e):
    """How the command scales, in words, then the numbers the words rest on (lab/report/scaling.py)."""
    sc = e.scaling
    if not sc:
        return None
    words = Paragraph(items=list(sc.sentences))
    how = Paragraph(f"Speedup of {sc.metric} ({sc.better} is better) over the placement's fewest threads; "
                    f"efficiency = speedup / ideal; scaling stops where efficiency is below "
                    f"{sc.threshold * 100:.0f}% over its whole 95% CI. Words resting on a suspect point or one "
                    "with fewer than 3 repeats are inconclusive.", flag="mute")
    rows = [Row([Cell(r.placement), tnum(r.threads),
                 num(r.summary.median, f"{fmt(r.summary.median)} {sc.unit}"), num(r.summary.n, str(r.summary.n)),
                 num(r.speedup, f"×{r.speedup:.2f} (×{r.lo:.2f}–×{r.hi:.2f})"),
                 num(r.eff, f"{r.eff * 100:.0f}% ({r.eff_lo * 100:.0f}–{r.eff_hi * 100:.0f}%)"),
                 Cell(r.doubt)]) for r in sc.rows]
    t = Table("", cols("placement", "threads", f"{sc.metric} median", "n", "speedup (95% CI)",
                       "efficiency (95% CI)", "doubt", numeric=(1, 2, 3, 4, 5)), rows)
    return Section("How it scales", [words, how, t])


def numa_notes(e):
    """A node x node memory matrix's verdict and the firmware's distance table (lab/report/numa.py)."""
    n = e.numa
    if not n:
        return None
    blocks = [Paragraph(line) for line in n["lines"]]
    if n["distances"]:
        head, rows = numa.distance_table(n["distances"])
        blocks.append(Table("", [Column(head[0])] + [Column(h, numeric=True) for h in head[1:]],
                            [Row([Cell(c) for c in r]) for r in rows], sortable=False,
                            note="Firmware distances (numactl --hardware, env/numa.txt; 10 = local)."))
    return Section("", blocks)


def glance(e):
    """The charted metrics at a glance, a cell per variant, pooled as the charts pool (chartmodel.pooled:
    several CPU sets of one row are the median of their medians), so the table and the bars agree."""
    g = e.glance
    if not g or not e.points:
        return None
    members = {}
    for p in e.points:
        members.setdefault((p.metric, p.unit, p.placement, p.threads, p.variant), []).append(p)
    rows = []
    for r in g["rows"]:
        cells = []
        for v in g["variants"]:
            ms = members.get((r["metric"], r["unit"], r["placement"], r["threads"], v))
            if not ms:
                cells.append(Cell(""))
                continue
            s = chartmodel.pooled(ms).summary
            # one text for both writers: the median, then its 95% CI where n >= 3, else how few repeats
            t = fmt(s.median) + (f" (median of {len(ms)} CPU sets)" if len(ms) > 1 else
                                    f" ({ci(s)})" if s.n >= 3 else f" (n={s.n})")
            cells.append(num(s.median, t + (" ⚠" if s.suspect else ""),
                             flag="suspect" if s.suspect else None, tip=s.suspect))
        rows.append(Row([Cell(r["metric"]), Cell(r["placement"]), tnum(r["threads"])] + cells + [Cell(r["unit"])]))
    columns = [Column("metric"), Column("placement"), Column("threads", True)] + \
        [Column(v or "–", True) for v in g["variants"]] + [Column("unit")]
    return Table("At a glance", columns, rows,
                 note="Median over repeats (95% CI of the median as ±%, or n when fewer than 3 repeats; over "
                      "several CPU sets the median of their medians, as the charts); ⚠ = a suspect repeat "
                      "(listed above).")


def repeats(p):
    """The repeats of a point: raw folder, value, suspect reason, command (the page folds them in its row)."""
    return [Cell(f"r{r.repeat}", link=href(r.raw + "/") if r.raw else None, note=fmt(r.value),
                 tip=r.suspect, flag="suspect" if r.suspect else None, command=r.command or "")
            for r in p.repeats]


def medians(e):
    """Every point (a matrix's pairs are in the heatmap): median, min–max, spread, n, 95% CI, repeats."""
    if not e.table or not e.points:
        return None
    mem = e.mem_column       # the node(s) the instrument said the memory was on
    in_table = {id(p) for p in e.table}      # by identity: `p in list` of dicts is quadratic
    rows = []
    for i, p in enumerate(e.points):
        if id(p) not in in_table:
            continue
        s = p.summary
        bad = sum(1 for r in p.repeats if r.suspect)
        mark = Cell(f"⚠ {bad} suspect", flag="suspect", note=s.suspect, tip=s.suspect) if bad else Cell("")
        place = Cell(p.placement, note=f"measured once, as {p.shared}" if p.shared else "")
        rows.append(Row([Cell(p.variant), place, tnum(p.threads), Cell(p.cpus)]
                        + ([Cell(p.mem_node or "–")] if mem else [])
                        + [Cell(p.metric), num(s.median), Cell(f"{fmt(s.min)} – {fmt(s.max)}"),
                           num(s.spread_pct, spread(s)), num(s.n, str(s.n)), num(s.ci_pct, ci(s)),
                           Cell(p.unit), mark, Cell(items=repeats(p), fold=f"{len(p.repeats)} repeat"
                                                       + ("s" if len(p.repeats) != 1 else ""))], id=pid(e.name, i)))
    columns = cols("variant", "placement", "threads", "cpus", numeric=(2,)) + \
        ([Column("memory node")] if mem else []) + \
        [Column("metric"), Column("median", True), Column("min – max"), Column("spread", True), Column("n", True),
         Column("95% CI", True), Column("unit"), Column(""), Column("repeats: raw folder, command", html_only=True)]
    fold = f"every point: median, min–max, n, 95% CI, raw folders and commands ({len(rows)} rows)"
    note = f"({e.pair_rows} per-pair rows are in the heatmap and the CSV.)" if e.pair_rows else ""
    return Table("Medians over repeats", columns, rows, fold=fold, open=len(rows) <= 12, note=note)


def noise(e):
    """The guard's readings per point (steal, foreign CPU time, …): not results, folded."""
    by = {}
    for p in e.noise:
        by.setdefault((p.variant, p.placement, p.threads, p.cpus), {})[p.metric] = p
    if not by:
        return None
    metrics = sorted({p.metric for p in e.noise})
    rows = [Row([Cell(k[0]), Cell(k[1]), tnum(k[2]), Cell(k[3])] +
                [num(ms[m].summary.median, f"{fmt(ms[m].summary.median)} (max {fmt(ms[m].summary.max)}) {ms[m].unit}")
                 if m in ms else Cell("") for m in metrics])
            for k, ms in sorted(by.items(), key=lambda kv: numeric_threads(kv[0]))]
    return Table("", cols("variant", "placement", "threads", "cpus", numeric=(2,)) +
                 [Column(f"{m} (median, max)", True) for m in metrics], rows,
                 fold=f"noise per point (not results), {len(by)} points; guard readings")


def relations(e):
    """Per-relation medians, the home-socket split and the catalogued machines beside them."""
    r = e.relations
    if not r:
        return None
    blocks = [Table(f"Per relation ({r['variant']}, one_way_ns over pairs)",
                    cols("relation", "pairs", "median", "p10", "p90", numeric=(1, 2, 3, 4)),
                    [Row([Cell(x["relation"]), num(x["pairs"], str(x["pairs"])),
                          num(x["median_ns"], f"{fmt(x['median_ns'])} ns"), num(x["p10_ns"]), num(x["p90_ns"])])
                     for x in r["rows"]]),
              Paragraph(f"Home-node split: {r['home_note']}.", flag="mute",
                        items=[f"{x['relation']}: do the halves differ? "
                               f"**{'yes' if x['differ'] else 'no'}**: {x['words']}"
                               for x in r["split"]])]
    b = r["beside"]
    if b.get("error"):
        blocks.append(Paragraph(b["error"], flag="warn"))
    elif b["machines"]:
        ms = b["machines"]

        def cell(x):
            return num(x["median_ns"], f"{fmt(x['median_ns'])} ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])})") \
                if x else Cell("–")
        blocks.append(Table(
            "Beside the published machines (median ns, p10–p90; same vendor and family first)",
            [Column("relation"), Column("this run", True)] +
            [Column(m["cpu"], True, note=m["uarch"] + (f" · same {m['same']}" if m["same"] else "")) for m in ms],
            [Row([Cell(rel), cell(b["here"].get(rel))] + [cell(m["rows"].get(rel)) for m in ms])
             for rel in b["relations"]],
            sortable=False))
        blocks.append(Paragraph(items=[f"{m['cpu']}: {m['cite']} (CAS, mean over samples)" +
                                       (f"; same {m['same']} as this run's CPU" if m["same"] else "") for m in ms]))
    return Section("", blocks)


def published(e):
    """The experiment's published figures: shapes, ratios between variants, figures beside the measured."""
    blocks = []
    if e.shapes:
        blocks.append(Table("Does the shape reproduce?",
                            cols("source", "host", "variant", "threads", "published growth", "measured growth",
                                 "shape reproduces", "why"),
                            [Row([Cell(r["source"]), Cell(r["host"]), Cell(r["variant"]),
                                  Cell(f"{r['lo']} → {r['hi']}"),
                                  Cell(f"×{r['pub_factor']:.2f} ({r['pub_word']})"),
                                  Cell(f"×{r['factor']:.2f} ({r['word']})"),
                                  Cell(r["verdict"], flag="badge"), Cell(r["why"])]) for r in e.shapes],
                            note="Growth is the rate at the larger thread count over the rate at the smaller one; "
                                 "near-linear means at least 75% of ideal, flat or falling less than "
                                 "×1.15. The verdict is "
                                 "inconclusive when the growth's 95% CI spans two of these words."))
    if e.ratios:
        rows = []
        # the ratios measured here first; a published one this run could not measure says why in its row
        for r in sorted(e.ratios, key=lambda r: r["ratio"] is None):
            where = (r["threads"] if r["here"] is None or str(r["here"]) == r["threads"]
                     else f"{r['threads']} → {r['here']} here")
            cell = f"×{r['ratio']:.2f} ({r['word']})" if r["ratio"] is not None else r["why"]
            rows.append(Row([Cell(r["source"]), Cell(r["host"]), Cell(r["metric"]), Cell(r["name"]), Cell(str(where)),
                             Cell(f"×{r['pub_ratio']:.2f} ({r['pub_word']})"), Cell(cell),
                             Cell(r["verdict"], flag="badge"),
                             Cell(r["why"] if r["ratio"] is not None else "")]))
        blocks.append(Table("Published ratios between variants",
                            cols("source", "host", "metric", "ratio", "threads", "published", "measured",
                                 "same direction", "why"), rows,
                            note="Lab series for the published variants: reference/variants.csv. "
                                 "\"about equal\" is within 3%."))
    if e.beside:
        rows = [Row([Cell(b["pub"]["source"]), Cell(b["pub"]["host"]), Cell(b["pub"]["variant"]),
                     Cell(b["pub"]["threads"]), Cell(b["pub"]["metric"]),
                     num(float(b["pub"]["value"]), f"{fmt(float(b['pub']['value']))} {b['pub']['unit']}"),
                     num(b["s"].median, f"{fmt(b['s'].median)} {b['unit']} ({b['label'] or '-'})"),
                     num(b["ratio"], f"{b['ratio']:.2f}"), num(b["s"].n, str(b["s"].n)),
                     num(b["s"].ci_pct, ci(b["s"]))])
                for b in e.beside]
        blocks.append(Table("Beside the published figures",
                            cols("source", "host", "variant", "threads", "metric", "published", "measured",
                                 "measured / published", "n", "95% CI", numeric=(5, 6, 7, 8, 9)), rows,
                            fold=f"published figures beside the measured ones ({len(rows)} rows)"))
    return Section("", blocks) if blocks else None


# The order both writers show an experiment's sections in, after its charts and marks. A new section
# (e.g. "Why it stops scaling") is one function of the experiment model returning a Table, Paragraph,
# Figure or Section (or None) appended here.
def why(e):
    """Why it stops scaling (lab/report/causes.py): per curve the verdict with its evidence (why=1), the
    stacks whose cost per unit of work grew most, the differential flame graph, then the USL model of
    every curve. Every name in it comes from evidence files: the writers escape it."""
    w = e.why
    if not w:
        return None
    flames = e.flames or NO_FLAMES
    blocks = []
    # What this host could not give comes first, once (a host without tracepoints: one line, with the
    # command that gives them), so a verdict below is read knowing what it rests on.
    missing = {}
    with_evidence = [c for c in w.curves if c.diff is not None]
    for c in with_evidence:
        for m in flames.missing(c):
            missing.setdefault(m, []).append(c)
    for m, curves in missing.items():
        where = "" if len(curves) == len(with_evidence) else " (" + ", ".join(w.label(c) for c in curves) + ")"
        blocks.append(Paragraph(f"{m[0].upper()}{m[1:]}{where}.", flag="mute"))
    for c in w.curves:
        v = c.verdict
        label = w.label(c)
        blocks.append(Paragraph(v.text))
        unit = "op" if v.unit == "op" else "run"
        rows = [Row([Cell(r.name, code=True), Cell(r.kind),
                     num(r.cost_base, f"{r.cost_base:.3g}"), num(r.cost_knee, f"{r.cost_knee:.3g}"),
                     num(r.growth, f"{r.growth:+.3g}"),
                     num(r.share, f"{r.share * 100:.0f}%" if r.share is not None else ""),
                     Cell(f"{r.interval[0]:+.3g} to {r.interval[1]:+.3g}" if r.interval else "none"),
                     Cell(r.flag, flag=None if r.flag == "finding" else "suspect"), Cell(r.cls)])
                for r in v.stacks]
        if rows:
            blocks.append(Table(f"{label}: stacks whose cost grew ({v.base_threads} → {v.knee_threads} "
                                f"threads, µs per {unit})",
                                cols("stack", "kind", f"at {v.base_threads}", f"at {v.knee_threads}",
                                     "growth", "share of the growth", "growth 95% CI", "finding", "class",
                                     numeric=(2, 3, 4, 5)), rows, fold=f"{label}: the stacks"))
        path = flames.paths.get((c.variant, v.placement))
        if path:
            blocks.append(Figure(path, f"differential flame graph, {label}: {v.base_threads} → "
                                       f"{v.knee_threads} threads (red grew, blue shrank, grey: no finding)",
                                 ours=True))
    if not w.evidence:
        blocks.append(Paragraph("No evidence of the cause was gathered: run the sweep again with why=1 "
                                "(`./lab scale why=1 …`, `./lab sweep SPEC why=1`) for on-CPU and off-CPU stacks, "
                                "futex waits and run-queue delay per point.", flag="mute"))
    rows = []
    for (variant, placement), f in sorted(w.usl.items()):
        label = [Cell(variant)] if w.several else []
        if hasattr(f, "sigma"):
            rows.append(Row(label + [Cell(placement), Cell(f.shape),
                                     num(f.sigma, f"{f.sigma:.3g} ({f.sigma_ci[0]:.3g}–{f.sigma_ci[1]:.3g})"),
                                     num(f.kappa, f"{f.kappa:.3g} ({f.kappa_ci[0]:.3g}–{f.kappa_ci[1]:.3g})"),
                                     num(f.peak_n, f"{f.peak_n:.3g}" if f.peak_n else "none (κ ≈ 0)"),
                                     Cell(usl.words(f))]))
        else:
            rows.append(Row(label + [Cell(placement), Cell("no fit"), Cell(""), Cell(""), Cell(""),
                                     Cell(usl.words(f))]))
    names = (["variant"] if w.several else []) + ["placement", "shape", "σ (95% CI)", "κ (95% CI)", "peak N*",
                                                  "in words"]
    k = len(names) - 6
    blocks.append(Table("USL model of each curve", cols(*names, numeric=(k + 2, k + 3, k + 4)), rows,
                        note=f"X(N) = λN / (1 + σ(N−1) + κN(N−1)) fitted to every repeat of {w.metric} "
                             "(docs/design.md, USL model); under 4 thread counts there is no fit."))
    return Section("Why it stops scaling", blocks)


EXPERIMENT_SECTIONS = [scaling, why, numa_notes, glance, medians, noise, relations, published]


def experiment(e):
    """[block] of one experiment, in the registry's order (empty sections left out)."""
    return [b for b in (f(e) for f in EXPERIMENT_SECTIONS) if b]


def figures(run, e):
    """The experiment's charts as image files of the run folder (report.md's PNGs)."""
    return [Figure(f"{base}.png", f"{e.name}-{kind}-{metric}") for kind, metric, base in e.chart_files
            if os.path.exists(os.path.join(run, f"{base}.png"))]


# --- fleets: N runs side by side (lab/report/nway.py) --------------------------------------------------
def host_cell(s, unit, suspect=0):
    """A host's median with its CI; ⚠ when some of its repeats are suspect (the host's report says why)."""
    if not s:
        return Cell("–")
    return num(s.median, f"{fmt(s.median)} {unit} ({ci(s)})" + (f" ⚠{suspect} suspect" if suspect else ""))


def fleet_hosts(runs, links=()):
    """The hosts' environments side by side; a row where they differ is flagged (what the comparison is about)."""
    href_of = dict(links)
    keys = list(dict.fromkeys(k for _l, m in runs for k, _v in m.host.rows))
    envs = [dict(m.host.rows) for _l, m in runs]
    rows = [Row([Cell(k, strong=True)] + [Cell(e.get(k, "")) for e in envs],
                flag="differs" if len({e.get(k) for e in envs}) > 1 else None) for k in keys]
    rows.append(Row([Cell("sweep", strong=True)] + [Cell(m.state, note=m.command) for _l, m in runs]))
    rows.append(Row([Cell("build", strong=True)] + [Cell(m.host.build or "not recorded", code=bool(m.host.build))
                                                   for _l, m in runs]))
    return Table("", [Column("")] + [Column(lab, link=href_of.get(lab)) for lab, _m in runs], rows, sortable=False)


def fleet_points(cmp, name):
    """Per point of one experiment: each host's median (95% CI) and its ratio to the first host."""
    rows = []
    for r in (r for r in cmp["rows"] if r["key"][0] == name):
        k = r["key"]
        cells = []
        for i, (s, q, n) in enumerate(zip(r["cells"], r["ratios"], r["suspect"])):
            c = host_cell(s, k[5], n)
            if q is not None and i:
                c.text += f" ×{q:.3f}"
            cells.append(c)
        rows.append(Row([Cell(k[0]), Cell(k[1]), Cell(k[2]), tnum(k[3]), Cell(k[4])] + cells))
    if not rows:
        return None
    return Table("", cols("experiment", "variant", "placement", "threads", "metric", numeric=(3,)) +
                 [Column(f"{lab} median (CI)", True) for lab in cmp["labels"]], rows)


def fleet_noise(cmp, name):
    """The guard's readings per host, never as ratios."""
    rows = [Row([Cell(r["key"][1]), Cell(r["key"][2]), tnum(r["key"][3]), Cell(r["key"][4])] +
                [num(s.median, f"{fmt(s.median)} {r['key'][5]}") if s else Cell("–") for s in r["cells"]])
            for r in cmp["noise"] if r["key"][0] == name]
    if not rows:
        return None
    return Table("", cols("variant", "placement", "threads", "metric", numeric=(2,)) +
                 [Column(lab, True) for lab in cmp["labels"]], rows,
                 fold=f"noise per point ({len(rows)} rows; not results)")


# --- two runs: compare.py (lab/report/comparison.py) -----------------------------------------------------
def compare_points(rows, fold="", open_=False):
    """Points measured by both runs: A and B medians with their CIs, B / A, Welch's p, the word."""
    out = []
    for r in rows:
        k = r["key"]
        out.append(Row([Cell(k[0]), Cell(k[1]), Cell(k[2]), tnum(k[3]), Cell(k[4]),
                        num(r["a"].median, f"{fmt(r['a'].median)} {k[5]} ({ci(r['a'])})"),
                        num(r["b"].median, f"{fmt(r['b'].median)} {k[5]} ({ci(r['b'])})"),
                        num(r["ratio"], f"{r['ratio']:.3f}"), num(r["p"], "–" if r["p"] != r["p"] else f"{r['p']:.3g}"),
                        Cell(r["sig"], flag="badge",
                             note=f"{r['skipped']} suspect repeats left out" if r["skipped"] else "")]))
    return Table("", cols("experiment", "variant", "placement", "threads", "metric", "A median (CI)", "B median (CI)",
                          "B / A", "p (Welch)", "difference", numeric=(3, 5, 6, 7, 8)), out, fold=fold, open=open_)


def compare_relations(cmp):
    """Core-to-core latency by relation in both runs (matrices of different sizes compare by relation)."""
    if not cmp.get("relations"):
        return None

    def cell(x):
        return num(x["median_ns"], f"{fmt(x['median_ns'])} ns "
                                   f"({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])}, {x['pairs']} pairs)") \
            if x else Cell("–")
    r0 = cmp["relations"][0]
    return Section(f"Core-to-core latency by relation (A: {r0['exp_a']}, B: {r0['exp_b']})", [
        Paragraph("Median over pairs (p10–p90). The matrices differ in size: compared by relation, not by CPU pair.",
                  flag="mute"),
        Table("", cols("relation", "A median (p10–p90, pairs)", "B median (p10–p90, pairs)", "B / A",
                       numeric=(1, 2, 3)),
              [Row([Cell(r["relation"]), cell(r["a"]), cell(r["b"]),
                    num(r["ratio"], "–" if r["ratio"] is None else f"{r['ratio']:.2f}")]) for r in cmp["relations"]])],
        level=2)


def compare_noise(rows, fold=""):
    """Noise readings of both runs, side by side, never a ratio."""
    def side(s, unit):
        return num(s.median, f"{fmt(s.median)} {unit}") if s else Cell("–")
    return Table("", cols("experiment", "variant", "placement", "threads", "metric", "A", "B", numeric=(3, 5, 6)),
                 [Row([Cell(k[0]), Cell(k[1]), Cell(k[2]), tnum(k[3]), Cell(k[4]),
                       side(r["a"], k[5]), side(r["b"], k[5])])
                  for r in rows for k in [r["key"]]], fold=fold)
