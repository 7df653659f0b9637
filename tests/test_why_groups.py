"""Where the threads ran, grouped (lab/why/groups.py; issue 53 item 6): a big host's threads grouped by the
package or L3 they ran in, from the evidence files' per-thread CPU seconds and times, on a real 2-socket
topology (a fixture: this VM has one of each, where nothing is grouped)."""
import os

from conftest import ROOT
from lab.topology.topo import Topology
from lab.why import groups

HASWELL = Topology(os.path.join(ROOT, "topologies", "Intel-Haswell-2xXeon-E5-2680v3.v2.xml"))   # CPU 0, 12: package 0


def run(waits, work=10):
    """One kept run: a thread per (cpu, off-CPU µs), each 1 s on-CPU, mostly on that CPU."""
    threads = [{"tid": 100 + i, "comm": "w", "oncpu_us": 1e6, "offcpu_us": off} for i, (_c, off) in enumerate(waits)]
    cpus = [{"tid": 100 + i, "comm": "w", "cpu": c, "seconds": 0.9} for i, (c, _off) in enumerate(waits)] + \
        [{"tid": 100 + i, "comm": "w", "cpu": 0 if c else 1, "seconds": 0.1} for i, (c, _off) in enumerate(waits)]
    return {"threads": threads, "cpus": cpus, "work": work}


def test_the_threads_of_the_far_package_that_wait_longer_are_named():
    runs = [run([(0, 100.0), (12, 110.0), (1, 300.0 * k), (13, 320.0 * k)]) for k in (1.0, 1.1, 0.95)]
    said = groups.words(groups.placed(runs), HASWELL, "op")
    assert said.startswith("Where the threads ran: the 2 threads on package 1 waited ×"), said
    assert "as long per op as the 2 on package 0" in said and "(runs ×" in said


def test_groups_within_noise_or_flipping_or_one_domain_say_nothing():
    even = [run([(0, 100.0), (1, 110.0)]) for _ in range(3)]
    assert groups.words(groups.placed(even), HASWELL, "op") == ""          # ×1.1: within noise
    flip = [run([(0, 100.0), (1, 300.0)]), run([(0, 300.0), (1, 100.0)])]
    assert groups.words(groups.placed(flip), HASWELL, "op") == ""          # a different group dearest each run
    one = [run([(0, 100.0), (12, 400.0)])]       # one package; two L3s (cluster-on-die) do differ
    assert "package" not in groups.words(groups.placed(one), HASWELL, "op")
    assert groups.words(groups.placed(one), None, "op") == ""              # no topology recorded


def test_a_run_without_the_files_is_left_out():
    assert groups.placed([{"threads": None, "cpus": None, "work": 1}]) == []
    tiny = run([(0, 100.0), (1, 300.0)])
    tiny["threads"][1]["oncpu_us"] = 1.0         # not the program's thread (a shell around it)
    assert len(groups.placed([tiny])[0]) == 1
