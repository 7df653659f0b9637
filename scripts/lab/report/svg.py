"""Inline SVG charts for the HTML pages (no script, no external font): scaling lines, grouped bars and a
CPU × CPU heatmap, built as ElementTree elements, so every text and attribute is escaped by the
serialiser. Every point carries a tooltip (<title>) and links to its row in the page, where its
repeats, raw folders and commands are. Suspect points are hollow; whiskers are the median's 95% CI
where n ≥ 3, else min–max (dotted)."""
import math
import xml.etree.ElementTree as ET

from lab.report import chartmodel
from lab.report.fmt import fmt

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22")
W, H = 700, 330
L, R, T, B = 64, 200, 30, 46      # margins: the legend lives in the right one


def el(parent, tag, text=None, **attrs):
    """One SVG element under parent. The tree is serialised by ElementTree, which escapes every text and
    attribute: nothing a run folder supplies (names, units, cells) can become markup. Attribute names
    with a dash are written with an underscore (stroke_width)."""
    e = ET.SubElement(parent, tag, {k.replace("_", "-"): str(v) for k, v in attrs.items() if v is not None})
    if text is not None:
        e.text = text
    return e


def _svg(title, **attrs):
    return ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg",
                              **{k.replace("_", "-"): str(v) for k, v in attrs.items()},
                              "role": "img", "aria-label": title})


def _done(root):
    return ET.tostring(root, encoding="unicode")


def _linked(parent, href):
    """The element a point's shape goes under: a link to its row in the page when it has one."""
    return el(parent, "a", href=href) if href else parent


def _nice_max(v):
    if v <= 0 or v != v:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _clip(out, x, lo, hi, ymax, Y, colour, dotted):
    """A whisker from lo to hi, cut at the top of the chart with a caret when the CI runs past every
    measured value (the scale follows the data, not a wide interval); the tooltip has the numbers."""
    el(out, "line", x1=f"{x:.1f}", x2=f"{x:.1f}", y1=f"{Y(lo):.1f}", y2=f"{Y(min(hi, ymax)):.1f}", stroke=colour,
       stroke_dasharray="2 2" if dotted else None)
    if hi > ymax:
        y = Y(ymax)
        el(out, "path", d=f"M{x - 4:.1f},{y + 6:.1f} L{x:.1f},{y:.1f} L{x + 4:.1f},{y + 6:.1f}",
           fill="none", stroke=colour)


def tip(p, extra=""):
    s = p.summary
    lines = [f"{p.variant or '–'} {p.placement} · {p.threads} threads · CPUs {p.cpus}",
             f"{p.metric}: median {fmt(s.median)} {p.unit} (min {fmt(s.min)}, max {fmt(s.max)}, n={s.n}"
             + (f", 95% CI ±{s.ci_pct:.1f}%" if s.ci_pct == s.ci_pct else "") + ")"]
    if s.suspect:
        lines.append(f"suspect: {s.suspect}")
    if extra:
        lines.append(extra)
    return "\n".join(lines)


def _frame(title, ylabel, ymax, x0, x1, out):
    el(out, "text", title, x=f"{(x0 + x1) / 2:.0f}", y="18", **{"class": "ct"})
    for i in range(6):
        v = ymax * i / 5
        y = T + (H - T - B) * (1 - i / 5)
        el(out, "line", x1=x0, x2=x1, y1=f"{y:.1f}", y2=f"{y:.1f}", **{"class": "grid"})
        el(out, "text", fmt(v), x=x0 - 6, y=f"{y + 4:.1f}", **{"class": "yt"})
    el(out, "text", ylabel, transform=f"translate(14,{(T + H - B) / 2:.0f}) rotate(-90)", **{"class": "yl"})


def _legend_notes(out, x, y, lines):
    for i, line in enumerate(lines):
        el(out, "text", line, x=x, y=y + 15 * i, **{"class": "lg"})


NOTES = ["dotted: min–max (n<3)", "^ : CI runs off the scale"]


def _legend(entries, out, note):
    """entries: (label, colour, dash)."""
    x, y = W - R + 16, T + 6
    for label, colour, dash in entries:
        el(out, "line", x1=x, x2=x + 22, y1=y, y2=y, stroke=colour, stroke_width="2.5",
           stroke_dasharray="6 3" if dash else None)
        el(out, "circle", cx=x + 11, cy=y, r="3.5", fill=colour)
        el(out, "text", label[:26], x=x + 28, y=y + 4, **{"class": "lg"})
        y += 17
    y += 6
    el(out, "circle", cx=x + 11, cy=y, r="3.5", fill="#fff", stroke="#444", stroke_width="1.5")
    el(out, "text", "hollow = suspect", x=x + 28, y=y + 4, **{"class": "lg"})
    _legend_notes(out, x, y + 22, note.split("\n") + NOTES)


def _marker(out, x, y, colour, p, href, extra=""):
    hollow = bool(p.summary.suspect)
    c = el(_linked(out, href), "circle", cx=f"{x:.1f}", cy=f"{y:.1f}", r=5 if hollow else 4,
           fill="#fff" if hollow else colour, stroke=colour, stroke_width=2 if hollow else 1,
           **{"class": "pt sus" if hollow else "pt"})
    el(c, "title", tip(p, extra))


def scaling(title, ylabel, series, ideal=False):
    """series: [{label, colour (index), dash, pts: [(point, href, extra)]}] → an SVG string."""
    xs = sorted({int(p.threads) for s in series for p, _h, _e in s["pts"]})
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
    top = max((p.summary.max for s in series for p, _h, _e in s["pts"]), default=1)
    ideal_lines = []
    if ideal:
        for s in series:
            pts = sorted(s["pts"], key=lambda q: int(q[0].threads))
            ideal_lines.append(sorted(chartmodel.ideal({int(q[0].threads): q[0].summary.median for q in pts}).items()))
            top = max([top] + [v for _t, v in ideal_lines[-1]])
    ymax = _nice_max(top * 1.05)
    def Y(v):
        return T + (H - T - B) * (1 - v / ymax)
    out = _svg(title, viewBox=f"0 0 {W} {H}", **{"class": "chart"})
    _frame(title, ylabel, ymax, L, W - R, out)
    for t in xs:
        el(out, "text", str(t), x=f"{X(t):.1f}", y=H - B + 18, **{"class": "xt"})
    el(out, "text", "threads", x=f"{(L + W - R) / 2:.0f}", y=H - 8, **{"class": "xl"})
    for i, s in enumerate(series):
        c = PALETTE[s["colour"] % len(PALETTE)]
        pts = sorted(s["pts"], key=lambda q: int(q[0].threads))
        if ideal:
            el(out, "polyline", fill="none", stroke=c, stroke_width="1", stroke_dasharray="2 4",
               points=" ".join(f"{X(t):.1f},{Y(v):.1f}" for t, v in ideal_lines[i]))
        el(out, "polyline", fill="none", stroke=c, stroke_width="2.2",
           stroke_dasharray="6 3" if s.get("dash") else None,
           points=" ".join(f"{X(int(p.threads)):.1f},{Y(p.summary.median):.1f}" for p, _h, _e in pts))
        for p, href, extra in pts:
            lo, hi, from_ci = chartmodel.whisker(p.summary)
            x = X(int(p.threads))
            _clip(out, x, lo, hi, ymax, Y, c, not from_ci)
            _marker(out, x, Y(p.summary.median), c, p, href, extra)
    _legend([(s["label"], PALETTE[s["colour"] % len(PALETTE)], s.get("dash")) for s in series], out,
            "whisker: 95% CI" + ("\nthin dots: ideal scaling" if ideal else ""))
    return _done(out)


def bars(title, ylabel, categories, variants):
    """categories: [(name, {variant_label: (point, href, extra)})]; variants: [(label, colour, hatched)]."""
    if not categories or not variants:
        return ""
    top = max((p.summary.max for _c, cells in categories for p, _h, _e in cells.values()), default=1)
    ymax = _nice_max(top * 1.05)
    def Y(v):
        return T + (H - T - B) * (1 - v / ymax)
    x0, x1 = L, W - R
    cw = (x1 - x0) / len(categories)
    bw = min(40, cw * 0.8 / len(variants))
    out = _svg(title, viewBox=f"0 0 {W} {H}", **{"class": "chart"})
    _frame(title, ylabel, ymax, x0, x1, out)
    for ci_, (cat, cells) in enumerate(categories):
        cx = x0 + cw * (ci_ + 0.5)
        if cw < 80:      # narrow categories: labels slanted so that they do not run into each other
            el(out, "text", cat[:18], transform=f"translate({cx:.1f},{H - B + 12}) rotate(-25)",
               style="text-anchor:end",
               **{"class": "xt"})
        else:
            el(out, "text", cat[:24], x=f"{cx:.1f}", y=H - B + 18, **{"class": "xt"})
        for vi, (label, colour, hatched) in enumerate(variants):
            if label not in cells:
                continue
            p, href, extra = cells[label]
            c = PALETTE[colour % len(PALETTE)]
            x = cx - bw * len(variants) / 2 + vi * bw
            y = Y(p.summary.median)
            hollow = bool(p.summary.suspect)
            r = el(_linked(out, href), "rect", x=f"{x + 1:.1f}", y=f"{y:.1f}", width=f"{bw - 2:.1f}",
                   height=f"{Y(0) - y:.1f}", fill="#fff" if hollow else c,
                   fill_opacity="0.45" if hatched and not hollow else None, stroke=c, stroke_width=2 if hollow else 1,
                   **{"class": "bar sus" if hollow else "bar"})
            el(r, "title", tip(p, extra))
            lo, hi, from_ci = chartmodel.whisker(p.summary)
            _clip(out, x + bw / 2, lo, hi, ymax, Y, "#222", not from_ci)
    lx, ly = W - R + 16, T + 6
    for label, colour, hatched in variants:
        c = PALETTE[colour % len(PALETTE)]
        el(out, "rect", x=lx, y=ly - 6, width="22", height="12", fill=c,
           fill_opacity="0.45" if hatched else None, stroke=c)
        el(out, "text", label[:26], x=lx + 28, y=ly + 4, **{"class": "lg"})
        ly += 17
    el(out, "rect", x=lx, y=ly, width="22", height="12", fill="#fff", stroke="#444", stroke_width="2")
    el(out, "text", "hollow = suspect", x=lx + 28, y=ly + 10, **{"class": "lg"})
    _legend_notes(out, lx, ly + 30, ["whisker: 95% CI"] + NOTES)
    return _done(out)


def heatmap(title, unit, cells, order, bounds=(), mirror=True):
    """cells: {(a, b): (point, href)}; order: CPU numbers in display order; bounds: indexes i after which
    a topology domain changes (a line between order[i] and order[i + 1]); mirror: an unmeasured (a, b)
    shows (b, a) (a pair latency is symmetric; a CPU node x memory node cell is not)."""
    n = len(order)
    if not n:
        return ""
    size = min(48, max(6, 480 // n))
    vals = [p.summary.median for p, _h in cells.values()]
    lo, hi = min(vals), max(vals)
    side = 60 + size * n
    width = max(side + 160, 460)
    # drawn at its own size: a small matrix is not blown up to the page's width
    out = _svg(title, viewBox=f"0 0 {width} {side + 40}", style=f"max-width:{width}px", **{"class": "chart heat"})
    el(out, "text", title, x=f"{width / 2:.0f}", y="18", **{"class": "ct"})
    for i, a in enumerate(order):
        if n <= 32:
            el(out, "text", str(a), x="52", y=f"{40 + i * size + size * 0.7:.1f}", **{"class": "yt"})
            el(out, "text", str(a), x=f"{60 + i * size + size / 2:.1f}", y="36", **{"class": "xt"})
        for j, b in enumerate(order):
            got = cells.get((a, b)) or (cells.get((b, a)) if mirror else None)
            if not got:
                continue
            p, href = got
            f = 0 if hi == lo else (p.summary.median - lo) / (hi - lo)
            colour = f"rgb({255 - int(f * 128)},{247 - int(f * 247)},{236 - int(f * 236)})"
            r = el(_linked(out, href), "rect", x=60 + j * size, y=40 + i * size, width=size, height=size, fill=colour,
                   **{"class": "cell"})
            el(r, "title", tip(p))
    for i in bounds:
        at = 60 + (i + 1) * size, 40 + (i + 1) * size
        el(out, "line", x1=at[0], y1="40", x2=at[0], y2=side - 20, stroke="#000", stroke_width="1.5",
           **{"class": "border"})
        el(out, "line", x1="60", y1=at[1], x2=side, y2=at[1], stroke="#000", stroke_width="1.5", **{"class": "border"})
    el(out, "text", f"{fmt(lo)}–{fmt(hi)} {unit}", x=side + 10, y="60", **{"class": "lg"})
    el(out, "text", "light = low", x=side + 10, y="76", **{"class": "lg"})
    return _done(out)
