"""The reading side's one view (lab/report/view.py, lab/report/chartmodel.py): gnuplot's data (report.md's
PNG) and report.html's SVG draw the same numbers under the one pooling rule; a section shows the same
rows in report.md and report.html; a hostile name reaches the page escaped by Jinja's autoescape.

Every CSV value below is test input written by hand, not a measurement."""
import html
import re
import statistics

from conftest import in_process, sh

HEADER = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"


def run_folder(tmp_path, exp, lines, spec_tail=""):
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True, exist_ok=True)
    (run / "data" / f"{exp}.csv").write_text("\n".join([HEADER] + lines) + "\n")
    (run / "sweep" / "specs" / f"{exp}.spec").write_text(f"experiment = {exp}\n{spec_tail}")
    (run / "sweep" / "state").write_text("complete\n")
    return run


# c2c: several CPU pairs per relation, three repeats each. The numbers are chosen so that the three
# ways of pooling differ: the median of the pair medians (the rule), the median of every repeat of
# every pair (what charts.py drew before), and the last pair's point (what the page drew before).
PAIRS = {"smt": {"0,1": (10, 11, 50), "2,3": (12, 13, 14), "4,5": (40, 41, 42)},
         "same-l3": {"0,2": (20, 21, 22), "1,3": (60, 61, 62)},
         "cross-package": {"0,6": (100, 101, 102)}}


def c2c_run(tmp_path):
    lines = [f'r,c2c,cas,{rel},2,"{pair}",{i},one_way_ns,{x},ns,'
             for rel, pairs in PAIRS.items() for pair, xs in pairs.items() for i, x in enumerate(xs, 1)]
    run = run_folder(tmp_path, "c2c", lines, "chart = bars one_way_ns\n")
    sh("python3", "-m", "lab.cli.charts", str(run))
    in_process("lab.cli.report", str(run))
    return run


def test_c2c_bars_in_the_png_data_and_the_page_svg_are_the_median_of_pair_medians(tmp_path):
    from lab.report.fmt import fmt
    run = c2c_run(tmp_path)
    want = {rel: statistics.median(statistics.median(xs) for xs in pairs.values()) for rel, pairs in PAIRS.items()}
    # the rule is not the other two pooling ways on this input: the test can tell them apart
    assert want["smt"] == 13
    assert statistics.median(x for xs in PAIRS["smt"].values() for x in xs) != 13
    assert statistics.median(PAIRS["smt"]["4,5"]) != 13
    dat = (run / "plots" / "c2c-bars-one_way_ns.dat").read_text().splitlines()
    assert dat[0] == 'category "cas" lo hi suspect'
    png = {ln.split('"')[1]: [float(x) for x in ln.split('"')[2].split()] for ln in dat[1:]}
    assert list(png) == ["smt", "same-l3", "cross-package"]          # the lab's order, near to far
    tips = {}
    for rel, pairs in PAIRS.items():
        meds = [statistics.median(xs) for xs in pairs.values()]
        assert png[rel][0] == want[rel], (rel, png[rel])
        if len(pairs) > 1:      # the whisker: the range of the pair medians (they are not repeats)
            assert png[rel][1:3] == [min(meds), max(meds)], (rel, png[rel])
            tips[rel] = (min(meds), max(meds), len(pairs))
        else:                   # one pair is its own point: its repeats' range in the tooltip
            xs = next(iter(pairs.values()))
            tips[rel] = (min(xs), max(xs), len(xs))
    page = (run / "report.html").read_text()
    svg = page[page.index('aria-label="c2c: one_way_ns"'):]
    svg = svg[:svg.index("</svg>")]
    drawn = re.findall(r'class="bar"><title>([^<]*)</title>', svg)
    assert len(drawn) == 3
    for rel, tip in zip(PAIRS, drawn):
        tip = html.unescape(tip)
        assert tip.startswith(f"cas {rel} ·"), tip
        lo, hi, n = tips[rel]
        assert f"one_way_ns: median {fmt(png[rel][0])} ns (min {fmt(lo)}, max {fmt(hi)}, n={n}" in tip, tip
        if len(PAIRS[rel]) > 1:
            assert f"median of {len(PAIRS[rel])} CPU sets" in tip
    # the bars' heights on the page are the same numbers: height ∝ median, on one scale
    heights = [float(h) for h in re.findall(r'<rect x="[^"]*" y="[^"]*" width="[^"]*" '
                                            r'height="([^"]*)"[^>]*class="bar"', svg)]
    for (rel, h) in zip(PAIRS, heights):
        assert abs(h / heights[-1] - png[rel][0] / png["cross-package"][0]) < 0.01, (rel, heights)


def md_rows(md, heading):
    """The rows of the first markdown table after `heading`, as lists of cells."""
    part = md[md.index(heading):]
    rows = []
    for ln in part.splitlines()[1:]:
        if ln.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]])
        elif rows:
            break
    return rows[2:]          # header and rule left out


def html_rows(page, summary):
    """The rows of the table folded under `summary` in the page, as lists of cell texts."""
    part = page[page.index(summary):]
    part = part[part.index("<tbody>"):part.index("</tbody>")]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", part, re.S)]


def test_a_section_shows_the_same_rows_in_report_md_and_report_html(tmp_path):
    # noise rows at 2 and 10 threads: numbers order 2 before 10, strings would not (the drift issue 42 names)
    lines = []
    for t in (10, 2):
        for i, (x, steal) in enumerate(((100 * t, 1), (110 * t, 3), (90 * t, 2)), 1):
            lines.append(f"r,sp,a,compact,{t},0,{i},ops_per_s,{x},1/s,")
            lines.append(f"r,sp,a,compact,{t},0,{i},noise_steal_pct,{steal},%,")
    run = run_folder(tmp_path, "sp", lines, "chart = scaling ops_per_s\n")
    in_process("lab.cli.report", str(run))
    md, page = (run / "report.md").read_text(), (run / "report.html").read_text()
    noise_md = md_rows(md, "<summary>noise per point")
    noise_html = html_rows(page, "<summary>noise per point")
    assert [r[2] for r in noise_md] == ["2", "10"]
    assert noise_md == noise_html
    points_md = md_rows(md, "#### Medians over repeats")
    points_html = html_rows(page, "<h3>Medians over repeats</h3>")
    assert len(points_md) == 2 and [r[:len(points_md[0])] for r in points_html] == points_md


def test_a_hostile_variant_reaches_the_page_escaped(tmp_path):
    evil = '<script>alert(1)</script>"\nx\x1b[2J'
    quoted = evil.replace('"', '""')
    lines = [f'r,sp,"{quoted}",compact,{t},0,{i},ops_per_s,{100 * t + i},1/s,' for t in (1, 2) for i in (1, 2, 3)]
    lines += [f'r,sp,"{quoted}",compact,{t},0,{i},noise_steal_pct,1,%,' for t in (1, 2) for i in (1, 2, 3)]
    run = run_folder(tmp_path, "sp", lines, "chart = scaling ops_per_s\nchart = bars ops_per_s\n")
    sh("python3", "-m", "lab.cli.charts", str(run))
    sh("python3", "-m", "lab.cli.report", str(run))
    page = (run / "report.html").read_text()
    assert "<script>alert" not in page
    assert page.count("<script>") == 1                  # the page's own, and nothing else
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = (run / "report.md").read_text()
    # the line break does not cut a markdown row in two
    assert not any(ln.startswith('x"') or ln.startswith("x |") for ln in md.splitlines()), md
    # a terminal escape is shown, not obeyed (issue 44: control characters in report.md)
    assert "\x1b" not in md and "\\x1b[2J" in md
    assert (run / "plots" / "sp-bars-ops_per_s.png").stat().st_size > 2000


def test_a_fleet_shows_the_same_rows_in_fleet_md_and_fleet_html(tmp_path):
    # two hosts' runs (hand-written rows), the second 1.5 times faster and on another kernel
    from lab.report import model, nway
    runs = []
    for name, scale, kernel in (("hostA", 1, "6.1.0"), ("hostB", 1.5, "6.12.0")):
        lines = [f"r,sp,a,compact,{t},0,{i},ops_per_s,{scale * (100 * t + i)},1/s," for t in (2, 10) for i in (1, 2, 3)]
        run = run_folder(tmp_path / name, "sp", lines, "chart = scaling ops_per_s\n")
        (run / "env" / "uname.txt").write_text(f"Linux h {kernel} #1 SMP x86_64 GNU/Linux\n")
        runs.append((name, model.build(str(run))))
    cmp = nway.compare(runs)
    md = nway.markdown(runs, cmp, "fleet")
    page = nway.html(runs, cmp, "fleet")
    rows_md = md_rows(md, "#### sp")
    part = page[page.index('<h2 id="exp-sp">'):]
    rows_html = html_rows(part, "<table")
    assert [r[3] for r in rows_md] == ["2", "10"] and rows_md == rows_html
    assert rows_md[0][6].endswith("×1.500"), rows_md[0]
    assert "<script>" not in page.split("</main>")[0]
    # the row where the hosts differ stands out on the page
    assert re.search(r'<tr class="differs"><td><b>kernel</b>', page), page[:3000]


def test_every_chart_kind_the_spec_accepts_is_built_and_written():
    from lab.engine.spec import CHART_KINDS
    from lab.report import chartmodel, charts
    assert set(CHART_KINDS) == set(chartmodel.KINDS) == set(charts.WRITERS)


def test_a_figure_is_carried_inside_the_page_and_only_our_own_svg_is_inlined(tmp_path):
    import os

    from lab.report import html_page, markdown, view
    run = tmp_path / "run"
    (run / "plots").mkdir(parents=True)
    (run / "plots" / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)     # test input: a PNG's signature
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>flame &lt;f&gt;</text></svg>'
    (run / "plots" / "f.svg").write_text(svg)
    (run / "plots" / "s.svg").write_text(svg.replace("<text>", "<script>alert(1)</script><text>"))
    os.symlink("/etc/passwd", run / "plots" / "l.svg")
    page = lambda f: str(html_page.embed(str(run), f))   # noqa: E731
    assert page(view.Figure("plots/a.png", "a")).startswith('<img class="chart" alt="a" src="data:image/png;base64,')
    assert page(view.Figure("plots/f.svg", "f", ours=True)) == svg                  # ours: inline
    assert page(view.Figure("plots/f.svg", "f")).startswith('<img class="chart" alt="f" src="data:image/svg+xml')
    assert "<script" not in page(view.Figure("plots/s.svg", "s", ours=True))       # a script: never inline
    assert page(view.Figure("plots/l.svg", "<l>", ours=True)) == '<a href="./plots/l.svg">&lt;l&gt;</a>'
    assert page(view.Figure("../../etc/passwd", "p")).startswith("<a ")
    assert markdown.blocks([view.Figure("plots/a.png", "a")]) == ["![a](plots/a.png)", ""]


def test_a_new_section_is_one_builder_and_both_reports_show_it(tmp_path, monkeypatch):
    # the shape of the coming "Why it stops scaling" section: a verdict, a table, a flame graph file
    from lab.report import html_page, markdown, model, view
    lines = [f"r,sp,a,compact,{t},0,{i},ops_per_s,{100 * t + i},1/s," for t in (1, 2) for i in (1, 2, 3)]
    run = run_folder(tmp_path, "sp", lines, "chart = scaling ops_per_s\n")
    (run / "plots" / "sp-flame.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><text>lock_wait</text></svg>')

    def why(e):
        return view.Section("Why it stops scaling", [
            view.Paragraph(f"compact: **stops at {e.points[-1].threads} threads** <b>not bold</b>"),
            view.Table("Stacks whose cost grew", view.cols("stack", "share at 1", "share at 2", numeric=(1, 2)),
                       [view.Row([view.Cell("lock_wait"), view.num(0.1, "10%"), view.num(0.4, "40%")])]),
            view.Figure("plots/sp-flame.svg", "flame graph of compact t2", ours=True)])
    monkeypatch.setattr(view, "EXPERIMENT_SECTIONS", view.EXPERIMENT_SECTIONS + [why])
    m = model.build(str(run))
    md, page = markdown.render(m), html_page.report(m)
    assert "#### Why it stops scaling" in md and "| lock_wait | 10% | 40% |" in md
    assert "![flame graph of compact t2](plots/sp-flame.svg)" in md
    assert "<h3>Why it stops scaling</h3>" in page and "<b>stops at 2 threads</b> &lt;b&gt;not bold&lt;/b&gt;" in page
    assert html_rows(page, "<h3>Stacks whose cost grew</h3>") == md_rows(md, "#### Stacks whose cost grew")
    assert "<text>lock_wait</text>" in page          # our own SVG, inline


def test_at_a_glance_pools_as_the_bars_do(tmp_path):
    run = c2c_run(tmp_path)
    md = (run / "report.md").read_text()
    glance = {r[1]: r[3] for r in md_rows(md, "#### At a glance")}
    assert glance["smt"] == "13 (median of 3 CPU sets)" and glance["cross-package"].startswith("101 (±")


def test_a_pair_measured_twice_is_one_heatmap_cell_in_the_png_data_and_the_page_svg(tmp_path):
    from lab.report.fmt import fmt
    # CPU pair 0,1 measured under two placements (medians 11 and 31), 1,2 once: the cell is the median of
    # the two medians (21), not the median of the six repeats pooled (30.5)
    lines = [f'r,hm,cas,{pl},2,"{pair}",{i},one_way_ns,{x},ns,'
             for pl, pair, xs in (("smt", "0,1", (10, 11, 50)), ("pairs", "0,1", (30, 31, 90)),
                                  ("pairs", "1,2", (5, 6, 7)))
             for i, x in enumerate(xs, 1)]
    run = run_folder(tmp_path, "hm", lines, "chart = heatmap one_way_ns\n")
    sh("python3", "-m", "lab.cli.charts", str(run))
    in_process("lab.cli.report", str(run))
    dat = [ln.split() for ln in (run / "plots" / "hm-heatmap-one_way_ns.dat").read_text().splitlines() if ln]
    cells = {(int(r[0]), int(r[1])): r[2] for r in dat}
    assert cells[(0, 1)] == "21" and cells[(1, 0)] == "21" and cells[(1, 2)] == "6" and cells[(0, 0)] == "NaN"
    assert statistics.median([10, 11, 50, 30, 31, 90]) == 30.5
    page = (run / "report.html").read_text()
    tips = [html.unescape(t) for t in re.findall(r'class="cell"><title>([^<]*)</title>', page)]
    assert sum(f"one_way_ns: median {fmt(21)} ns" in t and "median of 2 CPU sets" in t for t in tips) == 2
    assert sum(f"one_way_ns: median {fmt(6)} ns" in t for t in tips) == 2


def test_every_svg_chart_escapes_what_a_run_folder_names(tmp_path):
    """svg.py builds ElementTree elements: a hostile variant, placement, unit or title stays text, and
    every chart kind parses as XML with no element it did not draw."""
    import xml.etree.ElementTree as ET

    from lab.core.run import Point
    from lab.core.stats import Summary
    from lab.report import svg  # conftest puts scripts/ on the path
    bad = '<script>x</script>"&'
    p = Point(bad, bad, "2", "0,1", "m", bad,
              Summary(median=1.0, min=0.5, max=2.0, spread_pct=150.0, n=3, ci_pct=4.0, ci_lo=0.9, ci_hi=1.1,
                      ci_method="hand-set", suspect=bad))
    drawn = [svg.scaling(bad, bad, [{"label": bad, "colour": 0, "pts": [(p, '#"x', bad)]}], ideal=True),
             svg.bars(bad, bad, [(bad, {bad: (p, '#"x', bad)})], [(bad, 1, True)]),
             svg.heatmap(bad, bad, {(0, 1): (p, '#"x')}, [0, 1], bounds=(0,))]
    allowed = {"svg", "text", "line", "path", "circle", "rect", "polyline", "a", "title"}
    for chart in drawn:
        assert "<script" not in chart
        tags = {e.tag.split("}")[-1] for e in ET.fromstring(chart).iter()}
        assert tags <= allowed, tags - allowed
