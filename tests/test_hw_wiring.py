"""The hardware tier wired into evidence runs (issue 56 item 2, engine/evidence/hardware.py and why/hardware.py).

What runs here (a KVM guest without a PMU): every kind says "not available here: <reason>" and nothing of the
tier runs (runs counted, never timed). What needs a PMU is tested as data: the command lines as argv, and the
read side on complete published outputs placed in a run folder as if recorded (their sources are quoted in
tests/test_hw_c2c.py, test_hw_topdown.py and test_hw_perfmem.py, whose strings are used here). No perf runs in
these tests and no fake perf binary stands in for one: none of the tier has run on real hardware.
"""
import dataclasses
import os
import re
import shutil
import types

import pytest

from lab.engine.evidence import collect, gate, hardware, pmu
from lab.engine.evidence import store as ev
from lab.report import claims, model
from lab.why import c2creport, classify, diff
from lab.why import hardware as hw
from test_claims import OK, REF, WORK, curve_rows, noisy, run_with, story, write_point
from test_hw_c2c import PERF5_INTEL, PERF6_AMD_IBS, PERF6_X86_DOUBLE_CL, PERF6_X86_PEER, TWO_SOCKET_ROWS
from test_hw_perfmem import RAVI_2022
from test_hw_pmu import INTEL
from test_hw_topdown import AMD_PIPELINE_L2, OLD_ICELAKE, SPR_METRIC_LINES

NA = ev.NA + "needs a hardware PMU, and this host has none (test input)"
ARC_CLONE = "<alloc::sync::Arc<T> as core::clone::Clone>::clone"


# --- the command lines, as data ------------------------------------------------------------------
def test_command_lines_per_kind_and_vendor(tmp_path):
    f = str(tmp_path)
    before, after, raw = hardware.commands("c2c", f, "intel")
    assert before == ["perf", "c2c", "record", "-o", f"{f}/.c2c.data", "--"]
    assert after == ["perf", "c2c", "report", "-i", f"{f}/.c2c.data", "--stdio", "--call-graph", "none",
                     "--full-symbols"]
    assert raw == f"{f}/c2c_report.txt"
    # AMD's IBS is per CPU: the point's CPUs, or every CPU unpinned
    assert hardware.commands("c2c", f, "amd", "0,1")[0] == ["perf", "c2c", "record", "-o", f"{f}/.c2c.data",
                                                             "-C", "0,1", "--"]
    assert hardware.commands("memsource", f, "amd")[0] == ["perf", "mem", "record", "-o", f"{f}/.memsource.data",
                                                           "-a", "--"]
    assert hardware.commands("memsource", f, "amd")[1] == ["perf", "mem", "report", "-i", f"{f}/.memsource.data",
                                                           "--stdio", "-F", "mem,sample,snoop"]
    # perf stat writes the raw text itself; nothing to report after it
    assert hardware.commands("topdown", f, "intel") == (["perf", "stat", "-o", f"{f}/topdown.txt", "--topdown", "--"],
                                                        None, f"{f}/topdown.txt")
    assert hardware.commands("topdown", f, "amd", "2,3")[0] == [
        "perf", "stat", "-o", f"{f}/topdown.txt", "-M", "PipelineL1,PipelineL2", "-C", "2,3", "--"]
    # the record wraps the why_seconds loop as the switch recording does: perf first, the loop under it
    inner = hardware.commands("c2c", f, "intel")[0] + collect.repeat_prefix(2.0, f"{f}/.repeats_c2c", True)
    assert inner[:6] == before and inner[6:9] == ["bash", "-c", collect.REPEAT]
    assert set(hardware.RAW.values()) == set(ev.HW_RAW.values()) and hardware.KINDS == tuple(pmu.KINDS[1:])


def test_cpu_list():
    class P:
        placement, cpus = "compact", [0, 1, 4]
    assert hardware.cpu_list(P) == "0,1,4"
    P.placement = "unpinned"
    assert hardware.cpu_list(P) is None


# --- where absent: nothing runs ------------------------------------------------------------------
def test_wanted_is_what_pmu_detected():
    assert hardware.wanted({k: NA for k in hardware.KINDS}) == []
    assert hardware.wanted({"c2c": ev.OK, "topdown": NA, "memsource": ev.OK}) == ["c2c", "memsource"]
    assert hardware.wanted({k: v for k, v in pmu.status().items()}) == \
        [k for k in hardware.KINDS if pmu.status()[k] == ev.OK]


def scripted_point(tmp_path, monkeypatch, parts):
    """run_point with scripted switch-recording attempts (no perf record; test input) and `parts` as the
    host's hardware kinds: (runs attempted, hardware runs attempted, meta.json)."""
    attempts, hw_runs = [], []

    def attempt(ctx, spec, point, folder, r, event, status, seconds, tier, how=None):
        attempts.append(r)
        return {"lost": "", "cut": False, "wall": 1.0, "reps": 1, "status": {}, "out": "", "scope": "tree",
                "who": ()}

    def run_kind(ctx, spec, point, folder, kind, vendor, seconds, judge, repeat):
        hw_runs.append(kind)
        return {"kind": kind, "file": None, "verdict": gate.LOST, "why": "scripted", "speed": None}, ev.NA + "scripted"
    monkeypatch.setattr(collect, "attempt", attempt)
    monkeypatch.setattr(collect, "availability", lambda event: dict(parts, oncpu=ev.OK))
    monkeypatch.setattr(collect, "calibrate", lambda *a: None)
    monkeypatch.setattr(hardware, "run_kind", run_kind)

    class Spec(dict):
        def watched(self):
            return []

    class Point:
        threads, placement, cpus = 2, "compact", [0, 1]
    collect.run_point(None, Spec(timeout="60"), Point(), 3, [{"metric": "wall_s", "value": "1.0"}], str(tmp_path))
    return attempts, hw_runs, ev.read_meta(str(tmp_path))


def test_no_pmu_adds_no_run(tmp_path, monkeypatch):
    """This host's own statuses (detected here): the point's runs are the switch recording's, no more."""
    here = pmu.evidence_parts()
    if any(v == ev.OK for v in here.values()):
        pytest.skip("this host has a PMU kind: checked where there is none")
    attempts, hw_runs, meta = scripted_point(tmp_path, monkeypatch, here)
    assert len(attempts) == 3 and hw_runs == [] and meta["hardware"] == []
    for kind in hardware.KINDS:
        assert meta["evidence"][kind].startswith(ev.NA) and "\n" not in meta["evidence"][kind], kind


def test_each_detected_kind_gets_one_run_of_its_own(tmp_path, monkeypatch):
    """A host where c2c and topdown were detected (test input): one more run each, after the switch
    recording's, none stacked onto them; a failed one says so in the status, the sweep goes on."""
    attempts, hw_runs, meta = scripted_point(tmp_path, monkeypatch, {"c2c": ev.OK, "topdown": ev.OK, "memsource": NA})
    assert len(attempts) == 3 and hw_runs == ["c2c", "topdown"]
    assert [e["kind"] for e in meta["hardware"]] == ["c2c", "topdown"]
    assert meta["evidence"]["c2c"] == ev.NA + "scripted" and meta["evidence"]["memsource"] == NA


# --- the read side: recorded published text placed in a run folder --------------------------------
def place(folder, texts, verdict=gate.KEPT, double=None):
    """Put raw texts into a why folder as hardware.py leaves them, and meta.json's `hardware` entries; `double`:
    the c2c entry's `double_cl`, a text (its --double-cl report, written beside) or a reason there is none."""
    meta = ev.read_meta(folder)
    entries = []
    for kind, text in texts.items():
        with open(os.path.join(folder, ev.HW_RAW[kind]), "w") as f:
            f.write(text)
        entries.append({"kind": kind, "file": ev.HW_RAW[kind], "verdict": verdict, "why": "ran ×1.02 slower than "
                        "the point's unrecorded run (budget ±10%)", "speed": 0.98})
        if kind == "c2c" and double is not None and "Shared" in double:
            with open(os.path.join(folder, ev.HW_DOUBLE_CL), "w") as f:
                f.write(double)
            entries[-1]["double_cl"] = {"file": ev.HW_DOUBLE_CL, "why": ""}
        elif kind == "c2c" and double is not None:
            entries[-1]["double_cl"] = {"file": None, "why": double}
    meta.pop("format")
    meta["hardware"] = entries
    meta["evidence"] = dict(meta["evidence"], **{k: ev.OK for k in texts})
    ev.write_meta(folder, meta)


def why_folder(run, exp, stem):
    return os.path.join(run, "raw", exp, f"{stem}_why")


def refcount_run(tmp_path, knee_c2c, base_topdown=OLD_ICELAKE, knee_topdown=SPR_METRIC_LINES, double=None):
    run = run_with(tmp_path, "runner-empty", curve_rows(("shared-arc", "per-thread"), "calls_per_s"))
    for v in ("shared-arc", "per-thread"):
        write_point(run, "runner-empty", f"{v}_compact_t1", noisy(({WORK: 800, REF: 100}, {})))
    write_point(run, "runner-empty", "shared-arc_compact_t2", noisy(({WORK: 800, REF: 900}, {})))
    write_point(run, "runner-empty", "per-thread_compact_t2", noisy(({WORK: 820, REF: 110}, {})))
    place(why_folder(run, "runner-empty", "shared-arc_compact_t1"), {"topdown": base_topdown})
    place(why_folder(run, "runner-empty", "shared-arc_compact_t2"),
          {"c2c": knee_c2c, "topdown": knee_topdown, "memsource": RAVI_2022}, double=double)
    return run


def test_run_folder_to_words(tmp_path):
    """c2c, top-down and IBS data source from the folders → the differential's words and the why section."""
    run = refcount_run(tmp_path, PERF5_INTEL)
    base = diff.load(why_folder(run, "runner-empty", "shared-arc_compact_t1"))
    knee = diff.load(why_folder(run, "runner-empty", "shared-arc_compact_t2"))
    assert set(knee["hardware"]["text"]) == {"c2c", "topdown", "memsource"}
    d = diff.differential(base, knee, "compact", 1, 2)
    said = hw.text(d)
    assert said.startswith("Hardware counters: shared data confirmed: line 0x404040 with 0 remote and 2 local "
                           "HITM (local HITM only: within one socket); offset 0x10 read by summer; offset 0x14 "
                           "written by incrementer, from node 0 → false sharing (different data in one cache "
                           "line) (perf c2c at 2 threads); backend-bound growth supports memory (1 → 2 threads: "), said
    assert "cross-CCX: 21 of" in said and "(perf mem at 2 threads)" in said
    assert d.hardware.supports == "memory" and d.hardware.absent == ()
    c = classify.classify(d)
    assert not any("perf c2c would confirm" in n for n in c.notes), c.notes
    # the why section says it (report/causes.py calls hw.text beside groups.words): a spec with scaling words
    spec = os.path.join(run, "sweep", "specs", "runner-empty.spec")
    with open(spec, "a") as f:
        f.write("command = true\nchart = scaling calls_per_s\n")
    e = next(x for x in model.build(run).experiments if x.name == "runner-empty")
    texts = [cv.verdict.text for cv in e.why.curves if cv.variant == "shared-arc"]
    assert any("Hardware counters: shared data confirmed: line 0x404040" in t for t in texts), texts


def test_disturbed_garbled_and_absent_kinds_each_say_one_line(tmp_path):
    run = refcount_run(tmp_path, PERF5_INTEL[:len(PERF5_INTEL) // 2], SPR_METRIC_LINES, AMD_PIPELINE_L2)
    b, k = (why_folder(run, "runner-empty", f"shared-arc_compact_t{t}") for t in (1, 2))
    d = diff.differential(diff.load(b), diff.load(k), "compact", 1, 2)
    (absent,) = d.hardware.absent
    assert re.fullmatch(r"perf c2c: not read at 2 threads: perf c2c report:\d+: [^\n]+", absent), absent
    assert d.hardware.supports == "shared data"
    # a disturbed run's text is not read, and says why
    place(k, {"c2c": PERF5_INTEL, "topdown": SPR_METRIC_LINES}, verdict=gate.DISTURBED)
    d = diff.differential(diff.load(b), diff.load(k), "compact", 1, 2)
    assert d.hardware.words == () and hw.text(d) == ""
    assert "perf c2c: its run was disturbed: ran ×1.02 slower" in d.hardware.absent[0]
    # a folder without the tier (this host's): no words; classify's note names each kind's reason
    none = hw.compare(None, None, 1, 2)
    assert none.words == () and len(none.absent) == 3 and hw.text(dataclasses.replace(d, hardware=none)) == ""


def test_a_received_hardware_entry_never_names_another_file(tmp_path):
    run = refcount_run(tmp_path, PERF5_INTEL)
    k = why_folder(run, "runner-empty", "shared-arc_compact_t2")
    meta = ev.read_meta(k)
    meta.pop("format")
    meta["hardware"][0]["file"] = "../../../etc/passwd"
    ev.write_meta(k, meta)
    with pytest.raises(ev.EvidenceError, match=r"meta.json:1: hardware must list"):
        ev.read_meta(k)
    assert ev.read_hardware(k, "../meta.json") is None


# --- adjacent-line prefetch: --double-cl where the knee's hot lines pair up --------------------------
def knee_words(tmp_path, c2c, double):
    run = refcount_run(tmp_path, c2c, double=double)
    b, k = (why_folder(run, "runner-empty", f"shared-arc_compact_t{t}") for t in (1, 2))
    return diff.differential(diff.load(b), diff.load(k), "compact", 1, 2).hardware


def test_adjacent_contended_lines_where_perf_lacks_double_cl(tmp_path):
    """Leo Yan's published report at the knee (two contended lines of one 128-byte pair); this host's perf
    (6.1) lacks the option, as the engine's entry says: the words say so and name prefetch a suspect only."""
    h = knee_words(tmp_path, PERF6_X86_PEER, "perf 6.1.187 lacks --double-cl")
    assert h.words[0].startswith("shared data confirmed: line 0x55c8971f0080") and h.absent == ()
    assert h.words[1].startswith("perf 6.1.187 lacks --double-cl; adjacent lines 0x55c8971f0080/0x55c8971f00c0 "
                                 "both contended (252 and 129 HITM): adjacent-line prefetch may be the cause (a "
                                 "suspect"), h.words
    assert h.words[1].endswith("would confirm it) (perf c2c at 2 threads)")
    assert h.words[2].startswith("backend-bound growth")
    said = hw.text(types.SimpleNamespace(hardware=h))     # the why section's sentence (it reads d.hardware)
    assert "(perf c2c at 2 threads); perf 6.1.187 lacks --double-cl; adjacent lines" in said, said


def test_adjacent_contended_lines_with_the_double_cl_report(tmp_path):
    """The same, where perf made the --double-cl report of the recording (constructed test input,
    tests/test_hw_c2c.py: PERF6_X86_DOUBLE_CL): the pair's offsets and HITM in one group."""
    h = knee_words(tmp_path, PERF6_X86_PEER, PERF6_X86_DOUBLE_CL)
    assert ("adjacent lines 0x55c8971f0080/0x55c8971f00c0 both contended (252 and 129 HITM); perf c2c --double-cl "
            "groups them as the 128-byte pair 0x55c8971f0080 with 0 remote and 381 local HITM: offset 0x0 written by"
            ) in h.words[1], h.words
    assert "offset 0x60 read by false_sharing.exe+0x0000000000001455" in h.words[1]
    assert "adjacent-line prefetch may be the cause" in h.words[1] and "is the cause" not in h.words[1]


def test_no_pair_no_double_cl_words_and_a_bad_double_cl_text_is_one_line(tmp_path):
    """A knee report of one hot line (kam3nev's, published): the --double-cl report beside it is not read nor
    said. A garbled one beside a pair is said in one line; an old entry without double_cl says none was made."""
    h = knee_words(tmp_path, PERF5_INTEL, "this text is not a report: Shared nothing")
    assert not any("adjacent" in w for w in h.words) and len(h.words) == 3
    h = knee_words(tmp_path / "garbled", PERF6_X86_PEER, "Shared Data Cache Line Table\n#\n")
    assert re.search(r"its --double-cl report was not read at 2 threads: perf c2c report:\d+: [^\n]+; adjacent "
                     r"lines 0x55c8971f0080/0x55c8971f00c0 both contended", h.words[1]), h.words
    h = knee_words(tmp_path / "plain", PERF6_X86_PEER, PERF6_X86_PEER)
    assert h.words[1].startswith("c2c_double_cl.txt is not a --double-cl report (its table has 64-byte lines); "
                                 "adjacent lines"), h.words
    h = knee_words(tmp_path / "old", PERF6_X86_PEER, None)
    assert h.words[1].startswith("no --double-cl report was made; adjacent lines 0x55c8971f0080/0x55c8971f00c0")


def test_the_double_cl_report_of_the_recording_where_perf_takes_it(tmp_path):
    """hardware.double_cl_report: where perf lacks the option nothing runs and the entry says so; where it is
    said to take it, the report runs (here this host's perf on a recording that does not exist: a failure in
    words, as a failed report on a PMU host would be)."""
    f = str(tmp_path)
    log = os.path.join(f, "err.log")
    assert hardware.double_cl_report(os.path.join(f, ".c2c.data"), f, dict(os.environ), log, "6.1.187", False) == \
        {"file": None, "why": "perf 6.1.187 lacks --double-cl"}
    if not shutil.which("perf"):
        pytest.skip("perf is not on PATH")
    d = hardware.double_cl_report(os.path.join(f, ".c2c.data"), f, dict(os.environ), log, "6.x", True)
    assert d["file"] is None and d["why"].startswith("its --double-cl report failed: perf c2c report exited "), d
    # meta.json takes the entry as hardware.py writes it, and refuses another file name
    entry = {"kind": "c2c", "file": ev.HW_RAW["c2c"], "verdict": gate.KEPT, "why": "", "speed": 1.0}
    ev._hardware([dict(entry, double_cl=d), dict(entry, kind="topdown", file=None)], "meta.json")
    with pytest.raises(ev.EvidenceError, match="double_cl"):
        ev._hardware([dict(entry, double_cl={"file": "../x", "why": ""})], "meta.json")
    with pytest.raises(ev.EvidenceError):
        ev._hardware([dict(entry, kind="topdown", file=None, double_cl={"file": None, "why": ""})], "meta.json")


# --- seed 000's cause cell ----------------------------------------------------------------------
def arc_named(text):
    """Test input, not a recording: a published c2c report (layout and counts as published) whose one symbol
    is renamed to the runner's Arc clone frame, since no perf c2c of a Rust Arc has been published or recorded."""
    return text.replace("github.com/perfgo/perfgo/e", ARC_CLONE)


def test_seed000_cause_from_the_refcount_line_where_c2c_ran(tmp_path):
    s = story(refcount_run(tmp_path, arc_named(PERF6_AMD_IBS)), "seed-000")
    assert s.cause == "found", s.cause_why
    assert (f"at 2 threads the Arc's strong count line 0x20ea08034080 (offset 0x30, 0x38) with 4 remote and 2092 "
            f"local HITM, in `{ARC_CLONE}` (accesses from node 0) (perf c2c)") in s.cause_why, s.cause_why


def test_seed000_c2c_names_another_line_not_found(tmp_path):
    """The stacks grow as in the PMU-free found case, but c2c's contended line is not the refcount's."""
    s = story(refcount_run(tmp_path, PERF6_AMD_IBS), "seed-000")
    assert s.cause == "not found", s.cause_why
    assert "no contended line of perf c2c's is the refcount's (shared data confirmed: line 0x20ea08034080" \
        in s.cause_why


def test_refcount_line_from_both_packages():
    """Lipeng Zhu's 2-socket Pareto (published), its symbols renamed to the runner's frames (test input)."""
    rows = TWO_SOCKET_ROWS.replace("down_write ", "vm_for_call ")
    line, words = claims.refcount_line(c2creport.parse_pareto(rows))
    assert line.address == 0xff1ddd3f0c8a3b00
    assert words == ("the Arc's strong count line 0xff1ddd3f0c8a3b00 (offset 0x8) with 13642 remote and 19392 local "
                     "HITM, in `vm_for_call` from both packages (perf c2c)")
    assert claims.refcount_line(c2creport.parse_pareto(TWO_SOCKET_ROWS))[0] is None


def test_seed000_pmu_free_unchanged_without_c2c(tmp_path):
    """Without c2c (this host), the refcount stacks decide as before (test_claims has the rest)."""
    run = run_with(tmp_path, "runner-empty", curve_rows(("shared-arc", "per-thread"), "calls_per_s"))
    for v in ("shared-arc", "per-thread"):
        write_point(run, "runner-empty", f"{v}_compact_t1", noisy(({WORK: 800, REF: 100}, {})))
    write_point(run, "runner-empty", "shared-arc_compact_t2", noisy(({WORK: 800, REF: 900}, {})))
    write_point(run, "runner-empty", "per-thread_compact_t2", noisy(({WORK: 820, REF: 110}, {})))
    s = story(run, "seed-000")
    assert s.cause == "found" and "perf c2c" not in s.cause_why, s.cause_why
    assert OK["oncpu"] == "ok"


def test_a_server_spec_is_not_recorded_by_the_tier():
    """collect.scope's server (the lab's Cassandra): these command lines record the command's tree, so
    nothing runs (ctx None: any run would fail) and each kind says why."""
    status, entries = hardware.runs(None, {}, None, "/nonexistent", {"c2c": ev.OK, "topdown": ev.OK}, 0, None,
                                    None, scope="server")
    assert entries == [] and set(status) == {"c2c", "topdown"}
    assert all(v.startswith(ev.NA) and "its server" in v for v in status.values())


# --- seed 004's cause cell ----------------------------------------------------------------------
def slot_run(tmp_path, c2c):
    from test_claims import RING, STAGE
    rows = [(v, "cross-l3", 2, "0,1", "ns_per_msg", [5, 5.1, 4.9], "ns") for v in ("padded", "unpadded")]
    run = run_with(tmp_path, "channel", rows)
    write_point(run, "channel", "padded_cross-l3_t2", noisy(({STAGE: 300, RING: 100}, {})), unit="run", work=1)
    write_point(run, "channel", "unpadded_cross-l3_t2", noisy(({STAGE: 300, RING: 700}, {})), unit="run", work=1)
    place(why_folder(run, "channel", "unpadded_cross-l3_t2"), {"c2c": c2c, "memsource": RAVI_2022})
    return run


def test_seed004_cause_with_the_slot_line_where_c2c_ran(tmp_path):
    """Test input, not a recording: perfgo's published AMD IBS c2c report with its symbol renamed to the
    channel's stage_main (into which ring_push/ring_pop inline); no c2c of the channel has been recorded."""
    s = story(slot_run(tmp_path, PERF6_AMD_IBS.replace("github.com/perfgo/perfgo/e", "stage_main")), "seed-004")
    assert s.cause == "found", s.cause_why
    assert ("the ring's slot line 0x20ea08034080 (offset 0x30, 0x38) with 4 remote and 2092 local HITM, in "
            "`stage_main` (accesses from node 0) (perf c2c)") in s.cause_why, s.cause_why
    assert "cross-CCX: 21 of" in s.cause_why and "(perf mem)" in s.cause_why, s.cause_why


def test_seed004_c2c_names_another_line_not_found(tmp_path):
    """The handover grows across the L3 as in the PMU-free found case, but c2c's contended line is not a slot's."""
    s = story(slot_run(tmp_path, PERF6_AMD_IBS), "seed-004")
    assert s.cause == "not found", s.cause_why
    assert "no contended line of perf c2c's is a slot's" in s.cause_why, s.cause_why


def test_the_dry_run_prices_the_hardware_tiers_runs_where_a_pmu_is_detected(monkeypatch):
    """One more evidence run a point per detected kind (test input: this host's detection answered for a
    PMU host); none here, and none on a topology fixture, which has no PMU of its own to detect."""
    from lab.engine import api, price
    req = api.request(["dry=1", "why=1", "experiments/counters.spec", "budget=none"])
    fixture = api.request(["dry=1", "why=1", "experiments/counters.spec", "budget=none",
                           "topology=topologies/AMD-19h-Zen3-2xEpyc-7763.v2.xml"])
    here, fixture_here = api.price(req), api.price(fixture)
    if any(v == ev.OK for v in pmu.evidence_parts().values()):
        pytest.skip("this host has a PMU kind: checked where there is none")
    monkeypatch.setattr(pmu, "evidence_parts", lambda: {"c2c": ev.OK, "topdown": ev.OK, "memsource": NA})
    there = api.price(req)
    spec = {s.name: s for s in req.specs}
    for a, b in zip(here.experiments, there.experiments):
        for pa, pb in zip(a.points, b.points):
            extra = 2 * price.why_run(spec[a.name], pa.seconds, pa.point) if pa.why else 0.0
            assert pb.why == pytest.approx(pa.why + extra), (a.name, pa.point)
    assert there.expected > here.expected
    assert api.price(fixture).expected == fixture_here.expected


def test_the_dry_run_prices_the_double_cl_report_pass_where_c2c_runs_and_perf_takes_it(monkeypatch):
    """c2c's recording reported a second time (--double-cl, hardware.second_reports) is one more report pass
    at each evidence point, priced as a pass over a recording (price.why_report), and only where the tier
    runs c2c and this perf takes the option (test input: the detection, pmu.host, answered for an Intel PMU
    host with and without it, and for one whose c2c is not available; this host has no PMU)."""
    from lab.engine import api, price
    req = api.request(["dry=1", "why=1", "experiments/counters.spec", "budget=none"])
    spec = {s.name: s for s in req.specs}
    got, no_c2c = {}, dataclasses.replace(INTEL, mem_events=(), double_cl=True)     # no PEBS load latency
    for name, host in (("without", dataclasses.replace(INTEL, double_cl=False)),
                       ("with", dataclasses.replace(INTEL, perf_version="6.6", double_cl=True)), ("no c2c", no_c2c)):
        monkeypatch.setattr(pmu, "host", lambda host=host: host)
        got[name] = api.price(req)
    assert hardware.wanted(pmu.kinds(INTEL)) == ["c2c", "topdown", "memsource"]
    assert hardware.wanted(pmu.kinds(no_c2c)) == ["topdown"]
    passes = 0.0
    for a, b, c in zip(*(got[k].experiments for k in ("without", "with", "no c2c"))):
        for pa, pb, pc in zip(a.points, b.points, c.points):
            one = price.why_report(spec[a.name], pa.seconds, pa.point) if pa.why else 0.0
            assert pb.why == pytest.approx(pa.why + one), (a.name, pa.point)
            # no c2c (nor memsource): one kind's run, no second report
            extra = 2 * price.why_run(spec[a.name], pa.seconds, pa.point) if pa.why else 0.0
            assert pc.why == pytest.approx(pa.why - extra), (a.name, pa.point)
            passes += one
    assert passes > 0 and got["with"].expected == pytest.approx(got["without"].expected + passes)


def test_a_reports_text_is_kept_to_its_bound_and_a_silent_one_says_so(tmp_path, monkeypatch):
    """hardware.report with real programs standing for perf's report: the text is cut at MAX_RAW without
    holding the whole output in memory, and an empty output is a failure said in words."""
    monkeypatch.setattr(hardware, "MAX_RAW", 1000)
    raw, log = str(tmp_path / "r.txt"), str(tmp_path / "log")
    assert hardware.report(["head", "-c", "5000", "/dev/zero"], raw, dict(os.environ), log) == ""
    assert os.path.getsize(raw) == 1000
    assert hardware.report(["true"], raw, dict(os.environ), log) == "true exited 0 and printed nothing"
