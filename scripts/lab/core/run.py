"""The typed run model's measured part, as docs/run-format.schema.json documents it: a Point (one variant
× placement × threads × CPU set × metric) with its Summary (core/stats.py) and its Repeats. Built once
by lab/report/model.py from the run's tidy rows and journal (or by lab/imports/labrun.py from the lab's own
export); read by attribute by the report, the why side, the charts and the exports. Frozen: a reader that
needs another view of a point makes a new one (dataclasses.replace), it never edits the model another
reader draws from. A received run's data is checked here, where its types are built (Repeat, Point)."""
import functools
from dataclasses import dataclass, field

from lab.core.runfolder import RunFolder
from lab.core.stats import Summary, summary
from lab.core.tidy import measured
from lab.errors import LabError


class DataError(LabError, ValueError):
    """A run's data the lab will not use (a received run folder's rows, an imported export's points). The
    constructors below say what is wrong; their reader adds where (`file:line`, or the document's place)."""


def whole(text, what):
    """text if it is a whole number's digits (a repeat's number, a point's threads), else DataError."""
    if not (type(text) is str and text.isascii() and text.isdigit()):     # type(): cheaper, on every row
        raise DataError(f"{what} {text!r} is not a whole number")
    return text


@dataclass(frozen=True)
class Repeat:
    """One repeat of a point: its value, why it is suspect ("" if not), and where it came from."""
    repeat: str                 # the repeat's number as the tidy CSV writes it
    value: float
    suspect: str = ""           # the guard's reasons, "; "-joined
    raw: str | None = None      # its raw folder, relative to the run (None when the folder is not there)
    mem_nodes: tuple = ()       # the NUMA nodes its instrument said the measured memory was on
    command: str | None = None  # the exact command the engine ran (the journal's), None for an import
    seconds: float | None = None

    def __post_init__(self):
        """The received-run rule for a repeat, in one place (a run folder's rows, an imported export): a
        whole repeat number and a measured value (tidy.measured); a value given as text is read here."""
        whole(self.repeat, "repeat")
        try:
            object.__setattr__(self, "value", measured(self.value))
        except ValueError as e:
            raise DataError(str(e)) from None


@dataclass(frozen=True)
class Point:
    """One measured point: its coordinates, its repeats and their Summary. threads is the tidy CSV's text
    (a whole number's digits), the export writes it as a number."""
    variant: str
    placement: str
    threads: str
    cpus: str
    metric: str
    unit: str
    summary: Summary
    repeats: tuple = ()         # (Repeat, …) by repeat number
    noise: bool = False         # a guard or instrument noise reading (engine.guard.NOISE_METRICS), not a result
    mem_node: str = ""          # "0" or "0,1": where the repeats' memory was, "" when no instrument said
    shared: str = ""            # measured once as this placement and drawn in this one too (plan.shared)

    def __post_init__(self):
        """The received-run rule for a point: a whole number of threads (its repeats checked themselves)."""
        whole(self.threads, "threads")


def summary_of(repeats):
    """The Summary of a point's repeats, its suspect ones named ("r2: foreign 31% > 10%")."""
    return summary([x.value for x in repeats], "; ".join(f"r{x.repeat}: {x.suspect}" for x in repeats if x.suspect))


@dataclass(frozen=True)
class Host:
    """The machine a run was measured on (or, for an import, what its file says of it): a one-line summary,
    the report's rows (label, value) and the warnings its header states before any number."""
    one_line: str
    kind: str                   # bare-metal, vm, … (env/virt.txt), or runfolder.KIND_IMPORTED / KIND_PUBLISHED
    rows: tuple = ()            # ((label, value), …)
    warnings: tuple = ()        # what moves memory or time behind the lab's back (env/memory-time.txt)
    build: str | None = None    # env/build.txt: how the instruments were built
    imported: dict | None = None    # an import's record (env/imported.json): the file's own words
    settings: dict = field(default_factory=dict)    # {"topology": {key: value}, …}: env/'s key=value files


@dataclass(frozen=True)
class Story:
    """A seed story (reference/stories.csv) with an experiment in the run: its claim, the published figure
    of that claim, what was measured here, the verdict and whether the why=1 evidence names its cause.
    checks: the per-point comparisons with published figures ((text, verdict, why), …); they do not
    decide the verdict."""
    source: str
    title: str
    effect: str
    experiments: tuple          # the story's experiments present in the run
    checks: tuple
    claim: str
    published: str
    measured: str
    verdict: str                # yes / no / inconclusive / not measurable here
    why: str
    cause: str                  # found / not found / no evidence (claims.py)
    cause_why: str


@dataclass(frozen=True)
class Scaling:
    """How an experiment's first variant scales over threads, per placement (lab/report/scaling.py): the
    speedup rows (core/rules.speedups: placement, threads, base, speedup and efficiency with their 95%
    ranges, doubt), a word per placement (stops / scales / inconclusive / one thread count), the pinning
    comparisons and the sentences the report and the terminal say."""
    metric: str
    unit: str
    better: str                 # higher / lower
    threshold: float            # the efficiency below which scaling stops (rules.THRESHOLD)
    rows: tuple
    words: dict                 # {placement: word}
    pinning: tuple
    sentences: tuple


@dataclass(frozen=True)
class GoalRow:
    """A spec's goal judged at one placement and thread count (lab/report/goals.py judge)."""
    placement: str
    threads: str
    picked: str                 # the best of the goal's numerator variants there
    ratio: float | None         # picked's median over the denominator's, None when not judged
    lo: float | None            # its 95% range
    hi: float | None
    caveat: str                 # a side whose server was not saturated (client.capacity_doubts), in words
    verdict: str                # met / not met / inconclusive
    why: str


@dataclass(frozen=True)
class Goal:
    """One goal line of a run's spec: its text (or "line N" for one this lab cannot read), its rows, and
    why it has none ("" when it has)."""
    goal: str
    rows: tuple                 # (GoalRow, …)
    error: str


@dataclass(frozen=True)
class Experiment:
    """One experiment of a run (lab/report/model.py experiment): its spec, charts, points (results and
    noise readings), what the journal says of it (skipped, failed, re-measured, not confident), the
    published comparisons, goals, and how it scales and why. Built once and frozen all the way: its
    sequences are tuples (a reader that needs another makes its own); the dicts inside (the published
    comparisons' rows, the journal's events) are the model's, and readers do not edit them."""
    name: str
    spec: tuple                 # the spec snapshot's lines
    charts: tuple               # ((kind, metric), …) the experiment draws
    chart_files: tuple          # ((kind, metric, path without extension), …) of the charts on disk
    missing_charts: tuple       # why a chart asked for is not drawn
    skipped: tuple              # the journal's skipped points, in words
    points: tuple               # (Point, …) results (noise readings left out)
    table: tuple                # the points its table lists (a full pair matrix goes to the heatmap)
    mem_column: bool            # an instrument recorded the measured memory's node
    pair_rows: int              # points of a pair matrix left out of the table
    noise: tuple                # (Point, …) noise readings (engine.guard.NOISE_METRICS)
    glance: dict | None         # the at-a-glance table of charted metrics
    suspect: tuple              # (Point, …) with a suspect repeat
    suspect_points: tuple       # ((first Point, (metrics, …)), …) per point with suspect repeats
    rate_bound: tuple           # client.bound: which side bounded a cache point's rate
    goals: tuple                # goals.of_experiment: each goal a spec states, judged
    remeasured: tuple           # re-measured repeats, in words
    remeasured_raw: tuple       # their discarded attempts' raw folders (None where absent)
    failed: tuple               # failed points, in words
    unconfident: tuple          # the journal's confidence events that were not confident
    perf: tuple                 # perf summaries of each point's first repeat
    beside: tuple               # published figures beside the measured medians
    shapes: tuple               # published series' growth beside the measured
    ratios: tuple               # published ratios between variants beside the measured
    numa: dict | None           # a node x node memory matrix's notes
    relations: dict | None = None   # c2c, c2c-matrix: per CPU-pair relation, beside published machines
    scaling: Scaling | None = None
    why: object | None = None   # lab/why/model.WhySection: why it stops scaling (lab/report/causes.py)
    flames: object | None = None    # lab/why/model.Flames its drawing made (front.draw), None before drawing


@dataclass(frozen=True)
class Run:
    """A run folder read once (lab/report/model.py build; lab/report/front.py read): what every renderer,
    the exports and the terminal's words draw from. experiments: each experiment's part of the model
    (lab/report/model.py experiment), in the folder's order."""
    path: str                   # the run folder
    name: str
    kind: str                   # runfolder.KIND_SWEEP / KIND_IMPORTED / KIND_PUBLISHED
    state: str                  # complete, interrupted, imported, … (runfolder.state), "unknown"
    command: str                # the sweep's command line (sweep/command)
    host: Host
    journal: str                # "journal.jsonl", or "none" for a run without a structured journal
    experiments: tuple
    not_measured: dict          # {experiment: why} the sweep skipped
    stories: tuple              # (Story, …)
    code: dict | None = None    # the code's identity (sweep/identity.json), None when absent or not an object

    @functools.cached_property
    def folder(self):
        """Its RunFolder (the safe reader and writer of the folder's files)."""
        return RunFolder(self.path)

    def experiment(self, name):
        return next((e for e in self.experiments if e.name == name), None)
