"""Where the memory lives, in a real evidence run on this host (issue 56, item 1): `./lab scale why=1` on
tests/fixtures/why/remote.c (a 32 MiB buffer the main thread first-touches, read by the workers) leaves
numa_r<N>.json and cpus_r<N>.csv in each point's evidence folder, and on this one-node host they say one
node: nothing is claimed. The two-node placements (remote named; per-thread first touch and interleave
not) are checked in the simulated guests: vm/numa_evidence.py, asserted by vm/check.py in
test-multisocket."""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, sh
from lab.engine.evidence import store
from lab.why import classify as C
from lab.why import diff, memory

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("perf") is None,
                                reason="the evidence runs' switch records need root and perf")
EXE = os.path.join(ROOT, "tests", "fixtures", "why", "build", "remote")


@pytest.fixture(scope="module")
def remote_build():
    os.makedirs(os.path.dirname(EXE), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", EXE,
                    os.path.join(ROOT, "tests", "fixtures", "why", "remote.c")], check=True)
    return EXE


@pytest.fixture(scope="module")
def numa_swept(remote_build, tmp_path_factory):
    results = tmp_path_factory.mktemp("numa")
    sh("python3", "-m", "lab.cli.scale", "why=1", "threads=1 2", "placements=compact", "repeats=1", "retries=0",
       "warmup=0", "capacity=0", "draw=0", "why_seconds=0", "why_runs=2", "--", EXE, "main", "{threads}", "32", "1",
       "-1", "-1", env={"LAB_RESULTS": str(results)})
    (run,) = glob.glob(os.path.join(str(results), "*"))
    return run


def test_each_evidence_run_says_where_the_memory_was_and_where_the_threads_ran(numa_swept):
    for threads in (1, 2):
        (folder,) = glob.glob(os.path.join(numa_swept, "raw", "*", f"-_compact_t{threads}_why"))
        meta = store.read_meta(folder)
        assert meta["runs"] >= 1
        for r in range(1, meta["runs"] + 1):
            got = store.read_run(folder, r)
            numa, cpus = got["numa"], got["cpus"]
            assert numa["comm"] == "remote" and numa["samples"] >= 1 and not numa["cut"]
            # the program at its peak: the 32 MiB buffer it wrote, resident, on this host's one node
            assert sum(numa["peak"]["kb"].values()) >= 32 << 10
            assert set(numa["peak"]["kb"]) == {0} and list(numa["nodes"]) == [0]
            assert max(sum(m["kb"].values()) for m in numa["peak"]["mappings"]) >= 32 << 10
            assert set(numa["settings"]) == {"numa_balancing", "thp"}
            # where each thread ran: the main thread and its workers, on the point's CPUs, seconds each
            mine = [c for c in cpus if c["comm"] == "remote"]
            assert len({c["tid"] for c in mine}) == threads + 1, cpus
            # the same switch records as threads_r<N>.csv: each thread's seconds over its CPUs are its on-CPU time
            # (seconds, not a share of the run: on this shared host the load decides how much it got)
            oncpu = {t["tid"]: t["oncpu_us"] / 1e6 for t in got["threads"]}
            for tid in {c["tid"] for c in mine}:
                assert sum(c["seconds"] for c in mine if c["tid"] == tid) == pytest.approx(oncpu[tid], abs=1e-5)
            assert sum(c["seconds"] for c in mine) > 0.1 * threads
            assert {c["cpu"] for c in mine} <= set(numa["nodes"][0])
            placed = memory.of_run(numa, cpus)
            assert placed.kind == "one node" and "nothing can be remote (not claimed)" in placed.words


def test_one_node_is_never_claimed_in_the_verdict(numa_swept):
    folders = {t: glob.glob(os.path.join(numa_swept, "raw", "*", f"-_compact_t{t}_why"))[0] for t in (1, 2)}
    # every recorded run says one node, whatever the validity gate kept (on a loaded host it may keep none)
    assert memory.of_runs(diff.load(folders[2], kept=False)["runs"]).kind == "one node"
    base, knee = diff.load(folders[1]), diff.load(folders[2])
    if not (base["runs"] and knee["runs"]):
        return
    d = diff.differential(base, knee, "compact", 1, 2, "test")
    assert d.memory.kind == "one node"
    c = C.classify(d)
    assert C.REMOTE not in c.classes and c.cause != C.REMOTE
    assert not [n for n in c.notes if n.startswith(("memory placement", C.REMOTE))]


@pytest.mark.slow          # three recorded runs of the program
def test_the_guest_script_on_this_host_says_one_node_for_every_placement(remote_build, tmp_path):
    out = tmp_path / "numa.json"
    p = subprocess.run(["python3", os.path.join(ROOT, "vm", "numa_evidence.py"), str(out), EXE],
                       env=dict(os.environ, NUMA_EVIDENCE_SECONDS="1", NUMA_EVIDENCE_MIB="16"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(out.read_text())
    assert {m: got[m]["kind"] for m in ("main", "each", "interleave")} == dict.fromkeys(("main", "each", "interleave"),
                                                                                         "one node")
    assert all(got[m]["cpus"] for m in got), "fold.py found no switch record"
