"""What runs alone (lab/why/alone.py): the parallelism timeline folded from the switch records and the
stacks sampled while one thread ran, so a serial phase names the function that runs while the others wait,
not the barrier they wait at."""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, sh
from lab.engine.evidence import store as ev
from lab.why import alone

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "why")


def test_the_function_is_the_one_whose_samples_run_alone_beyond_the_average():
    """Stacks written by hand (test input, not a recording): fp_chain is called in both phases, so its
    lone samples are no more than its share; serial_phase's are all lone."""
    every = {("serial", "start_thread", "worker", "serial_phase", "fp_chain"): 100,
             ("serial", "start_thread", "worker", "parallel_part", "fp_chain"): 300,
             ("serial", "start_thread", "worker", "___pthread_barrier_wait", "futex_wait_[k]"): 10}
    lone = {("serial", "start_thread", "worker", "serial_phase", "fp_chain"): 100,
            ("serial", "start_thread", "worker", "parallel_part", "fp_chain"): 60}
    assert alone.top_function(lone, every) == ("serial_phase", 100)
    assert alone.top_function(lone) == ("fp_chain", 160)              # without every stack: the most lone
    assert alone.top_function({("p", "main", "start_thread"): 3}) == (None, 0)
    runs = [{"parallel": {0: 0.1, 1: 0.4, 2: 0.5}, "alone": lone, "oncpu": every},
            {"parallel": {1: 0.2, 2: 0.8}, "alone": lone, "oncpu": every}]
    a = alone.of_runs(runs)
    assert a.function == "serial_phase" and a.samples == 320 and abs(a.share - 0.6 / 2.0) < 1e-9
    assert abs(a.function_share - 0.3 * 200 / 320) < 1e-9
    assert alone.of_runs([{"oncpu": {}}]) is None          # evidence from before the timeline: nothing said
    said = alone.words(alone.of_runs(runs[:1]), a, 1, 2)
    assert said.startswith("`serial_phase` runs alone for 19% of the wall time at 2 threads (one thread running "
                           "for 30% of it; 40% at 1 thread)"), said


def test_the_parallelism_file_is_read_back_and_bounded(tmp_path):
    ev.write_run(str(tmp_path), 1, parallel=[{"running": 1, "seconds": 0.25}, {"running": 2, "seconds": 1.5}],
                 alone={("p", "f"): 3})
    r = ev.read_run(str(tmp_path), 1)
    assert r["parallel"] == {1: 0.25, 2: 1.5} and r["alone"] == {("p", "f"): 3}
    (tmp_path / "parallel_r2.csv").write_text("running,seconds\n1,inf\n")
    with pytest.raises(ev.EvidenceError) as e:
        ev.read_run(str(tmp_path), 2)
    assert "parallel_r2.csv:2" in str(e.value)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("perf") is None, reason="the switch records need root and perf")
def test_a_real_serial_phase_names_the_function_that_runs_alone(tmp_path):
    """tests/fixtures/why/serial.c: thread 0 runs serial_phase while the others wait at a barrier."""
    build = tmp_path / "serial"
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(build),
                    os.path.join(FIXTURES, "serial.c")], check=True)
    sh("python3", "-m", "lab.cli.scale", "why=1", "why_runs=1", "threads=2", "placements=compact", "repeats=1",
       "retries=0", "warmup=0", "capacity=0", "draw=0", "--", str(build), "{threads}",
       env={"LAB_RESULTS": str(tmp_path / "results")})
    (folder,) = glob.glob(str(tmp_path / "results" / "*" / "raw" / "*" / "-_compact_t2_why"))
    meta = ev.read_meta(folder)
    a = alone.of_runs([ev.read_run(folder, r) for r in range(1, meta["runs"] + 1)])
    assert a is not None and a.samples > 0, folder
    assert a.function == "serial_phase", a
    assert 0 < a.share < 1
