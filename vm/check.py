#!/usr/bin/env python3
"""check.py SHAPE RUN: assert, from a guest's run folder, that the simulated host was measured as
the lab says it measures a host of that shape. Prints one line per check; exit 1 if any fails.

Everything is read from what the guest recorded itself: env/lstopo.xml (its own hwloc view),
data/*.csv, raw/*/*/ran-on.csv (sched_getcpu and the memory's node, from inside the probes), the
journal, the report and the charts."""
import csv
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from lab.engine.journal import read as read_journal  # noqa: E402
from lab.topology.topo import PAIRS, PlacementError, Topology  # noqa: E402

# What hwloc must see in each shape (vm/shapes.sh), and the NUMA distance between its two nodes.
SHAPES = {
    "2s-numa-smt": ({"packages": "2", "numa_nodes": "2", "numa_per_package": "1", "smt_per_core": "2",
                     "l3_domains": "2", "pus": "8"}, 21, {"smt", "same-l3", "cross-package"}),
    "chiplet": ({"packages": "1", "numa_nodes": "2", "numa_per_package": "2", "dies": "4",
                 "l3_domains": "4", "pus": "8", "smt_per_core": "1"}, 12, {"same-l3", "cross-die", "cross-numa"}),
}

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail and not ok else ""))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ran_on(run, exp):
    out = []
    for path in glob.glob(os.path.join(run, "raw", exp, "*", "ran-on.csv")):
        out += [dict(r, point=os.path.basename(os.path.dirname(path))) for r in rows(path)]
    return out


def main(shape, run):
    want, distance, relations = SHAPES[shape]
    packages = int(want["packages"])
    env = os.path.join(run, "env")
    topo = Topology(os.path.join(env, "lstopo.xml"))
    seen = {k: str(v) for k, v in topo.shape().items()}
    check("hwloc in the guest sees the shape", all(seen.get(k) == v for k, v in want.items()),
          f"want {want}, got {seen}")
    has = {p for p in PAIRS if pairs_or_none(topo, p)}
    check(f"the shape's relations are {sorted(relations)}", has == relations, f"got {sorted(has)}")

    # env/: both NUMA nodes, their distances, the SNC/NPS shape.
    numa = open(os.path.join(env, "numa.txt")).read()
    check("env/numa.txt: both nodes and the distance table",
          "node 0 cpus" in numa and "node 1 cpus" in numa and
          re.search(rf"0:\s+10\s+{distance}\b", numa) is not None, numa[-300:])
    nodes = open(os.path.join(env, "numa-nodes.txt")).read()
    check("env/numa-nodes.txt: both nodes, distance rows, nodes per package",
          f"distance=10,{distance}" in nodes and f"distance={distance},10" in nodes and
          f"numa_per_package={want['numa_per_package']}" in nodes, nodes)
    check("env/topology.txt records numa_per_package",
          f"numa_per_package={want['numa_per_package']}" in open(os.path.join(env, "topology.txt")).read())
    virt = open(os.path.join(env, "virt.txt")).read()
    check("env/virt.txt labels the guest a VM", "kind=vm" in virt, virt)

    # The sweep: complete, and every skip is a placement this shape cannot satisfy.
    state = open(os.path.join(run, "sweep", "state")).read().strip()
    events = read_journal(os.path.join(run, "sweep", "journal.jsonl"))
    failed = [e for e in events if e["event"] in ("failed", "build_failed", "setup_failed")]
    check("sweep complete, nothing failed", state == "complete" and not failed,
          f"state {state}; " + " | ".join(f"{e.get('experiment')}: {e.get('reason')}" for e in failed))
    wrong = []
    for exp, p, t in ((e["experiment"], e["placement"], e["threads"]) for e in events if e["event"] == "skipped"):
        try:
            topo.plan(p, int(t))
            wrong.append(f"{exp} {p} t{t}")
        except PlacementError:
            pass
    check("every skipped point is impossible on this shape", not wrong, ", ".join(wrong))

    # c2c: every relation of the shape, on CPUs of that relation, with the line homed on each side.
    c2c = rows(os.path.join(run, "data", "c2c.csv"))
    lat = [r for r in c2c if r["metric"] == "one_way_ns"]
    check("c2c measured every relation the shape has", {r["placement"] for r in lat} == relations,
          f"{sorted({r['placement'] for r in lat})}")
    bad = [r["cpus"] + " " + r["placement"] for r in lat
           if topo.relation(*map(int, r["cpus"].split(","))) != r["placement"]]
    check("every c2c pair has the relation of its placement (hwloc in the guest)", lat != [] and not bad, bad)
    homes = {(r["variant"], r["cpus"]): int(float(r["value"])) for r in c2c if r["metric"] == "home_node"}
    bad = []
    for (variant, cpus), node in homes.items():
        a, b = map(int, cpus.split(","))
        want_node = topo.pu(a if variant.endswith("home=a") else b).nodes[0]
        if node != want_node:
            bad.append(f"{variant} {cpus}: line on node {node}, want {want_node}")
    check("c2c --home a|b: each row's home_node is its home CPU's node", homes and not bad, bad)
    far = [r["cpus"] for r in lat if r["placement"] in ("cross-package", "cross-numa")]
    both = {c for c in far if {homes.get(("cas home=a", c)), homes.get(("cas home=b", c))} ==
            set(topo.nodes(map(int, c.split(","))))}
    check("c2c rows across NUMA nodes show both homes", far and both == set(far), f"{far} vs {both}")
    ran = ran_on(run, "c2c")
    bad = [r for r in ran if not (r["pinned_to"] == r["first_cpu"] == r["last_cpu"])]
    check("c2c threads ran on their CPUs (sched_getcpu inside)", ran and not bad, bad[:3])
    matrix = rows(os.path.join(run, "data", "c2c-matrix.csv"))
    # One PU per core, every pair of them, plus the SMT siblings' pairs (experiments/c2c-matrix.spec).
    cores = topo.cores()
    want = {f"{a},{b}" for i, a in enumerate(cores) for b in cores[i + 1:]}
    try:
        want |= {f"{a},{b}" for a, b in topo.pairs("smt") if a in cores}
    except PlacementError:
        pass                                # no SMT: the core pairs only
    got = {r["cpus"] for r in matrix if r["metric"] == "one_way_ns"}
    check("c2c-matrix: every core pair and every SMT pair measured", got == want, sorted(got ^ want)[:5])

    # counters under the engine's numactl --membind local: memory on the nodes of the point's CPUs.
    ran = ran_on(run, "counters")
    bad = []
    for r in ran:
        cpus = [int(c) for c in r["cpus"].split(",")]
        if r["first_cpu"] != r["pinned_to"] or int(r["mem_node"]) not in topo.nodes(cpus):
            bad.append(f"{r['point']}: thread {r['thread']} on {r['first_cpu']}, memory on node "
                       f"{r['mem_node']}, CPUs {cpus}")
    check("counters membind=local: threads on their CPUs, memory on their node(s)", ran and not bad, bad[:3])
    compact = [r for r in ran if r["point"].startswith("shared-atomic_compact")]
    check("counters compact: the shared counter on node 0 (its CPUs' node)",
          compact and all(r["mem_node"] == "0" for r in compact), compact[:2])
    for exp in ("channel", "channel-pipeline"):
        ran = ran_on(run, exp)
        bad = [r for r in ran if not (r["pinned_to"] == r["first_cpu"] == r["last_cpu"]) and r["pinned_to"] != "-1"]
        check(f"{exp}: pinned stages ran on their CPUs", ran and not bad, bad[:3])
    ch = {r["placement"] for r in rows(os.path.join(run, "data", "channel.csv"))}
    check("channel measured every relation the shape has", relations <= ch, sorted(ch))

    # numa-mem: a cell per (CPU node, memory node), each one's memory on the node it names, asked from
    # inside the guest (move_pages); timings under TCG say nothing, so only placement is checked.
    mem = rows(os.path.join(run, "data", "numa-mem.csv"))
    nodes = sorted({n for p in topo.pus for n in p.nodes})
    cells = {f"cpu{c}-mem{m}" for c in nodes for m in nodes}
    got = {r["variant"] for r in mem if r["metric"] == "latency_ns"}   # (the guard's noise rows have none)
    check(f"numa-mem: {len(nodes)} x {len(nodes)} cells", got == cells, sorted(got))
    where = {r["variant"]: r["value"] for r in mem if r["metric"] == "mem_node"}
    share = {r["variant"]: float(r["value"]) for r in mem if r["metric"] == "mem_on_node_pct"}
    bad = [f"{v}: node {where.get(v)}, {share.get(v)}% on it" for v in sorted(cells)
           if where.get(v) not in (v.split("mem")[1], v.split("mem")[1] + ".0") or share.get(v) != 100]
    check("numa-mem: every cell's memory on the node it names (move_pages)", mem and not bad, bad)
    ran = ran_on(run, "numa-mem")
    bad = [r for r in ran if r["mem_node"] != r["mem_want"] or r["first_cpu"] != r["pinned_to"]]
    check("numa-mem: ran-on.csv, measured from the CPU node, memory where it was bound", ran and not bad, bad[:3])
    check("numa-mem: no repeat suspect for its memory's place",
          not [r for r in mem if "memory on node" in r["suspect"]])
    report = open(os.path.join(run, "report.md")).read()
    check("numa-mem: the report gives the verdict in words and the distance table",
          "Remote memory costs ×" in report and f"| 0 | 10 | {distance} |" in report)
    # A deliberately wrong membind (vm/wrong-membind.spec): the guard must catch it.
    wrong = rows(os.path.join(run, "data", "wrong-membind.csv"))
    check("a wrong membind is caught: every row suspect 'memory on node 1, expected 0'",
          wrong and all(r["suspect"].startswith("memory on node 1, expected 0") for r in wrong),
          {r["suspect"] for r in wrong})
    # The same for the cache server (vm/wrong-membind-cache.spec): its `stats numa` says node 1.
    wrong = rows(os.path.join(run, "data", "wrong-membind-cache.csv"))
    check("the cache server's wrong membind is caught: every row suspect 'memory on node 1, expected 0'",
          wrong and all(r["suspect"].startswith("memory on node 1, expected 0 (cache-server striped") for r in wrong),
          {r["suspect"] for r in wrong})

    numa_evidence(os.path.join(os.path.dirname(os.path.abspath(run)), "numa-evidence.json"))
    groups_evidence(os.path.join(os.path.dirname(os.path.abspath(run)), "groups-evidence.json"),
                    packages)

    # report and charts
    check("report.md written, for all five experiments",
          all(e in report for e in ("c2c", "c2c-matrix", "counters", "channel", "channel-pipeline")))
    for chart in ("c2c-bars-one_way_ns", "c2c-matrix-heatmap-one_way_ns", "counters-scaling-ops_per_s",
                  "channel-bars-ns_per_msg", "numa-mem-heatmap-latency_ns", "numa-mem-heatmap-read_gbps"):
        svg = os.path.join(run, "plots", chart + ".svg")
        check(f"chart {chart}.svg rendered", os.path.exists(svg) and os.path.getsize(svg) > 1000)
    return 0 if all(results) else 1


def numa_evidence(path):
    """Where the memory lives (issue 56; vm/numa_evidence.py in the guest): the main thread's first touch
    on node 0 read by workers on node 1 is named remote; per-thread first touch and interleave are not."""
    try:
        got = json.load(open(path))
    except (OSError, ValueError) as e:
        check("numa evidence: vm/numa_evidence.py wrote its result", False, str(e))
        return
    words = {m: (got.get(m) or {}).get("words", "") for m in ("main", "each", "interleave")}
    kinds = {m: (got.get(m) or {}).get("kind") for m in words}
    check("numa evidence: main thread's first touch, read from the other node: remote, node 0 named",
          kinds["main"] == "remote" and "are on node 0" in words["main"] and "ran on node 1" in words["main"],
          words["main"])
    check("numa evidence: per-thread first touch: local, not claimed", kinds["each"] == "local", words["each"])
    check("numa evidence: numactl --interleave=all: spread, not claimed", kinds["interleave"] == "spread",
          words["interleave"])
    check("numa evidence: numa_balancing and THP named beside it",
          all("kernel.numa_balancing" in w and "transparent huge pages" in w for w in words.values()), words)


def groups_evidence(path, packages):
    """Which threads paid, by where they ran (issue 53 item 6; vm/groups_evidence.py in the guest): farside.c's
    two workers on package 1 sleep ×10 as long per op as the two on package 0, and the words say so from a
    real recording of the guest; on a one-package shape nothing is said of packages."""
    try:
        got = json.load(open(path))
    except (OSError, ValueError) as e:
        check("groups evidence: vm/groups_evidence.py wrote its result", False, str(e))
        return
    words, placed = got.get("words") or "", got.get("placed") or []
    check("groups evidence: the recording was folded and every worker placed",
          len(placed) == 1 and sum(1 for cpu, *_ in placed[0] if cpu in got["cpus"]) >= 4, got.get("threads"))
    if packages > 1:
        check("groups evidence: 'the 2 threads on package 1 waited ×K as long per op as … on package 0'",
              words.startswith("Where the threads ran: the 2 threads on package 1 waited ×") and
              "as long per op as the " in words and " on package 0" in words, words)
    else:
        check("groups evidence: one package, nothing said of packages", "package" not in words, words)


def pairs_or_none(topo, policy):
    try:
        return topo.pairs(policy)
    except PlacementError:
        return None


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        print(f"usage: check.py {'|'.join(SHAPES)} RUN", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
