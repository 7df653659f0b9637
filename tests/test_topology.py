"""Placements on real-machine fixtures and the seed hosts' synthetic strings: exact CPU lists."""
import pytest
from conftest import ROOT, TOPO, sh

HASWELL = f"{TOPO}/Intel-Haswell-2xXeon-E5-2680v3.v2.xml"
EPYC = f"{TOPO}/AMD-19h-Zen3-2xEpyc-7763.v2.xml"
LAPTOP = "pack:1 [numa] l3:1 core:4 pu:2(indexes=core)"
XEON24 = "pack:2 [numa] l3:1 core:12 pu:2(indexes=core)"
TWEMCACHE = "pack:2 [numa] l3:1 core:8 pu:2(indexes=core)"
THREADRIPPER = "pack:1 [numa] die:4 l3:2 core:3 pu:2(indexes=core)"


def topo(topology, *args):
    return sh(f"{ROOT}/scripts/topo.py", "--topology", topology, *args, check=False)


def plan(topology, policy, n):
    p = topo(topology, "plan", policy, str(n))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def summary(topology):
    return dict(line.split("=", 1) for line in topo(topology, "summary").stdout.split())


def test_haswell_summary_and_interleaved_numbering():
    s = summary(HASWELL)
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
    s = summary(EPYC)
    assert (s["packages"], s["numa_nodes"], s["l3_domains"], s["cores"]) == ("2", "2", "16", "128")
    assert plan(EPYC, "same-l3", 2) == "0,1"
    assert plan(EPYC, "cross-l3", 2) == "0,8"
    assert plan(EPYC, "cross-package", 2) == "0,64"
    assert plan(EPYC, "scatter", 4) == "0,64,8,72"
    assert plan(EPYC, "cores", 10) == "0,1,2,3,4,5,6,7,8,9"
    assert topo(EPYC, "nodes", "0,64").stdout.strip() == "0,1"
    assert topo(EPYC, "nodes", "3-5").stdout.strip() == "0"


def test_threadripper_ccx_pairs_stay_inside_cores_0_to_2():
    s = summary(THREADRIPPER)
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
    ("/nonexistent.xml", ("summary",), "hwloc cannot read topology"),
])
def test_impossible_requests_say_why(topology, args, message):
    p = topo(topology, *args)
    assert p.returncode == 2
    assert message in p.stderr
    assert p.stdout == ""


def test_this_host():
    s = dict(line.split("=", 1) for line in sh(f"{ROOT}/scripts/topo.py", "summary").stdout.split())
    n = int(s["pus"])
    assert n >= 1
    cpus = sh(f"{ROOT}/scripts/topo.py", "plan", "compact", str(n)).stdout.strip().split(",")
    assert sorted(map(int, cpus)) == sorted(map(int, s["pu_list"].split(",")))


def test_environment_variable_selects_topology():
    p = sh(f"{ROOT}/scripts/topo.py", "plan", "cross-package", "2", env={"LAB_TOPOLOGY": HASWELL})
    assert p.stdout.strip() == "0,1"
