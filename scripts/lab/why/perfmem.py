"""`perf mem report -F mem,sample,snoop` read into typed rows, and the lab's words for where loads were
served (docs/design.md, "The hardware tier"): on AMD Zen 4 and later, IBS names the source of each
sampled load (its own CCX's L1/L2/L3, another CCX's cache, local or remote DRAM), which is seed 004's
cross-CCX cost in the lab's words. Only recorded text has gone through this module: the one published
sample found is Ravi Bangoria's (LKML 2022-05-25), quoted in tests/test_hw_perfmem.py.

perf prints the source as "Memory access" words; the lab reads perf's labels as that series printed
them (later perf versions reworded some, e.g. "Any cache hit"; those rows are kept, counted as "other"):
"Remote Cache (1 hop)" is a cache of another CCX on the same node, "(2 hops)" one on another node, as
the kernel's IBS mapping (near/far CCX) sets the hop count.
"""
import re
from dataclasses import dataclass

from .perftext import PerfTextError, lines

WHAT = "perf mem report"
MAX_ROWS = 10000
_ROW = re.compile(r"^\s*(?P<access>[A-Za-z][A-Za-z0-9 ()/_.,+-]*?)"
                  r"\s{2,}(?P<samples>\d{1,20})(?:\s+(?P<snoop>\S+))?\s*$")
# perf's data-source words → where the load was served, in the lab's words
WHERE = (("L1 hit", "own core"), ("L2 hit", "own core"), ("LFB", "own core"), ("L3 hit", "own CCX (L3)"),
         ("Remote Cache (1 hop)", "another CCX, same node"), ("Remote Cache (2 hops)", "another CCX, other node"),
         ("Local RAM", "local DRAM"), ("Remote RAM", "remote DRAM"))


@dataclass(frozen=True)
class Source:
    access: str                 # perf's words ("Remote Cache (1 hop) hit")
    samples: int
    snoop: str                  # "HitM", "N/A", …

    @property
    def where(self):
        if self.access.startswith("N/A"):
            return None         # not a load or store (IBS tags every op)
        return next((w for prefix, w in WHERE if self.access.startswith(prefix)), "other")


@dataclass(frozen=True)
class MemReport:
    event: str
    rows: tuple

    def samples(self, where):
        return sum(r.samples for r in self.rows if r.where == where)


def parse(text):
    """`perf mem report -F mem,sample,snoop` (stdio or the TUI's printout) → MemReport; else PerfTextError."""
    numbered = lines(text, WHAT)
    event, header, rows = "", None, []
    for n, line in numbered:
        body = line.lstrip().removeprefix("#").strip()
        if not body or set(body) <= {".", " "}:
            continue
        m = re.search(r"of event '([^']{1,200})'", body)
        if m and header is None:
            event = m.group(1)
            continue
        if header is None:
            if body.startswith("Memory access") and "Samples" in body:
                header = n
            continue
        r = _ROW.match(body)
        if not r or (r.group("snoop") is None and "Snoop" in numbered[header - 1][1]):
            raise PerfTextError(WHAT, n, "a row that is not `access  samples  snoop` (cut short or garbled)")
        if len(rows) >= MAX_ROWS:
            raise PerfTextError(WHAT, n, f"more than {MAX_ROWS} rows")
        rows.append(Source(r.group("access"), int(r.group("samples")), r.group("snoop") or ""))
    if header is None:
        raise PerfTextError(WHAT, len(numbered), "no `Memory access  Samples` header (not a perf mem report)")
    if not rows:
        raise PerfTextError(WHAT, len(numbered), "a header without rows (the text was cut short)")
    return MemReport(event, tuple(rows))


def _share(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole else "0%"


def words(report):
    """'cross-CCX: 15 of 136352 sampled loads and stores with a source (0.0%) were served by another CCX's
    cache (near 5, far 10; 12 of them HitM); DRAM: local 2, remote 8558 (6.3%)'."""
    known = [r for r in report.rows if r.where is not None]
    total = sum(r.samples for r in known)
    if not total:
        return "data source not read: no sampled load or store had a source"
    near, far = report.samples("another CCX, same node"), report.samples("another CCX, other node")
    hitm = sum(r.samples for r in known if r.where.startswith("another CCX") and r.snoop.lower() == "hitm")
    local, remote = report.samples("local DRAM"), report.samples("remote DRAM")
    return (f"cross-CCX: {near + far} of {total} sampled loads and stores with a source ({_share(near + far, total)}) "
            f"were served by another CCX's cache (near {near}, far {far}; {hitm} of them HitM); "
            f"DRAM: local {local}, remote {remote} ({_share(remote, total)})")
