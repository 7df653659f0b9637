"""The why section's types (issue 52 item 3): what the why reading side (diff → classify → verdict, and
report/causes.section over a run folder) hands the report, read by attribute in report.md, report.html
and the terminal's words. Frozen: a renderer reads them and computes nothing; what drawing makes (the
differential flame graphs) is its own result, Flames, never written into the section.

The differential (diff.differential: Differential, its Compared rows and Ratio totals) is built once,
whole: its rows carry their share of the added cost and, for findings, their class (classify.rule)."""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ratio:
    """diff.ratio: knee/base of per-run totals (means `base`, `knee`), the ratio of geometric means and its
    95% interval (lo, hi None with fewer than 2 runs a side; ratio NaN without costs)."""
    base: float
    knee: float
    ratio: float
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class Program:
    """The program's resident pages at its peak sample: its process name, kB in all, the node holding most
    (None without pages) and that node's share."""
    comm: str
    kb: int
    home: int | None
    share: float


@dataclass(frozen=True)
class Mapping:
    """The program's hot mapping (its largest resident one): name, start address, kB, NUMA policy."""
    name: str
    start: str
    kb: int
    policy: str


@dataclass(frozen=True)
class Placement:
    """memory.of_run / of_runs: where the memory lives against where the threads ran (why/memory.py's
    rule). kind: "remote", "spread", "local", "one node" or None (too little to tell, or runs that disagree
    evenly); home: the node holding most of the hot mapping; concentrated: its share there; away: the
    share of on-CPU time on other nodes; ran_on: node → threads that ran mostly there; settings: the
    host's numa_balancing and thp as recorded; words: the rule's sentence. runs, agree: of_runs' runs
    with a kind and how many said the kind (None for one run)."""
    nodes: list
    home: int | None
    concentrated: float
    away: float
    threads: int
    away_threads: int
    ran_on: dict
    program: Program
    mapping: Mapping | None
    settings: dict
    cut: bool
    kind: str | None
    words: str
    runs: int | None = None
    agree: int | None = None


@dataclass(frozen=True)
class Compared:
    """One compared row of the differential (diff.rows): a stack, function or scheduler count (`what`), its
    kind ("on-CPU", "off-CPU", "count"), its name, the mean cost per unit of work at the base and the knee,
    the growth and its 95% interval (lo, hi), the per-run costs (base runs, knee runs), the raw amounts
    summed a side, the Poisson p (on-CPU), its share of the added cost, the flag ('' for a finding, else why
    not) and, for a finding, its class (classify.rule; '' otherwise)."""
    what: str
    kind: str
    name: str
    base: float
    knee: float
    growth: float
    lo: float | None
    hi: float | None
    runs: tuple
    amount: tuple
    p: float
    share: float
    flag: str
    cls: str = ""


@dataclass(frozen=True)
class Together:
    """diff.together: a set of stack rows taken as one; their summed cost per unit of work at the base and
    the knee, the growth and its 95% interval, how many stacks."""
    base: float
    knee: float
    growth: float
    lo: float | None
    hi: float | None
    stacks: int


@dataclass(frozen=True)
class Added:
    """diff.added_cost: the added cost the shares are of, the findings' part of it, the part spread thin."""
    added: float
    found: float
    spread: float


@dataclass(frozen=True)
class FutexWait:
    """diff._futex: one waiting stack's futex waits per unit of work (means over runs): waits, µs waited, the
    addresses seen (ASLR moves them), the word's symbol, the wakes per unit of work and who woke it
    (waker stack → wakes per unit of work)."""
    waits: float
    wait_us: float
    addrs: tuple
    symbol: str
    wakes: float
    wakers: dict


@dataclass(frozen=True)
class Sides:
    """A thing at the base (fewest threads) and at the knee."""
    base: object
    knee: object


@dataclass(frozen=True)
class Hardware:
    """The hardware tier's reading of a differential (why/hardware.py): the knee's parsed perf c2c report and
    perf mem report (None where absent), what top-down's growth supports ("memory", "shared data" or None),
    one clause per kind that ran and one "kind: why" per kind that did not."""
    c2c: object = None
    mem: object = None
    supports: str | None = None
    words: tuple = ()
    absent: tuple = ()


@dataclass(frozen=True)
class Differential:
    """diff.differential of two points' evidence: everything the classes, the verdict and the flame graph
    read. missing: kind ("on", "off") → why that kind cannot be compared; total: kind ("on", "off", "all")
    → Ratio; stacks, functions_self, functions_incl, sched: Compared rows, largest growth first; runs:
    evidence runs kept (base, knee); speed: the kept runs' pace against the timed repeats (base, knee);
    alone, memory, placed: what why/alone.py, why/memory.py and why/groups.py read from the runs; sampled,
    judged: how the knee was sampled and what the validity gate kept, in words; futex: Sides of
    {waiting stack: FutexWait} (None where not recorded); hotins: {symbol: [(samples, instruction,
    offset)]} at the knee."""
    placement: str
    base_threads: int
    knee_threads: int | None
    knee_why: str
    stops: bool
    unit: str | None
    runs: tuple
    missing: dict
    stacks: tuple
    functions_self: tuple
    functions_incl: tuple
    sched: tuple
    total: dict
    hz: float
    evidence: dict
    speed: tuple
    alone: tuple
    memory: Placement | None
    sampled: tuple
    placed: list
    judged: tuple
    added: float
    found: float
    spread: float
    futex: Sides
    hotins: dict | None
    hardware: Hardware = Hardware()


@dataclass(frozen=True)
class Row:
    """One row of a verdict's tables (verdict.table): a stack or function, its kind, its cost per unit of
    work at the base and at the knee (µs), the growth, its share of the added cost, the growth's 95%
    interval (lo, hi) or None, the flag ("finding" or why not) and the class ('' when none)."""
    name: str
    what: str
    kind: str
    cost_base: float
    cost_knee: float
    growth: float
    share: float
    interval: tuple | None
    flag: str
    cls: str


@dataclass(frozen=True)
class CauseClass:
    """A class of findings (classify.CLASSES, "other"): its share of the added cost and its finding rows."""
    share: float = 0.0
    rows: tuple = ()


@dataclass(frozen=True)
class Classes:
    """classify.classify of one differential: the cause (None without evidence), every class by name,
    notes said in the words, the kinds of evidence missing, and whether the curve and the evidence disagree
    (the curve stops, nothing grew)."""
    cause: str | None
    classes: dict = field(default_factory=dict)      # name → CauseClass
    notes: tuple = ()
    missing: tuple = ()
    contradicts: bool = False


@dataclass(frozen=True)
class Verdict:
    """One placement's verdict (verdict.verdict, verdict.none): plain text and rows for report.md,
    report.html and ./lab scale. unit, cause None when there was nothing to compare; classes: name →
    share; totals: the differential's ratio totals by kind ("on", "off", "all")."""
    placement: str
    base_threads: int
    knee_threads: int
    knee_why: str
    unit: str | None
    cause: str | None
    text: str
    classes: dict = field(default_factory=dict)
    stacks: tuple = ()
    functions: tuple = ()
    functions_inclusive: tuple = ()
    totals: dict = field(default_factory=dict)
    missing: tuple = ()


@dataclass(frozen=True)
class Curve:
    """One curve (variant, placement) of an experiment: its verdict and the differential it rests on
    (None: no evidence to compare, the verdict says why). placed: where the knee's kept evidence runs'
    threads ran and what they did (groups.placed), kept when there is no differential because the gate
    kept no run at the fewest threads: a description of the knee alone, never a cause."""
    verdict: Verdict
    diff: Differential | None = None
    variant: str = ""
    placed: tuple = ()


@dataclass(frozen=True)
class WhySection:
    """report/causes.section of one experiment with scaling words: the metric, which way is better, whether
    several variants each have curves (labels then name the variant), the USL model of each curve by
    (variant, placement), every curve's verdict and whether any curve has evidence (why=1)."""
    metric: str
    better: str
    several: bool
    usl: dict                  # (variant, placement) → usl.Fit | usl.NoFit
    curves: tuple              # Curve
    evidence: bool

    def label(self, c):
        """'variant, placement' when several variants have curves, else the placement."""
        return f"{c.variant}, {c.verdict.placement}" if self.several else c.verdict.placement


@dataclass(frozen=True)
class Flames:
    """What causes.draw drew for one experiment: (variant, placement) → the flame graph's path in the run
    folder, and (variant, placement) → why inferno could not draw it (said beside the verdict's missing)."""
    paths: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)

    def missing(self, c):
        """A curve's verdict.missing with the flame graph that could not be drawn said after it."""
        why = self.failed.get((c.variant, c.verdict.placement))
        return tuple(c.verdict.missing) + ((f"no flame graph: {why}",) if why else ())


NO_FLAMES = Flames()
