"""Inline SVG charts for the HTML pages (no script, no external font): scaling lines, grouped bars and
a CPU × CPU heatmap. Every point carries a tooltip (<title>) and links to its row in the page, where
its repeats, raw folders and commands are. Suspect points are hollow; whiskers are the median's 95% CI
where n ≥ 3, else min–max (dotted)."""
import math
from html import escape

from reporting import chartmodel
from reporting.fmt import fmt

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22")
W, H = 700, 330
L, R, T, B = 64, 200, 30, 46      # margins: the legend lives in the right one


def _nice_max(v):
    if v <= 0 or v != v:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _clip(x, lo, hi, ymax, Y, colour, dotted):
    """A whisker from lo to hi, cut at the top of the chart with a caret when the CI runs past every
    measured value (the scale follows the data, not a wide interval); the tooltip has the numbers."""
    dd = ' stroke-dasharray="2 2"' if dotted else ""
    out = f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{Y(lo):.1f}" y2="{Y(min(hi, ymax)):.1f}" stroke="{colour}"{dd}/>'
    if hi > ymax:
        y = Y(ymax)
        out += f'<path d="M{x - 4:.1f},{y + 6:.1f} L{x:.1f},{y:.1f} L{x + 4:.1f},{y + 6:.1f}" fill="none" stroke="{colour}"/>'
    return out


def tip(p, extra=""):
    s = p["s"]
    lines = [f"{p['variant'] or '–'} {p['placement']} · {p['threads']} threads · CPUs {p['cpus']}",
             f"{p['metric']}: median {fmt(s['median'])} {p['unit']} (min {fmt(s['min'])}, max {fmt(s['max'])}, n={s['n']}"
             + (f", 95% CI ±{s['ci_pct']:.1f}%" if s["ci_pct"] == s["ci_pct"] else "") + ")"]
    if s.get("suspect"):
        lines.append(f"suspect: {s['suspect']}")
    if extra:
        lines.append(extra)
    return "\n".join(lines)


def _frame(title, ylabel, ymax, x0, x1, out):
    out.append(f'<text x="{(x0 + x1) / 2:.0f}" y="18" class="ct">{escape(title)}</text>')
    for i in range(6):
        v = ymax * i / 5
        y = T + (H - T - B) * (1 - i / 5)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{x0 - 6}" y="{y + 4:.1f}" class="yt">{escape(fmt(v))}</text>')
    out.append(f'<text transform="translate(14,{(T + H - B) / 2:.0f}) rotate(-90)" class="yl">{escape(ylabel)}</text>')


def _legend(entries, out, note):
    """entries: (label, colour, dash)."""
    x, y = W - R + 16, T + 6
    for label, colour, dash in entries:
        d = ' stroke-dasharray="6 3"' if dash else ""
        out.append(f'<line x1="{x}" x2="{x + 22}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2.5"{d}/>'
                   f'<circle cx="{x + 11}" cy="{y}" r="3.5" fill="{colour}"/>'
                   f'<text x="{x + 28}" y="{y + 4}" class="lg">{escape(label[:26])}</text>')
        y += 17
    y += 6
    out.append(f'<circle cx="{x + 11}" cy="{y}" r="3.5" fill="#fff" stroke="#444" stroke-width="1.5"/>'
               f'<text x="{x + 28}" y="{y + 4}" class="lg">hollow = suspect</text>')
    for i, line in enumerate(note.split("\n") + ["dotted: min–max (n&lt;3)", "^ : CI runs off the scale"]):
        out.append(f'<text x="{x}" y="{y + 22 + 15 * i}" class="lg">{line}</text>')


def _marker(x, y, colour, p, href, extra=""):
    hollow = bool(p["s"].get("suspect"))
    fill = "#fff" if hollow else colour
    cls = "pt sus" if hollow else "pt"
    a = f'<a href="{escape(href)}">' if href else ""
    return (f'{a}<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 if hollow else 4}" fill="{fill}" stroke="{colour}" '
            f'stroke-width="{2 if hollow else 1}" class="{cls}"><title>{escape(tip(p, extra))}</title></circle>'
            f'{"</a>" if href else ""}')


def scaling(title, ylabel, series, ideal=False):
    """series: [{label, colour (index), dash, pts: [(point, href, extra)]}] → an SVG string."""
    xs = sorted({int(p["threads"]) for s in series for p, _h, _e in s["pts"]})
    if not xs:
        return ""
    logx = len(xs) > 2 and xs[-1] / max(xs[0], 1) >= 4
    def X(t):
        x0, x1 = L, W - R
        if len(xs) == 1:
            return (x0 + x1) / 2
        f = (math.log2(t) - math.log2(xs[0])) / (math.log2(xs[-1]) - math.log2(xs[0])) if logx \
            else (t - xs[0]) / (xs[-1] - xs[0])
        return x0 + 20 + (x1 - x0 - 40) * f
    top = max((p["s"]["max"] for s in series for p, _h, _e in s["pts"]), default=1)
    ideal_lines = []
    if ideal:
        for s in series:
            pts = sorted(s["pts"], key=lambda q: int(q[0]["threads"]))
            ideal_lines.append(sorted(chartmodel.ideal({int(q[0]["threads"]): q[0]["s"]["median"] for q in pts}).items()))
            top = max([top] + [v for _t, v in ideal_lines[-1]])
    ymax = _nice_max(top * 1.05)
    def Y(v):
        return T + (H - T - B) * (1 - v / ymax)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" class="chart" role="img" aria-label="{escape(title)}">']
    _frame(title, ylabel, ymax, L, W - R, out)
    for t in xs:
        out.append(f'<text x="{X(t):.1f}" y="{H - B + 18}" class="xt">{t}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" class="xl">threads</text>')
    for i, s in enumerate(series):
        c = PALETTE[s["colour"] % len(PALETTE)]
        pts = sorted(s["pts"], key=lambda q: int(q[0]["threads"]))
        if ideal:
            out.append('<polyline fill="none" stroke="{}" stroke-width="1" stroke-dasharray="2 4" points="{}"/>'.format(
                c, " ".join(f"{X(t):.1f},{Y(v):.1f}" for t, v in ideal_lines[i])))
        d = ' stroke-dasharray="6 3"' if s.get("dash") else ""
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2.2"{d} points="'
                   + " ".join(f"{X(int(p['threads'])):.1f},{Y(p['s']['median']):.1f}" for p, _h, _e in pts) + '"/>')
        for p, href, extra in pts:
            lo, hi, from_ci = chartmodel.whisker(p["s"])
            dotted = not from_ci
            x = X(int(p["threads"]))
            out.append(_clip(x, lo, hi, ymax, Y, c, dotted))
            out.append(_marker(x, Y(p["s"]["median"]), c, p, href, extra))
    _legend([(s["label"], PALETTE[s["colour"] % len(PALETTE)], s.get("dash")) for s in series], out,
            "whisker: 95% CI" + ("\nthin dots: ideal scaling" if ideal else ""))
    out.append("</svg>")
    return "\n".join(out)


def bars(title, ylabel, categories, variants):
    """categories: [(name, {variant_label: (point, href, extra)})]; variants: [(label, colour, hatched)]."""
    if not categories or not variants:
        return ""
    top = max((p["s"]["max"] for _c, cells in categories for p, _h, _e in cells.values()), default=1)
    ymax = _nice_max(top * 1.05)
    def Y(v):
        return T + (H - T - B) * (1 - v / ymax)
    x0, x1 = L, W - R
    cw = (x1 - x0) / len(categories)
    bw = min(40, cw * 0.8 / len(variants))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" class="chart" role="img" aria-label="{escape(title)}">']
    _frame(title, ylabel, ymax, x0, x1, out)
    for ci_, (cat, cells) in enumerate(categories):
        cx = x0 + cw * (ci_ + 0.5)
        if cw < 80:      # narrow categories: labels slanted so that they do not run into each other
            out.append(f'<text transform="translate({cx:.1f},{H - B + 12}) rotate(-25)" class="xt" '
                       f'style="text-anchor:end">{escape(cat[:18])}</text>')
        else:
            out.append(f'<text x="{cx:.1f}" y="{H - B + 18}" class="xt">{escape(cat[:24])}</text>')
        for vi, (label, colour, hatched) in enumerate(variants):
            if label not in cells:
                continue
            p, href, extra = cells[label]
            c = PALETTE[colour % len(PALETTE)]
            x = cx - bw * len(variants) / 2 + vi * bw
            y = Y(p["s"]["median"])
            hollow = bool(p["s"].get("suspect"))
            fill = "#fff" if hollow else c
            op = ' fill-opacity="0.45"' if hatched and not hollow else ""
            a = f'<a href="{escape(href)}">' if href else ""
            out.append(f'{a}<rect x="{x + 1:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" height="{Y(0) - y:.1f}" '
                       f'fill="{fill}"{op} stroke="{c}" stroke-width="{2 if hollow else 1}" '
                       f'class="{"bar sus" if hollow else "bar"}"><title>{escape(tip(p, extra))}</title></rect>'
                       f'{"</a>" if href else ""}')
            lo, hi, from_ci = chartmodel.whisker(p["s"])
            dotted = not from_ci
            out.append(_clip(x + bw / 2, lo, hi, ymax, Y, "#222", dotted))
    lx, ly = W - R + 16, T + 6
    for label, colour, hatched in variants:
        c = PALETTE[colour % len(PALETTE)]
        op = ' fill-opacity="0.45"' if hatched else ""
        out.append(f'<rect x="{lx}" y="{ly - 6}" width="22" height="12" fill="{c}"{op} stroke="{c}"/>'
                   f'<text x="{lx + 28}" y="{ly + 4}" class="lg">{escape(label[:26])}</text>')
        ly += 17
    out.append(f'<rect x="{lx}" y="{ly}" width="22" height="12" fill="#fff" stroke="#444" stroke-width="2"/>'
               f'<text x="{lx + 28}" y="{ly + 10}" class="lg">hollow = suspect</text>'
               f'<text x="{lx}" y="{ly + 30}" class="lg">whisker: 95% CI</text>'
               f'<text x="{lx}" y="{ly + 45}" class="lg">dotted: min–max (n&lt;3)</text>'
               f'<text x="{lx}" y="{ly + 60}" class="lg">^ : CI runs off the scale</text>')
    out.append("</svg>")
    return "\n".join(out)


def heatmap(title, unit, cells, order, bounds=(), mirror=True):
    """cells: {(a, b): (point, href)}; order: CPU numbers in display order; bounds: indexes i after which
    a topology domain changes (a line between order[i] and order[i + 1]); mirror: an unmeasured (a, b)
    shows (b, a) (a pair latency is symmetric; a CPU node x memory node cell is not)."""
    n = len(order)
    if not n:
        return ""
    size = min(48, max(6, 480 // n))
    vals = [p["s"]["median"] for p, _h in cells.values()]
    lo, hi = min(vals), max(vals)
    side = 60 + size * n
    width = max(side + 160, 460)
    # drawn at its own size: a small matrix is not blown up to the page's width
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {side + 40}" class="chart heat" '
           f'style="max-width:{width}px" role="img" aria-label="{escape(title)}">',
           f'<text x="{width / 2:.0f}" y="18" class="ct">{escape(title)}</text>']
    for i, a in enumerate(order):
        if n <= 32:
            out.append(f'<text x="52" y="{40 + i * size + size * 0.7:.1f}" class="yt">{a}</text>'
                       f'<text x="{60 + i * size + size / 2:.1f}" y="36" class="xt">{a}</text>')
        for j, b in enumerate(order):
            got = cells.get((a, b)) or (cells.get((b, a)) if mirror else None)
            if not got:
                continue
            p, href = got
            f = 0 if hi == lo else (p["s"]["median"] - lo) / (hi - lo)
            colour = f"rgb({255 - int(f * 128)},{247 - int(f * 247)},{236 - int(f * 236)})"
            a_ = f'<a href="{escape(href)}">' if href else ""
            out.append(f'{a_}<rect x="{60 + j * size}" y="{40 + i * size}" width="{size}" height="{size}" '
                       f'fill="{colour}" class="cell"><title>{escape(tip(p))}</title></rect>{"</a>" if href else ""}')
    for i in bounds:
        at = 60 + (i + 1) * size, 40 + (i + 1) * size
        out.append(f'<line x1="{at[0]}" y1="40" x2="{at[0]}" y2="{side - 20}" stroke="#000" stroke-width="1.5" class="border"/>'
                   f'<line x1="60" y1="{at[1]}" x2="{side}" y2="{at[1]}" stroke="#000" stroke-width="1.5" class="border"/>')
    out.append(f'<text x="{side + 10}" y="60" class="lg">{escape(fmt(lo))}–{escape(fmt(hi))} {escape(unit)}</text>'
               f'<text x="{side + 10}" y="76" class="lg">light = low</text>')
    out.append("</svg>")
    return "\n".join(out)
