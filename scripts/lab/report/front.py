"""The reading side's front door, as lab/engine/api.py is the writing side's: a run folder is read once
into a Run, and drawn in process into a Drawn (charts, flame graphs, report.md, report.html and the words
a terminal shows). Every program that shows a run calls these (sweep, scale, archive replay, import,
import-c2c, report, charts, the lab's own benchmarks): none spawns another to draw, none builds the
model a second time to print its words.

  run = front.read(path)          # model.build, once; raises Unreadable (one line)
  drawn = front.draw(run)         # writes plots/, report.md, report.html; returns what it wrote and said
  outcome, run = front.after_sweep(outcome)   # a finished sweep drawn when it asked for a report (draw=1)
"""
import dataclasses
import subprocess
import sys
from dataclasses import dataclass

from lab.core.run import DataError
from lab.core.runfolder import RunFolder, RunFolderError
from lab.core.term import visible
from lab.errors import LabError
from lab.report import causes, charts, goals, html_page, markdown, model
from lab.report.journal import JournalError
from lab.why import usl
from lab.why.model import NO_FLAMES

UNREADABLE = (DataError, JournalError, RunFolderError)
BUILDS = [0]     # how many times a model was built in this process (a test holds each program to one)


class Unreadable(LabError):
    """A run folder the model cannot be built from; str() is the one line (file:line where there is one)."""


@dataclass(frozen=True)
class Drawn:
    """What draw() wrote and said: chart PNGs, report.md and report.html, the lines it said on the way
    (charts that could not be drawn, the goals' words), and per experiment the words of how it scales."""
    charts: tuple
    report_md: str
    report_html: str
    said: tuple
    run: object = None      # the Run as drawn: its charts on disk and the flame graphs drawn (Experiment.flames)


def read(path):
    """The Run of a run folder; Unreadable (one line) for a folder no model can be built from."""
    try:
        run = model.build(RunFolder(path).path)
    except UNREADABLE as e:
        raise Unreadable(str(e)) from None
    BUILDS[0] += 1
    return run


def draw_charts(run):
    """Every chart the run's specs ask for, through gnuplot: ([PNG], [line said])."""
    made, said = [], []
    try:
        made, said = charts.draw_all(run.folder, run.experiments)
    except RunFolderError as e:     # a folder of the run that is a link: nothing written there
        raise Unreadable(str(e)) from None
    except (subprocess.SubprocessError, OSError) as e:
        said.append(f"charts: {e}")
    return made, said


def with_charts_on_disk(run):
    """The Run with each experiment's chart files as they are on disk now (what the report shows after
    drawing): a new Run, the one read is not edited."""
    return dataclasses.replace(run, experiments=tuple(
        dataclasses.replace(e, chart_files=model.chart_files(run.folder, e.name, e.charts)) for e in run.experiments))


def with_flames(run, flames):
    """The Run with each experiment's drawn flame graphs (causes.draw's {name: Flames}): a new Run."""
    return dataclasses.replace(run, experiments=tuple(
        dataclasses.replace(e, flames=flames[e.name]) if e.name in flames else e for e in run.experiments))


def draw(run, charts_too=True):
    """Charts (unless charts_too=False), flame graphs, report.md and report.html of a Run; Unreadable when a
    folder of the run is not a real folder inside it (nothing is written there)."""
    made, said = draw_charts(run) if charts_too else ([], [])
    run = with_charts_on_disk(run) if charts_too else run
    try:
        run = with_flames(run, causes.draw(run.folder, run))   # why=1 evidence's flame graphs, by inferno
        run.folder.write_text("report.md", markdown.render(run))
        run.folder.write_text("report.html", html_page.report(run))
    except RunFolderError as e:
        raise Unreadable(str(e)) from None
    for e in run.experiments:      # the goals a spec states, judged: the benchmark's last words
        said += [f"{e.name}: {line}" for line in goals.sentences(e.goals)]
    return Drawn(tuple(made), run.folder.report_md, run.folder.report_html, tuple(said), run)


def after_sweep(outcome, out=None, quiet=False):
    """A finished sweep drawn when it asked for a report (draw=1): (the Outcome with its report path and
    exit status — 1 when a report was asked for and none was written —, the Run or None)."""
    out = out or sys.stderr
    if not outcome.draw or outcome.error:
        return outcome, None
    try:
        run = read(outcome.run)
        drawn = draw(run)
    except Unreadable as e:
        print(visible(f"report: {e}"), file=out)
        return dataclasses.replace(outcome, code=outcome.code or 1, report=""), None
    for line in () if quiet else drawn.said:
        print(visible(line), file=out)
    return dataclasses.replace(outcome, report=drawn.report_html), drawn.run


def scaling_words(e, report_md):
    """How one experiment scales, as the terminal shows it (report.md has the numbers): [line]."""
    sc = e.scaling
    if not sc:
        return []
    return [f"How it scales ({sc.metric}, {sc.better} is better; numbers in {report_md}):"] + \
        ["  - " + line.replace("**", "") for line in sc.sentences]


def why_words(e, report_html):
    """The cause in words (lab/report/causes.py) and each curve's USL model: [line]; what the host could
    not give comes first, once."""
    w = e.why
    if not w:
        return []
    flames = e.flames or NO_FLAMES
    out = [f"Why it stops scaling (evidence, flame graphs: {report_html}):"]
    for m in dict.fromkeys(m for c in w.curves if c.diff is not None for m in flames.missing(c)):
        out.append(f"  - {m[0].upper()}{m[1:]}.")
    out += ["  - " + c.verdict.text for c in w.curves]
    for (variant, placement), f in sorted(w.usl.items()):
        out.append(f"  - USL, {variant + ', ' if w.several else ''}{placement}: " + usl.words(f))
    return out
