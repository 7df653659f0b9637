#!/usr/bin/env python3
"""Topology and placements, computed from hwloc's own view of a machine.

hwloc is the only source: the host is read with `lstopo --of xml`, a fixture file or a synthetic string
with `lstopo --input X --of xml`. Nothing here assumes how CPUs are numbered.

  topo.py [--topology FILE|STRING] summary
  topo.py [--topology …] plan POLICY N        ordered CPU list, comma separated
  topo.py [--topology …] pairs POLICY         every CPU pair with that relation, one per line (streamed)
  topo.py [--topology …] [--kind K] …        K = p | e | all | CoreType | rank (hybrid CPUs; default p)
  topo.py [--topology …] relation A B         smt | same-l2 | same-l3 | cross-l3 | cross-die |
                                              cross-numa | cross-package | cross-kind
  topo.py [--topology …] nodes CPUS           NUMA nodes of a CPU list
  topo.py [--topology …] others CPUS          the PUs not in CPUS
  topo.py [--topology …] pus                  every PU, in hwloc's logical order

Exit code 2 with a message on stderr when a request cannot be satisfied.

Relations, first match wins (docs/design.md says why in this order):
  cross-package  different packages
  smt            one core
  cross-kind     different hwloc CPU kinds (hybrid: a P-core and an E-core)
  cross-numa     one package, different NUMA nodes (AMD NPS>1, Intel SNC, Naples/Opteron dies)
  same-l2        two cores under one L2 (E-core clusters)
  same-l3        two cores under one L3
  cross-die      one NUMA node, different hwloc Die objects
  cross-l3       one package (and die), different L3 domains
Hybrid CPUs: spread placements (compact, cores, scatter) never mix CPU kinds unless asked with
--kind all (or LAB_KIND=all); by default they use the most performant kind ("p", hwloc's highest rank).
"""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from bisect import bisect_right
from dataclasses import dataclass

from lab.errors import LabError, program, run

SPREAD = ("unpinned", "compact", "cores", "scatter")
PAIRS = ("smt", "same-l2", "same-l3", "cross-l3", "cross-die", "cross-numa", "cross-package", "cross-kind")
POLICIES = SPREAD + PAIRS


class PlacementError(LabError):
    """A request the topology cannot satisfy; the message says which and why."""


@dataclass(frozen=True)
class PU:
    os: int        # the OS index: what taskset and sched_setaffinity take
    package: int   # logical indexes of the PU's ancestors, -1 when hwloc has no such level
    die: int
    l3: int
    core: int
    smt: int       # rank of this PU among its core's PUs
    nodes: tuple   # NUMA nodes (OS indexes) local to this PU
    l2: int = -1   # logical index of the L2 above the PU's core, -1 when none
    kind: int = 0  # hwloc CPU kind rank: 0 = least performant (E-cores); all 0 when hwloc has no kinds


def bitmap(mask):
    """hwloc's "0x00000001,,0x0" (32-bit words, most significant first, empty = 0) → set of indexes."""
    # linear in the mask's length: shifting a growing number word by word, or testing every bit of it
    # with a shift, is quadratic (minutes for a crafted NUMA index of a few million)
    digits = "".join((w.strip().replace("0x", "") or "0").rjust(8, "0") for w in mask.split(","))
    bits = bin(int(digits, 16))[:1:-1]       # least significant first
    return {i for i, b in enumerate(bits) if b == "1"}


# Linux's usual NR_CPUS: far above any machine. hwloc alone takes ~20 s and 1.1 GB to write the XML of
# 65,536 PUs, and a relation's pair list has up to PUs²/2 entries: a bigger synthetic string is a typo,
# refused at once.
MAX_PUS = 8192


def synthetic_pus(text):
    """PUs of an hwloc synthetic string ("pack:2 [numa] core:8 pu:2" → 32), or None for a file."""
    if os.path.exists(text) or ":" not in text:
        return None
    n = 1
    for word in text.split():
        m = re.match(r"^[A-Za-z0-9]+:(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", word)
        if m:
            n *= c_count(m.group(1))
    return n


def c_count(text):
    """A count as hwloc reads it (strtoul with base 0): 0x40 is 64, 010 is 8."""
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    return int(text, 8) if text.startswith("0") else int(text)


def load_xml(topology):
    return ET.fromstring(xml_text(topology))


def xml_text(topology):
    """hwloc's XML of the host (None), a topology file or a synthetic string, as lstopo writes it."""
    cmd = ["lstopo-no-graphics", "--no-io", "--of", "xml", "-"]
    if topology:
        pus = synthetic_pus(topology)
        if pus is not None and pus > MAX_PUS:
            raise PlacementError(f"synthetic topology {topology!r} has {pus} PUs; at most {MAX_PUS} are read")
        if pus is None and not os.path.exists(topology):
            # hwloc would call it a synthetic string with an unknown object type
            raise PlacementError(f"no such topology file: {topology} (nor a synthetic string such as "
                                 "\"pack:2 core:8 pu:2\")")
        cmd[1:1] = ["--input", topology]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise PlacementError("lstopo-no-graphics not found: install hwloc (./lab does)")
    except subprocess.CalledProcessError as e:
        raise PlacementError(f"hwloc cannot read topology {topology!r}: {e.stderr.strip()}")
    return out


KIND_ALIASES = {"p": "performance", "e": "efficiency"}


class Topology:
    def __init__(self, topology=None, kind=None):
        root = load_xml(topology)
        self.pus = []
        self.numa = sorted({int(o.get("os_index")) for o in root.iter("object")
                            if o.get("type") == "NUMANode"})
        # hwloc exports CPU kinds ranked from least to most performant (its own ranking, from the OS's
        # or the hardware's efficiency, else CoreType, else frequency): the element order is the rank.
        self.kinds = []
        for k in root.findall("cpukind"):
            info = {i.get("name"): i.get("value") for i in k.findall("info")}
            self.kinds.append({"cpus": bitmap(k.get("cpuset", "0x0")),
                               "type": info.get("CoreType") or info.get("FrequencyMaxMHz", "")})
        counters = {"Package": 0, "Die": 0, "L3Cache": 0, "L2Cache": 0, "Core": 0}
        self._siblings = {}
        self._pairs_cache, self._spread, self._scatter = None, {}, None     # built once, when first asked
        self._walk(root, {"Package": -1, "Die": -1, "L3Cache": -1, "L2Cache": -1, "Core": -1}, counters)
        if not self.pus:
            raise PlacementError("hwloc reports no PU in this topology")
        self.by_os = {p.os: p for p in self.pus}
        self.kind = self.select_kind(kind)

    def _walk(self, elem, anc, counters):
        for child in elem.findall("object"):
            kind = child.get("type")
            here = dict(anc)
            if kind in counters:
                here[kind] = counters[kind]
                counters[kind] += 1
            if kind == "PU":
                core = here["Core"] if here["Core"] >= 0 else 10**6 + int(child.get("os_index"))
                smt = self._siblings.get(core, 0)      # a count per core: a scan of every PU is O(PUs²)
                self._siblings[core] = smt + 1
                os_index = int(child.get("os_index"))
                rank = next((i for i, k in enumerate(self.kinds) if os_index in k["cpus"]), 0)
                self.pus.append(PU(os_index, here["Package"], here["Die"],
                                   here["L3Cache"], core, smt,
                                   tuple(sorted(bitmap(child.get("nodeset", "0x0")))),
                                   here["L2Cache"], rank))
            self._walk(child, here, counters)

    # --- CPU kinds (hybrid CPUs) -----------------------------------------------------------------
    def select_kind(self, kind):
        """None → hwloc's most performant kind on a hybrid host (no filter elsewhere); "all" → no filter."""
        self.kind_asked = kind not in (None, "")
        k = (kind or "p").strip()
        if k == "all":
            return None
        top = len(self.kinds) - 1
        if k.lower() in ("p", "performance"):
            return top if top > 0 else None
        if k.lower() in ("e", "efficiency"):
            if top < 1:
                raise PlacementError("kind e is impossible here: hwloc reports one CPU kind (not a hybrid CPU)")
            return 0
        for i, info in enumerate(self.kinds):
            if k.lower() == info["type"].lower():
                return i
        if k.isdigit() and int(k) <= top:
            return int(k)
        names = " ".join(["p", "e", "all"] + [i["type"] for i in self.kinds if i["type"]])
        raise PlacementError(f"unknown CPU kind {kind!r}; known here: {names} or a rank 0..{max(top, 0)}")

    def kind_name(self, rank):
        if len(self.kinds) < 2:
            return "all"
        return self.kinds[rank]["type"] or f"kind{rank}"

    def usable(self):
        """The PUs spread placements may use: the selected CPU kind, in hwloc's logical order."""
        return [p for p in self.pus if self.kind is None or p.kind == self.kind]

    # --- facts -------------------------------------------------------------------------------------
    def count(self, attr):
        return len({getattr(p, attr) for p in self.pus if getattr(p, attr) >= 0})

    def numa_per_package(self):
        """NUMA nodes with CPUs in each package: the SNC/NPS shape (1 = one node per package)."""
        per = {}
        for p in self.pus:
            per.setdefault(p.package, set()).update(p.nodes)
        return [max(len(n), 1) for _, n in sorted(per.items())]

    def shape(self):
        """The host's shape as env/topology.txt records it (packages, cores, SMT, caches, NUMA, kinds)."""
        cores = len({p.core for p in self.pus})
        smt = max(p.smt for p in self.pus) + 1
        npp = sorted(set(self.numa_per_package()))
        l2_cores = {}
        for p in self.pus:
            if p.l2 >= 0:
                l2_cores.setdefault(p.l2, set()).add(p.core)
        kinds = [f"{self.kind_name(r)}:{cpu_ranges(sorted(p.os for p in self.pus if p.kind == r))}"
                 for r in reversed(range(len(self.kinds)))] if len(self.kinds) > 1 else []
        return {
            "packages": max(self.count("package"), 1),
            "numa_nodes": max(len(self.numa), 1),
            "numa_per_package": "/".join(str(n) for n in npp),
            "dies": self.count("die"),
            "l3_domains": self.count("l3"),
            "shared_l2": sum(1 for c in l2_cores.values() if len(c) > 1),
            "cores": cores,
            "pus": len(self.pus),
            "smt_per_core": smt,
            "cpu_kinds": ";".join(kinds) if kinds else "1",
            "pu_list": cpu_list(p.os for p in self.pus),
        }

    def pu(self, os_index):
        if os_index not in self.by_os:
            raise PlacementError(f"CPU {os_index} is not in this topology "
                                 f"({len(self.pus)} PUs: {cpu_words(p.os for p in self.pus)})")
        return self.by_os[os_index]

    def relation(self, a, b):
        """The closest level the two CPUs do not share; the order is explained in docs/design.md."""
        x, y = self.pu(a), self.pu(b)
        if a == b:
            raise PlacementError(f"CPU {a} paired with itself")
        return self.between(x, y)

    @staticmethod
    def between(x, y):
        """relation() of two distinct PU objects (pairs() calls it for every pair: no lookups)."""
        if x.package != y.package:
            return "cross-package"
        if x.core == y.core:
            return "smt"
        if x.kind != y.kind:
            return "cross-kind"
        if x.nodes != y.nodes and x.nodes and y.nodes:
            return "cross-numa"
        if x.l2 == y.l2 and x.l2 >= 0:
            return "same-l2"
        if x.l3 == y.l3 and x.l3 >= 0:
            return "same-l3"
        if x.die != y.die and x.die >= 0:
            return "cross-die"
        return "cross-l3"

    # --- placements --------------------------------------------------------------------------------
    def plan(self, policy, n):
        if policy not in POLICIES:
            raise PlacementError(f"unknown placement {policy!r}; known: {' '.join(POLICIES)}")
        if n < 1:
            raise PlacementError(f"thread count must be at least 1, got {n}")
        if policy in PAIRS:
            if n != 2:
                raise PlacementError(f"{policy} is a pair placement: it takes exactly 2 threads, not {n}")
            return list(self.spread_pairs(policy, 1)[0])
        if policy == "unpinned":
            return [p.os for p in self.pus]        # the set the scheduler may use; no binding
        order = self.compact() if policy == "compact" else \
            self.cores() if policy == "cores" else self.scatter()
        if n > len(order):
            what = "cores" if policy == "cores" else "PUs"
            kind = "" if self.kind is None else \
                f" of kind {self.kind_name(self.kind)} (hybrid CPU: --kind all / kind=all mixes kinds)"
            raise PlacementError(f"{policy} needs {n} {what} but this host has {len(order)}{kind}")
        return order[:n]

    def compact(self):
        # hwloc's logical order already walks package → die → NUMA → L3 → L2 → core → SMT sibling.
        return [p.os for p in self.usable()]

    def cores(self):
        return [p.os for p in self.usable() if p.smt == 0]

    def scatter(self):
        """Round-robin over packages, inside each over its NUMA nodes, then L3 domains, then L2
        clusters; one PU per core before any SMT sibling. Built once: a sweep plans it per thread count."""
        if self._scatter is None:
            out = []
            levels = (lambda p: p.package, lambda p: p.nodes, lambda p: (p.die, p.l3), lambda p: p.l2)
            for sibling in range(max(p.smt for p in self.pus) + 1):
                out += spread([p for p in self.usable() if p.smt == sibling], levels)
            self._scatter = out
        return list(self._scatter)

    def pairs(self, policy):
        """Every pair of that relation, in hwloc's order: PUs²/2 of them for the cross relations of a
        big host, so only callers that need the whole list take it (iter_pairs() streams it)."""
        return list(self.iter_pairs(policy))

    def iter_pairs(self, policy):
        """pairs(), one at a time: raises at once when there is none. Each PU's partners are scanned
        only until its count of them is found: a near relation (smt, same-l2) stops next to the PU."""
        counts = self._pair_index()[1][self._relation_rank(policy)]
        if not counts[-1]:
            raise PlacementError(f"{policy} is impossible here: {self.why_not(policy)}")
        pool, between = self._pool(), self.between

        def walk():
            for i, a in enumerate(pool):
                left, m = counts[i + 1] - counts[i], i
                while left:
                    m += 1
                    if between(a, pool[m]) == policy:
                        yield a.os, pool[m].os
                        left -= 1
        return walk()

    def _pool(self):
        # A pair never mixes kinds unless its relation is cross-kind; an explicit kind keeps both in it.
        return self.usable() if self.kind_asked else self.pus

    @staticmethod
    def _relation_rank(policy):
        if policy not in PAIRS:
            raise PlacementError(f"{policy!r} is not a pair placement; pairs: {' '.join(PAIRS)}")
        return PAIRS.index(policy)

    def spread_pairs(self, policy, k):
        """Up to k of pairs(policy) spread evenly over that list (hwloc's order): the pairs at
        i * c // n for i < n = min(k, c), c pairs in all. One pair says little on a big host. Found
        without the list (PUs²/2 entries): each PU's count of later partners per relation
        (_pair_index) says which PU a wanted index falls on, a bisection over its later PUs which one."""
        rank = self._relation_rank(policy)
        if (rank, k) in self._spread:
            return self._spread[rank, k]
        at, cums = self._pair_index()
        cum = cums[rank]
        c = cum[-1]
        if not c:
            raise PlacementError(f"{policy} is impossible here: {self.why_not(policy)}")
        n, pool, picked = min(k, c), self._pool(), []
        for w in (i * c // n for i in range(n)):
            i = bisect_right(cum, w) - 1               # the PU whose partners hold index w
            j = w - cum[i]                             # w is its (j+1)-th partner: find the nearest
            lo, hi = i + 1, len(pool) - 1              # m with j+1 partners in pool[i+1..m]
            while lo < hi:
                mid = (lo + hi) // 2
                if self._later(at, pool[i], i, mid)[rank] > j:
                    hi = mid
                else:
                    lo = mid + 1
            picked.append((pool[i].os, pool[lo].os))
        self._spread[rank, k] = picked
        return picked

    # Pair counting. between() decides a pair (a, b), a first in hwloc's order, by a chain of tests on
    # fields of a and b. How many b in a range have each relation with a is a sum of counts of PUs that
    # share some of a's fields (inclusion-exclusion over the chain), and each such count is a bisection
    # in the sorted positions of the PUs with those field values: O(PUs × terms × log PUs) in all.
    _ANY = "*"             # a field left free in a key (the fields are ints and tuples)

    def _pair_index(self):
        """(the pool's positions per key of field values, and per relation in PAIRS' order the
        cumulative count of later partners per PU: cum[i + 1] - cum[i] pairs (pool[i], b) have it),
        built once."""
        if self._pairs_cache is None:
            pool, w, at = self._pool(), self._ANY, {}
            for m, p in enumerate(pool):
                # every key _later() may ask about that this PU matches
                keys = [(p.package, w, w, w, w, w, w), (p.package, w, w, w, w, w, p.core)]
                keys += [(p.package, p.kind, nodes, l2, l3, die, core)
                         for nodes in (p.nodes, w) for l2 in (p.l2, w) for l3 in (p.l3, w)
                         for die in (p.die, w) for core in (p.core, w)]
                for key in keys:
                    at.setdefault(key, []).append(m)
            cum = [[0] for _ in PAIRS]
            for i in range(len(pool)):
                for r, n in enumerate(self._later(at, pool[i], i, len(pool) - 1)):
                    cum[r].append(cum[r][-1] + n)
            self._pairs_cache = (at, cum)
        return self._pairs_cache

    @classmethod
    def _later(cls, at, a, i, last):
        """How many of pool[i+1..last] have each relation (PAIRS' order) with a = pool[i]: between(),
        counted. Each of its tests keeps the PUs that passed none before it."""
        w = cls._ANY

        def n(key):                                # PUs with those field values in pool[i+1..last]
            pos = at.get(key)
            return bisect_right(pos, last) - bisect_right(pos, i) if pos else 0

        P, K, C = a.package, a.kind, a.core
        same_package = n((P, w, w, w, w, w, w))
        smt = n((P, w, w, w, w, w, C))
        same_kind = n((P, K, w, w, w, w, w)) - n((P, K, w, w, w, w, C))      # on other cores
        node_values = (a.nodes, ()) if a.nodes else (w,)     # not cross-numa: a's nodes or none

        def near(l2, l3, die):                     # same kind, other core, not cross-numa, and these
            return sum(n((P, K, v, l2, l3, die, w)) - n((P, K, v, l2, l3, die, C)) for v in node_values)

        L2 = a.l2 if a.l2 >= 0 else None
        L3 = a.l3 if a.l3 >= 0 else None

        def past_l2(l3, die):                      # …and not same-l2
            return near(w, l3, die) - (near(L2, l3, die) if L2 is not None else 0)

        def past_l3(die):                          # …and not same-l3
            return past_l2(w, die) - (past_l2(L3, die) if L3 is not None else 0)

        rest = past_l3(w)
        cross_die = rest - past_l3(a.die) if a.die >= 0 else 0
        # PAIRS' order: smt same-l2 same-l3 cross-l3 cross-die cross-numa cross-package cross-kind
        return (smt, near(L2, w, w) if L2 is not None else 0, past_l2(L3, w) if L3 is not None else 0,
                rest - cross_die, cross_die, same_kind - near(w, w, w), last - i - same_package,
                same_package - smt - same_kind)

    def why_not(self, policy):
        s = self.shape()
        npp = s["numa_per_package"]
        if self.kind_asked and self.kind is not None and len(self.kinds) > 1:
            if policy == "cross-kind":
                return f"kind {self.kind_name(self.kind)} was asked, so no pair has two kinds"
            where = f" among the {self.kind_name(self.kind)} CPUs"
        else:
            where = ""
        if policy == "cross-die" and s["dies"] and npp != "1":
            numa = f"every two dies of a package are on different NUMA nodes ({npp} per package): " \
                   "that crossing is named cross-numa"
        elif policy == "cross-die" and npp != "1":
            numa = f"hwloc reports 0 dies, but {npp} NUMA nodes per package: cross-numa crosses them"
        else:
            numa = f"hwloc reports {s['dies']} dies per host, not two in one NUMA node of a package"
        return {
            "smt": f"no core{where} has two PUs" if where else
                   f"no core has two PUs (SMT is off or absent: {s['smt_per_core']} PU per core)",
            "same-l2": f"no L2 is shared by two cores{where} (each core has its own L2, or hwloc shows no L2)",
            "same-l3": f"no L3 domain holds two cores{where} ({s['l3_domains']} L3, {s['cores']} cores)",
            "cross-l3": f"no package holds two L3 domains on one die and NUMA node{where} "
                        f"({s['l3_domains']} L3 in {s['packages']} package(s))",
            "cross-die": numa,
            "cross-numa": f"no package holds two NUMA nodes with CPUs{where} ({npp} per package)",
            "cross-package": f"this host has {s['packages']} package",
            "cross-kind": f"hwloc reports {max(len(self.kinds), 1)} CPU kind (not a hybrid CPU)",
        }[policy] + ("" if policy in ("cross-package", "cross-kind") or not where else
                     " (--kind all / kind=all pairs across kinds)")

    def nodes(self, cpus):
        return sorted({n for c in cpus for n in self.pu(c).nodes})

    def others(self, cpus):
        taken = {self.pu(c).os for c in cpus}
        return [p.os for p in self.pus if p.os not in taken]


def borders(topo, cpus):
    """Indexes i where cpus[i] and cpus[i + 1] lie in different domains (package, NUMA node, die, L3):
    where a heatmap in hwloc's order draws a line."""
    domain = {p.os: (p.package, p.nodes, p.die, p.l3) for p in topo.pus}
    return [i for i in range(len(cpus) - 1) if domain.get(cpus[i]) != domain.get(cpus[i + 1])]


def spread(pus, levels):
    """Group PUs by the first level (in hwloc order), spread each group over the next levels, then
    take one from each group in turn."""
    if not levels or len(pus) < 2:
        return [p.os for p in pus]
    groups = {}
    for p in pus:
        groups.setdefault(levels[0](p), []).append(p)
    return interleave([spread(g, levels[1:]) for g in groups.values()])


def cpu_list(cpus):
    """[0, 1, 2, 5] → "0,1,2,5": the one form of a CPU list in tidy rows, journals and taskset."""
    return ",".join(str(c) for c in cpus)


def cpu_words(cpus, most=8):
    """A CPU set in a one-line message, bounded whatever its size: its ranges ("0-191"), or where it has
    more than `most` the first of them and "… (N in all)" (every PU listed was a line of 192 numbers on a
    big host)."""
    cpus = sorted(cpus)
    parts = cpu_ranges(cpus).split(",")
    return ",".join(parts) if len(parts) <= most else ",".join(parts[:most]) + f",… ({len(cpus)} in all)"


def cpu_ranges(cpus):
    """[0, 1, 2, 5] → "0-2,5": the short form people read, order kept."""
    cpus = list(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if j == i else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def interleave(lists):
    """[[a, b], [c, d, e]] → [a, c, b, d, e]"""
    out, i = [], 0
    while any(i < len(x) for x in lists):
        out += [x[i] for x in lists if i < len(x)]
        i += 1
    return out


MAX_CPU = 65535   # Linux's NR_CPUS tops out at 8192: a larger id is a typo or a crafted cell


def parse_cpus(text):
    """ "0,2,4-6" → [0, 2, 4, 5, 6], order kept; anything else is an error that names it (an id
    above MAX_CPU, or more ids than that, too: a list in a received row cannot ask for any size)."""
    out = []
    for part in text.replace('"', "").split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(v) for v in part.split("-"))
                if hi < lo or hi > MAX_CPU:
                    raise ValueError
                out += range(lo, hi + 1)
            else:
                out.append(int(part))
            if out[-1] > MAX_CPU or len(out) > MAX_CPU + 1:
                raise ValueError
        except ValueError:
            raise PlacementError(f"cannot parse CPU list {text[:80]!r} at {part[:80]!r}")
    return out


@program("placement")
def main(argv):
    topology = os.environ.get("LAB_TOPOLOGY") or None
    kind = os.environ.get("LAB_KIND") or None
    while argv[:1] in (["--topology"], ["--kind"]):
        if len(argv) < 2:
            raise PlacementError(f"{argv[0]} needs a value")
        if argv[0] == "--topology":
            topology = argv[1]
        else:
            kind = argv[1]
        argv = argv[2:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    t = Topology(topology, kind)
    cmd, args = argv[0], argv[1:]
    if cmd == "summary":
        for k, v in t.shape().items():
            print(f"{k}={v}")
    elif cmd == "plan" and len(args) == 2:
        try:
            n = int(args[1])
        except ValueError:
            raise PlacementError(f"thread count must be a number, got {args[1]!r}")
        print(cpu_list(t.plan(args[0], n)))
    elif cmd == "pairs" and len(args) == 1:
        for a, b in t.iter_pairs(args[0]):        # streamed: PUs²/2 lines for a cross relation
            print(f"{a},{b}")
    elif cmd == "relation" and len(args) == 2:
        a, b = (parse_cpus(x)[0] for x in args)
        print(t.relation(a, b))
    elif cmd == "nodes" and len(args) == 1:
        print(cpu_list(t.nodes(parse_cpus(args[0]))))
    elif cmd == "others" and len(args) == 1:
        print(cpu_list(t.others(parse_cpus(args[0]))))
    elif cmd == "pus":
        print(cpu_list(p.os for p in t.pus))
    else:
        raise PlacementError(f"unknown or incomplete command: {' '.join(argv)}")
    return 0


if __name__ == "__main__":
    run(main)
