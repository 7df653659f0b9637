"""The typed run model's measured part, as docs/run-format.schema.json documents it: a Point (one variant
× placement × threads × CPU set × metric) with its Summary (core/stats.py) and its Repeats. Built once
by lab/report/model.py from the run's tidy rows and journal; read by attribute by the report, the why
side, the charts and the exports. Frozen: a reader that needs another view of a point makes a new one
(dataclasses.replace), it never edits the model another reader draws from."""
import functools
from dataclasses import dataclass, field

from lab.core.runfolder import RunFolder
from lab.core.stats import Summary


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


@dataclass(frozen=True)
class Point:
    """One measured point: its coordinates, its repeats and their Summary. threads is the tidy CSV's text
    (an import may say "" or a parameter's value), the export writes it as a number."""
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
        return next((e for e in self.experiments if e["name"] == name), None)
