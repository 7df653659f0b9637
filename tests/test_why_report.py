"""The report's "Why it stops scaling" section (lab/report/causes.py, view.why) and ./lab scale's words:
the recorded evidence of the lock program (tests/fixtures/why/recorded/, real perf runs)
placed in a run folder beside hand-written timed rows. Every CSV value below is test input, not a
measurement; what is asserted is what the lab makes of them and of the real evidence."""
import re
import shutil

from conftest import ROOT, in_process, sh
from lab.core.runfolder import RunFolder
from lab.report import front, model

HEADER = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"
RECORDED = f"{ROOT}/tests/fixtures/why/recorded"


def run_with(tmp_path, exp, walls, evidence=None):
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True, exist_ok=True)
    lines = [f"r,{exp},,compact,{t},0,{i},wall_s,{x},s," for t, xs in walls.items() for i, x in enumerate(xs, 1)]
    (run / "data" / f"{exp}.csv").write_text("\n".join([HEADER] + lines) + "\n")
    (run / "sweep" / "specs" / f"{exp}.spec").write_text(
        f"experiment = {exp}\nchart = speedup wall_s\nchart = scaling wall_s\n")
    (run / "sweep" / "state").write_text("complete\n")
    for t, name in (evidence or {}).items():    # the engine's folder of a point's evidence runs
        shutil.copytree(f"{RECORDED}/{name}", run / "raw" / exp / f"-_compact_t{t}_why")
    return run


def test_the_lock_is_named_in_both_reports_with_its_flame_graph(tmp_path):
    # wall times of a fixed amount of work that does not speed up at 2 threads: the knee is 2
    run = run_with(tmp_path, "lk", {1: (1.00, 1.01, 0.99), 2: (1.40, 1.42, 1.38)},
                   evidence={1: "lock_t1", 2: "lock_t2"})
    sh("python3", "-m", "lab.cli.charts", str(run))
    sh("python3", "-m", "lab.cli.report", str(run))
    md = (run / "report.md").read_text()
    part = md[md.index("#### Why it stops scaling"):]
    verdict = part.splitlines()[2]
    assert verdict.startswith("compact, 2 threads:") and "Cause: lock" in verdict, verdict
    assert "update_table" in verdict
    assert "stacks whose cost grew (1 → 2 threads, µs per run)" in part
    assert "![differential flame graph, compact" in part and "plots/lk-why-compact.svg" in part
    svg = (run / "plots" / "lk-why-compact.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "update_table" in svg
    page = (run / "report.html").read_text()
    assert "Why it stops scaling" in page and "Cause: lock" in page
    # the flame graph travels inside the page (inline or as a data: image), never as a reference
    assert "differential flame graph, compact" in page and 'src="plots/' not in page
    assert "USL model of each curve" in page and "no fit: 2 distinct thread counts" in page


def test_without_evidence_the_section_says_how_to_get_it_and_fits_the_curve(tmp_path):
    # four thread counts of a curve that levels off: the USL model is fitted (test input, see above)
    walls = {1: (8.0, 8.1, 7.9), 2: (4.4, 4.5, 4.3), 4: (2.9, 3.0, 2.8), 8: (2.4, 2.5, 2.3)}
    run = run_with(tmp_path, "cv", walls)
    in_process("lab.cli.report", str(run))
    md = (run / "report.md").read_text()
    part = md[md.index("#### Why it stops scaling"):]
    assert "no evidence at" in part and "run with why=1" in part
    row = next(ln for ln in part.splitlines() if ln.startswith("| compact |"))
    assert re.search(r"\| (contention-bound|coherency-bound) \|", row), row


def test_scale_prints_why_after_how(tmp_path):
    run = run_with(tmp_path, "lk", {1: (1.00, 1.01, 0.99), 2: (1.40, 1.42, 1.38)},
                   evidence={1: "lock_t1", 2: "lock_t2"})
    e = model.build(str(run)).experiments[0]
    lines = front.why_words(e, RunFolder(str(run)).report_html)
    assert lines[0].startswith("Why it stops scaling") and "Cause: lock" in lines[1]
    assert lines[2].startswith("  - USL, compact: no fit")


def test_a_received_evidence_file_that_is_a_fifo_or_a_link_is_refused_not_followed(tmp_path):
    import os
    run = run_with(tmp_path, "lk", {1: (1.00, 1.01, 0.99), 2: (1.40, 1.42, 1.38)},
                   evidence={1: "lock_t1", 2: "lock_t2"})
    meta = run / "raw" / "lk" / "-_compact_t2_why" / "meta.json"
    meta.unlink()
    os.mkfifo(meta)                                      # a reader that opened it would wait for ever
    link = run / "raw" / "lk" / "-_compact_t1_why" / "oncpu_r1.folded"
    link.unlink()
    link.symlink_to("/etc/hostname")
    sh("python3", "-m", "lab.cli.report", str(run), timeout=120)       # a reader waiting on the FIFO would time out
    md = (run / "report.md").read_text()
    part = md[md.index("#### Why it stops scaling"):]
    verdict = part.splitlines()[2]
    assert verdict.startswith("compact: evidence unreadable") and "not a regular file" in verdict, verdict
    assert "Cause: lock" not in part


def test_a_point_measured_once_as_another_placement_reads_that_placements_evidence(tmp_path):
    """plan.shared: scatter's 1-thread point was compact's (the journal's skipped event names same_as), so
    its curve's differential reads compact's 1-thread evidence, as it reads compact's numbers."""
    import json
    run = run_with(tmp_path, "lk", {1: (1.00, 1.01, 0.99), 2: (1.40, 1.42, 1.38)},
                   evidence={1: "lock_t1", 2: "lock_t2"})
    csv = run / "data" / "lk.csv"
    csv.write_text(csv.read_text() + "".join(f"r,lk,,scatter,2,0,{i},wall_s,{x},s,\n"
                                             for i, x in enumerate((1.40, 1.42, 1.38), 1)))
    shutil.copytree(f"{RECORDED}/lock_t2", run / "raw" / "lk" / "-_scatter_t2_why")
    (run / "sweep" / "journal.jsonl").write_text(json.dumps(
        {"ts": "2026-12-07T10:00:00Z", "event": "skipped", "experiment": "lk", "variant": "", "placement": "scatter",
         "threads": 1, "reason": "the same CPUs as compact at 1 thread: measured once there, shared",
         "same_as": "compact"}) + "\n")
    e = model.build(str(run)).experiments[0]
    got = {c.verdict.placement: c for c in e.why.curves}
    assert got["scatter"].diff is not None and got["scatter"].verdict.base_threads == 1, got["scatter"].verdict.text
    assert "Cause: lock" in got["scatter"].verdict.text


def test_the_why_sections_readers_read_attributes_not_string_keys(tmp_path):
    """Issue 52 item 3: the why section is typed (lab/why/model.py); its renderers (report.md and report.html
    through view.why, the terminal through front.why_words) and its builder read it by attribute, and drawing
    the flame graphs returns them (Flames) instead of writing into the frozen section."""
    import ast
    import dataclasses
    import inspect
    import textwrap

    from lab.report import causes, view
    from lab.why.model import Flames, WhySection
    def keyed(node):      # x["key"] or x.get("key")
        s = node.slice if isinstance(node, ast.Subscript) else node.args[0] if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args) else None
        return isinstance(s, ast.Constant) and isinstance(s.value, str)
    for f in (view.why, front.why_words, causes.section, causes.said, causes.draw):
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        assert not [ast.unparse(n) for n in ast.walk(tree) if keyed(n)], f.__qualname__
    run = run_with(tmp_path, "lk", {1: (1.00, 1.01, 0.99), 2: (1.40, 1.42, 1.38)},
                   evidence={1: "lock_t1", 2: "lock_t2"})
    read = front.read(str(run))
    w = read.experiments[0].why
    assert isinstance(w, WhySection) and dataclasses.is_dataclass(w.curves[0].verdict)
    drawn = front.draw(read, charts_too=False)
    assert read.experiments[0].flames is None and read.experiments[0].why is w       # the model read is not edited
    flames = drawn.run.experiments[0].flames
    assert isinstance(flames, Flames) and flames.paths == {("", "compact"): "plots/lk-why-compact.svg"}
