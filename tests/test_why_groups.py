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
    assert groups.words(groups.placed([run([(0, 100.0), (1, 130.0)])]), HASWELL, "op") == ""   # ×1.3, one run
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


def test_a_knee_whose_fewest_threads_were_refused_still_says_which_threads_paid():
    """The gate refused every run at 1 thread (under emulation recorded runs ran faster than unrecorded):
    the verdict is inconclusive, but the knee's own kept runs still say which of its threads waited, as a
    description of the knee, never as a cause. Rows are test input."""
    from lab.report import causes
    from lab.why import verdict
    from test_why_analyze import STOPS
    judged = [{"of": i, "run": i, "tier": "full", "hz": 999, "verdict": "disturbed", "speed": 1.3 + i / 100,
               "why": "ran faster", "reference": 1.0} for i in (1, 2, 3)]
    base = {"meta": {"unit": "op", "runs_judged": judged}, "runs": []}
    knee = {"meta": {"unit": "op", "runs_judged": []},
            "runs": [run([(0, 100.0), (12, 110.0), (1, 300.0 * k), (13, 320.0 * k)]) for k in (1.0, 1.1)]}
    (c,) = verdict.curve(STOPS, "higher", lambda p, t: base if t == 1 else knee)
    assert c.verdict.cause == "inconclusive" and c.diff is None and len(c.placed) == 2
    text = causes.said(c, {}, HASWELL, False).verdict.text
    assert "inconclusive: the evidence runs at 1 thread ran ×1.31–×1.33 faster than their unrecorded runs" in text
    assert "none kept. At 2 threads, its kept runs alone: Where the threads ran: the 2 threads on package 1 " \
           "waited ×" in text, text
    assert "Cause" not in text
    # without a topology or with nothing kept at the knee either, nothing more is said
    assert "kept runs alone" not in causes.said(c, {}, None, False).verdict.text
    (both,) = verdict.curve(STOPS, "higher", lambda p, t: base)
    assert both.placed == () and "kept runs alone" not in causes.said(both, {}, HASWELL, False).verdict.text


def test_a_launcher_is_not_one_of_the_threads_it_started():
    """The main thread that starts the workers and joins them waits as long as they run: it is left out of
    the groups (under TCG its start-up gave it 26% of a worker's on-CPU time, and its join put it among the
    workers of package 0); so is a repeat loop above it. A main thread that works as much as the threads
    it started stays. Rows are test input."""
    def with_launchers(main_on):
        r = run([(0, 100.0), (12, 110.0), (1, 450.0), (13, 460.0), (0, 470.0), (0, 900.0)])
        for t in r["threads"]:     # 105 the repeat loop (its own process), 104 the program's main
            t["parent"], t["pid"] = {104: 105, 105: 0}.get(t["tid"], 104), 105 if t["tid"] == 105 else 104
        r["threads"][4]["oncpu_us"] = main_on
        r["threads"][5]["oncpu_us"] = 0.3e6
        return r
    placed = groups.placed([with_launchers(0.26e6)] * 2)
    assert [len(p) for p in placed] == [4, 4]
    said = groups.words(placed, HASWELL, "op")
    assert said.startswith("Where the threads ran: the 2 threads on package 1 waited ×4.3 (runs ×4.3–×4.3) as long "
                           "per op as the 2 on package 0"), said
    working = groups.placed([with_launchers(1e6)])         # main works as much as its workers: one of them
    assert len(working[0]) == 5
    # the loop started a process: a launcher even where its forks cost more on-CPU time than the workers
    busy = with_launchers(0.26e6)
    busy["threads"][5]["oncpu_us"] = 2e6
    assert 105 in groups.launchers(busy["threads"]) and len(groups.placed([busy])[0]) == 4
    # a main thread busier than its workers (creating 64 threads under TCG) that waited for them to end
    waiting = with_launchers(5e6)
    assert len(groups.placed([waiting])[0]) == 5
    waiting["threads"][4]["joined"] = 1
    assert 104 in groups.launchers(waiting["threads"]) and len(groups.placed([waiting])[0]) == 4
    assert groups.launchers([{"tid": 1, "parent": 2, "pid": 1, "oncpu_us": 5},
                             {"tid": 2, "parent": 1, "pid": 1, "oncpu_us": 1}]) == {2}     # a loop ends


def test_the_groups_thread_counts_may_differ_between_runs():
    """An evidence run that repeats a short command records each repetition's threads: the same groups
    with more threads in one run are still the same groups, their counts said as a range."""
    runs = [run([(0, 100.0), (1, 300.0)] * k) for k in (1, 2)]
    said = groups.words(groups.placed(runs), HASWELL, "op")
    assert said.startswith("Where the threads ran: the 1–2 threads on package 1 waited ×3.0 (runs ×3.0–×3.0) "
                           "as long per op as the 1–2 on package 0"), said


def test_an_address_perf_could_not_name_is_no_code_to_change():
    assert classify.named(["_start", "main", "0x26cb"]) == "`main`"
    assert classify.named(["start_thread", "0x1f00", "worker", "[unknown]"]) == "`worker`"
    assert classify.named(["start_thread", "worker", "update_table"]) == "`update_table` ← `worker`"
