"""Top-down level 1 from `perf stat` text (Intel `--topdown`, AMD Zen 4/5 PipelineL1/L2 metric groups), and
the lab's words for a pair of points: the fewest threads and the knee (docs/design.md, "The hardware
tier"). Only recorded text has gone through this module: no host of the lab has a PMU yet.

perf printed it in three ways, all read here:
- columns (perf <= 6.2): a header `retiring  bad speculation  frontend bound  backend bound`, then one row
  per interval (-I) or per core (S0-D0-C0 …), values with `%`;
- tma columns (perf >= 6.3 with -I): `%  tma_retiring %  tma_backend_bound …`, values without `%`;
- metric lines (perf >= 6.3, and AMD's groups): `#  32.0 %  tma_frontend_bound` beside an event, or
  AMD's `#  14.9 %  backend_bound` (PipelineL1 adds a fifth share, smt_contention); PipelineL2's halves
  (backend_bound_cpu + backend_bound_memory…) add
  up to level 1 where level 1 itself is not printed.
Rows are averaged; a hybrid CPU's second (atom) block is not read (its first metric of each name counts).
"""
import re
from dataclasses import dataclass

from .perftext import PerfTextError, lines, percent

WHAT = "perf stat --topdown"
LEVEL1 = ("retiring", "bad_speculation", "frontend_bound", "backend_bound")
MAX_ROWS = 100000
CHANGE = 5.0                 # percentage points that count as a change between two points
SANE_SUM = (90.0, 110.0)     # level 1 adds to 100%; multiplexed or disturbed counts do not
# metric names as perf prints them → the lab's names (level 2 halves summed into level 1 below)
METRIC = {"tma_retiring": "retiring", "retiring": "retiring",
          "tma_bad_speculation": "bad_speculation", "bad_speculation": "bad_speculation",
          "tma_frontend_bound": "frontend_bound", "frontend_bound": "frontend_bound",
          "tma_backend_bound": "backend_bound", "backend_bound": "backend_bound",
          "tma_memory_bound": "memory_bound", "backend_bound_memory": "memory_bound",
          "tma_core_bound": "core_bound", "backend_bound_cpu": "core_bound",
          "retiring_fastpath": "retiring.1", "retiring_microcode": "retiring.2",
          "bad_speculation_mispredicts": "bad_speculation.1", "bad_speculation_pipeline_restarts": "bad_speculation.2",
          "frontend_bound_bandwidth": "frontend_bound.1", "frontend_bound_latency": "frontend_bound.2",
          "smt_contention": "smt_contention"}
_METRIC_LINE = re.compile(r"#?\s*(-?\d{1,6}(?:[.,]\d{1,6})?)\s*%\s+([a-z_]{4,40})\b")
_COLUMN = {"retiring": "retiring", "bad speculation": "bad_speculation", "frontend bound": "frontend_bound",
           "backend bound": "backend_bound"}


@dataclass(frozen=True)
class Topdown:
    """Level 1 in percent of pipeline slots, and level 2's memory/core split of backend where printed."""
    retiring: float
    bad_speculation: float
    frontend_bound: float
    backend_bound: float
    memory_bound: object        # float or None
    core_bound: object          # float or None
    layout: str                 # "columns", "tma columns", "metrics"
    rows: int                   # intervals or cores averaged (1 for metric lines)
    smt_contention: object = None   # AMD Zen 4/5's fifth level-1 share (slots the sibling thread took)

    @property
    def sane(self):
        values = [getattr(self, k) for k in LEVEL1] + ([self.smt_contention] if self.smt_contention is not None else [])
        return all(0 <= v <= 100 for v in values) and SANE_SUM[0] <= sum(values) <= SANE_SUM[1]


def _columns(numbered, at, names):
    """Rows under a column header: the last len(names) numbers of each, until the table ends."""
    sums, rows = [0.0] * len(names), 0
    for n, line in numbered[at + 1:]:
        tokens = line.split()
        if not tokens:
            if rows:
                break
            continue
        if tokens[0] in ("...", "#"):
            continue
        if len(tokens) < len(names) + 1:
            raise PerfTextError(WHAT, n, f"a row with {len(tokens)} fields under a {len(names)}-column header")
        for i, t in enumerate(tokens[-len(names):]):
            sums[i] += percent(t, WHAT, n)
        rows += 1
        if rows > MAX_ROWS:
            raise PerfTextError(WHAT, n, f"more than {MAX_ROWS} rows")
    if not rows:
        raise PerfTextError(WHAT, numbered[at][0], "a top-down header without rows (the text was cut short)")
    return {k: s / rows for k, s in zip(names, sums)}, rows


def parse(text):
    """perf stat's text → Topdown; anything else → PerfTextError (one line)."""
    numbered = lines(text, WHAT)
    for i, (n, line) in enumerate(numbered):
        low = line.lower()
        if "retiring" in low and "bad speculation" in low and "tma_" not in low:
            if any(c not in low for c in _COLUMN):
                raise PerfTextError(WHAT, n, "a top-down header without all four level-1 columns")
            order = sorted(_COLUMN, key=low.index)
            values, rows = _columns(numbered, i, [_COLUMN[c] for c in order])
            return Topdown(**values, memory_bound=None, core_bound=None, layout="columns", rows=rows)
        if re.match(r"\s*#\s+time\b", line) and "tma_retiring" in low:
            order = re.findall(r"tma_[a-z_]+", low)
            names = [METRIC.get(o, o) for o in order]
            values, rows = _columns(numbered, i, names)
            return _topdown({k: v for k, v in values.items() if k in LEVEL1 + ("memory_bound", "core_bound")},
                            "tma columns", rows, n)
    found, last = {}, 0
    for n, line in numbered:
        for m in _METRIC_LINE.finditer(line):
            name = METRIC.get(m.group(2))
            if name and name not in found:
                found[name] = percent(m.group(1), WHAT, n)
                last = n
    if not found:
        raise PerfTextError(WHAT, len(numbered), "no top-down metrics (retiring, backend bound…) in the text")
    for k in LEVEL1:
        if k not in found and f"{k}.1" in found and f"{k}.2" in found:
            found[k] = round(found[f"{k}.1"] + found[f"{k}.2"], 6)
    if "backend_bound" not in found and "memory_bound" in found and "core_bound" in found:
        found["backend_bound"] = round(found["memory_bound"] + found["core_bound"], 6)
    return _topdown(found, "metrics", 1, last)


def _topdown(values, layout, rows, n):
    missing = [k for k in LEVEL1 if k not in values]
    if missing:
        raise PerfTextError(WHAT, n, f"no {', '.join(missing)} (the text was cut short, or not level 1)")
    return Topdown(**{k: values[k] for k in LEVEL1}, memory_bound=values.get("memory_bound"),
                   core_bound=values.get("core_bound"), layout=layout, rows=rows,
                   smt_contention=values.get("smt_contention"))


@dataclass(frozen=True)
class Reading:
    supports: object            # "memory", "shared data" or None
    words: str


def _pct(x):
    return f"{x:.1f}%"


def compare(few, knee, few_threads, knee_threads):
    """The lab's words for top-down at the fewest threads and at the knee: backend/memory-bound growth
    supports memory; retiring unchanged with more stalls supports shared data (a contended line stalls
    the same work longer: the slots it retires keep their share while stall slots grow at others' cost)."""
    at = f"{few_threads} → {knee_threads} threads"
    if not (few.sane and knee.sane):
        bad = [f"{t} threads" for t, td in ((few_threads, few), (knee_threads, knee)) if not td.sane]
        return Reading(None, f"top-down not read: its level 1 at {' and '.join(bad)} is not a share of 100% "
                             "(multiplexed or disturbed counts)")
    d_ret = knee.retiring - few.retiring
    d_back = knee.backend_bound - few.backend_bound
    mem = few.memory_bound is not None and knee.memory_bound is not None
    d_mem = knee.memory_bound - few.memory_bound if mem else None
    stalls = f"backend bound {_pct(few.backend_bound)} → {_pct(knee.backend_bound)}"
    split = f", memory bound {_pct(few.memory_bound)} → {_pct(knee.memory_bound)}" if mem else ""
    if abs(d_ret) < CHANGE and d_back >= CHANGE:
        return Reading("shared data", f"retiring unchanged with more stalls supports shared data ({at}: retiring "
                                      f"{_pct(few.retiring)} → {_pct(knee.retiring)}, {stalls}{split})")
    if (mem and d_mem >= CHANGE) or d_back >= CHANGE:
        what = "memory-bound" if mem and d_mem >= CHANGE else "backend-bound"
        return Reading("memory", f"{what} growth supports memory ({at}: {stalls}{split}, retiring "
                                 f"{_pct(few.retiring)} → {_pct(knee.retiring)})")
    return Reading(None, f"top-down points at neither memory nor shared data ({at}: retiring {_pct(few.retiring)} → "
                         f"{_pct(knee.retiring)}, {stalls}{split})")
