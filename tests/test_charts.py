"""Charts from a tidy CSV: the heatmap orders CPUs by hwloc's logical order and marks domain boundaries;
bars follow the lab's placement order."""
import subprocess

from conftest import TOPO, in_process, sh


def heatmap_of(run, exp):
    """The heatmap chart object both pictures draw (lab/report/chartmodel.py), from the run model."""
    from lab.core.runfolder import RunFolder
    from lab.report import chartmodel, model
    e = next(e for e in model.build(str(run)).experiments if e.name == exp)
    return chartmodel.build("heatmap", e, "one_way_ns", RunFolder(str(run)).topology())


def test_heatmap_of_pairs_on_an_interleaved_host(tmp_path):
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    # The chart's input: pair rows as the c2c probe writes them (values are test input, not measurements).
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for a in range(24):
        for b in range(24):
            if a != b:
                lines.append(f'r,hm,cas,pairs,2,"{a},{b}",1,one_way_ns,{20 + 100 * (a % 2 != b % 2)},ns')
    (run / "data" / "hm.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "hm.spec").write_text("experiment = hm\nchart = heatmap one_way_ns\n")
    xml = subprocess.run(["lstopo-no-graphics", "--input", f"{TOPO}/Intel-Haswell-2xXeon-E5-2680v3.v2.xml",
                          "--of", "xml", "-"], capture_output=True, text=True, check=True).stdout
    (run / "env" / "lstopo.xml").write_text(xml)
    sh("python3", "-m", "lab.cli.charts", str(run))
    assert (run / "plots" / "hm-heatmap-one_way_ns.png").stat().st_size > 2000
    assert (run / "plots" / "hm-heatmap-one_way_ns.svg").exists()
    dat = (run / "plots" / "hm-heatmap-one_way_ns.dat").read_text().split("\n\n")
    # Row 0 is CPU 0; package 0's even CPUs come first: cell (0, 1) is CPU 0 → CPU 2, same package.
    first = dat[0].split("\n")
    assert first[1].split() == ["0", "1", "20", '"20"']
    assert first[12].split() == ["0", "12", "120", '"120"']    # position 12 is CPU 1: the other package
    assert first[0].split() == ["0", "0", "NaN", '""']          # the diagonal is blank, not "NaN"


def test_many_series_over_placements_get_one_panel_per_placement(tmp_path):
    run = tmp_path / "run"
    for d in ("data", "plots", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for v in ("a", "b", "c"):
        for p in ("compact", "scatter", "unpinned"):
            for t in (1, 2):
                lines.append(f"r,sc,{v},{p},{t},0,1,ops_per_s,{100 * t},1/s")   # test input, not measured
    (run / "data" / "sc.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "sc.spec").write_text("experiment = sc\nchart = scaling ops_per_s\n")
    sh("python3", "-m", "lab.cli.charts", str(run))
    assert (run / "plots" / "sc-scaling-ops_per_s.png").stat().st_size > 2000
    blocks = [b for b in (run / "plots" / "sc-scaling-ops_per_s.dat").read_text().split("\n\n\n") if b.strip()]
    # placement by placement, each block named by its variant only (the panel names the placement)
    assert [b.split("\n")[0] for b in blocks] == ['"a"', '"b"', '"c"'] * 3


def test_one_thread_count_gets_an_axis_around_it_and_gnuplot_says_nothing(tmp_path):
    # The guests' sweeps measure at 2 threads only: gnuplot autoscaled to [2:2] and warned once per chart.
    run = tmp_path / "run"
    for d in ("data", "plots", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    lines += [f"r,one,{v},compact,2,0,1,ops_per_s,{x},1/s" for v, x in (("a", 100), ("b", 80))]   # test input
    (run / "data" / "one.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "one.spec").write_text("experiment = one\nchart = scaling ops_per_s\n")
    p = sh("python3", "-m", "lab.cli.charts", str(run))
    assert "empty x range" not in p.stderr and "Warning" not in p.stderr, p.stderr
    assert (run / "plots" / "one-scaling-ops_per_s.png").stat().st_size > 2000


def test_suspect_points_are_hollow_and_whiskers_are_the_ci(tmp_path):
    run = tmp_path / "run"
    for d in ("data", "plots", "sweep/specs"):
        (run / d).mkdir(parents=True)
    # Test input, not measured: 3 repeats per point; repeat 2 of 2 threads is suspect; 1 repeat at 4 threads.
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"]
    for t, xs in ((1, (100, 110, 90)), (2, (200, 220, 180)), (4, (400,))):
        for i, x in enumerate(xs, 1):
            why = "steal 31% > 10%" if (t, i) == (2, 2) else ""
            lines.append(f"r,sp,a,compact,{t},0,{i},ops_per_s,{x},1/s,{why}")
            lines.append(f"r,sp,a,compact,{t},0,{i},noise_steal_pct,1,%,{why}")
    (run / "data" / "sp.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "sp.spec").write_text("experiment = sp\nchart = scaling ops_per_s\n"
                                                     "chart = bars ops_per_s\n")
    sh("python3", "-m", "lab.cli.charts", str(run))
    rows = [ln.split() for ln in (run / "plots" / "sp-scaling-ops_per_s.dat").read_text().splitlines()[1:4]]
    # threads median lo hi ideal clean suspect: the CI of (90, 100, 110) is 100 ± t(0.975, 2)·sqrt(pi/2)·10/√3
    # = 4.30265·1.25331·5.7735 = ±31.134 (SciPy's t; the former 3-decimal table gave ±31.137)
    assert rows[0][:4] == ["1", "100", "68.866", "131.134"] and rows[0][5:] == ["100", "NaN"]
    assert rows[1][5:] == ["NaN", "200"]                         # suspect: hollow series only
    assert rows[2][1:4] == ["400", "400", "400"]                 # one repeat: min..max, no CI
    bars = (run / "plots" / "sp-bars-ops_per_s.dat").read_text().splitlines()
    assert bars[0] == 'category "a" lo hi suspect'
    assert [b.split()[-1] for b in bars[1:]] == ["0", "1", "0"]   # compact t1, t2 (suspect), t4
    for name in ("sp-scaling-ops_per_s.png", "sp-bars-ops_per_s.png"):
        assert (run / "plots" / name).stat().st_size > 2000


def test_an_old_spec_the_parser_rejects_still_gives_its_charts(tmp_path):
    from lab.report import charts
    spec = tmp_path / "old.spec"
    spec.write_text("experiment = old\nsome_key_since_renamed = 1\nchart = bars x_per_s\n")   # test input
    assert charts.spec_charts(str(spec)) == ("old", [("bars", "x_per_s")])


def test_bars_follow_the_relations_from_near_to_far_and_the_heatmap_marks_numa_nodes(tmp_path):
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    # Test input, not measurements: rows in an order that is neither the lab's nor alphabetical.
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for rel, pair in (("cross-package", "0,3"), ("smt", "0,1"), ("cross-numa", "1,2"), ("same-l3", "0,2")):
        lines.append(f'r,rel,cas,{rel},2,"{pair}",1,one_way_ns,50,ns')
    for a, b in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)):
        lines.append(f'r,hm,cas,pairs,2,"{a},{b}",1,one_way_ns,50,ns')
    (run / "data" / "rel.csv").write_text("\n".join(lines[:5]) + "\n")
    (run / "data" / "hm.csv").write_text("\n".join(lines[:1] + lines[5:]) + "\n")
    (run / "sweep" / "specs" / "rel.spec").write_text("experiment = rel\nchart = bars one_way_ns\n")
    (run / "sweep" / "specs" / "hm.spec").write_text("experiment = hm\nchart = heatmap one_way_ns\n")
    # One package, one L3, two NUMA nodes (SNC/NPS2): only the node boundary separates CPUs 1 and 2.
    xml = subprocess.run(["lstopo-no-graphics", "--input", "pack:1 l3:1 group:2 [numa] core:2 pu:1",
                          "--of", "xml", "-"], capture_output=True, text=True, check=True).stdout
    (run / "env" / "lstopo.xml").write_text(xml)
    sh("python3", "-m", "lab.cli.charts", str(run))
    bars = (run / "plots" / "rel-bars-one_way_ns.dat").read_text().splitlines()
    assert [b.split()[0] for b in bars[1:]] == ['"smt"', '"same-l3"', '"cross-numa"', '"cross-package"']
    assert (run / "plots" / "hm-heatmap-one_way_ns.png").exists()
    chart = heatmap_of(run, "hm")
    assert chart.bounds == [1], chart.bounds


def test_report_md_and_report_html_draw_the_same_chart_model(tmp_path):
    # One crafted run, two pictures: gnuplot's data files (report.md's PNGs) and report.html's inline
    # SVG must agree on the bars' order, the heatmap's axis and its one variant (lab/report/chartmodel.py).
    import re
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    # bars: placements whose alphabetical order is not the lab's (smt < same-l3 < cross-package)
    for pl, cpus in (("cross-package", "0,1"), ("smt", "0,12"), ("same-l3", "0,2")):
        for r in (1, 2, 3):
            lines.append(f'r,b,x,{pl},2,"{cpus}",{r},one_way_ns,{10 * r + len(pl)},ns')
    # heatmap: two variants whose data order is not their name order
    for v in ("rw", "cas"):
        for a in range(24):
            for b in range(24):
                if a != b:
                    lines.append(f'r,hm,{v},pairs,2,"{a},{b}",1,one_way_ns,{20 + 100 * (a % 2 != b % 2)},ns')
    rows = "\n".join(lines) + "\n"
    head, *body = rows.splitlines()
    (run / "data" / "b.csv").write_text("\n".join([head] + [ln for ln in body if ",b," in ln]) + "\n")
    (run / "data" / "hm.csv").write_text("\n".join([head] + [ln for ln in body if ",hm," in ln]) + "\n")
    (run / "sweep" / "specs" / "b.spec").write_text("experiment = b\nchart = bars one_way_ns\n")
    (run / "sweep" / "specs" / "hm.spec").write_text("experiment = hm\nchart = heatmap one_way_ns\n")
    (run / "sweep" / "state").write_text("complete\n")
    xml = subprocess.run(["lstopo-no-graphics", "--input", f"{TOPO}/Intel-Haswell-2xXeon-E5-2680v3.v2.xml",
                          "--of", "xml", "-"], capture_output=True, text=True, check=True).stdout
    (run / "env" / "lstopo.xml").write_text(xml)
    sh("python3", "-m", "lab.cli.charts", str(run))
    in_process("lab.cli.report", str(run))
    html = (run / "report.html").read_text()
    dat_bars = [ln.split('"')[1] for ln in (run / "plots" / "b-bars-one_way_ns.dat").read_text().splitlines()[1:]]
    assert dat_bars == ["smt", "same-l3", "cross-package"]
    svg_bars = re.findall(r'class="xt"[^>]*>(smt|same-l3|cross-package)</text>', html)
    assert svg_bars == dat_bars
    # the heatmap's axis: gnuplot's first data block is CPU row 0 across the axis; the SVG labels its
    # columns in the same order, and both draw the variant first by name
    hm = html[html.index("hm: one_way_ns"):]
    svg_axis = re.findall(r'y="36" class="xt">(\d+)</text>', hm)
    chart = heatmap_of(run, "hm")
    assert svg_axis == [str(c) for c in chart.order] and svg_axis[:2] == ["0", "2"]
    assert chart.variant == "cas" and "(cas)" in hm[:400]


def test_a_chart_draws_at_most_its_series_cap_and_says_how_many_it_left_out(tmp_path):
    """A received file with 200 variants (SERIES, issue 55: 16,000 took one gnuplot call of 149 s): the
    scaling chart draws the first chartmodel.MAX_SERIES by name, both pictures say how many more there
    are, and every point stays in the tables and the CSV. Values are test input, not measurements."""
    from lab.report import chartmodel
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for v in range(200):
        for t in (1, 2):
            lines += [f"r,many,v{v:03d},compact,{t},0,{r},ops,{100 * t + r},1/s" for r in (1, 2, 3)]
    (run / "data" / "many.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "many.spec").write_text("experiment = many\nchart = scaling ops\n")
    in_process("lab.cli.report", str(run))
    dat = (run / "plots" / "many-scaling-ops.dat").read_text()
    drawn = [ln for ln in dat.splitlines() if ln.startswith('"v')]       # one titled block per series
    assert len(drawn) == chartmodel.MAX_SERIES, len(drawn)
    note = f"the first {chartmodel.MAX_SERIES} series; {200 - chartmodel.MAX_SERIES} more in the tables and the CSV"
    assert note in (run / "plots" / "many-scaling-ops.svg").read_text()
    html = (run / "report.html").read_text()
    assert note in html and "v199" in html           # the table keeps every variant


def test_open_redraws_a_received_runs_heatmap_png_before_the_page_inlines_it(tmp_path, results):
    """report.html inlines the heatmap's PNG above 64 CPUs: `./lab open` of a received run draws that PNG
    again from the run's data (lab/report/front.py draws charts with the report), never inlining the
    sender's picture (OPENPNG, issue 55). The matrix's values are test input, not measurements."""
    import base64
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    lines += [f'r,hm,cas,pairs,2,"{a},{b}",1,one_way_ns,{20 + (a + b) % 7},ns'
              for a in range(70) for b in range(70) if a != b]
    (run / "data" / "hm.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "hm.spec").write_text("experiment = hm\nchart = heatmap one_way_ns\n")
    sender = b"\x89PNG\r\n\x1a\n the sender's own picture"
    (run / "plots" / "hm-heatmap-one_way_ns.png").write_bytes(sender)
    sh("scripts/open.sh", str(run), env=dict(results, DISPLAY="", WAYLAND_DISPLAY=""))
    png = (run / "plots" / "hm-heatmap-one_way_ns.png").read_bytes()
    assert png != sender and png.startswith(b"\x89PNG")
    assert base64.b64encode(sender).decode() not in (run / "report.html").read_text()
