"""report.md from the run's view (reporting/view.py): the same tables as report.html, as text. This
file says only how a block looks in markdown."""
import os

from reporting import goals, view
from reporting.fmt import ci, fmt


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
    return blocks([view.environment(m["host"])])


def perf_tables(run, e, most=8):
    out = []
    for path in e["perf"][:most]:
        point = os.path.basename(os.path.dirname(path))
        out += ["", f"<details><summary>perf: top symbols of {point}</summary>", "", "```"]
        out += [ln.rstrip() for ln in open(path)] + ["```", "</details>"]
    if len(e["perf"]) > most:
        out.append(f"\n({len(e['perf']) - most} more profiles under raw/{e['name']}/.)")
    return out


def render(m):
    lines = [f"# Scaling lab run {m['name']}", "",
             f"Sweep state: **{m['state']}**. Command: `{m['command']}`", "",
             f"Host: {m['host']['one_line']}. An HTML version of this report: `report.html`.", ""]
    lines += [f"**Warning:** {w}.\n" for w in m["host"].get("warnings", [])]
    lines += blocks([view.stories(m)] if m["stories"] else [])
    lines += environment(m)
    for e in m["experiments"]:
        lines += [f"## {e['name']}", ""]
        if e["spec"]:
            lines += ["```"] + e["spec"] + ["```", ""]
        lines += [f"- skipped: {s}" for s in e["skipped"]]
        lines += [f"- suspect: {p['variant'] or '–'} {p['placement']} t{p['threads']} ({', '.join(ms)}): {p['s']['suspect']}"
                  for p, ms in e["suspect_points"]]
        lines += [f"- {b['variant'] or '–'} {b['placement']} t{b['threads']}: {b['words']}" for b in e["rate_bound"]]
        lines += [f"- {s}" for s in goals.sentences(e["goals"])]
        lines += [f"- re-measured: {s}" for s in e["remeasured"]]
        lines += [f"- failed: {s}" for s in e["failed"]]
        lines += [f"- not confident: {c.get('variant', '')} {c.get('placement', '')} t{c.get('threads', '')} "
                  f"{c.get('metric', '')}: n={c.get('n')}, CI ±{c.get('ci_pct')}%" for c in e["unconfident"]]
        lines.append("")
        lines += blocks(view.figures(m["run"], e))
        rec = (e.get("relations") or {}).get("imported")
        if rec:     # every published number shown names where it was published
            lines += [f"Published numbers, not measured here: {rec.get('source', '?')} (file {rec.get('file', '?')}).", ""]
        lines += [f"- {s}\n" for s in e["missing_charts"]]
        lines += blocks(view.experiment(e))
        if not e["points"]:
            lines += ["No measured rows.", ""]
        lines += perf_tables(m["run"], e)
        lines.append("")
    if m["not_measured"]:
        lines += ["## Not measured", ""] + [f"- {x}: {why}" for x, why in sorted(m["not_measured"].items())] + [""]
    return "\n".join(lines) + "\n"


def side(s, unit):
    """A noise median of one run, or "–" when that run did not record it (an old run)."""
    return f"{fmt(s['median'])} {unit}" if s else "–"


def comparison(ma, mb, cmp):
    """compare.py's page: two run models and their comparison (reporting/comparison.py)."""
    na, nb = ma["name"], mb["name"]
    out = [f"# {na} vs {nb}", "", f"A = `{na}`, B = `{nb}`.", ""]
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## A"] + environment(ma)[1:] + ["## B"] + environment(mb)[1:]
    out += ["## Points measured by both", "",
            "| experiment | variant | placement | threads | metric | A median | B median | B / A | p (Welch) | |",
            "|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in cmp["rows"]:
        k = r["key"]
        left = f" ({r['skipped']} suspect repeats left out)" if r["skipped"] else ""
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {fmt(r['a']['median'])} {k[5]} ({ci(r['a'])}) | "
                   f"{fmt(r['b']['median'])} {k[5]} ({ci(r['b'])}) | {r['ratio']:.3f} | {'–' if r['p'] != r['p'] else format(r['p'], '.3g')} | {r['sig']}{left} |")
    if cmp.get("relations"):
        cell = lambda x: f"{fmt(x['median_ns'])} ns ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])}, {x['pairs']} pairs)" if x else "–"  # noqa: E731
        r0 = cmp["relations"][0]
        out += ["", f"## Core-to-core latency by relation (A: {r0['exp_a']}, B: {r0['exp_b']})", "",
                "| relation | A median (p10–p90, pairs) | B median (p10–p90, pairs) | B / A |", "|---|---:|---:|---:|"]
        out += [f"| {r['relation']} | {cell(r['a'])} | {cell(r['b'])} | "
                f"{'–' if r['ratio'] is None else format(r['ratio'], '.2f')} |" for r in cmp["relations"]]
    out += ["", f"{len(cmp['rows'])} points in common; {cmp['only_a']} only in A, {cmp['only_b']} only in B "
            "(placements one host cannot satisfy, or experiments one run did not include).", ""]
    if cmp["noise"]:
        out += ["## Noise per point (not results)", "", "| experiment | variant | placement | threads | metric | A | B |",
                "|---|---|---|---|---|---:|---:|"]
        out += [f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {side(r['a'], k[5])} | {side(r['b'], k[5])} |"
                for r in cmp["noise"] for k in [r["key"]]] + [""]
    return "\n".join(out) + "\n"
