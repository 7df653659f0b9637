"""The why section's types (issue 52 item 3): what the why reading side (diff → classify → verdict, and
report/causes.section over a run folder) hands the report, read by attribute in report.md, report.html
and the terminal's words. Frozen: a renderer reads them and computes nothing; what drawing makes (the
differential flame graphs) is its own result, Flames, never written into the section.

The differential itself (diff.differential) stays the analysis' working data: rows it ranks, shares it
fills in and the classes classify gives them; the report reads it only through Verdict (and flame.svg
draws from it)."""
from dataclasses import dataclass, field


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
    (None: no evidence to compare, the verdict says why)."""
    verdict: Verdict
    diff: dict | None = None
    variant: str = ""


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
