"""why/diff, why/classify, why/verdict, why/flame (issue 43, items 3 and 5).

Two kinds of evidence: REAL evidence recorded once from the known-cause programs of
tests/fixtures/why/recorded/src (see tests/fixtures/why/recorded/README.md: command, host, date), read back
from the committed files so no assertion depends on the host's load; and small hand-checked evidence for
the edge cases of the rules (0→1 sample, empty, missing kinds, one run)."""
import dataclasses
import math
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from lab.core import rules
from lab.core.stats import Summary
from lab.engine.evidence import gate
from lab.engine.evidence import store as evidence
from lab.report import scaling
from lab.why import classify as C
from lab.why import diff, flame, verdict


def known(m, lo, hi, n=5):
    """A point's Summary with a hand-set median and 95% CI (what the knee and verdict rules read)."""
    return Summary(median=m, min=lo, max=hi, spread_pct=float("nan"), n=n, ci_lo=lo, ci_hi=hi,
                   ci_pct=float("nan"), ci_method="hand-set")

HERE = os.path.dirname(os.path.abspath(__file__))
REC = os.path.join(HERE, "fixtures", "why", "recorded")
HAVE_INFERNO = shutil.which("inferno-flamegraph") and shutil.which("inferno-diff-folded")


def recorded(prog):
    return diff.differential(diff.load(os.path.join(REC, f"{prog}_t1")), diff.load(os.path.join(REC, f"{prog}_t2")),
                             "compact", 1, 2, "test")


def ev(oncpu, offcpu=None, work=None, hz=1000, unit="run", **state):
    """Hand-made evidence in the reader's shape: oncpu/offcpu are one {stack: amount} per run."""
    n = len(oncpu)
    said = {"oncpu": "ok", "offcpu": "ok" if offcpu is not None else "not available here: no bpftrace",
            "futex": "not available here: test", "sched": "ok", "c2c": "not available here: no PMU",
            "topdown": "not available here: no PMU", "symbols": "ok"}
    said.update(state)
    runs = [{"oncpu": oncpu[i], "offcpu": offcpu[i] if offcpu is not None else None, "futex": None,
             "threads": None, "hotins": None} for i in range(n)]
    return {"meta": {"format": 1, "runs": n, "unit": unit, "work": work or [1] * n,
                     "sample": {"event": "cpu-clock", "hz": hz},
                     "evidence": said}, "runs": runs}


# --- real evidence, recorded from programs with a known cause ---------------------------------------------

def test_serial_phase_is_named_from_real_evidence():
    d = recorded("serial")
    v = verdict.verdict(d)
    assert v.cause == "serial phase", v.text
    top = diff.findings(d)[0]
    assert top.kind == "off-CPU" and "pthread_barrier_wait" in top.name
    assert v.text.startswith("compact, 2 threads: each run costs ×")
    # the serial phase adds no CPU work: the on-CPU total's interval holds 1
    on = d.total["on"]
    assert on.lo <= 1 <= on.hi


def test_scaling_program_gets_no_invented_cause():
    d = recorded("scales")
    v = verdict.verdict(d)
    assert v.cause not in ("lock", "shared data", "serial phase", "kernel"), v.text
    on = d.total["on"]
    assert on.lo <= 1 <= on.hi          # crunch costs the same CPU per run at 2 threads
    for r in diff.findings(d):               # whatever grows beyond noise is waiting for a CPU, not crunch's work
        assert C.rule(d, r) == "scheduler"


def test_lock_is_named_from_real_evidence():
    d = recorded("lock")
    v = verdict.verdict(d)
    assert v.cause == "lock", v.text
    assert "The lock: futex 0x" in v.text and "waited on from `update_table` ← `worker`" in v.text
    assert "Cause: lock, taken in `update_table`" in v.text      # the function that takes it


def test_lock_rule_names_the_futex_and_update_table():
    d = recorded("lock")
    fx = C.futex_detail(d)
    assert fx is not None
    addr, who, _ = fx
    assert addr.startswith("0x") and who == "`update_table` ← `worker`"
    waits = [r for r in d.stacks if r.kind == "off-CPU" and r.name.startswith("[futex]")
             and "update_table" in r.name]
    assert waits and all(C.rule(d, r) == "lock" for r in waits)
    assert waits[0].base == 0 and waits[0].knee > 0      # nobody waits for the lock at 1 thread


def test_shared_data_rule_names_bump_counter_and_its_lock_prefixed_instruction():
    d = recorded("shared")
    row = next(r for r in d.stacks if r.kind == "on-CPU" and r.name.endswith(";bump_counter"))
    assert C.rule(d, row) == "shared data"
    ins, samples = C.hot_atomic(d, "bump_counter")
    assert ins.startswith("lock ") and samples > 0
    row = dataclasses.replace(row, cls="shared data")
    assert "hottest instruction `lock " in verdict.describe(d, row)


def test_recorded_fixtures_are_small_and_said():
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(REC) for f in fs)
    assert total < 400_000
    with open(os.path.join(REC, "README.md"), encoding="utf-8") as f:
        note = f.read()
    assert "perf record" in note and "host" in note.lower()


# --- the rules on hand-checked evidence --------------------------------------------------------------------

def test_zero_to_one_sample_is_not_a_finding():
    base = ev([{"p;work": 1000}] * 3)
    knee = ev([{"p;work": 1000, "p;work;rare": 1}] * 3)
    d = diff.differential(base, knee, "compact", 1, 2)
    rare = next(r for r in d.stacks if r.name == "p;work;rare")
    assert rare.flag == diff.TOO_FEW and rare.growth > 0
    assert not diff.findings(d)
    v = verdict.verdict(d)
    assert v.cause != "lock" and "rare" not in v.text


def test_clear_growth_is_a_finding_with_its_share_and_interval():
    base = ev([{"p;work": 1000, "p;lock": 100}, {"p;work": 1010, "p;lock": 105}, {"p;work": 990, "p;lock": 95}])
    knee = ev([{"p;work": 1000, "p;lock": 400}, {"p;work": 1005, "p;lock": 410}, {"p;work": 995, "p;lock": 390}])
    d = diff.differential(base, knee)
    top = diff.findings(d)[0]
    assert top.name == "p;lock" and top.flag == ""
    # 1000 Hz: 100 samples = 100 ms = 100,000 µs per run; 400 → 400,000
    assert top.base == pytest.approx(100_000) and top.knee == pytest.approx(400_000)
    assert 0 < top.lo < top.growth < top.hi
    assert top.share == pytest.approx(300_000 / (300_000 + max(0, d.stacks[1].growth)), rel=0.02)
    t = d.total["on"]
    assert t.ratio == pytest.approx(1400 / 1100, rel=0.01) and t.lo < t.ratio < t.hi


def test_cost_is_per_unit_of_work():
    # twice the samples for twice the ops: the same cost per op, nothing grows
    base = ev([{"p;work": 1000}] * 3, unit="op", work=[1e6] * 3)
    knee = ev([{"p;work": 2000}] * 3, unit="op", work=[2e6] * 3)
    d = diff.differential(base, knee)
    assert d.stacks[0].growth == pytest.approx(0) and d.total["on"].ratio == pytest.approx(1)
    assert verdict.verdict(d).cause == "scales"
    assert "it scales" in verdict.verdict(d).text


def test_growth_within_noise_is_flagged():
    base = ev([{"p;a": 100}, {"p;a": 300}, {"p;a": 200}])
    knee = ev([{"p;a": 310}, {"p;a": 90}, {"p;a": 250}])
    d = diff.differential(base, knee)
    assert d.stacks[0].flag in (diff.NOISE, diff.TOO_FEW) and not diff.findings(d)


def test_empty_evidence_names_no_cause():
    d = diff.differential(ev([{}] * 2, [{}] * 2), ev([{}] * 2, [{}] * 2), "compact", 1, 2)
    v = verdict.verdict(d)
    assert d.stacks == () and v.cause is None and v.stacks == ()
    assert "no samples and no waits: no cause can be named" in v.text.lower()


def test_missing_off_cpu_is_said():
    d = diff.differential(ev([{"p;a": 100}] * 3), ev([{"p;a": 300}] * 3), "compact", 1, 2)
    v = verdict.verdict(d)
    assert "off" in d.missing and "all" not in d.total
    assert "off-CPU evidence missing: not available here: no bpftrace" in v.missing
    assert "bpftrace" not in v.text     # said once above every curve's words (report.view.why), not in each


def test_one_run_off_cpu_has_no_interval():
    d = diff.differential(ev([{"p;a": 10}], [{"[futex];p;a": 50_000}]), ev([{"p;a": 10}], [{"[futex];p;a": 900_000}]))
    row = next(r for r in d.stacks if r.kind == "off-CPU")
    assert row.flag == diff.ONE_RUN and row.lo is None
    assert "one evidence run" in verdict.verdict(d).text


def test_lock_serial_scheduler_rules_on_hand_made_stacks():
    on = [{"p;worker;crunch": 1000}] * 3
    off_b = [{"[futex];p;worker;update_table;pthread_mutex_lock;__lll_lock_wait": 100,
              "[futex];p;worker;pthread_barrier_wait": 100, "[runqueue];p;worker": 100}] * 3
    off_k = [{"[futex];p;worker;update_table;pthread_mutex_lock;__lll_lock_wait": 500_000 + i,
              "[futex];p;worker;pthread_barrier_wait": 200_000 + i,
              "[runqueue];p;worker": 100_000 + i} for i in range(3)]
    d = diff.differential(ev(on, off_b), ev(on, off_k), "compact", 1, 2)
    got = {r.name.split(";")[-1]: C.rule(d, r) for r in diff.findings(d)}
    assert got == {"__lll_lock_wait": "lock", "pthread_barrier_wait": "serial phase", "worker": "scheduler"}
    v = verdict.verdict(d)
    assert v.cause == "lock" and "`update_table` ← `worker`" in v.text
    assert v.classes["lock"] == pytest.approx(0.625, abs=0.01)


def test_units_must_match():
    with pytest.raises(ValueError):
        diff.differential(ev([{}], unit="op", work=[10]), ev([{}], unit="run"))


def test_knee_reuses_the_labs_scaling_rule():
    def s(m, lo, hi):
        return known(m, lo, hi)
    series = {"compact": {1: s(100, 99, 101), 2: s(190, 188, 192), 4: s(200, 198, 202)}}
    b, k, why, stops = rules.knees(series, "higher")["compact"]
    assert (b, k, stops) == (1, 4, True) and "below 75%" in why and "efficiency 50%" in why
    assert scaling.THRESHOLD == 0.75
    linear = {"spread": {1: s(100, 99, 101), 2: s(199, 198, 200)}}
    assert rules.knees(linear, "higher")["spread"][:2] == (1, 2)
    assert "largest" in rules.knees(linear, "higher")["spread"][2] and not rules.knees(linear, "higher")["spread"][3]


def test_rows_are_plain_text_for_the_view_layer():
    name = "p;<b>evil</b>&co"
    d = diff.differential(ev([{name: 100}] * 3), ev([{name: 400 + i} for i in range(3)]))
    v = verdict.verdict(d)
    assert v.stacks[0].name == name                       # escaped by the view, not here
    assert v.stacks[0].kind == "on-CPU" and v.stacks[0].flag == "finding"
    assert all(isinstance(getattr(v.stacks[0], k), str) for k in ("name", "what", "kind", "flag", "cls"))


def test_load_refuses_bad_files_with_file_and_line(tmp_path):
    (tmp_path / "meta.json").write_text('{"format": 1, "runs": 1, "unit": "run", "work": [1], "wall_s": [1],'
                                        ' "value": [null], "sample": {"event": "cpu-clock", "hz": 999},'
                                        ' "evidence": {"oncpu": "ok"}}')
    (tmp_path / "oncpu_r1.folded").write_text("a;b 3\na;c three\n")
    with pytest.raises(evidence.EvidenceError, match=r"oncpu_r1.folded:2:"):
        diff.load(str(tmp_path))
    (tmp_path / "oncpu_r1.folded").write_text("a;b 3\n")
    got = diff.load(str(tmp_path))
    assert got["runs"][0]["oncpu"] == {"a;b": 3} and got["runs"][0]["offcpu"] is None


# --- the differential flame graph --------------------------------------------------------------------------

@pytest.mark.skipif(not HAVE_INFERNO, reason="inferno not installed (./lab installs it)")
def test_flame_graph_is_self_contained_grey_for_noise():
    d = recorded("serial")
    text = flame.svg(d)
    ET.fromstring(text)                                         # well-formed XML
    assert flame.external_refs(text) == []
    assert 'fill="rgb(255,' in text                             # the barrier wait grew: red
    assert flame.GREY in text and flame.ZERO_DELTA not in text  # no-finding frames grey, none left white
    assert len(text.encode()) < flame.MAX_BYTES


@pytest.mark.skipif(not HAVE_INFERNO, reason="inferno not installed (./lab installs it)")
def test_flame_graph_escapes_names():
    evil = "p;<script>alert(1)</script>;a&b"
    d = diff.differential(ev([{evil: 100, "p;x": 100}] * 3), ev([{evil: 400 + i, "p;x": 100} for i in range(3)]),
                          "<script>", 1, 2)
    text = flame.svg(d)
    ET.fromstring(text)
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "a&amp;b" in text and "&lt;script&gt;: 1 → 2 threads" in text   # the placement in the title too


def test_flame_sides_equalise_what_is_not_a_finding():
    base = ev([{"p;work": 1000, "p;work;rare": 0}] * 3)
    knee = ev([{"p;work": 1000, "p;work;rare": 1}] * 3)
    d = diff.differential(base, knee)
    sides, unit = flame.sides(d)
    rare = next(s for s in sides if s[0] == "p;work;rare")
    assert rare[1] == rare[2] > 0 and unit.endswith("per run")
    assert not math.isnan(d.total["on"].ratio)


def test_curve_picks_the_knee_and_says_missing_evidence():
    def s(m, lo, hi):
        return known(m, lo, hi)
    # serial's 2-thread point is far below 75% efficiency: the knee is 2; "spread" has no evidence
    series = {"compact": {1: s(100, 99, 101), 2: s(110, 108, 112)}, "spread": {1: s(100, 99, 101), 2: s(120, 118, 122)}}
    loaded = {1: diff.load(os.path.join(REC, "serial_t1")), 2: diff.load(os.path.join(REC, "serial_t2"))}
    out = verdict.curve(series, "higher", lambda p, t: loaded[t] if p == "compact" else None)
    assert [o.verdict.placement for o in out] == ["compact", "spread"]
    assert out[0].verdict.knee_threads == 2 and out[0].verdict.cause == "serial phase"
    assert "in `___pthread_barrier_wait` from" in out[0].verdict.text
    assert out[1].diff is None and "no evidence at 1 thread and 2 threads" in out[1].verdict.text


def test_preempted_at_a_wake_is_the_handover_and_dominance_names_a_cause():
    on = [{"p;worker;crunch": 1000}] * 3
    base = [{"[runqueue];p;worker;pthread_mutex_unlock;__lll_lock_wake": 100, "[runqueue];p;worker;crunch": 100,
             "[io];p;worker;read": 100}] * 3
    knee = [{"[runqueue];p;worker;pthread_mutex_unlock;__lll_lock_wake": 400_000 + i,   # 40% lock
             "[runqueue];p;worker;crunch": 150_000 + i,                                   # 15% scheduler
             "[io];p;worker;read": 450_000 + i} for i in range(3)]                        # 45% other
    d = diff.differential(ev(on, base), ev(on, knee), "compact", 1, 2)
    got = {r.name.split(";")[-1]: C.rule(d, r) for r in diff.findings(d)}
    assert got == {"__lll_lock_wake": "lock", "crunch": "scheduler", "read": "other"}
    v = verdict.verdict(d)
    assert v.cause == "lock"            # 40% ≥ 25% and ≥ twice the scheduler's 15% ("other" is not a cause)
    assert "waiting for a CPU after waking a waiter in `pthread_mutex_unlock`" in v.text
    knee2 = [dict(k, **{"[runqueue];p;worker;crunch": 300_000 + i}) for i, k in enumerate(knee)]
    assert verdict.verdict(diff.differential(ev(on, base), ev(on, knee2))).cause == "no single cause"


def test_kernel_rule_names_the_system_call_and_functions_are_aggregated():
    k = "p;worker;read;entry_SYSCALL_64_[k];do_syscall_64_[k];__x64_sys_read_[k];vfs_read_[k]"
    base = ev([{"p;worker;parse": 1000, k: 50 + i} for i in range(3)])
    knee = ev([{"p;worker;parse": 1000, k: 600 + i} for i in range(3)])
    d = diff.differential(base, knee, "compact", 1, 2)
    top = diff.findings(d)[0]
    assert C.rule(d, top) == "kernel" and C.kernel_detail([top]) == ["system call read"]
    v = verdict.verdict(d)
    assert v.cause == "kernel" and "(system call read)" in v.text
    self_ = {r.name: r for r in d.functions_self}
    incl = {r.name: r for r in d.functions_incl}
    assert self_["vfs_read_[k]"].growth == pytest.approx(d.stacks[0].growth)
    assert "worker" not in self_ and incl["worker"].growth == pytest.approx(top.growth)
    assert "p" not in incl                                      # the root (comm) is not a function


def test_curve_says_unreadable_evidence(tmp_path):
    def s(m):
        return known(m, m - 1, m + 1)
    (tmp_path / "meta.json").write_text("{not json")
    out = verdict.curve({"compact": {1: s(100), 2: s(110)}}, "higher", lambda p, t: diff.load(str(tmp_path)))
    assert out[0].diff is None and out[0].verdict.cause is None
    assert "unreadable evidence" in out[0].verdict.text and "meta.json:1:" in out[0].verdict.text


def test_a_joins_wait_is_never_a_finding_nor_counted():
    on = [{"p;worker;crunch": 1000}] * 3
    j = "[futex];p;main;pthread_join"
    d = diff.differential(ev(on, [{j: 1_000_000 + i} for i in range(3)]),
                          ev(on, [{j: 2_000_000 + i} for i in range(3)]))
    row = next(r for r in d.stacks if r.name == j)
    assert row.flag == diff.JOINED and row.growth > 0 and not diff.findings(d)
    assert d.added == 0 and d.total["all"].ratio == pytest.approx(1)
    assert verdict.verdict(d).cause == "scales"


def test_shares_are_of_the_growth_beyond_noise_not_diluted_by_noisy_stacks():
    """40 on-CPU stacks that go up and down between runs (none beyond noise: half rise, half fall) and one
    futex wait that clearly grows: the wait explains the net added cost (the noise cancels in the total),
    where summing every rise would have given it 23% and 'no single cause'. A total grown by noise alone
    with one small finding still names no cause: the spread-thin part is said."""
    up, down = [90, 40, 70], [30, 60, 10]                 # mean 50 → 66.7 or 33.3 samples, wide runs
    on_b = [{f"p;worker;f{i}": [50, 80, 20][r] for i in range(40)} for r in range(3)]
    on_k = [{f"p;worker;f{i}": (up if i % 2 == 0 else down)[r] for i in range(40)} for r in range(3)]
    lock = "[futex];p;worker;update_table;__lll_lock_wait"
    off_b = [{lock: 1000 + 100 * r} for r in range(3)]
    off_k = [{lock: 100_000 + 1000 * r} for r in range(3)]
    d = diff.differential(ev(on_b, off_b), ev(on_k, off_k), "compact", 1, 2)
    (f,) = diff.findings(d)
    assert f.name == lock and not any(r.flag == "" for r in d.stacks if r.kind == "on-CPU")
    rises = sum(r.growth for r in d.stacks if r.growth > 0)
    assert f.growth / rises < C.LEAD_SHARE                # the old rule's share: diluted under a quarter
    assert f.share == pytest.approx(1.0) and d.spread == pytest.approx(0, abs=1e-6)
    v = verdict.verdict(d)
    assert v.cause == "lock", v.text
    # the same noise, but the on-CPU total really grew on stacks none of which is beyond noise alone
    on_k2 = [{k: n + 40 for k, n in run.items()} for run in on_k]
    off_k2 = [{lock: 1000 + 100 * r + 60_000} for r in range(3)]
    d2 = diff.differential(ev(on_b, off_b), ev(on_k2, off_k2), "compact", 1, 2)
    (f2,) = diff.findings(d2)
    assert f2.share < C.LEAD_SHARE and d2.spread > 0
    v2 = verdict.verdict(d2)
    assert v2.cause == "no single cause" and "is spread thin" in v2.text, v2.text


def test_most_of_the_cost_in_one_place_no_rule_names_is_not_spread_thin():
    """The farside fixture in the 2-socket guest: 94% of the added cost was one sleep in the program's own
    `wait_for_far_data`, a class no rule names ("other"), and the words said "the growth is spread thin".
    Now they say where it is and name the code. Amounts are test input."""
    sleep = "[sleep];p;worker;wait_for_far_data;__GI___clock_nanosleep"
    on = [{"p;worker;fp_chain": 1000 + 10 * r} for r in range(3)]
    d = diff.differential(ev(on, [{sleep: 50_000 + 500 * r} for r in range(3)]),
                          ev(on, [{sleep: 400_000 + 2000 * r} for r in range(3)]), "scatter", 1, 4)
    v = verdict.verdict(d)
    assert v.cause == "no single cause" and "spread thin (the flame graph" not in v.text, v.text
    assert "No named cause: 100% of the added cost is where no rule of the lab names a cause (other: sleeps, " \
           "I/O, plain user code); the code to look at is `wait_for_far_data` ← `worker`." in v.text, v.text


def test_growth_spread_over_thin_stacks_is_gathered_by_function():
    """30 call paths into one hot function, each too thin to be a finding alone (2 → 6 samples a run),
    as the runner's inlined refcounts under `Vm::run` are: no single cause, and the words say where the
    spread growth gathers — the function whose self time grew beyond noise."""
    base = [{**{f"p;loop;path{i};refcount": 2 + (r == 1) for i in range(30)}, "p;loop;work": 500 + r} for r in range(3)]
    knee = [{**{f"p;loop;path{i};refcount": 6 + (r == 2) for i in range(30)}, "p;loop;work": 500 - r} for r in range(3)]
    d = diff.differential(ev(base), ev(knee), "compact", 1, 2)
    assert not diff.findings(d)
    v = verdict.verdict(d)
    assert v.cause == "no single cause", v.text
    assert "by function (self time, beyond noise): on-CPU `refcount` +" in v.text, v.text
    assert "`work`" not in v.text.split("by function")[1]


def test_a_lock_spread_over_thin_stacks_is_one_class():
    """A contended lock's cost comes as many small waits from many call paths (futex waits and the
    handover's run-queue waits), none a finding alone; the class's stacks taken together grow beyond
    noise: the cause is lock, not 'no single cause' (a quiet-host run of tests/fixtures/why/lock.c,
    2026-11-28, had 89 lock stacks and named nothing before)."""
    def off(us, r):
        return {f"[futex];p;worker;path{i};__lll_lock_wait": us + 50 * r for i in range(30)}
    on = [{"p;worker;work": 500 + r} for r in range(3)]
    d = diff.differential(ev(on, [off(1000, r) for r in range(3)]), ev(on, [off(3000, r) for r in range(3)]),
                          "compact", 1, 2)
    assert not diff.findings(d)
    c = C.classify(d)
    assert c.cause == "lock" and c.classes["lock"].share == pytest.approx(1.0, rel=0.05), c


def test_a_class_never_explains_more_than_all_of_the_added_cost():
    """A lock that grows while the work's own stacks get cheaper grows more than the net added cost; its
    share is all of it, not 200% (a quiet-host runner run, 2026-11-28, said 'shared data (134%)')."""
    def off(us, r):
        return {f"[futex];p;worker;path{i};__lll_lock_wait": us + 50 * r for i in range(30)}
    d = diff.differential(ev([{"p;worker;work": 40 + r} for r in range(3)], [off(1000, r) for r in range(3)]),
                          ev([{"p;worker;work": 10 + r} for r in range(3)], [off(3000, r) for r in range(3)]),
                          "compact", 1, 2)
    c = C.classify(d)
    assert c.cause == "lock" and c.classes["lock"].share == 1.0, c
    assert "Cause: lock (100% of the added cost" in verdict.words(d, c), verdict.words(d, c)


def test_a_demangled_function_is_disassembled_by_its_address(tmp_path):
    """perf names C++ and Rust functions demangled (the runner's `rune::runtime::vm::Vm::run`), which
    objdump's --disassemble= does not match: the hot instructions of such a function come from its address
    and size in the demangled symbol table. A C++ function with a lock-prefixed add stands in."""
    from lab.engine.evidence import collect
    src = tmp_path / "hot.cc"
    src.write_text("#include <atomic>\nnamespace lab { std::atomic<long> n;\n"
                   "__attribute__((noinline)) void bump(int k) { for (int i = 0; i < k; i++) n.fetch_add(1); } }\n"
                   "int main(int c, char **) { lab::bump(c); return 0; }\n")
    exe = tmp_path / "hot"
    subprocess.run(["g++", "-O2", "-o", str(exe), str(src)], check=True)
    code = collect.disassemble(str(exe), "lab::bump(int)", dict(os.environ))
    assert code and code[0][0] == 0, code
    assert any(text.startswith("lock ") for _, text in code), code
    assert collect.disassemble(str(exe), "lab::absent(int)", dict(os.environ)) == []


# --- the validity gate (issue 53, item 2) and a verdict that never contradicts the curve (item 3) ----------
def summary(m):
    return known(m, m * 0.99, m * 1.01)


STOPS = {"compact": {1: summary(100), 2: summary(34)}}          # ×0.34 at 2 threads: efficiency 17%
FLAT_ON = {("p", "worker", "crunch"): 1000, ("p", "worker", "update_table"): 200}


def write_judged(folder, runs, judged, work=1):
    """A point's why folder written by hand (test input, not a measurement): runs = [{stack: samples}] of
    the recorded runs, judged = the gate's entries (gate.py's shape)."""
    os.makedirs(folder, exist_ok=True)
    for r, on in enumerate(runs, 1):
        evidence.write_run(folder, r, oncpu=on, offcpu={("[futex]", "p", "main", "pthread_join"): 10},
                           futex=[], threads=[], hotins=[])
    evidence.write_meta(folder, {
        "runs": len(runs), "unit": "run", "metric": None, "work": [work] * len(runs), "wall_s": [1.0] * len(runs),
        "value": [None] * len(runs), "repetitions": [work] * len(runs), "timed_median": 0.5, "slowdown": None,
        "sample": {"event": "cpu-clock", "hz": 999}, "disturbance": gate.WHY_DISTURBANCE, "runs_judged": judged,
        "evidence": {k: "ok" for k in ("oncpu", "offcpu", "futex", "sched", "hotins", "symbols")}})
    return folder


def judged_as(verdicts, speeds, tiers=("full", "light", "lightest")):
    out, run = [], 0
    for i, (v, s) in enumerate(zip(verdicts, speeds)):
        recorded = v in (gate.KEPT, gate.DISTURBED)
        run += recorded
        out.append({"of": i + 1, "run": run if recorded else None, "tier": tiers[min(i, len(tiers) - 1)],
                    "hz": 999, "verdict": v, "speed": s,
                    "why": gate.judge(s, 1.0, True)[1] if s else "perf reached its size limit (1G)"})
    return out


def test_the_gate_keeps_runs_within_the_budget_and_drops_the_others():
    assert gate.WHY_DISTURBANCE == 0.10
    # a throughput within ±10% of the timed median is kept; ×2.2 the timed throughput is not
    assert gate.judge(105, 100, True)[0] == gate.KEPT and gate.judge(91, 100, True)[0] == gate.KEPT
    verdict_, why, speed = gate.judge(13.5e6, 6.0e6, True)
    assert verdict_ == gate.DISTURBED and speed == pytest.approx(2.25) and why == \
        "ran ×2.25 faster than the timed repeats (budget ±10%)"
    # a fixed-work command's wall time per run: 1.2 s against 1.0 s timed is 20% slower
    assert gate.judge(1.2, 1.0, False)[:2] == (gate.DISTURBED, "ran ×1.20 slower than the timed repeats (budget ±10%)")
    assert gate.judge(1.05, 1.0, False)[0] == gate.KEPT
    assert gate.judge(1.0, None, False)[0] == gate.KEPT          # nothing to judge it by: kept, and said


def test_load_uses_only_the_kept_runs_each_at_its_own_frequency(tmp_path):
    judged = judged_as([gate.DISTURBED, gate.KEPT, gate.CUT, gate.KEPT], [2.2, 1.02, None, 0.97])
    judged[3]["hz"] = 99                                           # redone at a lighter tier
    write_judged(str(tmp_path), [{("p", "a"): 999}, {("p", "a"): 999}, {("p", "a"): 99}], judged)
    got = diff.load(str(tmp_path))
    assert [r["hz"] for r in got["runs"]] == [999, 99] and gate.kept_runs(got["meta"]) == [2, 3]
    side = diff._side(got)
    # 999 samples at 999 Hz and 99 at 99 Hz are the same second of CPU per run
    assert [c["p;a"] for c in side["on"]["cost"]] == pytest.approx([1e6, 1e6])
    assert evidence.complete(str(tmp_path), 4) and not evidence.complete(str(tmp_path), 5)
    assert gate.summary(got["meta"], 2) == "2 threads: 2 of 4 attempts kept (tier light, lightest; 1 disturbed, 1 cut)"
    # an older folder (no runs_judged) is read as before: every recorded run kept
    meta = evidence.read_meta(str(tmp_path))
    meta.pop("runs_judged")
    assert gate.kept_runs(meta) == [1, 2, 3]


def test_meta_reader_refuses_a_bad_judgement(tmp_path):
    judged = judged_as([gate.KEPT], [1.0])
    write_judged(str(tmp_path), [{("p", "a"): 5}], judged)
    for bad in ({"verdict": "fine"}, {"run": 2}, {"speed": "fast"}, {"tier": 3}):
        write_judged(str(tmp_path), [{("p", "a"): 5}], [dict(judged[0], **bad)])
        with pytest.raises(evidence.EvidenceError, match="runs_judged"):
            evidence.read_meta(str(tmp_path))


def test_no_run_kept_at_the_knee_says_inconclusive_with_the_numbers(tmp_path):
    """The knee's evidence runs all ran far outside the budget (×2.2 faster: recording changed the
    contention it recorded): the verdict rests on none of them and says so, with the numbers."""
    base = write_judged(str(tmp_path / "t1"), [FLAT_ON] * 3, judged_as([gate.KEPT] * 3, [1.02, 0.99, 1.0]))
    knee = write_judged(str(tmp_path / "t2"), [FLAT_ON] * 3,
                        judged_as([gate.DISTURBED, gate.DISTURBED, gate.CUT, gate.DISTURBED], [2.2, 2.05, None, 2.1]))
    out = verdict.curve(STOPS, "higher", lambda p, t: diff.load(base if t == 1 else knee))
    v = out[0].verdict
    assert v.cause == "inconclusive" and out[0].diff is None
    assert v.text.startswith("compact, 2 threads: inconclusive: the evidence runs at 2 threads ran ×2.05–×2.20 "
                                "faster than the timed repeats (budget ±10%, 3 of 4 attempts); 1 cut (perf reached "
                                "its size limit (1G))"), v.text
    assert v.text.endswith("none kept.") and "it scales" not in v.text
    # timed repeats that were themselves disturbed are said beside the numbers
    meta = evidence.read_meta(knee)
    meta["timed_suspect"] = "3 of 3 timed repeats suspect (foreign 55% > 10%)"
    assert gate.none_kept(meta, 2).endswith("none kept (and 3 of 3 timed repeats suspect (foreign 55% > 10%))")


def test_a_curve_that_stops_never_gets_it_scales_from_flat_evidence():
    """17% efficiency at 2 threads, and evidence in which nothing grows (the issue's mutex, whose
    evidence run did not look like the timed ones): the words say inconclusive and why, never "it scales".
    The same evidence under a curve that scales still says it scales."""
    flat = [{"p;worker;crunch": 1000 + i, "p;worker;update_table": 200} for i in range(3)]
    def d_of(series):
        return verdict.curve(series, "higher", lambda p, t: ev(flat))[0].verdict
    v = d_of(STOPS)
    assert v.cause == "inconclusive" and "it scales" not in v.text, v.text
    assert "Inconclusive: the curve says scaling stops: 2 threads is the first thread count whose efficiency is " \
           "below 75% over its whole 95% range (efficiency 17%, 95% CI 17%–17%), yet no cost per run grows beyond " \
           "noise in the evidence runs" in v.text, v.text
    assert d_of({"compact": {1: summary(100), 2: summary(199)}}).cause == "scales"


def test_the_differential_compares_at_most_its_row_cap_and_sums_the_rest():
    """4,000 distinct stacks per side (a received run within the evidence bounds; WHYCOST, issue 55: 175 s
    and 648 MB before): the differential compares the costliest diff.MAX_ROWS, the rest summed into one
    row that is never a finding, and the one stack that grew is still found. Amounts are test input."""
    import time
    thin = {f"p;main;f{i};g{i}": 2 for i in range(4000)}
    base = [dict(thin, **{"p;main;hot": 100}) for _ in range(3)]
    knee = [dict(thin, **{"p;main;hot": 400 + i}) for i in range(3)]
    start = time.process_time()
    d = diff.differential(ev(base), ev(knee), "compact", 1, 2)
    assert time.process_time() - start < 30          # bounded by the cap, far from the uncapped cost
    on = [r for r in d.stacks if r.kind == "on-CPU"]
    assert len(on) <= diff.MAX_ROWS and any(r.name == diff.REST for r in on)
    assert [r.name for r in diff.findings(d)][:1] == ["p;main;hot"]
    assert all(r.flag for r in on if r.name == diff.REST)


def test_a_preemption_in_the_mutexs_release_is_the_locks_handover():
    """Preempted in pthread_mutex_unlock (the wake returned, the woken waiter took the CPU) is the lock's
    cost, as preempted in the wake itself; preempted in the program's own code is the scheduler's."""
    d = SimpleNamespace(total={"on": None})
    release = SimpleNamespace(name="[runqueue];p;worker;update_table;__GI___pthread_mutex_unlock_usercnt",
                              kind="off-CPU")
    wake = SimpleNamespace(name="[runqueue];p;worker;update_table;__GI___lll_lock_wake", kind="off-CPU")
    own = SimpleNamespace(name="[runqueue];p;worker;update_table", kind="off-CPU")
    assert (C.rule(d, release), C.rule(d, wake), C.rule(d, own)) == ("lock", "lock", "scheduler")


def test_the_words_say_how_the_evidence_was_sampled_and_a_received_text_is_bounded():
    base, knee = diff.load(os.path.join(REC, "lock_t1")), diff.load(os.path.join(REC, "lock_t2"))
    assert "sampled" not in knee["meta"] and "was sampled" not in verdict.verdict(recorded("lock")).text
    knee["meta"]["sampled"] = {"oncpu": "cpu-clock samples at 99 Hz", "futex": "1 in 50 futex call" + "x" * 5000,
                               "offcpu": ["not", "a", "string"]}
    text = verdict.verdict(diff.differential(base, knee, "compact", 1, 2, "test")).text
    said = text.split("How the knee's evidence was sampled: ")[1]
    assert said.startswith("on-CPU: cpu-clock samples at 99 Hz; futex: 1 in 50 futex call")
    assert "off-CPU" not in said.split(".")[0] and "x" * 301 not in said


def test_kept_runs_at_another_pace_than_the_timed_repeats_are_said_and_their_speed_is_against_the_timed():
    # each run matched its unrecorded reference (kept), but the host had moved the program's pace since
    # the timed repeats: the words the differential rests on say it, and the speed they quote is the timed one
    judged = [{"run": r, "verdict": gate.KEPT, "tier": "full", "reference": 0.05, "speed": 1.02,
               "speed_timed": t} for r, t in ((1, 2.1), (2, 2.3))]
    meta = {"runs": 2, "runs_judged": judged}
    assert gate.kept_speed(meta) == pytest.approx(2.2)
    assert gate.summary(meta, 2) == ("2 threads: all 2 attempts kept; the kept runs ran ×2.10–×2.30 faster than "
                                     "the timed repeats (the host moved the program's own pace: their unrecorded "
                                     "reference runs did too)")
    for j in judged:
        j["speed_timed"] = 1.04
    assert gate.summary(meta, 2) == "" and gate.kept_speed(meta) == pytest.approx(1.04)
    # judged by the timed median (no reference): its speed is against the timed repeats already
    assert gate.kept_speed({"runs": 1, "runs_judged": [{"run": 1, "verdict": gate.KEPT, "tier": "full",
                                                        "reference": None, "speed": 0.5, "speed_timed": None}]}) == 0.5
