#!/usr/bin/env python3
"""Topology and placements, computed from hwloc's own view of a machine.

hwloc is the only source: the host is read with `lstopo --of xml`, a fixture file or a synthetic string
with `lstopo --input X --of xml`. Nothing here assumes how CPUs are numbered.

  topo.py [--topology FILE|STRING] summary
  topo.py [--topology …] plan POLICY N        ordered CPU list, comma separated
  topo.py [--topology …] pairs POLICY         every CPU pair with that relation, one per line
  topo.py [--topology …] relation A B         smt | same-l3 | cross-l3 | cross-die | cross-package
  topo.py [--topology …] nodes CPUS           NUMA nodes of a CPU list
  topo.py [--topology …] others CPUS          the PUs not in CPUS
  topo.py [--topology …] pus                  every PU, in hwloc's logical order

Exit code 2 with a message on stderr when a request cannot be satisfied.
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SPREAD = ("unpinned", "compact", "cores", "scatter")
PAIRS = ("smt", "same-l3", "cross-l3", "cross-die", "cross-package")
POLICIES = SPREAD + PAIRS


class PlacementError(Exception):
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


def bitmap(mask):
    """hwloc's "0x00000001,,0x0" (32-bit words, most significant first, empty = 0) → set of indexes."""
    value = 0
    for word in mask.split(","):
        value = (value << 32) | int(word.replace("0x", "") or "0", 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


def load_xml(topology):
    cmd = ["lstopo-no-graphics", "--no-io", "--of", "xml", "-"]
    if topology:
        cmd[1:1] = ["--input", topology]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise PlacementError("lstopo-no-graphics not found: install hwloc (./lab does)")
    except subprocess.CalledProcessError as e:
        raise PlacementError(f"hwloc cannot read topology {topology!r}: {e.stderr.strip()}")
    return ET.fromstring(out)


class Topology:
    def __init__(self, topology=None):
        root = load_xml(topology)
        self.pus = []
        self.numa = sorted({int(o.get("os_index")) for o in root.iter("object")
                            if o.get("type") == "NUMANode"})
        counters = {"Package": 0, "Die": 0, "L3Cache": 0, "Core": 0}
        self._walk(root, {"Package": -1, "Die": -1, "L3Cache": -1, "Core": -1}, counters)
        if not self.pus:
            raise PlacementError("hwloc reports no PU in this topology")
        self.by_os = {p.os: p for p in self.pus}

    def _walk(self, elem, anc, counters):
        for child in elem.findall("object"):
            kind = child.get("type")
            here = dict(anc)
            if kind in counters:
                here[kind] = counters[kind]
                counters[kind] += 1
            if kind == "PU":
                core = here["Core"] if here["Core"] >= 0 else 10**6 + int(child.get("os_index"))
                smt = sum(1 for p in self.pus if p.core == core)
                self.pus.append(PU(int(child.get("os_index")), here["Package"], here["Die"],
                                   here["L3Cache"], core, smt,
                                   tuple(sorted(bitmap(child.get("nodeset", "0x0"))))))
            self._walk(child, here, counters)

    # --- facts -------------------------------------------------------------------------------------
    def count(self, attr):
        return len({getattr(p, attr) for p in self.pus if getattr(p, attr) >= 0})

    def summary(self):
        cores = len({p.core for p in self.pus})
        smt = max(p.smt for p in self.pus) + 1
        return {
            "packages": max(self.count("package"), 1),
            "numa_nodes": max(len(self.numa), 1),
            "dies": self.count("die"),
            "l3_domains": self.count("l3"),
            "cores": cores,
            "pus": len(self.pus),
            "smt_per_core": smt,
            "pu_list": ",".join(str(p.os) for p in self.pus),
        }

    def pu(self, os_index):
        if os_index not in self.by_os:
            raise PlacementError(f"CPU {os_index} is not in this topology "
                                 f"(PUs: {','.join(str(p.os) for p in self.pus)})")
        return self.by_os[os_index]

    def relation(self, a, b):
        x, y = self.pu(a), self.pu(b)
        if a == b:
            raise PlacementError(f"CPU {a} paired with itself")
        if x.package != y.package:
            return "cross-package"
        if x.core == y.core:
            return "smt"
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
            return list(self.pairs(policy)[0])
        if policy == "unpinned":
            return [p.os for p in self.pus]        # the set the scheduler may use; no binding
        order = self.compact() if policy == "compact" else \
            self.cores() if policy == "cores" else self.scatter()
        if n > len(order):
            what = "cores" if policy == "cores" else "PUs"
            raise PlacementError(f"{policy} needs {n} {what} but this host has {len(order)}")
        return order[:n]

    def compact(self):
        # hwloc's logical order already walks package → die → L3 → core → SMT sibling.
        return [p.os for p in self.pus]

    def cores(self):
        return [p.os for p in self.pus if p.smt == 0]

    def scatter(self):
        """Round-robin over packages, inside each over its L3 domains; one PU per core before siblings."""
        out = []
        for level in range(max(p.smt for p in self.pus) + 1):
            per_pkg = []
            for pkg in sorted({p.package for p in self.pus}):
                domains = {}
                for p in self.pus:
                    if p.package == pkg and p.smt == level:
                        domains.setdefault((p.die, p.l3), []).append(p.os)
                per_pkg.append(interleave(list(domains.values())))
            out += interleave(per_pkg)
        return out

    def pairs(self, policy):
        if policy not in PAIRS:
            raise PlacementError(f"{policy!r} is not a pair placement; pairs: {' '.join(PAIRS)}")
        found = [(a.os, b.os) for i, a in enumerate(self.pus) for b in self.pus[i + 1:]
                 if self.relation(a.os, b.os) == policy]
        if not found:
            s = self.summary()
            why = {
                "smt": f"no core has two PUs (SMT is off or absent: {s['smt_per_core']} PU per core)",
                "same-l3": f"no L3 domain holds two cores ({s['l3_domains']} L3, {s['cores']} cores)",
                "cross-l3": f"no package holds two L3 domains on one die ({s['l3_domains']} L3 in "
                            f"{s['packages']} package(s))",
                "cross-die": f"hwloc reports {s['dies']} dies per host, not two in one package",
                "cross-package": f"this host has {s['packages']} package",
            }[policy]
            raise PlacementError(f"{policy} is impossible here: {why}")
        return found

    def nodes(self, cpus):
        return sorted({n for c in cpus for n in self.pu(c).nodes})

    def others(self, cpus):
        taken = {self.pu(c).os for c in cpus}
        return [p.os for p in self.pus if p.os not in taken]


def interleave(lists):
    """[[a, b], [c, d, e]] → [a, c, b, d, e]"""
    out, i = [], 0
    while any(i < len(x) for x in lists):
        out += [x[i] for x in lists if i < len(x)]
        i += 1
    return out


def parse_cpus(text):
    """ "0,2,4-6" → [0, 2, 4, 5, 6], order kept; anything else is an error that names it."""
    out = []
    for part in text.replace('"', "").split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(v) for v in part.split("-"))
                if hi < lo:
                    raise ValueError
                out += range(lo, hi + 1)
            else:
                out.append(int(part))
        except ValueError:
            raise PlacementError(f"cannot parse CPU list {text!r} at {part!r}")
    return out


def main(argv):
    topology = os.environ.get("LAB_TOPOLOGY") or None
    if argv[:1] == ["--topology"]:
        if len(argv) < 2:
            raise PlacementError("--topology needs a file or a synthetic string")
        topology, argv = argv[1], argv[2:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    t = Topology(topology)
    cmd, args = argv[0], argv[1:]
    join = lambda xs: ",".join(str(x) for x in xs)  # noqa: E731
    if cmd == "summary":
        for k, v in t.summary().items():
            print(f"{k}={v}")
    elif cmd == "plan" and len(args) == 2:
        try:
            n = int(args[1])
        except ValueError:
            raise PlacementError(f"thread count must be a number, got {args[1]!r}")
        print(join(t.plan(args[0], n)))
    elif cmd == "pairs" and len(args) == 1:
        for a, b in t.pairs(args[0]):
            print(f"{a},{b}")
    elif cmd == "relation" and len(args) == 2:
        a, b = (parse_cpus(x)[0] for x in args)
        print(t.relation(a, b))
    elif cmd == "nodes" and len(args) == 1:
        print(join(t.nodes(parse_cpus(args[0]))))
    elif cmd == "others" and len(args) == 1:
        print(join(t.others(parse_cpus(args[0]))))
    elif cmd == "pus":
        print(join(p.os for p in t.pus))
    else:
        raise PlacementError(f"unknown or incomplete command: {' '.join(argv)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlacementError as e:
        print(f"placement: {e}", file=sys.stderr)
        sys.exit(2)
