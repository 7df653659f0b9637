#!/usr/bin/env python3
"""Put two runs side by side (two machines, or before/after): every point both measured, the medians
with their 95% CI, B / A, and Welch's t-test over the repeats not marked suspect. Noise readings are
shown apart, never as ratios. Warns when the runs built different code or ran different specs.

  compare.py RUN_A RUN_B [OUT.md]     (also writes OUT.html beside OUT.md)

A point is (experiment, variant, placement, threads, metric); the CPU lists may differ between hosts,
which is the point of comparing them, so they are not matched.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reporting import html_page, markdown, model  # noqa: E402
from reporting.comparison import compare  # noqa: E402
from reporting.fmt import ci, fmt  # noqa: E402
from reporting.journal import JournalError  # noqa: E402
from term import visible  # noqa: E402


def side(s, unit):
    """A noise median of one run, or "–" when that run did not record it (an old run)."""
    return f"{fmt(s['median'])} {unit}" if s else "–"


def render_md(ma, mb, cmp):
    na, nb = ma["name"], mb["name"]
    out = [f"# {na} vs {nb}", "", f"A = `{na}`, B = `{nb}`.", ""]
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## A"] + markdown.environment(ma)[1:] + ["## B"] + markdown.environment(mb)[1:]
    out += ["## Points measured by both", "",
            "| experiment | variant | placement | threads | metric | A median | B median | B / A | p (Welch) | |",
            "|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in cmp["rows"]:
        k = r["key"]
        left = f" ({r['skipped']} suspect repeats left out)" if r["skipped"] else ""
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {fmt(r['a']['median'])} {k[5]} ({ci(r['a'])}) | "
                   f"{fmt(r['b']['median'])} {k[5]} ({ci(r['b'])}) | {r['ratio']:.3f} | {'–' if r['p'] != r['p'] else format(r['p'], '.3g')} | {r['sig']}{left} |")
    out += ["", f"{len(cmp['rows'])} points in common; {cmp['only_a']} only in A, {cmp['only_b']} only in B "
            "(placements one host cannot satisfy, or experiments one run did not include).", ""]
    if cmp["noise"]:
        out += ["## Noise per point (not results)", "", "| experiment | variant | placement | threads | metric | A | B |",
                "|---|---|---|---|---|---:|---:|"]
        out += [f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {side(r['a'], k[5])} | {side(r['b'], k[5])} |"
                for r in cmp["noise"] for k in [r["key"]]] + [""]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a_run, b_run = (os.path.abspath(x.rstrip("/")) for x in argv[:2])
    for r in (a_run, b_run):
        if not os.path.isdir(os.path.join(r, "data")):
            print(f"compare: {r} is not a run folder (no data/)", file=sys.stderr)
            return 2
    try:
        ma, mb = model.build(a_run), model.build(b_run)
    except (model.DataError, JournalError) as e:
        print(f"compare: {visible(e)}", file=sys.stderr)
        return 2
    cmp = compare(ma, mb)
    text = render_md(ma, mb, cmp)
    na, nb = ma["name"], mb["name"]
    dest = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(b_run), f"compare-{na}-vs-{nb}.md")
    html = (dest[:-3] if dest.endswith(".md") else dest) + ".html"
    with open(dest, "w") as f:
        f.write(text)
    with open(html, "w") as f:
        f.write(html_page.compare(ma, mb, cmp))
    print(visible(text, lines=True))    # the names and cells in it are the runs' own: shown, not obeyed
    for w in cmp["warnings"]:
        print(f"compare: warning: {visible(w)}", file=sys.stderr)
    print(f"compare: written to {visible(dest)} and {visible(html)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
