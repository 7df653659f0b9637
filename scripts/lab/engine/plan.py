"""Plan every point of every spec once, in-process, from one hwloc read of the host (or a fixture).

A point is (experiment, variant, placement, threads) with its CPU list; its repeats are measured
later. A placement the topology cannot satisfy becomes a skipped point with hwloc's reason, never a
substitute.
"""
import hashlib
import math
import re
from dataclasses import dataclass, field

from lab.core import rules
from lab.topology.topo import PAIRS, PlacementError

from . import stories


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
    held: str = ""          # plan=adaptive: "coarse" or "refine", a candidate measured only if refine() asks
    story: str = ""         # a seed story's claim judges it (stories.mark): measured first, never left out to fit

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
    adaptive = resolved.get("plan", "grid") == "adaptive"
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
                                 topo.others(cpus), topo.nodes(cpus), pairs, smt_pairs=smt,
                                 held=hold(threads, t) if adaptive and placement not in PAIRS else ""))
    out = shared(out, resolved) if resolved.get("share", "1") == "1" else out
    for p in stories.mark(out, topo, coarse):
        if p.story and not p.skip:
            p.held = ""         # a story's point is measured at once, whatever the curve asks
    return out


# plan=adaptive: the coarse grid steps ×4 over the candidates; the first FIRST of it are measured at once,
# the rest one at a time while the curve has not turned down
STEP, FIRST = 4, 3


def coarse(ts):
    """The coarse geometric grid of sorted candidate thread counts: the first, each count at least STEP
    times the last chosen, and the last."""
    out = [ts[0]]
    for t in ts[1:-1]:
        if t >= STEP * out[-1] and ts[-1] >= STEP * t / 2:     # not a step just short of the last count
            out.append(t)
    return out + [ts[-1]] if len(ts) > 1 else out


def hold(threads, t):
    ts = sorted(set(threads))
    if len(ts) <= FIRST:
        return ""
    c = coarse(ts)
    return "" if t in c[:FIRST] else "coarse" if t in c else "refine"


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
            p.same_as, p.held = owner, ""      # measured as its owner, whenever the owner's curve asks
            p.skip = (f"the same CPUs as {owner} at {p.threads} thread{'s' if p.threads != 1 else ''}:"
                      " measured once there, shared")
    return points


def between(ts, a, b):
    """The candidate strictly between a and b nearest their geometric middle (a bisection on a log
    scale, where thread counts live), or None when a and b are neighbours."""
    inside = [t for t in ts if a < t < b]
    return min(inside, key=lambda t: (abs(math.log(t) - (math.log(a) + math.log(b)) / 2), t)) if inside else None


def below(s, top, better):
    """Summary s is worse than top over both 95% intervals."""
    slo, shi = rules.ci_bounds(s)
    tlo, thi = rules.ci_bounds(top)
    return shi < tlo if better == "higher" else slo > thi


def peak_of(measured, better):
    """The measured thread count of the best median (the curve's measured peak)."""
    return max(measured, key=lambda t: measured[t].median if better == "higher" else -measured[t].median)


def refine(ts, measured, better):
    """plan=adaptive, one curve: {thread count: why} of the candidates ts to measure next, given the
    summaries measured so far ({threads: stats.summary}); {} once the words are decided. The words
    themselves are the report's, from the measured points only; this only chooses where to look:
    - the next coarse count while no point past the measured peak is below it (the decline confirmed);
    - the knee: the first measured count whose efficiency is below THRESHOLD over its whole 95% range
      (rules.knee) and the measured count before it are bisected until they are neighbours;
    - a flat top (the last count gains less than rules.FLAT_BELOW over the one before): the middle, where a
      peak may hide;
    - a peak (a later point below it): the counts between it and its measured neighbours, likewise."""
    got = sorted(measured)
    if len(got) < 2:
        return {}
    want = {}
    top = peak_of(measured, better)
    past = [t for t in got if t > top and below(measured[t], measured[top], better)]
    later = [t for t in coarse(ts) if t > got[-1]]
    if later and not past:
        want[later[0]] = f"the coarse grid: no point past the peak ({top}) is below it yet"
    rows = rules.speedups({"c": {t: measured[t] for t in got}}, better)["c"]
    for prev, r in zip(rows, rows[1:]):
        if rules.efficiency_word(r)[0] == "below":
            mid = between(ts, prev.threads, r.threads)
            if mid:
                want.setdefault(mid, f"the knee: efficiency is below {rules.pct(rules.THRESHOLD)} at "
                                     f"{r.threads}, not at {prev.threads}")
            break
    if not past and not later and top == got[-1] and len(got) > 1:
        prev = got[-2]
        grew = measured[top].median / measured[prev].median if measured[prev].median else 0
        mid = between(ts, prev, top)
        if mid and (grew if better == "higher" else 1 / grew if grew else 0) < rules.FLAT_BELOW:
            # a flat top: a peak may hide between the last two coarse counts
            want.setdefault(mid, f"a flat top: {top} gains less than ×{rules.FLAT_BELOW} over {prev}")
    if past:
        i = got.index(top)
        for a, b in ((got[i - 1], top) if i else (None, None), (top, got[i + 1])):
            mid = a and between(ts, a, b)
            if mid:
                want.setdefault(mid, f"the peak: {top} is the best measured, {a} and {b} its measured neighbours")
    return want


def unneeded(ts, measured, t, better):
    """Why plan=adaptive never measured candidate t of a curve whose refine() asks nothing more."""
    got = sorted(measured)
    if not got:
        return "adaptive: not measured: nothing of its curve was measured"
    top = peak_of(measured, better)
    past = [u for u in got if u > top and below(measured[u], measured[top], better)]
    if past and t > past[0]:
        return f"adaptive: past the peak at {top} threads (the decline confirmed at {past[0]}): not needed"
    lo = max((u for u in got if u < t), default=None)
    hi = min((u for u in got if u > t), default=None)
    return (f"adaptive: not needed: the measured {lo} and {hi} threads already decide the words between them"
            if lo and hi else "adaptive: not needed")


KEEP = 3     # importance(): a curve's first and last thread count (or its only one), a story's point: never left out


def importance(point, ts):
    """How much a point may change the answer, 0–3, within its curve's live thread counts ts: 3 the
    first and last (the speedup's base and its reach), 2 the coarse ×4 grid between (the curve's shape),
    1 the counts between those (they place a knee or a peak one step finer; an adaptive refinement
    candidate is one of them, measured only where its curve asks). A point a seed story's claim judges
    (stories.mark) is kept as a curve's ends are. A budget leaves out the lowest first."""
    ts = sorted(set(ts))
    if point.story:
        return KEEP
    if point.held == "refine":
        return 1
    if point.threads in (ts[0], ts[-1]):
        return KEEP
    return 2 if point.threads in coarse(ts) else 1


def words_of_level(level):
    return ("", "a count between the coarse grid's", "a coarse-grid count",
            "a curve's first or last count, or a story's point")[level]
