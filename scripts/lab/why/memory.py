"""Where the memory lives against where the threads ran, without counters (issue 56, item 1): the join of
an evidence run's numa_r<N>.json (the program's pages per node, numamaps.py) and cpus_r<N>.csv (each
thread's seconds per CPU, from the switch records, fold.py), the CPUs mapped to nodes by the host's own
map recorded beside the pages. Read-only over loaded evidence (diff.load's runs). The rule
(docs/design.md, "Why it stops scaling: the differential and the causes", *memory (remote pages)*):

- the program's hot mapping is its largest resident one at its peak sample; its home is the node holding
  most of it;
- `one node`: the host has a single NUMA node: nothing can be remote;
- `spread`: no node holds CONCENTRATED of the hot mapping (interleaved, or each thread's part first
  touched where it runs): not claimed;
- `remote`: concentrated, and at least REMOTE_SHARE of the program's on-CPU time ran on other nodes;
- `local`: concentrated where the threads ran: not claimed.
Per evidence run; the point's placement is the kind most of its runs say (ties: not claimed)."""

import dataclasses

from lab.why.model import Mapping, Placement, Program

CONCENTRATED = 0.8      # share of the hot mapping on one node for it to have a home
REMOTE_SHARE = 0.25     # share of the on-CPU time away from that home for the placement to be remote
MIN_KB = 1024           # a hot mapping smaller than this (1 MiB) says nothing of where data lives
KINDS = ("remote", "spread", "local", "one node")


def pct(x):
    return f"{x * 100:.0f}%"


def size(kb):
    return f"{kb / 1024:.1f} MiB" if kb >= 1024 else f"{kb} kB"


def of_run(numa, cpus):
    """The Placement of one evidence run, or None without its files (numa: numa_r<N>.json as the evidence
    store reads it; cpus: cpus_r<N>.csv's rows)."""
    if not numa or not numa.get("peak") or cpus is None:
        return None
    node_of = {c: n for n, cs in numa["nodes"].items() for c in cs}
    peak = numa["peak"]
    total = sum(peak["kb"].values())
    # the program's threads: those of its process's name where any has it (why_seconds' shell loop and
    # a wrapper are in the tree too), else every recorded thread
    mine = [r for r in cpus if r["comm"] == numa["comm"]] or list(cpus)
    per = {}
    for r in mine:
        node = node_of.get(r["cpu"])
        t = per.setdefault(r["tid"], {})
        t[node] = t.get(node, 0.0) + r["seconds"]
    hot = max(peak["mappings"], key=lambda m: (sum(m["kb"].values()), m["start"]), default=None)
    hot_kb = sum(hot["kb"].values()) if hot else 0
    home = max(hot["kb"], key=lambda n: (hot["kb"][n], -n)) if hot_kb else None
    conc = hot["kb"][home] / hot_kb if hot_kb else 0.0
    cpu_s = sum(s for t in per.values() for s in t.values())
    away_s = sum(s for t in per.values() for n, s in t.items() if n != home)
    ran = {tid: max(t, key=lambda n: (t[n], -(n if n is not None else -1))) for tid, t in per.items()}
    away = away_s / cpu_s if cpu_s else 0.0
    if len(numa["nodes"]) <= 1:
        kind = "one node"
    elif hot_kb < MIN_KB or not cpu_s:
        kind = None
    elif conc < CONCENTRATED:
        kind = "spread"
    else:
        kind = "remote" if away >= REMOTE_SHARE else "local"
    out = Placement(
        nodes=sorted(numa["nodes"]), home=home, concentrated=conc, away=away, threads=len(ran),
        away_threads=sum(1 for n in ran.values() if n != home),
        ran_on={n: sum(1 for x in ran.values() if x == n) for n in sorted(set(ran.values()), key=str)},
        program=Program(numa["comm"], total, max(peak["kb"], key=lambda n: (peak["kb"][n], -n)) if total else None,
                        max(peak["kb"].values()) / total if total else 0.0),
        mapping=None if hot is None else Mapping(hot["name"], hot["start"], hot_kb, hot["policy"]),
        settings=numa["settings"], cut=numa["cut"], kind=kind, words="")
    return dataclasses.replace(out, words=words(out))


def of_runs(runs):
    """The point's Placement from its loaded runs (diff.load: run["numa"], run["cpus"]), or None."""
    each = [p for p in (of_run(r.get("numa"), r.get("cpus")) for r in runs) if p and p.kind]
    if not each:
        return None
    counts = {k: sum(1 for p in each if p.kind == k) for k in KINDS}
    best = max(counts.values())
    top = [k for k in KINDS if counts[k] == best]
    kind = top[0] if len(top) == 1 else None    # runs that disagree evenly: nothing is claimed
    first = next((p for p in each if p.kind == kind), each[0])
    return dataclasses.replace(first, kind=kind, runs=len(each), agree=best,
                               words=first.words if kind else
                               f"the {len(each)} evidence runs disagree on where the memory lives (not claimed)")


def settings_words(s):
    return (f"kernel.numa_balancing {s['numa_balancing']}, transparent huge pages {s['thp']}: both move pages")


def words(p):
    """'93% of the program's resident pages are on node 0; 4 of its 8 threads ran on node 1 …'."""
    prog = p.program
    head = (f"{pct(prog.share)} of the program's resident pages ({size(prog.kb)}, `{prog.comm}`) are on "
            f"node {prog.home}") if prog.kb else "the program had no resident pages when sampled"
    if p.kind == "one node":
        return f"{head}, the host's only NUMA node: nothing can be remote (not claimed)"
    m = p.mapping
    where = (f"its largest mapping ({m.name} at {m.start}, {size(m.kb)}, policy {m.policy}) is "
             f"{pct(p.concentrated)} on node {p.home}") if m else "no mapping"
    others = [f"{n} of its {p.threads} threads ran on node {node}" for node, n in p.ran_on.items()
              if node != p.home and node is not None and n]
    ran = "; ".join(others) if others else f"all {p.threads} of its threads ran on node {p.home}"
    tail = {"remote": f"{pct(p.away)} of its on-CPU time was away from the node holding the memory",
            "spread": "its pages are spread over the nodes (not claimed)",
            "local": "the memory is where the threads ran (not claimed)"}.get(p.kind, "too little to tell")
    cut = " (its numa_maps was cut at the read cap)" if p.cut else ""
    return f"{head}; {where}; {ran}; {tail}{cut} ({settings_words(p.settings)})"
