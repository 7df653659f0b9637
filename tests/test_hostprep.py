"""What why=1 needs of the host (lab/engine/hostprep.py): tracefs mounted where the kernel has it and the
lab runs as root; otherwise one line with the command that would; the perf settings that cut evidence
named, never changed. Each case runs in a private mount namespace (unshare -m) with tracefs unmounted
there, so the host's own mounts are never touched by a test."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from lab.engine import hostprep

needs_ns = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None
                              or not hostprep.kernel_has("tracefs"),
                              reason="a private mount namespace needs root, unshare and a kernel with tracefs")
PY = "/usr/bin/python3"     # a user other than root cannot run root's pyenv shim


def in_namespace(script, user=None):
    """`script` (shell) in a fresh mount namespace where tracefs is unmounted first; as `user` (uid) if given."""
    prep = ("set -e; mount --make-rprivate /; for d in /sys/kernel/debug/tracing /sys/kernel/tracing; do "
            "while mountpoint -q $d 2>/dev/null; do umount $d; done; done; ")
    run = script if user is None else f"setpriv --reuid={user} --regid={user} --clear-groups bash -c '{script}'"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "scripts"))
    return subprocess.run(["unshare", "-m", "bash", "-c", prep + run], capture_output=True, text=True, env=env,
                          timeout=60, cwd=ROOT)


@needs_ns
def test_as_root_the_lab_mounts_tracefs_and_says_so_once():
    p = in_namespace(f"{PY} -m lab.cli.prepare; {PY} -m lab.cli.prepare; "
                     "test -d /sys/kernel/tracing/events/sched && echo mounted")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "mounted"
    # the second call finds it mounted: nothing to say
    assert p.stderr.count("mounted tracefs at /sys/kernel/tracing") == 1, p.stderr


@needs_ns
def test_without_root_it_names_the_command_and_never_changes_a_setting():
    before = {n: hostprep.setting(n) for n in hostprep.SETTINGS}
    p = in_namespace(f"{PY} -m lab.cli.prepare; {PY} -m lab.cli.prepare record", user=65534)
    assert p.returncode == 0, p.stderr
    assert "`sudo mount -t tracefs nodev /sys/kernel/tracing`" in p.stderr
    assert "tracefs=not mounted" in p.stdout and "euid=65534" in p.stdout
    if hostprep.setting("perf_event_paranoid") > -1:
        assert "perf_event_paranoid is" in p.stderr and "the lab never changes it" in p.stderr
        assert "cuts perf_event_paranoid=" in p.stdout
    assert {n: hostprep.setting(n) for n in hostprep.SETTINGS} == before


@needs_ns
def test_evidence_availability_names_the_mount_command_when_tracefs_is_missing():
    code = ("from lab.engine.evidence import collect; s = collect.availability('cpu-clock'); "
            "print(s['offcpu']); print(s['oncpu'])")
    p = in_namespace(f"{PY} -c \"{code}\"")
    assert p.returncode == 0, p.stderr
    off, on = p.stdout.splitlines()
    assert off.startswith("not available here: the kernel's tracepoints (tracefs) are not mounted")
    assert "mount -t tracefs nodev /sys/kernel/tracing" in off and on == "ok"


def test_the_environment_records_tracing_and_the_perf_settings(tmp_path, lab_run):
    lab_run.record_host(tmp_path, timeout=300)
    text = (tmp_path / "tracing.txt").read_text()
    keys = [line.split("=", 1)[0] for line in text.splitlines()]
    assert keys[:7] == ["tracefs", "debugfs", "tracepoints", "euid", "perf_event_paranoid", "kptr_restrict",
                        "perf_event_mlock_kb"], text
