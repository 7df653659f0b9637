"""report.md from the run's view (lab/report/view.py): the same tables as report.html, as text. This
file says only how a block looks in markdown."""

from lab.core.term import visible
from lab.report import view


def cell(c):
    """A cell as markdown text: bold, code and the note in brackets; a `|` or a line break would cut the row."""
    t = f"`{c.text}`" if c.code else c.text
    t = f"**{t}**" if c.strong and t else t
    if c.note:
        t += f" ({c.note})"
    if c.items and not c.fold:         # a row's links, as names
        t += " (" + ", ".join(i.text for i in c.items) + ")"
    return t.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def table(t):
    shown = [i for i, c in enumerate(t.columns) if not c.html_only]
    out = [f"#### {t.title}", ""] if t.title else []
    if t.fold:
        out += [f"<details{' open' if t.open else ''}><summary>{t.fold}</summary>", ""]
    out.append("| " + " | ".join(cell(view.Cell(t.columns[i].name, note=t.columns[i].note)) for i in shown) + " |")
    out.append("|" + "".join("---:|" if t.columns[i].numeric else "---|" for i in shown))
    out += ["| " + " | ".join(cell(r.cells[i]) for i in shown) + " |" for r in t.rows]
    if t.fold:
        out += ["", "</details>"]
    return out + ([""] + [t.note] if t.note else []) + [""]


def paragraph(p):
    out = [p.text.replace("\n", " "), ""] if p.text else []
    return out + [f"- {i}" for i in p.items] + ([""] if p.items else [])


def figure(f):
    return [f"![{f.alt}]({f.path})", ""]


def blocks(items):
    """The view's blocks as markdown lines."""
    out = []
    for b in items:
        if b.kind == "section":
            out += ([("## " if b.level == 2 else "#### ") + b.title, ""] if b.title else []) + blocks(b.blocks)
        else:
            out += {"table": table, "paragraph": paragraph, "figure": figure}[b.kind](b)
    return out


def environment(m):
    return blocks([view.environment(m.host)])


def perf_tables(run, e, most=8):
    out = []
    fence = "`" * 3
    for top in e.perf[:most]:     # read by the model through the safe reader (model.perf_tops)
        out += ["", f"<details><summary>perf: top symbols of {top['point']}</summary>", "", fence]
        out += [ln.rstrip().replace(fence, "'" * 3) for ln in top["text"].splitlines()] + [fence, "</details>"]
    if len(e.perf) > most:
        out.append(f"\n({len(e.perf) - most} more profiles under raw/{e.name}/.)")
    return out


def render(m):
    f = view.frame(m)
    lines = [f"# Scaling lab run {m.name}", "",
             f"{f.head} · command `{f.command}`" + (f" · journal: {f.journal}" if f.journal else ""), "",
             f"Host: {m.host.one_line}. An HTML version of this report: `report.html`.", "", f.tally, ""]
    lines += [f"**Warning:** {w}.\n" for w in f.warnings]
    lines += blocks([view.stories(m)] if m.stories else [])
    lines += environment(m)
    for e in m.experiments:
        lines += [f"## {e.name}", ""]
        if e.spec:
            lines += ["```", *e.spec, "```", ""]
        lines += [f"- {k.head}{k.label}{k.tail}" + (f": {k.reason}" if k.reason else "") for k in view.marks(e)]
        lines.append("")
        lines += blocks(view.figures(m.path, e))
        rec = (e.relations or {}).get("imported")
        if rec:     # every published number shown names where it was published
            lines += [f"Published numbers, not measured here: {rec.get('source', '?')} "
                      f"(file {rec.get('file', '?')}).", ""]
        lines += blocks(view.experiment(e))
        if not e.points:
            lines += ["No measured rows.", ""]
        lines += perf_tables(m.path, e)
        lines.append("")
    if m.not_measured:
        lines += ["## Not measured", ""] + [f"- {x}: {why}" for x, why in sorted(m.not_measured.items())] + [""]
    # A received name's control characters are shown as \xNN, never left for a terminal or viewer to obey.
    return visible("\n".join(lines), lines=True) + "\n"


def comparison(ma, mb, cmp):
    """compare.py's page: two run models and their comparison (lab/report/comparison.py)."""
    na, nb = ma.name, mb.name
    out = [f"# {na} vs {nb}", "", f"A = `{na}`, B = `{nb}`.", ""]
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## A"] + environment(ma)[1:] + ["## B"] + environment(mb)[1:]
    out += ["## Points measured by both", ""] + blocks([view.compare_points(cmp["rows"])])
    out += blocks([b for b in [view.compare_relations(cmp)] if b])
    out += [f"{len(cmp['rows'])} points in common; {cmp['only_a']} only in A, {cmp['only_b']} only in B "
            "(placements one host cannot satisfy, or experiments one run did not include).", ""]
    if cmp["noise"]:
        out += ["## Noise per point (not results)", ""] + blocks([view.compare_noise(cmp["noise"])])
    return visible("\n".join(out), lines=True) + "\n"
