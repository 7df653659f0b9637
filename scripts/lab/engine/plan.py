"""Plan every point of every spec once, in-process, from one hwloc read of the host (or a fixture).

A point is (experiment, variant, placement, threads) with its CPU list; its repeats are measured
later. A placement the topology cannot satisfy becomes a skipped point with hwloc's reason, never a
substitute.
"""
import hashlib
import re
from dataclasses import dataclass, field

from lab.topology.topo import PAIRS, PlacementError



def stem(variant, placement, threads):
    """A point's name in file names, one per point and the one owner of it (the engine writes by it, the
    report and the stories read by it); a repeat's files are `<stem>_r<N>`. A variant or placement of
    letters, digits, '.' and '-' (not starting with '.') is its own name; any other (a received cell:
    `../x`, `a+b`) gets its other characters replaced and a short hash of its exact text (`a+b` and `a_b`
    must not share a file), so a stem is always one file name of runfolder.EVENT_KEY's shape. `threads`
    is a whole number."""
    return f"{name_part(variant or '-')}_{name_part(placement)}_t{int(threads)}"


def name_part(text):
    if re.fullmatch(r"[A-Za-z0-9-][A-Za-z0-9.-]{0,47}", text):
        return text
    return re.sub(r"[^A-Za-z0-9.-]", "_", text)[:48].lstrip(".") + "~" + hashlib.sha256(text.encode()).hexdigest()[:10]


@dataclass
class Point:
    experiment: str
    variant: str            # "" for a spec without variants
    placement: str
    threads: int
    cpus: list = field(default_factory=list)
    others: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    pairs: str = ""         # "a:b,c:d": CPU pairs of a pair placement's relation
    smt_pairs: str = ""     # "a:b,c:d": SMT siblings of the point's CPUs (only for a command using them)
    skip: str = ""          # why the host cannot run it, or that it is shared (same_as)
    same_as: str = ""       # the placement whose point has the same CPUs: measured once there, shared here

    @property
    def stem(self):
        return stem(self.variant, self.placement, self.threads)

    def key(self, repeat):
        """The point's file and raw-folder name for one repeat."""
        return f"{self.stem}_r{repeat}"


def auto_threads(topo):
    n, out, i = len(topo.pus), [], 1
    while i < n:
        out.append(i)
        i *= 2
    return out + [n]


def spread_list(pairs, k):
    """Up to k pairs spread evenly over a list of pairs (topo.spread_pairs does it for a placement's
    pairs without building their list)."""
    n = min(k, len(pairs))
    return [pairs[i * len(pairs) // n] for i in range(n)]


def every(topo, placement):
    """threads = all: every CPU the placement can use (one PU per core for `cores`)."""
    return len(topo.pus) if placement == "unpinned" else \
        len(topo.cores()) if placement == "cores" else len(topo.usable())


def smt_pairs(topo, cpus, k):
    """Up to k SMT-sibling pairs whose first PU is one of cpus (a `cores` list), spread over hwloc's
    list; none on a host without SMT."""
    first = set(cpus)
    try:
        found = [(a, b) for a, b in topo.iter_pairs("smt") if a in first]
    except PlacementError:
        return ""
    return ",".join(f"{a}:{b}" for a, b in spread_list(found, k)) if found else ""


def plan(resolved, topo):
    """Every point of one resolved spec, in measuring order."""
    out = []
    variants = resolved["variants"].split()
    want_smt = "{smt_pairs}" in (resolved["command"] or "") + (resolved["args"] or "") + (resolved["exec"] or "")
    for placement in resolved["placements"].split():
        threads = auto_threads(topo) if resolved["threads"] == "auto" else \
            [every(topo, placement)] if resolved["threads"] == "all" else \
            [int(t) for t in resolved["threads"].split()]
        for t in ([2] if placement in PAIRS else threads):
            try:
                cpus = topo.plan(placement, t)
            except PlacementError as e:
                out.append(Point(resolved.name, "", placement, t, skip=str(e)))
                continue
            pairs = ""
            if placement in PAIRS:
                chosen = topo.spread_pairs(placement, int(resolved["pairs"]))
                pairs = ",".join(f"{a}:{b}" for a, b in chosen)
            smt = smt_pairs(topo, cpus, int(resolved["pairs"])) if want_smt else ""
            for v in variants:
                out.append(Point(resolved.name, "" if v == "-" else v, placement, t, cpus,
                                 topo.others(cpus), topo.nodes(cpus), pairs, smt_pairs=smt))
    return shared(out, resolved) if resolved.get("share", "1") == "1" else out


def shared(points, resolved):
    """No point twice: a pinned point whose CPUs an earlier placement's point of the same variant and thread
    count already has is measured once, there, and shared (skip says so, same_as names the owner). The
    CPUs compare as a set, or as the ordered list when the command reads {cpus} (its threads may be placed
    by that order). Pair placements, unpinned and pin=none points are never shared: their CPUs are not
    what the program runs on."""
    words = (resolved["command"] or "") + (resolved["args"] or "") + (resolved["exec"] or "")
    ordered = "{cpus}" in words
    if resolved.get("pin", "taskset") == "none":
        return points
    owners = {}
    for p in points:
        if p.skip or p.placement in PAIRS or p.placement == "unpinned" or not p.cpus:
            continue
        key = (p.variant, p.threads, tuple(p.cpus) if ordered else frozenset(p.cpus))
        owner = owners.setdefault(key, p.placement)
        if owner != p.placement:
            p.same_as = owner
            p.skip = (f"the same CPUs as {owner} at {p.threads} thread{'s' if p.threads != 1 else ''}: "
                      "measured once there, shared")
    return points
