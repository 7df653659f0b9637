"""env/memory-time.txt: what moves memory or time behind the lab's back (NUMA balancing, THP, clocksource,
cpuidle, IRQs and irqbalance, NUMA nodes per package). env.sh records every item, read-only (the test
changes nothing on the host); the report warns in its header when NUMA balancing is on; compare flags two
runs that differ in any item."""
import os

from conftest import in_process, sh
from labtest import TWO_NODES, numa_run

KEYS = {"numa_balancing", "thp_enabled", "thp_defrag", "clocksource", "clocksource_available", "cpuidle_driver",
        "cpuidle_governor", "cpuidle_states", "cpuidle_same_on_all_cpus", "irqbalance", "irq_affinity",
        "sched_autogroup", "numa_per_package", "guest_halt_poll_ns"}


def read_kv(path):
    return dict(ln.split("=", 1) for ln in open(path).read().splitlines() if "=" in ln)


def test_env_records_every_setting_as_the_kernel_shows_it(tmp_path, lab_run):
    lab_run.record_host(tmp_path / "env")
    got = read_kv(tmp_path / "env" / "memory-time.txt")
    assert set(got) == KEYS
    assert all(v.strip() for v in got.values()), got
    nb = "/proc/sys/kernel/numa_balancing"
    assert got["numa_balancing"] == (open(nb).read().strip() if os.path.exists(nb) else got["numa_balancing"])
    thp = "/sys/kernel/mm/transparent_hugepage/enabled"
    if os.path.exists(thp):   # "always [madvise] never": the bracketed word
        assert f"[{got['thp_enabled']}]" in open(thp).read()
    cs = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
    if os.path.exists(cs):
        assert got["clocksource"] == open(cs).read().strip()
    ag = "/proc/sys/kernel/sched_autogroup_enabled"
    assert got["sched_autogroup"] == (open(ag).read().strip() if os.path.exists(ag) else
                                      f"unavailable: {ag} does not exist here")
    hp = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
    assert got["guest_halt_poll_ns"] == (open(hp).read().strip() if os.path.exists(hp) else
                                         f"unavailable: {hp} does not exist here")
    assert got["irqbalance"] in ("running", "not running") or got["irqbalance"].startswith("unavailable: ")
    nodes = read_kv(tmp_path / "env" / "numa-nodes.txt") if "numa_per_package=" in \
        open(tmp_path / "env" / "numa-nodes.txt").read() else {}
    if nodes:
        assert got["numa_per_package"] == nodes["numa_per_package"]


def with_settings(run, **kw):
    base = {k: "x" for k in KEYS}
    base.update(numa_balancing="0")
    base.update(kw)
    (run / "env" / "memory-time.txt").write_text("".join(f"{k}={v}\n" for k, v in sorted(base.items())))
    return run


def test_report_warns_in_its_header_when_numa_balancing_is_on(tmp_path):
    run = with_settings(numa_run(tmp_path, TWO_NODES, [[10, 21], [21, 10]]), numa_balancing="1")
    sh("python3", "-m", "lab.cli.report", str(run))
    head = (run / "report.md").read_text().split("## ", 1)[0]
    assert "**Warning:** NUMA balancing is on (kernel.numa_balancing=1)" in head
    html = (run / "report.html").read_text()
    assert html.index("NUMA balancing is on") < html.index("<nav>")
    with_settings(run, numa_balancing="0")
    in_process("lab.cli.report", str(run))
    assert "NUMA balancing is on" not in (run / "report.md").read_text()
    assert "NUMA balancing 0 · THP x" in (run / "report.md").read_text()    # the environment row
    assert "cpuidle x: x · irqbalance" in (run / "report.md").read_text()   # "x" is no poll time
    with_settings(run, guest_halt_poll_ns="0")
    in_process("lab.cli.report", str(run))
    assert "cpuidle x: x, guest poll 0 ns · irqbalance" in (run / "report.md").read_text()


def test_compare_flags_runs_that_differ_in_these_settings(tmp_path):
    a = with_settings(numa_run(tmp_path / "a", TWO_NODES, [[10, 21], [21, 10]]), thp_enabled="always")
    b = with_settings(numa_run(tmp_path / "b", TWO_NODES, [[10, 21], [21, 10]]), thp_enabled="never")
    p = sh("python3", "-m", "lab.cli.compare", str(a), str(b), str(tmp_path / "cmp.md"))
    assert "differ in what moves memory or time behind the lab's back (env/memory-time.txt): " \
           "thp_enabled 'always' vs 'never'" in p.stderr
    with_settings(b, thp_enabled="always")
    p = in_process("lab.cli.compare", str(a), str(b), str(tmp_path / "cmp.md"))
    assert "memory-time" not in p.stderr
