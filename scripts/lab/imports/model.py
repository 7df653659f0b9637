"""What a reader makes of a file: the tidy rows of each experiment and what the file says of its machine."""
import re
from dataclasses import dataclass, field

from lab.engine.spec import NAME

# The tools do not pin: what they measured is the lab's `unpinned` placement.
PLACEMENT = "unpinned"
# A parameter that counts threads, by its name (hyperfine -P/-L, pyperf benchmark names), unless
# threads=NAME says which.
THREAD_NAMES = ("threads", "t", "jobs", "j", "n")


@dataclass
class Imported:
    format: str                        # "hyperfine", "gbench", "pyperf", "scaling-lab run"
    version: str                       # the file's format version, or what its tool said of itself
    default_name: str                  # the experiment's name when name= does not give one
    rows: dict = field(default_factory=dict)     # {experiment: [row dict without run_id]}
    charts: dict = field(default_factory=dict)   # {experiment: [(kind, metric)]}
    machine: dict = field(default_factory=dict)  # {key: value}: what the file says of its machine
    env_files: dict = field(default_factory=dict)   # {env/ name: text}: the file's own words, kept
    host: str = ""                     # the machine's name, when the file gives one
    extra: dict = field(default_factory=dict)    # more for env/imported.json (parameters, exit codes…)

    def add(self, exp, variant, threads, repeat, metric, value, unit, cpus="", placement=PLACEMENT, suspect=""):
        self.rows.setdefault(exp, []).append({
            "experiment": exp, "variant": variant, "placement": placement, "threads": str(threads),
            "cpus": cpus, "repeat": str(repeat), "metric": metric, "value": repr(float(value)), "unit": unit,
            "suspect": suspect})

    def one_variant(self):
        """A file of one benchmark (one command, family or name, over thread counts) has no variant, like a
        lab run of one command: its name is kept in env/imported.json, and compare lines the two up."""
        for exp, rows in self.rows.items():
            names = {r["variant"] for r in rows}
            if len(names) == 1 and names != {""}:
                self.extra.setdefault("benchmark", {})[exp] = names.pop()
                for r in rows:
                    r["variant"] = ""

    def points(self):
        return sum(len({(r["variant"], r["placement"], r["threads"], r["cpus"], r["metric"]) for r in rs})
                   for rs in self.rows.values())

    def rename(self, name):
        """One experiment takes the name given by name= (a run of several keeps its own names)."""
        if len(self.rows) == 1 and name:
            (old,) = self.rows
            self.rows = {name: [dict(r, experiment=name) for r in self.rows[old]]}
            self.charts = {name: self.charts.get(old, [])}


def slug(text, fallback="imported"):
    """A name (experiment, run folder part) made of what NAME allows."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60]
    return s if s and NAME.fullmatch(s) else fallback


def scaling_charts(metric):
    return [("speedup", metric), ("scaling", metric)]


def thread_of(names, threads_name):
    """Which of `names` (parameters) counts threads: threads=NAME's, else the first of THREAD_NAMES."""
    if threads_name:
        return threads_name if threads_name in names else None
    return next((n for n in THREAD_NAMES if n in names), None)
