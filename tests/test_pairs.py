"""Pair placements counted and picked without the list of all pairs, against the brute force: every pair
of the pool, in hwloc's order, judged by Topology.between() (the one rule). Fixtures, the seeds' and
test_topology's synthetic hosts, random synthetic strings, and random hand-made PUs for the rule's
awkward fields (no NUMA node, no L2/L3/die, two kinds) that hwloc never writes together."""
import glob
import os
import random

import pytest

from conftest import TOPO, sh
from lab.topology.topo import PAIRS, PU, PlacementError, Topology

SEEDS = [line.split("`")[1] for line in open(os.path.join(TOPO, "README.md"))
         if line.count("`") >= 2 and ":" in line.split("`")[1] and "pu:" in line.split("`")[1]]


def brute(t):
    """{relation: every pair of it}, from all PUs²/2 pairs: the oracle."""
    pool = t._pool()
    out = {r: [] for r in PAIRS}
    for i, a in enumerate(pool):
        for b in pool[i + 1:]:
            out[t.between(a, b)].append((a.os, b.os))
    return out


def same_as_brute(t, what):
    for policy, full in brute(t).items():
        if not full:
            with pytest.raises(PlacementError, match="impossible here"):
                t.spread_pairs(policy, 8)
            with pytest.raises(PlacementError, match="impossible here"):
                t.pairs(policy)
            continue
        assert t.pairs(policy) == full, (what, policy)
        for k in (1, 2, 3, 8, 1000):
            n = min(k, len(full))
            assert t.spread_pairs(policy, k) == [full[i * len(full) // n] for i in range(n)], (what, policy, k)
        assert t.plan(policy, 2) == list(full[0]), (what, policy)


@pytest.mark.parametrize("xml", sorted(glob.glob(os.path.join(TOPO, "*.xml"))))
def test_fixtures_pairs_match_the_brute_force(xml):
    for kind in (None, "p", "e", "all"):
        try:
            t = Topology(xml, kind)
        except PlacementError:
            continue                               # kind e on a host with one kind
        same_as_brute(t, (xml, kind))


def test_seed_hosts_pairs_match_the_brute_force():
    assert len(SEEDS) >= 8, SEEDS
    for text in SEEDS:
        same_as_brute(Topology(text), text)


def random_synthetic(rng):
    """An hwloc synthetic string of at most ~150 PUs with some of die, group, L3, L2 levels and a NUMA
    node under one of them (or only the machine's)."""
    levels = [("pack", rng.randint(1, 3))]
    for name in ("die", "group", "l3", "l2"):
        if rng.random() < 0.5:
            levels.append((name, rng.randint(1, 3)))
    levels += [("core", rng.randint(1, 4)), ("pu", rng.randint(1, 3))]
    numa = rng.randrange(len(levels) - 1) if rng.random() < 0.8 else None
    words = []
    for i, (name, n) in enumerate(levels):
        words.append(f"{name}:{n}" + ("(indexes=core)" if name == "pu" and rng.random() < 0.4 else ""))
        if i == numa:
            words.append("[numa]")
    return " ".join(words)


def test_random_synthetic_hosts_pairs_match_the_brute_force():
    rng = random.Random(24)
    seen = set()
    for _ in range(24):
        text = random_synthetic(rng)
        seen.add(text)
        same_as_brute(Topology(text), text)
    assert len(seen) > 20


def test_random_hand_made_pus_match_the_brute_force():
    # Fields hwloc does not combine so (PUs without a NUMA node beside ones with two, -1 for a level on
    # some PUs only, kinds mixed in a core): every branch of between() and of its counting.
    rng = random.Random(7)
    t = Topology("pack:1 core:1 pu:1")
    for trial in range(120):      # the same mix of fields as 300 trials had, in 2.5x less time (the fast loop)
        t.pus = [PU(o, rng.randint(0, 2), rng.choice([-1, 0, 1]), rng.choice([-1, 0, 1]), rng.randint(0, 5), 0,
                    rng.choice([(), (0,), (1,), (0, 1)]), rng.choice([-1, 0, 1, 2]), rng.randint(0, 1))
                 for o in rng.sample(range(64), rng.randint(2, 40))]
        t._pairs_cache, t._spread = None, {}       # what __init__ sets: a new topology
        same_as_brute(t, t.pus)


def test_the_cli_streams_pairs_and_a_big_host_counts_without_listing():
    p = sh("python3", "-m", "lab.cli.topo", "--topology", "pack:2 core:2 pu:2", "pairs", "cross-package")
    assert p.stdout.split() == [f"{a},{b}" for a in (0, 1, 2, 3) for b in (4, 5, 6, 7)]
    # 8192 PUs: 33.5 M pairs, never listed: counted per PU, picked by bisection; `head` ends the stream.
    p = sh("bash", "-c", "python3 -m lab.cli.topo --topology 'pack:16 core:64 pu:8' pairs cross-package | head -n 2",
           timeout=300)
    assert p.stdout.split() == ["0,512", "0,513"] and "Traceback" not in p.stderr, p.stderr
    t = Topology("pack:16 core:64 pu:8")
    picks = t.spread_pairs("cross-package", 8)
    assert picks[0] == (0, 512) and len(picks) == 8 and all(t.relation(a, b) == "cross-package" for a, b in picks)
    # 1024 cores x 28 sibling pairs = 28672; 28672 // 3 = 9557 = 341 x 28 + 9: core 341's pair (1, 4);
    # 19114 = 682 x 28 + 18: core 682's pair (3, 4)
    assert t.spread_pairs("smt", 3) == [(0, 1), (341 * 8 + 1, 341 * 8 + 4), (682 * 8 + 3, 682 * 8 + 4)]
