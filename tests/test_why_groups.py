"""Where the threads ran and what they did, grouped (lab/why/groups.py; issue 53 item 6): a big host's
threads grouped by the package or L3 they ran in, from the evidence files' per-thread CPU seconds and
times, on a real 2-socket topology (a fixture: this VM has one of each, where nothing is grouped); and by
the program's own function their on-CPU samples are in (doing_r<N>.csv), on any host."""
import os

from conftest import ROOT
from lab.topology.topo import Topology
from lab.why import classify, groups

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


LOCKED = ("clone3", "start_thread", "worker", "update_table", "___pthread_mutex_lock", "__lll_lock_wait")
MERGE = ("_start", "__libc_start_main_impl", "main", "merge")


def doing_run(workers, merger, k=1.0, work=10):
    """One kept run: `workers` threads sampled in update_table (through libc's lock code) waiting 300 µs per
    op × k, and `merger` threads in merge waiting 100; no cpus file (where they ran is not needed)."""
    tids = range(100, 100 + workers + merger)
    threads = [{"tid": t, "comm": "p", "oncpu_us": 1e6, "offcpu_us": (300.0 * k if i < workers else 100.0) * work}
               for i, t in enumerate(tids)]
    doing = [{"tid": t, "samples": 40, "stack": LOCKED if i < workers else MERGE} for i, t in enumerate(tids)]
    doing += [{"tid": t, "samples": 5, "stack": MERGE} for t in tids[:workers]]    # a worker's few other samples
    return {"threads": threads, "doing": doing, "work": work}


def test_threads_grouped_by_what_they_do_name_the_dearest():
    runs = [doing_run(126, 2, k) for k in (1.0, 1.1, 0.9)]
    said = groups.words(groups.placed(runs), None, "op", classify.named)
    assert said == ("What the threads did: the 126 threads in `update_table` ← `worker` waited ×3.0 (runs ×2.7–×3.3) "
                    "as long per op as the 2 in `merge` ← `main`."), said
    # beside where they ran, on a many-domain topology (the cpus file absent: no place to group by)
    assert groups.words(groups.placed(runs), HASWELL, "op", classify.named) == said
    assert groups.words(groups.placed(runs), None, "op") == ""         # no naming rule given: nothing of it


def test_one_kind_of_thread_or_waits_within_noise_say_nothing_of_what_they_do():
    assert groups.words(groups.placed([doing_run(4, 0)]), None, "op", classify.named) == ""    # all in update_table
    even = [doing_run(4, 2, k) for k in (0.35, 0.4)]                                  # ×1.05–×1.2
    assert groups.words(groups.placed(even), None, "op", classify.named) == ""
    assert groups.doing(((("start_thread", "__lll_lock_wait"), 3),), classify.named) is None     # no own code


def test_where_and_what_are_both_said():
    runs = [run([(0, 100.0), (12, 110.0), (1, 300.0 * k), (13, 320.0 * k)]) for k in (1.0, 1.1)]
    for r in runs:       # the package-1 threads are the workers
        r["doing"] = [{"tid": t["tid"], "samples": 10, "stack": LOCKED if t["offcpu_us"] > 200 else MERGE}
                      for t in r["threads"]]
    said = groups.words(groups.placed(runs), HASWELL, "op", classify.named)
    assert said.startswith("Where the threads ran: the 2 threads on package 1 waited ×") and \
        " What the threads did: the 2 threads in `update_table` ← `worker` waited ×" in said, said
