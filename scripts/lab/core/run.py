"""The typed run model's measured part, as docs/run-format.schema.json documents it: a Point (one variant
× placement × threads × CPU set × metric) with its Summary (core/stats.py) and its Repeats. Built once
by lab/report/model.py from the run's tidy rows and journal; read by attribute by the report, the why
side, the charts and the exports. Frozen: a reader that needs another view of a point makes a new one
(dataclasses.replace), it never edits the model another reader draws from."""
from dataclasses import dataclass

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
