"""why=1: evidence runs of real programs with a known cause, through the real engine and the real perf.

Each known-cause program (tests/fixtures/why/*.c) does a fixed total amount of work split over its
threads. The assertions rest on what cannot depend on the host's load: a futex wait that a program
can only make when two threads contend (none at 1 thread, by construction), the functions and
instructions named in the stacks, the process tree followed, and what a host without perf says."""
import glob
import json
import os
import shutil
import statistics
import subprocess

import pytest

from conftest import ROOT, TRACEPOINT_PARTS, evidence_of, sh
from lab.engine import orphans
from lab.engine.evidence import gate
from lab.engine.evidence import store as ev
from lab.report import model, scaling
from lab.why import classify as C
from lab.why import diff, verdict

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "why")
BUILD = os.path.join(FIXTURES, "build")
PROGRAMS = ("lock", "sharedline", "serial", "scales", "forks", "jit")
# why_seconds=0: one run of the command per evidence run (the default repeats it for 2 s), to keep these short
BASE = ("why=1", "threads=1 2", "placements=compact", "repeats=1", "retries=0", "warmup=0",
        "capacity=0", "draw=0", "why_seconds=0")

SWEPT_RUNS = 5
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("perf") is None,
                                reason="the evidence runs' tracepoints need root and perf")


@pytest.fixture(scope="module")
def build():
    """The fixtures compiled as the issue says: -O2 -g -fno-omit-frame-pointer -pthread."""
    os.makedirs(BUILD, exist_ok=True)
    for name in PROGRAMS:
        subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", os.path.join(BUILD, name),
                        os.path.join(FIXTURES, f"{name}.c")], check=True)
    return BUILD


def scale(results_dir, *args, env=None, check=True):
    return sh("python3", "-m", "lab.cli.scale", *args, env=dict({"LAB_RESULTS": str(results_dir)}, **(env or {})),
              check=check)


def run_folder(results_dir):
    (run,) = glob.glob(os.path.join(str(results_dir), "*"))
    return run


def evidence(run, threads, needs=TRACEPOINT_PARTS):
    (folder,) = glob.glob(os.path.join(run, "raw", "*", f"-_compact_t{threads}_why"))
    meta, runs = evidence_of(folder, needs)
    return folder, meta, runs


def journal(run, kind):
    evs = [json.loads(line) for line in open(os.path.join(run, "sweep", "journal.jsonl"))]
    return [e for e in evs if e["event"] == kind]


@pytest.fixture(scope="module")
def swept(build, tmp_path_factory):
    """One sweep with why=1 per known-cause program, at 1 and 2 threads: {program: run folder}."""
    out = {}
    for name in ("lock", "sharedline", "serial", "scales"):
        d = tmp_path_factory.mktemp(name)
        # 5 evidence runs: the differential's intervals need more than 2 (why-analyze's diff.py)
        scale(d, *BASE, f"why_runs={SWEPT_RUNS}", "--", f"tests/fixtures/why/build/{name}", "{threads}")
        out[name] = run_folder(d)
    return out


def judged(meta, runs=SWEPT_RUNS):
    """Every evidence run was judged by the validity gate (gate.py): the runs 1..runs each attempted, and
    one more where the gate left the point one kept run short of two (collect.MIN_KEPT)."""
    return {j["of"] for j in meta["runs_judged"]} in (set(range(1, runs + 1)), set(range(1, runs + 2)))


def full(meta, runs):
    """The recorded runs made at the full tier (collect.TIERS[0]: 999 Hz); the first attempt always is, a
    run redone by the gate may be lighter, and at 99 Hz a short run's few samples may miss a function."""
    return [r for j, r in zip(sorted((j for j in meta["runs_judged"] if j["run"]), key=lambda j: j["run"]), runs)
            if j["tier"] == "full"]


def futex_us(runs, function):
    """µs of futex waits whose waiting stack names `function`, per run (from the off-CPU stacks)."""
    return [sum(us for s, us in r["offcpu"].items() if s[0] == "[futex]" and function in s) for r in runs]


def samples_in(runs, function):
    return [sum(n for s, n in r["oncpu"].items() if function in s) for r in runs]


# --- the four known causes ------------------------------------------------------------------------------
def test_lock_futex_waits_name_update_table_only_when_contended(swept):
    _f, meta1, one = evidence(swept["lock"], 1)
    _f, meta2, two = evidence(swept["lock"], 2)
    assert judged(meta1) and judged(meta2) and meta2["unit"] == "run" and meta2["work"] == [1] * meta2["runs"]
    assert meta2["evidence"]["offcpu"] == meta2["evidence"]["futex"] == "ok"
    # one thread never waits for the mutex (nobody else holds it); two do, in update_table, in most runs
    # (every tier unwinds a wait's innermost frames; a 0.06 s run whose threads barely overlapped waits none)
    most = lambda xs: sum(1 for x in xs if x > 0) * 2 > len(xs)  # noqa: E731
    assert not any(futex_us(one, "update_table"))
    assert most(futex_us(two, "update_table")), futex_us(two, "update_table")
    # the per-address table: the mutex's word is waited on at 2 threads and not at 1
    waited = lambda runs: [sum(r["waits"] for r in x["futex"] if "worker" in r["stack"]) for x in runs]  # noqa: E731
    assert not any(waited(one)) and most(waited(two))
    assert all(samples_in(full(meta2, two), "update_table")), "on-CPU samples in update_table"
    # the per-thread table: the main thread and the two workers, each switched out at least once
    assert all(len(r["threads"]) >= 3 for r in two)
    assert meta2["timed_median"] > 0 and meta2["slowdown"] > 0
    assert all(j["verdict"] in ev.VERDICTS and j["why"] for j in meta2["runs_judged"])


def test_sharedline_samples_in_bump_counter_and_a_lock_prefixed_hot_instruction(swept):
    for threads in (1, 2):
        _f, meta, runs = evidence(swept["sharedline"], threads)
        assert meta["evidence"]["hotins"] == "ok"
        for r in runs:
            total = sum(r["oncpu"].values())
            assert samples_in([r], "bump_counter")[0] * 2 > total, "most samples are in bump_counter"
            top = [h for h in r["hotins"] if h["symbol"] == "bump_counter"][0]   # rows are hottest first
            assert top["instruction"].startswith("lock "), r["hotins"]
            assert top["dso"].endswith("/sharedline") and top["offset"].startswith("0x")


def test_serial_threads_wait_at_the_barrier_while_serial_phase_runs(swept):
    _f, m1, one = evidence(swept["serial"], 1)
    _f, m2, two = evidence(swept["serial"], 2)
    one, two = full(m1, one), full(m2, two)
    # a barrier of one never waits; of two, the other thread waits there every round
    assert not any(futex_us(one, "___pthread_barrier_wait"))
    assert all(us > 0 for us in futex_us(two, "___pthread_barrier_wait"))
    assert all(samples_in(one, "serial_phase")) and all(samples_in(two, "serial_phase"))


def test_scales_has_no_worker_waiting(swept):
    for threads in (1, 2):
        _f, meta, runs = evidence(swept["scales"], threads)
        assert all(samples_in(runs, "crunch"))
        assert not any(futex_us(runs, "worker"))       # only main waits (in pthread_join), no worker
        assert meta["evidence"]["symbols"] == "ok"


# --- the named cause (why-analyze's differential and rules) on this evidence ------------------------------
# the cause and the function its rows name (the serial phase is seen where the others wait: the barrier)
RIGHT = {"lock": ("lock", "update_table"), "sharedline": ("shared data", "bump_counter"),
         "serial": ("serial phase", "___pthread_barrier_wait"), "scales": ("scales", "crunch")}
NAMED = ("lock", "shared data", "serial phase", "kernel")


def differential(run, kept=True):
    """The two points' differential over the runs the validity gate kept (kept=False: every recorded run)."""
    return diff.differential(diff.load(evidence(run, 1)[0], kept), diff.load(evidence(run, 2)[0], kept),
                             "compact", 1, 2, "test")


@pytest.mark.parametrize("prog", sorted(RIGHT))
def test_the_rules_give_each_program_its_own_cause_and_never_another(swept, prog):
    """The rules (classify.rule) are exact on these stacks: each program's own evidence rows get its class
    whatever the host's load. The cause as a whole rests on intervals over 5 runs, which a loaded host can
    widen until nothing is a finding: then the verdict may be inconclusive or no single cause, but it
    never names another program's cause."""
    cause, function = RIGHT[prog]
    # the verdict rests on the runs the gate kept (none kept at a side: inconclusive, never another cause)
    d = differential(swept[prog])
    v = verdict.verdict(d)
    assert v.cause not in set(NAMED) - {cause}, v.text
    # the rules hold on any stack: checked on every recorded run, kept or not
    d = differential(swept[prog], kept=False)
    v = verdict.verdict(d)
    # another program's cause is never named (scheduler may be: the run queue of a host shared with others)
    assert v.cause not in set(NAMED) - {cause}, v.text
    c = C.classify(d)
    if v.cause == cause and cause != "scales":
        assert f"Cause: {cause}" in v.text, v.text
        # the class's findings, else (a class named by its stacks taken together, none a finding alone)
        # every stack its rule gives that class
        names = [r.name for r in c.classes[cause].rows] or \
            [r.name for r in d.stacks if C.rule(d, r) == cause]
        assert any(function in n for n in names) or function in v.text, (v.text, names)
    rows = d.stacks
    if prog == "lock":
        waits = [r for r in rows if r.kind == "off-CPU" and r.name.startswith("[futex]")
                 and "update_table" in r.name]
        assert waits and all(C.rule(d, r) == "lock" for r in waits)
        assert all(r.base == 0 and r.knee > 0 for r in waits)      # nobody waits for the lock at 1 thread
    elif prog == "sharedline":
        row = next(r for r in rows if r.kind == "on-CPU" and r.name.endswith(";bump_counter"))
        assert C.rule(d, row) == "shared data"
        assert C.hot_atomic(d, "bump_counter")[0].startswith("lock ")
    elif prog == "serial":
        waits = [r for r in rows if r.kind == "off-CPU" and r.name.startswith("[futex]")
                 and "___pthread_barrier_wait" in r.name]
        assert waits and all(r.base == 0 and r.knee > 0 for r in waits)
        assert all(C.rule(d, r) in ("serial phase", "other") for r in waits)    # other: if on-CPU cost grew
        assert any(r.kind == "on-CPU" and "serial_phase" in r.name.split(";") for r in rows)
        # the code to change: the function that runs while the others wait, not the barrier they wait at
        lone = d.alone[1]
        assert lone is not None and lone.function == "serial_phase", lone
        if v.cause == "serial phase":
            assert "`serial_phase` runs alone for" in v.text, v.text
    else:
        # whatever grows (the run queue of a shared host, crunch's CPU time under its load) is never one
        # of the named causes; whether the on-CPU total is flat depends on that load, so it is not asserted
        assert all(C.rule(d, r) not in NAMED for r in diff.findings(d)), v.text


# --- the engine: journal, timed repeats untouched, resume, dry run ---------------------------------------
def test_journal_and_files_and_timed_repeats_apart(swept):
    run = swept["lock"]
    started, done = journal(run, "evidence_started"), journal(run, "evidence_done")
    assert [(e["threads"]) for e in started] == [1, 2]
    # evidence_done counts the runs the gate kept
    assert [e["runs"] for e in done] == [len(gate.kept_runs(evidence(run, t)[1])) for t in (1, 2)]
    # the PMU-only parts say why they are missing, in one journal line per point
    assert all("c2c: needs a hardware PMU" in e["reason"] for e in journal(run, "evidence_missing"))
    # evidence runs come after the point's timed repeats and are not repeats: no perf in a repeat's folder
    evs = [json.loads(line)["event"] for line in open(os.path.join(run, "sweep", "journal.jsonl"))]
    assert evs.index("evidence_started") > max(i for i, e in enumerate(evs) if e == "done")
    assert not glob.glob(os.path.join(run, "raw", "*", "*_r1", "*perf*"))
    folder, meta, _runs = evidence(run, 2)
    # each run's {raw} is its own folder: a command's files never land among the format's
    assert sorted(f for f in os.listdir(folder) if os.path.isdir(os.path.join(folder, f))) == sorted(
        f"raw_r{r}" for r in range(1, meta["runs"] + 1))
    # hot instructions only where a run had user-space samples objdump could read (a light tier's run may
    # have none: meta.json says so); every other kind for every run
    files = sorted(f for f in os.listdir(folder) if not f.endswith((".log", ".txt")) and not f.startswith("raw_r"))
    assert [f for f in files if not f.startswith("hotins_")] == sorted(
        [f"{k}_r{r}.{'folded' if k in ('oncpu', 'offcpu', 'alone') else 'csv'}" for r in range(1, meta["runs"] + 1)
         for k in ("oncpu", "offcpu", "futex", "threads", "parallel", "alone", "cpus", "lock", "doing")] +
        ["meta.json"] + [f"numa_r{r}.json" for r in range(1, meta["runs"] + 1)])
    assert {f for f in files if f.startswith("hotins_")} <= {f"hotins_r{r}.csv" for r in range(1, meta["runs"] + 1)}
    assert any(f.startswith("hotins_") for f in files)
    assert meta["sample"]["event"] == "cpu-clock" and meta["sample"]["hz"] == 999
    assert list(meta["sample"]["tiers"]) == ["full", "light", "lightest"]
    # nothing the evidence runs started (perf record, perf script, the command) outlived the sweep
    token = json.load(open(os.path.join(run, "sweep", "engine.json")))["token"]
    assert orphans.holders(token) == []


def test_resume_redoes_only_missing_evidence(swept):
    run = swept["scales"]
    os.remove(os.path.join(glob.glob(os.path.join(run, "raw", "*", "-_compact_t1_why"))[0], "meta.json"))
    before = len(journal(run, "started"))
    scale(os.path.dirname(run), *BASE, f"why_runs={SWEPT_RUNS}", f"run={run}", "--", "tests/fixtures/why/build/scales",
          "{threads}")
    assert len(journal(run, "started")) == before                   # no timed repeat measured again
    assert [e["threads"] for e in journal(run, "evidence_started")] == [1, 2, 1]
    assert judged(evidence(run, 1)[1])


def test_a_throughput_metric_counts_work_in_ops(build, tmp_path):
    """With a higher-is-better metric the unit of work is the op: metric × the run's seconds (meta.json),
    and the slowdown compares the metric, not the wall time. Its runs are never repeated (why_seconds)."""
    scale(tmp_path, *BASE[:-1], "why_seconds=5", "threads=1", "why_runs=2", "metric=items:items ([0-9]+):1/s:higher",
          "--", "tests/fixtures/why/build/scales", "{threads}")
    _f, meta, _runs = evidence(run_folder(tmp_path), 1)
    assert meta["unit"] == "op" and meta["metric"] == "items" and meta["value"] == [200000000.0] * meta["runs"]
    assert meta["repetitions"] == [1] * meta["runs"] and meta["why_seconds"] == 0
    # the same throughput as the timed repeats: each run within the disturbance budget, kept
    assert [j["verdict"] for j in meta["runs_judged"]] == ["kept", "kept"] and judged(meta, 2)
    assert meta["work"] == pytest.approx([v * w for v, w in zip(meta["value"], meta["wall_s"])])
    assert meta["timed_median"] == 200000000.0 and meta["slowdown"] == 1.0


def test_why_seconds_repeats_a_short_command_in_one_recording_and_divides_its_cost(build, tmp_path):
    """why_seconds=S: an evidence run repeats a fixed-work command until S seconds have passed, inside one
    recording; meta.json records the repetitions, they are the run's work, and the differential's cost
    per run divides by them. Nothing here depends on the host's load but the count (≥ 2 of a program
    that takes a fraction of S)."""
    seconds = 1.0
    scale(tmp_path, *BASE[:-1], f"why_seconds={seconds:g}", "threads=1", "why_runs=2", "--",
          "tests/fixtures/why/build/lock", "{threads}")
    folder, meta, runs = evidence(run_folder(tmp_path), 1)
    assert meta["unit"] == "run" and meta["why_seconds"] == seconds
    assert meta["work"] == meta["repetitions"] and all(n >= 2 for n in meta["repetitions"]), meta
    assert all(w >= seconds - 0.05 for w in meta["wall_s"]), meta["wall_s"]     # the recording spans them all
    # one process per repetition, in the same recording (the main thread of each `lock` run)
    assert all(sum(1 for t in r["threads"] if t["comm"] == "lock") >= 2 * n for r, n in zip(runs, meta["repetitions"]))
    side = diff._side(diff.load(folder, kept=False))
    hz = {j["run"]: j["hz"] for j in meta["runs_judged"] if j["run"]}     # a redone run's tier samples less often
    for i, (r, cost, n) in enumerate(zip(runs, side["on"]["cost"], meta["repetitions"]), 1):
        assert sum(cost.values()) == pytest.approx(sum(r["oncpu"].values()) * 1e6 / hz[i] / n)
    per_run = [w / n for w, n in zip(meta["wall_s"], meta["repetitions"])]
    assert meta["slowdown"] == pytest.approx(statistics.median(per_run) / meta["timed_median"], rel=1e-3)
    # each recorded run judged by its wall time per run against the point's unrecorded calibration run
    # (gate.judge), its speed against the timed median kept beside
    for j, x in zip(sorted((j for j in meta["runs_judged"] if j["run"]), key=lambda j: j["run"]), per_run):
        assert j["speed_timed"] == pytest.approx(meta["timed_median"] / x, rel=1e-3)
        assert j["speed"] == pytest.approx((j["reference"] or meta["timed_median"]) / x, rel=1e-3)


def test_why_seconds_stops_repeating_before_perfs_size_limit(build, tmp_path):
    """A contended mutex makes hundreds of thousands of futex and switch events a second, each with an
    8 KiB stack: repeated for the default 2 s, the recording reached perf's 1 GB limit, perf ended the
    command and the run was lost (quiet host, 2026-11-28). The loop stops between repetitions once perf
    has written collect.RECORD_BUDGET bytes: every evidence run completes, with whole repetitions."""
    scale(tmp_path, *BASE[:-1], "threads=2", "why_runs=2", "--", "tests/fixtures/why/build/lock", "{threads}")
    _f, meta, runs = evidence(run_folder(tmp_path), 2)
    assert judged(meta, 2) and len(runs) == meta["runs"], meta
    assert all(n >= 1 for n in meta["repetitions"]) and meta["work"] == meta["repetitions"], meta
    assert not any("size limit" in str(v) for v in meta["evidence"].values()), meta["evidence"]
    assert all(us > 0 for us in futex_us(full(meta, runs), "worker")), "the workers' futex waits are in every run"


def test_lock_at_2_threads_never_says_it_scales_where_the_curve_stops(build, tmp_path):
    """The issue's mutex, end to end with why=1's defaults (why_seconds=2, 2 evidence runs) and 3 timed
    repeats: "How it scales" says scaling stops at 1 thread here (the mutex's handover costs more than the
    second thread gives); the why then names the lock and the function that takes it, or says
    inconclusive and why (every evidence run outside the disturbance budget: gate.py), never "it scales"."""
    # the guard's limits off: on a host shared with other sessions every repeat is suspect, and the curve's
    # words are then "cannot tell" (nothing to contradict); what is checked here is the why against them
    scale(tmp_path, "why=1", "threads=1 2", "placements=compact", "repeats=3", "retries=0", "warmup=0", "capacity=0",
          "draw=0", "max_foreign=100", "max_neighbour=100", "max_invol_cs=1000000000", "--",
          "tests/fixtures/why/build/lock", "{threads}")
    run = run_folder(tmp_path)
    (e,) = [e for e in model.build(run).experiments if e.why]
    w = e.why
    (c,) = w.curves
    v = c.verdict
    # the curve's own words, by the rule "How it scales" uses
    series = scaling.summaries(scaling.curves(e.points, w.metric)[c.variant])
    word, sentence = scaling.stops("compact", scaling.speedups(series, w.better)["compact"], os.cpu_count())
    # "stops", or "scaling stops at or before" (an inconclusive count first); not "cannot tell where
    # scaling stops" (suspect timed repeats on a busy host: then nothing here is the curve's claim)
    if word != "stops" and "scaling stops at or before" not in sentence:
        pytest.skip(f"the curve did not say scaling stops on this run: {sentence}")
    assert "it scales" not in v.text and v.cause != "scales", v.text
    # the lock, named with the function that takes it; or inconclusive, and why. (The scheduler is a cause
    # too where the host's other load put both threads on one vCPU during the evidence runs: then they
    # hardly contend, and the words say what the runs saw; docs/measured.md. With one run kept a side, the
    # growth can be spread thin: "no single cause" then names where it gathers, the third answer issue 53
    # allows beside a curve that stops.)
    # (The lock is named from update_table, never its caller worker: the stacks that ended at worker — 2 of
    # 7 runs here once — were perf's unwinder missing libc's tables in a child of the recorded bash loop,
    # collect.no_aslr.)
    assert (v.cause == "lock" and "Cause: lock, taken in `update_table`" in v.text) or \
        (v.cause == "inconclusive" and "inconclusive: " in v.text.lower()) or v.cause == "scheduler" or \
        (v.cause == "no single cause" and "Where it gathers, by function" in v.text), v.text
    # every evidence run was judged, and meta.json says how
    for t in (1, 2):
        _f, meta, _runs = evidence(run, t)
        assert judged(meta, 2) and meta["disturbance"] == gate.WHY_DISTURBANCE
        assert all(j["tier"] in meta["sample"]["tiers"] for j in meta["runs_judged"])
        # each attempt was planned from a count just before it, and judged against that unrecorded run
        assert all(j["reference"] and j["periods"] for j in meta["runs_judged"]), meta["runs_judged"]
        assert {"oncpu", "offcpu", "futex"} <= set(meta["sampled"]), meta["sampled"]


def test_why_comm_counts_the_named_processes_only(build, tmp_path):
    """why_comm (a server the command starts beside its load generator, cache-get's cache-server): forks
    starts two `lock 2` children and waits; with why_comm=lock only their threads are counted, the
    scheduler tracepoints are recorded for them alone, and their futex waits are all there."""
    scale(tmp_path, *BASE, "threads=2", "why_runs=1", "why_comm=lock", "--", "tests/fixtures/why/build/forks",
          "{threads}", "tests/fixtures/why/build/lock", "2")
    _f, meta, (r, *_) = evidence(run_folder(tmp_path), 2)
    assert meta["scope"] == "tree" and meta["counted"] == ["lock"]
    assert {t["comm"] for t in r["threads"]} == {"lock"} and len(r["threads"]) >= 6
    assert {s[0] for s in r["oncpu"]} == {"lock"} and {s[1] for s in r["offcpu"]} == {"lock"}
    # the workers' waits, from the function that takes the lock (collect.no_aslr: forked children unwind whole)
    assert any(s[0] == "[futex]" and "update_table" in s for s in r["offcpu"])


def test_dry_run_prices_the_evidence_runs(results):
    plan = sh("python3", "-m", "lab.cli.scale", "dry=1", "why=1", "why_runs=4", "threads=1 2", "placements=compact",
              "--", "true", env=results).stdout
    assert "why=1: 4 evidence runs per point" in plan
    plain = sh("python3", "-m", "lab.cli.scale", "dry=1", "threads=1 2", "placements=compact", "--", "true",
               env=results).stdout
    eta = lambda text: text.split("ETA ")[1].split()[0]  # noqa: E731
    assert eta(plan) != eta(plain)


@pytest.mark.parametrize("arg, says", [("why=2", "why must be 0 or 1"), ("why_runs=11", "why_runs must be"),
                                       ("why_runs=0", "why_runs must be"), ("why_runs=x", "why_runs must be"),
                                       ("why_runs=2 why=0", "add why=1"), ("why_seconds=-1", "why_seconds must be"),
                                       ("why_seconds=601", "why_seconds must be"),
                                       ('why_comm=a"b', "why_comm must be process names"),
                                       ("why_comm=sixteen-letters-x", "why_comm must be process names")])
def test_bad_why_keys_one_line_exit_2(results, arg, says):
    keys = tuple(arg.split()) if " " in arg or arg.startswith("why=") else ("why=1", arg)
    p = sh("python3", "-m", "lab.cli.scale", *keys, "--", "echo", "{threads}", env=results, check=False)
    assert p.returncode == 2 and says in p.stderr and p.stderr.strip().count("\n") == 0, p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


# --- unusual input: stripped, forked, no perf ------------------------------------------------------------
def test_stripped_binary_keeps_addresses_and_says_symbols_missing(build, tmp_path):
    stripped = os.path.join(BUILD, "lock-stripped")
    # its own build-id: perf must not find the unstripped build's symbols by it (~/.debug)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                    "-Wl,--build-id=0x" + os.urandom(20).hex(), "-o", stripped, os.path.join(FIXTURES, "lock.c")],
                   check=True)
    subprocess.run(["strip", stripped], check=True)
    scale(tmp_path, *BASE, "threads=2", "why_runs=1", "--", "tests/fixtures/why/build/lock-stripped", "{threads}")
    run = run_folder(tmp_path)
    _f, meta, (r, *_) = evidence(run, 2)
    assert meta["evidence"]["symbols"] == f"missing: {stripped}"
    frames = {f for s in r["oncpu"] for f in s}
    assert "update_table" not in frames and any(f.startswith("0x") for f in frames)
    assert any("missing: " + stripped in e["reason"] for e in journal(run, "evidence_missing"))


def test_a_forked_tree_is_followed_whole(build, tmp_path):
    """forks runs `lock 2` twice as two child processes: both, and each one's threads, are recorded."""
    scale(tmp_path, *BASE, "threads=2", "why_runs=1", "--", "tests/fixtures/why/build/forks", "{threads}",
          "tests/fixtures/why/build/lock", "2")
    _f, _m, (r, *_) = evidence(run_folder(tmp_path), 2)
    locks = [t for t in r["threads"] if t["comm"] == "lock"]
    assert len(locks) >= 6, r["threads"]     # 2 processes × (main + 2 workers)
    assert any(s[0] == "lock" and "update_table" in s for s in r["oncpu"])


def test_a_server_the_command_did_not_start_is_what_is_recorded(build, tmp_path):
    """A spec's `server` (pidfiles of processes the command talks to, such as the lab's Cassandra) is
    outside the command's tree and is the measured program: perf attaches to it for each evidence run,
    and the command (its client) runs unrecorded (collect.scope)."""
    pidfile = os.path.join(BUILD, "server.pid")
    server = subprocess.Popen(["python3", "-c", "import time\nend = time.time() + 300\nwhile time.time() < end: pass"],
                              start_new_session=True)
    try:
        with open(pidfile, "w") as f:
            f.write(f"{server.pid}\n")
        scale(tmp_path, *BASE, "threads=2", "why_runs=1", "server=tests/fixtures/why/build/server.pid", "--",
              "tests/fixtures/why/build/lock", "{threads}")
    finally:
        server.kill()
        server.wait()
        os.remove(pidfile)
    _f, meta, (r, *_) = evidence(run_folder(tmp_path), 2)
    roots = {s[0] for s in r["oncpu"]}
    assert roots == {"python3"}, roots
    assert meta["scope"] == "server" and {t["comm"] for t in r["threads"]} == {"python3"}
    assert meta["wall_s"][0] < 60                          # the command's wall time, not the attached span


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="jit.c writes x86-64 machine code")
def test_jit_frames_are_counted_not_dropped(build, tmp_path):
    """Code run from anonymous memory (what a JVM's compiled methods are) has no symbol: its samples
    stay, as `[jit]` frames, and it is not reported as a binary without symbols."""
    scale(tmp_path, *BASE, "threads=1", "why_runs=1", "--", "tests/fixtures/why/build/jit", "{threads}")
    _f, meta, (r, *_) = evidence(run_folder(tmp_path), 1)
    jitted = sum(n for s, n in r["oncpu"].items() if s[0] == "jit" and "[jit]" in s)
    assert jitted * 2 > sum(r["oncpu"].values()), r["oncpu"]
    assert meta["evidence"]["symbols"] == "ok"


def test_a_host_without_perf_says_so_and_the_sweep_succeeds(build, tmp_path):
    """PATH without perf (every other command of /usr/bin and /bin kept): the timed repeats are measured,
    meta.json and the journal say which evidence is missing and why, exit 0."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for name in os.listdir(d) if os.path.isdir(d) else ():
            if name not in ("perf", "bpftrace") and not (shadow / name).exists():
                os.symlink(os.path.join(d, name), shadow / name)
    tools = os.path.join(ROOT, ".work", "tools", "bin")
    env = {"PATH": os.pathsep.join([tools, str(shadow)])}
    res = tmp_path / "results"
    res.mkdir()
    p = scale(res, *BASE, "threads=2", "why_runs=1", "--", "tests/fixtures/why/build/lock", "{threads}", env=env)
    assert p.returncode == 0
    run = run_folder(res)
    _f, meta, _runs = evidence(run, 2, needs=())
    # nothing to record with: the command is not run again for nothing
    assert meta["runs"] == 0 and meta["evidence"]["oncpu"] == "not available here: perf is not on PATH"
    (missing,) = journal(run, "evidence_missing")
    assert "oncpu: perf is not on PATH" in missing["reason"]
    assert journal(run, "done")


# --- the format's reader refuses what it did not write ---------------------------------------------------
@pytest.mark.parametrize("name, text, says", [
    ("oncpu_r1.folded", "a;b 12x\n", ":1: expected"),
    ("oncpu_r1.folded", "ok 1\n" + ";".join(["f"] * 65) + " 3\n", ":2: a stack deeper"),
    ("futex_r1.csv", "addr,waits,wait_us\n", ":1: header"),
    ("futex_r1.csv", "addr,waits,wait_us,stack\n0xzz,1,2,a\n", ":2: addr"),
    ("threads_r1.csv", "tid,comm,oncpu_us,offcpu_us,runq_us,voluntary,involuntary,migrations\n1,a,-1,0,0,0,0,0\n",
     ":2: oncpu_us"),
])
def test_reader_refuses_malformed_files_naming_file_and_line(tmp_path, name, text, says):
    p = tmp_path / name
    p.write_text(text)
    reader = {"folded": ev.read_folded, "futex": ev.read_futex, "threads": ev.read_threads}
    kind = "folded" if name.endswith(".folded") else name.split("_")[0]
    with pytest.raises(ev.EvidenceError, match=str(p) + says):
        reader[kind](str(p))


def test_meta_reader_refuses_wrong_types(tmp_path):
    good = {"format": 1, "runs": 1, "unit": "run", "metric": None, "work": [1], "wall_s": [0.5], "value": [None],
            "timed_median": 0.4, "slowdown": 1.25, "sample": {"event": "cpu-clock", "hz": 999},
            "evidence": {"oncpu": "ok"}}
    (tmp_path / "meta.json").write_text(json.dumps(good))
    assert ev.read_meta(str(tmp_path))["slowdown"] == 1.25
    for bad in ({"runs": 11}, {"work": ["1"]}, {"unit": "ops"}, {"slowdown": "fast"}, {"evidence": {"oncpu": 1}}):
        (tmp_path / "meta.json").write_text(json.dumps(dict(good, **bad)))
        with pytest.raises(ev.EvidenceError, match="meta.json:1:"):
            ev.read_meta(str(tmp_path))


def test_writer_bounds_stacks_depth_and_frames(tmp_path):
    counts = {("comm",) + tuple(f"f{i}" for i in range(100)): 5, ("comm", "x" * 2000): 3}
    counts.update({("comm", f"g{i}"): 1 for i in range(ev.MAX_STACKS + 10)})
    ev.write_run(str(tmp_path), 1, oncpu=counts)
    back = ev.read_folded(ev.path(str(tmp_path), "oncpu", 1))
    assert len(back) == ev.MAX_STACKS and sum(back.values()) == sum(counts.values())
    assert max(len(s) for s in back) == ev.MAX_DEPTH and max(len(f) for s in back for f in s) == ev.MAX_FRAME
    assert back[(ev.TRUNCATED,)] > 0


# --- fold.py on perf script's text (a real recording's lines, shortened) --------------------------------
PERF_SCRIPT = """\
my prog  10/11 [001]  100.000000: PERF_RECORD_SWITCH IN
my prog  10/11 [001]  100.001000: syscalls:sys_enter_futex: uaddr: 0x55aa0280, op: 0x00000080, val: 0x00000002, utime: 0x00000000, uaddr2: 0x00000000, val3: 0x00000000
\t           8612b futex_wait+0x2b (inlined)
\t           8612b __GI___lll_lock_wait+0x2b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            1268 update_table+0x18 (/x/lock)
\t            12c3 worker+0x23 (/x/lock)

my prog  10/11 [001]  100.001010:       sched:sched_switch: prev_comm=my prog prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\tffffffff8143d6a2 __x64_sys_futex+0x112 ([kernel.kallsyms])
\t           8612b __GI___lll_lock_wait+0x2b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            1268 update_table+0x18 (/x/lock)
\t            12c3 worker+0x23 (/x/lock)

my prog  10/11 [001]  100.001020: PERF_RECORD_SWITCH OUT
my prog  10/12 [000]  100.003020:       sched:sched_wakeup: comm=my prog pid=11 prio=120 target_cpu=000
my prog  10/11 [000]  100.004020: PERF_RECORD_SWITCH IN
my prog  10/11 [000]  100.004030:  syscalls:sys_exit_futex: 0x0
my prog  10/11 [000]  100.005000:      cpu-clock/freq=999/:
\t            12e6 update_table+0x36 (/x/lock)
\t            12c3 worker+0x23 (/x/lock)
\t          7f0001 [unknown] (//anon)

my prog  10/11 [000]  100.005500:      cpu-clock/freq=999/:
	ffffffff810b0000 perf_swevent_event+0x10 ([kernel.kallsyms])
	ffffffff810a0000 perf_tp_event+0x20 ([kernel.kallsyms])
	ffffffff81090000 perf_syscall_enter+0x30 ([kernel.kallsyms])
	ffffffff81080000 syscall_trace_enter+0x40 ([kernel.kallsyms])
	ffffffff81070000 do_syscall_64+0x50 ([kernel.kallsyms])
	           8612b __GI___lll_lock_wait+0x2b (/usr/lib/x86_64-linux-gnu/libc.so.6)
	            1268 update_table+0x18 (/x/lock)

my prog  10/11 [000]  100.005990:       sched:sched_switch: prev_comm=my prog prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=other next_pid=99 next_prio=120
	ffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
	            12e6 update_table+0x36 (/x/lock)
	            12c3 worker+0x23 (/x/lock)

my prog  10/11 [000]  100.006000: PERF_RECORD_SWITCH OUT preempt
my prog  10/11 [001]  100.007000: PERF_RECORD_SWITCH IN
"""  # noqa: E501 (perf script's own lines, verbatim)


def test_fold_splits_a_wait_at_its_wakeup_and_keeps_the_futex_word():
    from lab.engine.evidence import fold
    f = fold.fold(PERF_SCRIPT.splitlines(keepends=True))
    (t,) = [r for r in f.thread_rows() if r["tid"] == 11]
    # blocked from 100.001020 to the wakeup at 100.003020, then 1 ms in the run queue, then preempted 1 ms
    assert f.offcpu[("[futex]", "my prog", "worker", "update_table", "__GI___lll_lock_wait")] == pytest.approx(2000)
    assert f.offcpu[("[runqueue]", "my prog")] == pytest.approx(1000)       # woken, waiting for a CPU
    assert f.offcpu[("[runqueue]", "my prog", "worker", "update_table")] == pytest.approx(1000)   # preempted
    assert (t["voluntary"], t["involuntary"], t["migrations"], t["comm"]) == (1, 1, 2, "my prog")
    assert t["oncpu_us"] == pytest.approx(1020 + 1980) and t["runq_us"] == pytest.approx(2000)
    (fx,) = f.futex_rows()
    # a wait ends at its thread's SWITCH IN (sys_exit_futex is no longer recorded; an old one is ignored)
    assert fx["addr"] == "0x55aa0280" and fx["waits"] == 1 and fx["wait_us"] == pytest.approx(3020)
    assert fx["stack"] == ("worker", "update_table", "__GI___lll_lock_wait", "futex_wait")
    # the kernel's perf code (here tracing the futex call) is the profiler's, one leaf
    assert f.oncpu == {("my prog", "[jit]", "worker", "update_table"): 1,
                       ("my prog", "update_table", "__GI___lll_lock_wait", "do_syscall_64_[k]",
                        "syscall_trace_enter_[k]", "[profiler]"): 1}
    assert f.leaves == {("update_table", "/x/lock", "0x36"): 1}
    # what each thread does: its on-CPU user stacks without the C runtime's frames (why/groups.py names the
    # program's own function)
    assert [(r["tid"], r["samples"], r["stack"]) for r in f.doing_rows()] == [
        (11, 1, ("[jit]", "worker", "update_table")), (11, 1, ("update_table",))]


def test_doing_rows_are_written_and_read_back(tmp_path):
    from lab.engine.evidence import store
    store.write_run(str(tmp_path), 1, doing=[{"tid": 7, "samples": 3, "stack": ("worker", "update_table")},
                                              {"tid": 7, "samples": 9, "stack": ("main", "merge")}])
    assert store.read_run(str(tmp_path), 1)["doing"] == [{"tid": 7, "samples": 9, "stack": ("main", "merge")},
                                                         {"tid": 7, "samples": 3, "stack": ("worker", "update_table")}]


# The same shape as perf script prints it for a sampled recording (-F …,period,… --show-mmap-events):
# sys_enter_futex named by id (1 in 50, with -R's fields), a wake, and the binary's text mapping.
SAMPLED = """\
lock 20/20 [001] 200.000000: PERF_RECORD_MMAP2 20/20: [0x55a96e869000(0x1000) @ 0x1000 fe:00 5407287 2932196368]: r-xp /x/lock
lock 20/21 [001] 200.000100: PERF_RECORD_SWITCH IN
lock 20/21 [001] 200.001000:         50  sys_enter_futex: uaddr: 0x55a96e86c2a0, op: 0x00000080, val: 0x00000002, utime: 0x00000000, uaddr2: 0x00000000, val3: 0x00000000
\t           8612b __GI___lll_lock_wait+0x2b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            12e8 update_table+0x18 (/x/lock)
\t            1353 worker+0x23 (/x/lock)

lock 20/21 [001] 200.001010: PERF_RECORD_SWITCH OUT
lock 20/22 [000] 200.001500:         50  sys_enter_futex: uaddr: 0x55a96e86c2a0, op: 0x00000081, val: 0x00000001, utime: 0x00000000, uaddr2: 0x00000000, val3: 0x00000000
\t           8618b __GI___lll_lock_wake+0x1b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            1310 update_table+0x40 (/x/lock)
\t            1353 worker+0x23 (/x/lock)

lock 20/21 [000] 200.003000: PERF_RECORD_SWITCH IN
"""  # noqa: E501 (perf script's lines, verbatim)


def test_fold_weights_sampled_futex_calls_and_keeps_the_waker_and_the_mapping():
    """A futex call sampled 1 in 50 stands for 50 (waits, wait time, wakes); the wake's stack is the
    holder's; the text mapping gives the binary's base, by which collect names the word's symbol."""
    from lab.engine.evidence import fold
    f = fold.fold(SAMPLED.splitlines(keepends=True))
    (fx,) = f.futex_rows()
    assert fx["waits"] == 50 and fx["wait_us"] == pytest.approx(2000 * 50)     # 200.001000 → switch in 200.003000
    (lk,) = f.lock_rows(lambda pid, addr: f"{pid}:{addr}")
    assert lk["wakes"] == 50 and lk["waker"] == ("worker", "update_table", "__GI___lll_lock_wake")
    assert lk["symbol"] == "20:0x55a96e86c2a0" and f.maps[20] == [(0x55a96e868000, "/x/lock")]


def test_a_sampled_futex_call_that_returned_is_not_given_a_later_block():
    """1 in 50 futex calls sampled: one that returned at once (the word had changed) and a block 5 ms later
    on an unrecorded call: that block's time is not the sampled call's (×50 it was, before)."""
    from lab.engine.evidence import fold
    late = SAMPLED.replace("lock 20/21 [001] 200.001010: PERF_RECORD_SWITCH OUT",
                           "lock 20/21 [001] 200.006000: PERF_RECORD_SWITCH OUT").replace(
        "lock 20/21 [000] 200.003000: PERF_RECORD_SWITCH IN", "lock 20/21 [000] 200.008000: PERF_RECORD_SWITCH IN")
    (fx,) = fold.fold(late.splitlines(keepends=True)).futex_rows()
    assert fx["waits"] == 50 and fx["wait_us"] == 0


@pytest.mark.slow          # a perf recording: a measurement, run under the bench lock
def test_the_lock_fixtures_mutex_is_named_by_its_symbol(build, tmp_path):
    """A real recording at the tier's plan from a real count: the futex word's symbol from the binary's
    static data (`lock` in lock.c) and the wakers' stacks naming update_table (4 threads on 2 CPUs: they
    contend whatever the host does)."""
    from lab.engine import prefix
    from lab.engine.evidence import collect
    status = collect.availability(prefix.perf_event())
    how = collect.plan(collect.TIERS[0], {"syscalls:sys_enter_futex": 200000.0}, 2, 1, collect.RECORD_BUDGET)
    assert how["periods"]["syscalls:sys_enter_futex"] == 100        # 200,000 a second at 2,000 stacks a second
    data = str(tmp_path / "perf.data")
    # under a busy host's load the 4 threads can take turns on the 2 vCPUs and hardly contend (3 of 7
    # recordings here at load 6–9 sampled no futex call): the naming is what is tested, in up to 3 recordings
    for _ in range(3):
        subprocess.run(collect.record_prefix(data, prefix.perf_event(), status, how=how) +
                       [os.path.join(BUILD, "lock"), "4"], check=True, stdout=subprocess.DEVNULL)
        f, why = collect.script(data, dict(os.environ), str(tmp_path / "log"))
        assert why is None
        rows = f.lock_rows(collect.lock_name(f))
        if any(f.futex.values()):
            break
    assert rows, "4 threads on one mutex made no sampled futex call in 3 recordings"
    assert {r["symbol"] for r in rows} == {"lock (lock)"}, rows
    assert any("update_table" in r["waker"] for r in rows if r["wakes"]), rows


@pytest.mark.slow          # a perf recording: a measurement, run under the bench lock
def test_a_command_forked_by_the_recorded_loop_keeps_update_tables_frame(build, tmp_path):
    """why_seconds' bash loop forks the command under perf: perf 6.1 keeps bash's libc mapping in the child,
    and its libunwind took libc's base from the lower of the two; a child whose libc landed above bash's
    lost update_table (the frame-pointer fallback: `__lll_lock_wait ← worker`; 7 of 7 such children here,
    collect.no_aslr). Recorded as an evidence run is (address randomisation off), every worker stack
    that goes below worker names update_table in each child seen (5 or 6 of six)."""
    from lab.engine import prefix
    from lab.engine.evidence import collect, fold
    status = collect.availability(prefix.perf_event())
    # planned as an evidence run (stacks of 1 in 100 futex calls): every call's 8 KiB stack lost events
    how = collect.plan(collect.TIERS[0], {"syscalls:sys_enter_futex": 200000.0}, 2, 1, collect.RECORD_BUDGET)
    data = str(tmp_path / "perf.data")
    loop = "for i in 1 2 3 4 5 6; do \"$0\" 2 > /dev/null || exit; done"
    subprocess.run(collect.record_prefix(data, prefix.perf_event(), status, how=how) +
                   ["bash", "-c", loop, os.path.join(BUILD, "lock")], check=True, stdout=subprocess.DEVNULL)
    text = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,cpu,time,period,event,trace,ip,sym,"
                           "symoff,dso"], capture_output=True, text=True, errors="replace", check=True).stdout
    below, kept = {}, {}
    for e in fold.events(text.splitlines()):
        u = fold.user_frames(e.frames)
        if "worker" in u and u.index("worker") + 1 < len(u):
            below[e.pid] = below.get(e.pid, 0) + 1
            kept[e.pid] = kept.get(e.pid, 0) + (u[u.index("worker") + 1] == "update_table")
    # (a child whose samples perf lost is not seen; every child that is keeps update_table)
    assert len(below) >= 5 and kept == below, (below, kept)
    # what each worker does (why/groups.py's grouping by stacks): update_table, called from worker
    from lab.why import classify, groups
    f = fold.fold(text.splitlines())
    by = {}
    for r in f.doing_rows():
        by.setdefault(r["tid"], []).append((r["stack"], r["samples"]))
    workers = [t for t in by if any("worker" in st for st, _n in by[t])]
    assert len(workers) >= 10 and {groups.doing(by[t], classify.named) for t in workers} == \
        {"`update_table` ← `worker`"}, {t: by[t] for t in workers}


def test_plan_keeps_the_recording_within_its_budget():
    from lab.engine.evidence import collect
    busy = collect.plan(collect.TIERS[0], {"sched:sched_switch": 1e6, "syscalls:sys_enter_futex": 1e7}, 256, 2,
                        collect.RECORD_BUDGET)
    assert busy["bytes"] <= collect.RECORD_BUDGET and busy["hz"] < collect.HZ
    assert busy["periods"]["syscalls:sys_enter_futex"] > 5000 and busy["periods"]["sched:sched_wakeup"] == 1
    assert collect.ring_pages(2) == 4096 and collect.ring_pages(256) == 256 and collect.ring_pages(100000) == 64


class GateSpec(dict):
    """A spec for run_point with scripted attempts: its keys, and no watched processes."""
    def watched(self):
        return []


class TwoThreads:
    threads = 2


def test_the_gate_redoes_a_rejected_run_once_at_the_next_tier(tmp_path, monkeypatch):
    """run_point's loop with scripted attempts (no perf run; test input, not a measurement): a run outside
    the budget is redone at the next tier and kept; a cut one is redone lighter; later runs start at the
    tier reached; meta.json judges every attempt and the differential reads the kept runs only."""
    from lab.engine.evidence import collect
    script = iter([("", 2.0), ("", 1.05), ("cut", None), ("", 0.5), ("", 1.0)])   # wall per run vs 1.0 timed
    tiers = []

    def attempt(ctx, spec, point, folder, r, event, status, seconds, tier, how=None):
        cut, wall = next(script)
        tiers.append(tier["name"])
        return {"lost": "perf reached its size limit" if cut else "", "cut": bool(cut), "wall": wall, "reps": 1,
                "status": {}, "out": "", "scope": "tree", "who": ()}
    monkeypatch.setattr(collect, "attempt", attempt)
    monkeypatch.setattr(collect, "availability", lambda event: {"oncpu": ev.OK})
    monkeypatch.setattr(collect, "calibrate", lambda *a: None)      # no unrecorded reference: the timed median
    kept, _status, why = collect.run_point(None, GateSpec(timeout="60"), TwoThreads(), 3,
                                           [{"metric": "wall_s", "value": "1.0"}], str(tmp_path))
    assert tiers == ["full", "light", "light", "lightest", "lightest"]
    meta = ev.read_meta(str(tmp_path))
    assert [(j["of"], j["run"], j["tier"], j["verdict"]) for j in meta["runs_judged"]] == [
        (1, 1, "full", "disturbed"), (1, 2, "light", "kept"), (2, None, "light", "cut"),
        (2, 3, "lightest", "disturbed"), (3, 4, "lightest", "kept")]
    assert meta["runs"] == 4 and kept == 2 and gate.kept_runs(meta) == [2, 4] and why == "2 of 3 evidence runs kept"
    assert meta["runs_judged"][0]["why"] == "ran ×2.00 slower than the timed repeats (budget ±10%)"


def test_a_point_left_one_kept_run_short_of_two_gets_one_more(tmp_path, monkeypatch):
    """run_point with scripted attempts (no perf run; test input, not a measurement), why_runs=2: run 1 is
    rejected twice, run 2 kept; the differential's intervals need two kept runs a side (diff.interval), so
    a third run is made, and kept. Where two are kept, none more; with why_runs=1 (asked for), none more."""
    from lab.engine.evidence import collect
    monkeypatch.setattr(collect, "availability", lambda event: {"oncpu": ev.OK})
    monkeypatch.setattr(collect, "calibrate", lambda *a: None)      # no unrecorded reference: the timed median

    def made(walls, runs, folder):
        script = iter(walls)
        monkeypatch.setattr(collect, "attempt", lambda *a, **k: dict(
            lost="", cut=False, wall=next(script), reps=1, status={}, out="", scope="tree", who=()))
        os.makedirs(folder)
        kept, _s, why = collect.run_point(None, GateSpec(timeout="60"), TwoThreads(), runs,
                                          [{"metric": "wall_s", "value": "1.0"}], folder)
        return [(j["of"], j["verdict"]) for j in ev.read_meta(folder)["runs_judged"]], kept, why
    got = made([2.0, 2.0, 1.0, 1.0], 2, str(tmp_path / "a"))
    assert got == ([(1, "disturbed"), (1, "disturbed"), (2, "kept"), (3, "kept")], 2, ""), got
    assert made([1.0, 1.0], 2, str(tmp_path / "b")) == ([(1, "kept"), (2, "kept")], 2, "")
    assert made([2.0, 2.0], 1, str(tmp_path / "c"))[:2] == ([(1, "disturbed"), (1, "disturbed")], 0)


STARTING = """\
lock  10/10 [000]  200.000000: PERF_RECORD_SWITCH IN
lock  10/10 [000]  200.000050: PERF_RECORD_FORK(10:11):(10:10)
lock  10/10 [000]  200.000060: PERF_RECORD_FORK(10:12):(10:10)
lock  10/11 [001]  200.000100: PERF_RECORD_SWITCH IN
lock  10/12 [001]  200.000200: PERF_RECORD_SWITCH IN
lock  10/10 [000]  200.001000: PERF_RECORD_SWITCH OUT
lock  10/11 [001]  200.050000: PERF_RECORD_EXIT(10:11):(1:1)
lock  10/12 [001]  200.100000: PERF_RECORD_EXIT(10:12):(1:1)
lock  10/10 [000]  200.100100: PERF_RECORD_SWITCH IN
"""


def test_fold_keeps_which_thread_started_which(tmp_path):
    """A fork record names the thread that started another (groups.py leaves such a launcher out of the
    workers when it ran far less); the file keeps it, and an older file without the column reads as not known."""
    from lab.engine.evidence import fold
    f = fold.fold(STARTING.splitlines(keepends=True))
    # 10 started 11 and 12 and was blocked (off-CPU, not preempted) when the last of them exited: it waited
    want = {10: (10, 0, 1), 11: (10, 10, 0), 12: (10, 10, 0)}
    assert {r["tid"]: (r["pid"], r["parent"], r["joined"]) for r in f.thread_rows()} == want
    ev.write_run(str(tmp_path), 1, threads=f.thread_rows())
    assert {r["tid"]: (r["pid"], r["parent"], r["joined"])
            for r in ev.read_threads(ev.path(str(tmp_path), "threads", 1))} == want
    # on-CPU (or preempted) as its threads end, it did not wait for them
    out = "200.001000: PERF_RECORD_SWITCH OUT"
    busy = fold.fold(STARTING.replace(out, out + " preempt").splitlines(keepends=True))
    assert {r["tid"]: r["joined"] for r in busy.thread_rows()}[10] == 0
    old = tmp_path / "threads_r2.csv"
    old.write_text("tid,comm,oncpu_us,offcpu_us,runq_us,voluntary,involuntary,migrations\n10,lock,5,7,0,1,0,0\n")
    assert [ev.read_threads(str(old))[0][k] for k in ("pid", "parent", "joined")] == [0, 0, 0]
    old.write_text("tid,comm,oncpu_us,offcpu_us\n10,lock,5,7\n")
    with pytest.raises(ev.EvidenceError, match="threads_r2.csv:1: header must be"):
        ev.read_threads(str(old))
