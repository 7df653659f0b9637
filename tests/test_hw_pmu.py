"""The hardware tier's capability detection (engine/evidence/pmu.py): on this host (a KVM guest without a PMU) every
kind says "not available here: <reason>", found by asking the kernel and perf, not assumed; the rules
for hosts the lab has not had (Intel with PEBS, AMD Zen 3 and Zen 4) on facts built here; the command
lines as argv lists."""
import dataclasses
import re
import shutil

import pytest

from lab.engine.evidence import pmu
from lab.engine.evidence import store as ev

HERE = pmu.probe()
NO_PMU = "ok" not in (HERE.open_cycles, HERE.stat_cycles)


@pytest.mark.skipif(not NO_PMU, reason="this host has a PMU: the no-PMU words are checked where there is none")
def test_every_kind_says_why_not_on_this_host():
    status = pmu.kinds(HERE)
    assert set(status) == set(pmu.KINDS)
    for kind, words in status.items():
        assert words.startswith(ev.NA), (kind, words)
        assert "\n" not in words and "hardware PMU" in words
    # the reason names what was asked, not an assumption
    assert "perf_event_open(cycles)" in status["pmu"] and "perf stat -e cycles" in status["pmu"]
    assert pmu.status() == status


def test_status_is_ok_or_one_na_line():
    for words in pmu.status().values():
        assert words == ev.OK or (words.startswith(ev.NA) and "\n" not in words)
    parts = pmu.evidence_parts()
    assert set(parts) == {"c2c", "topdown", "memsource"} <= set(ev.PARTS)
    assert parts == {k: pmu.status()[k] for k in parts}


INTEL = pmu.Host(perf=True, open_cycles="ok", stat_cycles="ok", vendor="intel", family=6, model=0x8f,
                 flags=frozenset({"pebs", "ds_cpl"}), sources=frozenset({"cpu", "software"}), ibs_caps=frozenset(),
                 mem_events=("ldlat-loads", "ldlat-stores"), mem_error="", metric_groups=frozenset({"TopdownL1"}))
ZEN4 = pmu.Host(perf=True, open_cycles="ok", stat_cycles="ok", vendor="amd", family=0x19, model=0x11,
                flags=frozenset({"ibs"}), sources=frozenset({"cpu", "ibs_op", "ibs_fetch"}),
                ibs_caps=frozenset({"zen4_ibs_extensions"}), mem_events=("mem-ldst",), mem_error="",
                metric_groups=frozenset({"PipelineL1", "PipelineL2"}))


def test_hosts_with_a_pmu():
    assert pmu.kinds(INTEL) == {k: ev.OK for k in pmu.KINDS}
    assert pmu.kinds(ZEN4) == {k: ev.OK for k in pmu.KINDS}
    zen3 = dataclasses.replace(ZEN4, model=0x01, ibs_caps=frozenset(), metric_groups=frozenset())
    s = pmu.kinds(zen3)
    assert s["c2c"] == ev.OK
    assert s["memsource"] == ev.NA + "IBS data source needs Zen 4 or later (no ibs_op/caps/zen4_ibs_extensions)"
    assert s["topdown"].startswith(ev.NA + "perf lists no PipelineL1 metric group for this CPU (family 0x19")


def test_a_pmu_without_memory_sampling():
    s = pmu.kinds(dataclasses.replace(INTEL, mem_events=(), mem_error="failed: memory events not supported",
                                      flags=frozenset()))
    assert s["pmu"] == ev.OK and s["topdown"] == ev.OK
    assert s["c2c"] == ev.NA + ("perf lists no memory events (failed: memory events not supported): needs "
                                "PEBS load-latency sampling")
    assert s["memsource"] == s["c2c"]
    s = pmu.kinds(dataclasses.replace(ZEN4, sources=frozenset({"cpu"})))
    assert s["c2c"].startswith(ev.NA + "no ibs_op PMU")


def test_no_pmu_words_for_a_host_built_here():
    host = dataclasses.replace(INTEL, open_cycles="perf_event_open(cycles) failed: No such file or directory "
                               "(errno 2)", stat_cycles="perf stat -e cycles: <not supported>",
                               sources=frozenset({"software"}), flags=frozenset({"hypervisor"}))
    s = pmu.kinds(host)
    assert s["pmu"] == ev.NA + ("no hardware PMU (perf_event_open(cycles) failed: No such file or directory (errno 2); "
                                "perf stat -e cycles: <not supported>; no cpu PMU under /sys/bus/event_source/devices, "
                                "a VM without PMU passthrough)")
    assert all(s[k].startswith(ev.NA + "needs a hardware PMU, and this host has none (") for k in ("c2c", "topdown",
                                                                                                "memsource"))


def test_command_lines():
    assert pmu.c2c_record("d/c2c.data", ["./prog", "2"], "intel") == \
        ["perf", "c2c", "record", "-o", "d/c2c.data", "--", "./prog", "2"]
    assert pmu.c2c_record("c.data", ["./p"], "amd", cpus="0-3") == \
        ["perf", "c2c", "record", "-o", "c.data", "-C", "0-3", "--", "./p"]
    assert pmu.c2c_record("c.data", ["./p"], "amd") == ["perf", "c2c", "record", "-o", "c.data", "-a", "--", "./p"]
    assert pmu.c2c_report("c.data") == ["perf", "c2c", "report", "-i", "c.data", "--stdio", "--call-graph", "none",
                                        "--full-symbols"]
    assert pmu.c2c_report("c.data", double_cl=True)[-1] == "--double-cl"
    assert pmu.topdown_stat("t.txt", ["./p"], "intel") == ["perf", "stat", "-o", "t.txt", "--topdown", "--", "./p"]
    assert pmu.topdown_stat("t.txt", ["./p"], "amd", cpus="0,1") == \
        ["perf", "stat", "-o", "t.txt", "-M", "PipelineL1,PipelineL2", "-C", "0,1", "--", "./p"]
    assert pmu.mem_record("m.data", ["./p"], "amd", cpus="4-7") == \
        ["perf", "mem", "record", "-o", "m.data", "-C", "4-7", "--", "./p"]
    assert pmu.mem_report("m.data") == ["perf", "mem", "report", "-i", "m.data", "--stdio", "-F", "mem,sample,snoop"]


# perf c2c report -h as perf 6.3 and later print the option (Feng Tang's patch: OPT_BOOLEAN(0, "double-cl",
# …, "Detect adjacent cacheline false sharing"), laid out as parse-options prints a long-only option)
HELP_6_3_LINE = "        --double-cl       Detect adjacent cacheline false sharing\n"


def test_double_cl_is_asked_of_perf_here():
    """`perf c2c report -h` and `perf version` run here (no workload, no PMU needed): Debian's perf 6.1 does not
    list --double-cl, so the lab says that perf lacks it instead of passing an option perf refuses."""
    if not shutil.which("perf"):
        pytest.skip("perf is not on PATH")
    version, has = pmu.double_cl()
    assert re.fullmatch(r"\d+\.\d+\S*", version), version
    _, help_text = pmu._run(["perf", "c2c", "report", "-h"])
    assert "--stitch-lbr" in help_text and has == pmu.lists_double_cl(help_text)
    if version.startswith("6.1."):             # Debian 12's perf: before perf 6.3, nothing carried back
        assert has is False
    assert pmu.lists_double_cl(help_text + HELP_6_3_LINE) and pmu.lists_double_cl("    -a, --double-cl  x\n")
    assert not pmu.lists_double_cl("        --stitch-lbr      Enable LBR callgraph stitching approach\n")


def test_without_a_pmu_perf_is_not_asked_about_double_cl():
    """Nothing of the tier runs where it is absent: probe() asks perf no more than before."""
    if not NO_PMU:
        pytest.skip("this host has a PMU")
    assert (HERE.perf_version, HERE.double_cl) == ("", False)
