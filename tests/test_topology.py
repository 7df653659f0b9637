"""Placements on real-machine fixtures and the seed hosts' synthetic strings: exact CPU lists."""
import pytest

from conftest import TOPO, sh

HASWELL = f"{TOPO}/Intel-Haswell-2xXeon-E5-2680v3.v2.xml"
EPYC = f"{TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml"
LAPTOP = "pack:1 [numa] l3:1 core:4 pu:2(indexes=core)"
XEON24 = "pack:2 [numa] l3:1 core:12 pu:2(indexes=core)"
TWEMCACHE = "pack:2 [numa] l3:1 core:8 pu:2(indexes=core)"
THREADRIPPER = "pack:1 [numa] die:4 l3:2 core:3 pu:2(indexes=core)"
# Several NUMA nodes per package. hwloc puts a NUMA node on the level its [numa] follows; without Die
# objects the node's CPUs form a Group, as hwloc's Linux backend does on Naples or under SNC/NPS.
NAPLES = "pack:2 group:4 [numa] l3:2 core:4 pu:2(indexes=core)"    # 2 x EPYC 7551: die = NUMA node
SNC4 = "pack:2 l3:1 group:4 [numa] core:4 pu:2(indexes=core)"      # Intel SNC4: one L3, 4 nodes below it
NPS4_DIES = "pack:2 die:4 [numa] l3:2 core:4 pu:1"                  # Die objects that are NUMA nodes
OPTERON = "pack:2 group:2 [numa] l3:1 core:8 pu:1"                  # 2 x Opteron 6272: 2 nodes per package
# Core i7-1370P (Raptor Lake): 6 P-cores with SMT (PUs 0-11, siblings adjacent) + 8 E-cores
# (PUs 12-19) in 2 clusters of 4 sharing an L2; written from Intel's documented layout (README there).
HYBRID = f"{TOPO}/Intel-RaptorLake-i7-1370P.hybrid.xml"


def topo(topology, *args):
    return sh("python3", "-m", "lab.cli.topo", "--topology", topology, *args, check=False)


def plan(topology, policy, n):
    p = topo(topology, "plan", policy, str(n))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def shape(topology):
    return dict(line.split("=", 1) for line in topo(topology, "summary").stdout.split())


def test_haswell_summary_and_interleaved_numbering():
    s = shape(HASWELL)
    assert (s["packages"], s["l3_domains"], s["cores"], s["pus"], s["smt_per_core"]) == ("2", "4", "24", "24", "1")
    # Package 0 holds the even PUs: compact stays on it, in its first L3 (cluster-on-die) first.
    assert plan(HASWELL, "compact", 6) == "0,2,4,6,8,10"
    assert plan(HASWELL, "compact", 8) == "0,2,4,6,8,10,12,14"
    # scatter alternates packages, and inside each package its two L3 domains.
    assert plan(HASWELL, "scatter", 6) == "0,1,12,13,2,3"
    assert plan(HASWELL, "cross-package", 2) == "0,1"
    assert plan(HASWELL, "cross-l3", 2) == "0,12"
    assert plan(HASWELL, "same-l3", 2) == "0,2"


def test_haswell_relations_and_impossible_smt():
    assert topo(HASWELL, "relation", "0", "1").stdout.strip() == "cross-package"
    assert topo(HASWELL, "relation", "0", "12").stdout.strip() == "cross-l3"
    assert topo(HASWELL, "relation", "2", "10").stdout.strip() == "same-l3"
    p = topo(HASWELL, "plan", "smt", "2")
    assert p.returncode == 2 and "smt is impossible here" in p.stderr and "1 PU per core" in p.stderr


def test_epyc_numa_and_ccx():
    s = shape(EPYC)
    assert (s["packages"], s["numa_nodes"], s["l3_domains"], s["cores"]) == ("2", "2", "16", "128")
    assert plan(EPYC, "same-l3", 2) == "0,1"
    assert plan(EPYC, "cross-l3", 2) == "0,8"
    assert plan(EPYC, "cross-package", 2) == "0,64"
    assert plan(EPYC, "scatter", 4) == "0,64,8,72"
    assert plan(EPYC, "cores", 10) == "0,1,2,3,4,5,6,7,8,9"
    assert topo(EPYC, "nodes", "0,64").stdout.strip() == "0,1"
    assert topo(EPYC, "nodes", "3-5").stdout.strip() == "0"


def test_threadripper_ccx_pairs_stay_inside_cores_0_to_2():
    s = shape(THREADRIPPER)
    assert (s["dies"], s["l3_domains"], s["cores"], s["pus"], s["smt_per_core"]) == ("4", "8", "24", "48", "2")
    assert plan(THREADRIPPER, "same-l3", 2) == "0,1"
    pairs = [tuple(map(int, ln.split(","))) for ln in topo(THREADRIPPER, "pairs", "same-l3").stdout.split()]
    ccx0 = {0, 1, 2, 24, 25, 26}
    with_cpu0 = [p for p in pairs if 0 in p]
    assert with_cpu0 and all(set(p) <= ccx0 for p in with_cpu0)
    assert plan(THREADRIPPER, "smt", 2) == "0,24"
    assert plan(THREADRIPPER, "cross-l3", 2) == "0,3"
    assert plan(THREADRIPPER, "cross-die", 2) == "0,6"
    assert plan(THREADRIPPER, "compact", 4) == "0,24,1,25"
    assert plan(THREADRIPPER, "cores", 4) == "0,1,2,3"
    assert plan(THREADRIPPER, "scatter", 8) == "0,3,6,9,12,15,18,21"


def test_seed_servers_smt_siblings_are_c_and_c_plus_n():
    assert plan(XEON24, "compact", 4) == "0,24,1,25"
    assert plan(XEON24, "cores", 3) == "0,1,2"
    assert plan(XEON24, "scatter", 4) == "0,12,1,13"
    assert plan(XEON24, "cross-package", 2) == "0,12"
    assert plan(TWEMCACHE, "scatter", 2) == "0,8"
    assert plan(LAPTOP, "smt", 2) == "0,4"
    # scatter uses every core once before any SMT sibling.
    assert plan(LAPTOP, "scatter", 6) == "0,1,2,3,4,5"


@pytest.mark.parametrize("topology,args,message", [
    (LAPTOP, ("plan", "cross-package", "2"), "cross-package is impossible here: this host has 1 package"),
    (LAPTOP, ("plan", "compact", "9"), "compact needs 9 PUs but this host has 8"),
    (LAPTOP, ("plan", "cores", "5"), "cores needs 5 cores but this host has 4"),
    (LAPTOP, ("plan", "same-l3", "3"), "pair placement: it takes exactly 2 threads"),
    (LAPTOP, ("plan", "diagonal", "2"), "unknown placement 'diagonal'"),
    (LAPTOP, ("relation", "0", "99"), "CPU 99 is not in this topology"),
    (LAPTOP, ("nodes", "0,x"), "cannot parse CPU list"),
    # bounded: a range or a list past the largest CPU id is refused, not expanded
    (LAPTOP, ("nodes", "0-99999999999"), "cannot parse CPU list '0-99999999999'"),
    (LAPTOP, ("nodes", ",".join(["0-65535"] * 3)), "cannot parse CPU list"),
    ("/nonexistent.xml", ("summary",), "no such topology file: /nonexistent.xml"),
])
def test_impossible_requests_say_why(topology, args, message):
    p = topo(topology, *args)
    assert p.returncode == 2
    assert message in p.stderr
    assert p.stdout == ""


def test_a_cpu_not_in_a_big_topology_is_one_short_line():
    """A CPU outside the topology names the topology's PUs bounded: their count and ranges (256 PUs: one
    range), or the first ranges and "… (N in all)" where it has gaps, never every PU."""
    from lab.topology.topo import cpu_words
    p = topo("pack:2 [numa] l3:8 core:8 pu:2(indexes=core)", "relation", "0", "300")
    assert p.returncode == 2 and p.stderr.strip().endswith("CPU 300 is not in this topology (256 PUs: 0-255)"), \
        p.stderr
    assert cpu_words([5, 3, 4, 0]) == "0,3-5"
    assert cpu_words(range(0, 512, 2)) == "0,2,4,6,8,10,12,14,… (256 in all)"
    assert cpu_words(list(range(0, 14, 2)) + list(range(100, 356))) == "0,2,4,6,8,10,12,100-355"


def test_this_host():
    s = dict(line.split("=", 1) for line in sh("python3", "-m", "lab.cli.topo", "summary").stdout.split())
    n = int(s["pus"])
    assert n >= 1
    cpus = sh("python3", "-m", "lab.cli.topo", "plan", "compact", str(n)).stdout.strip().split(",")
    assert sorted(map(int, cpus)) == sorted(map(int, s["pu_list"].split(",")))


def test_environment_variable_selects_topology():
    p = sh("python3", "-m", "lab.cli.topo", "plan", "cross-package", "2", env={"LAB_TOPOLOGY": HASWELL})
    assert p.stdout.strip() == "0,1"


def relation(topology, a, b, *opts):
    p = topo(topology, *opts, "relation", str(a), str(b))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_numa_nodes_inside_a_package_are_a_level():
    s = shape(NAPLES)
    assert (s["packages"], s["numa_nodes"], s["numa_per_package"], s["dies"]) == ("2", "8", "4", "0")
    # PUs 0-3 (cores 0-3) are node 0's first L3, 4-7 its second, 8-11 node 1's first L3.
    assert relation(NAPLES, 0, 4) == "cross-l3"
    assert relation(NAPLES, 0, 8) == "cross-numa"
    assert relation(NAPLES, 0, 32) == "cross-package"
    assert plan(NAPLES, "cross-numa", 2) == "0,8"
    assert topo(NAPLES, "nodes", "0,8").stdout.strip() == "0,1"
    # scatter: packages, then NUMA nodes inside them, then L3 domains inside the nodes.
    assert plan(NAPLES, "scatter", 8) == "0,32,8,40,16,48,24,56"
    assert plan(NAPLES, "scatter", 18) == "0,32,8,40,16,48,24,56,4,36,12,44,20,52,28,60,1,33"
    pairs = [tuple(map(int, ln.split(","))) for ln in topo(NAPLES, "pairs", "cross-numa").stdout.split()]
    nodes = lambda c: topo(NAPLES, "nodes", str(c)).stdout.strip()  # noqa: E731
    for a, b in pairs[:: max(len(pairs) // 7, 1)]:
        assert nodes(a) != nodes(b) and relation(NAPLES, a, b) == "cross-numa"


def test_cross_die_without_dies_points_to_cross_numa():
    p = topo(NAPLES, "plan", "cross-die", "2")
    assert p.returncode == 2 and "0 dies, but 4 NUMA nodes per package: cross-numa" in p.stderr
    p = topo(NPS4_DIES, "plan", "cross-die", "2")
    assert p.returncode == 2 and "that crossing is named cross-numa" in p.stderr
    assert plan(NPS4_DIES, "cross-numa", 2) == "0,8"
    assert plan(NPS4_DIES, "cross-l3", 2) == "0,4"
    # One NUMA node holding several dies (Threadripper NPS1) keeps cross-die, and has no cross-numa.
    assert plan(THREADRIPPER, "cross-die", 2) == "0,6"
    p = topo(THREADRIPPER, "plan", "cross-numa", "2")
    assert p.returncode == 2 and "no package holds two NUMA nodes with CPUs (1 per package)" in p.stderr


def test_snc_nodes_below_one_l3():
    s = shape(SNC4)
    assert (s["numa_per_package"], s["l3_domains"]) == ("4", "2")
    # Same L3 but different SNC nodes: the node boundary wins (its latency and memory are what differ).
    assert relation(SNC4, 0, 1) == "same-l3"
    assert relation(SNC4, 0, 4) == "cross-numa"
    assert relation(SNC4, 0, 32) == "smt"
    assert plan(SNC4, "scatter", 4) == "0,16,4,20"
    assert topo(SNC4, "plan", "cross-l3", "2").returncode == 2
    assert shape(OPTERON)["numa_per_package"] == "2"
    assert plan(OPTERON, "scatter", 4) == "0,16,8,24"


def test_one_node_per_package_fixtures_unchanged():
    assert shape(EPYC)["numa_per_package"] == "1"
    assert shape(HASWELL)["numa_per_package"] == "1"
    assert topo(EPYC, "plan", "cross-numa", "2").returncode == 2
    assert relation(EPYC, 0, 64) == "cross-package"


def test_hybrid_summary_and_relations():
    s = shape(HYBRID)
    assert s["cpu_kinds"] == "IntelCore:0-11;IntelAtom:12-19"
    assert (s["cores"], s["pus"], s["shared_l2"]) == ("14", "20", "2")
    assert relation(HYBRID, 0, 1) == "smt"
    assert relation(HYBRID, 0, 2) == "same-l3"
    assert relation(HYBRID, 0, 12) == "cross-kind"
    assert relation(HYBRID, 12, 15) == "same-l2"
    assert relation(HYBRID, 12, 16) == "same-l3"
    assert plan(HYBRID, "same-l2", 2) == "12,13"
    assert plan(HYBRID, "cross-kind", 2) == "0,12"


def test_hybrid_placements_never_mix_kinds_unless_asked():
    # Default: the most performant kind (hwloc's highest rank), like a scheduler preferring P-cores.
    assert plan(HYBRID, "compact", 4) == "0,1,2,3"
    assert plan(HYBRID, "cores", 6) == "0,2,4,6,8,10"
    assert plan(HYBRID, "scatter", 8) == "0,2,4,6,8,10,1,3"
    p = topo(HYBRID, "plan", "cores", "7")
    assert p.returncode == 2 and "6 of kind IntelCore" in p.stderr and "kind=all" in p.stderr
    # E-cores: scatter spreads over the two L2 clusters first.
    assert topo(HYBRID, "--kind", "e", "plan", "scatter", "4").stdout.strip() == "12,16,13,17"
    assert topo(HYBRID, "--kind", "IntelAtom", "plan", "compact", "3").stdout.strip() == "12,13,14"
    assert topo(HYBRID, "--kind", "all", "plan", "cores", "8").stdout.strip() == "0,2,4,6,8,10,12,13"
    p = sh("python3", "-m", "lab.cli.topo", "plan", "compact", "2", env={"LAB_TOPOLOGY": HYBRID, "LAB_KIND": "e"})
    assert p.stdout.strip() == "12,13"
    # An explicit kind keeps pairs inside it.
    assert topo(HYBRID, "--kind", "e", "plan", "same-l3", "2").stdout.strip() == "12,16"
    p = topo(HYBRID, "--kind", "p", "plan", "cross-kind", "2")
    assert p.returncode == 2 and "kind IntelCore was asked" in p.stderr
    p = topo(HYBRID, "--kind", "e", "plan", "smt", "2")
    assert p.returncode == 2 and "no core among the IntelAtom CPUs has two PUs" in p.stderr


@pytest.mark.parametrize("topology,kind,message", [
    (LAPTOP, "e", "kind e is impossible here: hwloc reports one CPU kind"),
    (HYBRID, "big", "unknown CPU kind 'big'; known here: p e all IntelAtom IntelCore or a rank 0..1"),
    (HYBRID, "7", "unknown CPU kind '7'"),
])
def test_bad_kind_says_why(topology, kind, message):
    p = topo(topology, "--kind", kind, "plan", "compact", "2")
    assert p.returncode == 2 and message in p.stderr and p.stdout == ""


def test_api_used_in_process():
    from lab.topology import topo as t  # the sweep engine imports it
    assert {"cross-numa", "same-l2", "cross-kind"} <= set(t.PAIRS) <= set(t.POLICIES)
    h = t.Topology(HYBRID)
    assert h.plan("compact", 2) == [0, 1] and h.relation(12, 13) == "same-l2"
    assert t.Topology(HYBRID, kind="e").plan("cores", 2) == [12, 13]
    n = t.Topology(NAPLES)
    assert n.shape()["numa_per_package"] == "4" and n.pairs("cross-numa")[0] == (0, 8)
    with pytest.raises(t.PlacementError, match="cross-numa crosses them"):
        n.plan("cross-die", 2)
