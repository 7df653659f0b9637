"""The interference guard: a repeat measured while another process burns its CPU is measured again,
and kept as suspect, with the reason, when the disturbance does not go away."""
import json
import os
import subprocess

from conftest import ROOT, rows, sh


def test_a_burner_on_the_points_cpu_makes_it_remeasured_then_suspect(tmp_path, results):
    spec = tmp_path / "guarded.spec"
    spec.write_text("experiment = guarded\ncommand = tests/fixtures/spin.sh 1 60000\nplacements = compact\n"
                    "threads = 1\nrepeats = 1\nwarmup = 0\npin = taskset\n")
    cpu = sh("scripts/topo.py", "plan", "compact", "1").stdout.strip()
    # The disturbance: a busy loop pinned to the point's CPU, bounded in time, stopped by the test.
    burner = subprocess.Popen(["timeout", "120", "taskset", "-c", cpu, "bash", "-c", "while :; do :; done"],
                              cwd=ROOT, start_new_session=True)
    try:
        run = tmp_path / "run"
        sh("scripts/sweep.py", f"run={run}", "retries=1", "retry_pause=0.2", str(spec), env=results)
    finally:
        os.killpg(burner.pid, 9)
        burner.wait()
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    again = [e for e in events if e["event"] == "remeasured"]
    assert len(again) == 1 and "foreign" in again[0]["reason"] and again[0]["noise"]["foreign_pct"] > 10
    suspect = [e for e in events if e["event"] == "suspect"]
    assert len(suspect) == 1 and "foreign" in suspect[0]["reason"]
    data = rows(run / "data" / "guarded.csv")
    assert data and all("foreign" in r["suspect"] for r in data)
    foreign = [float(r["value"]) for r in data if r["metric"] == "noise_foreign_pct"]
    assert foreign and foreign[0] > 10
    # The discarded attempt is kept for inspection beside the kept one.
    assert (run / "raw" / "guarded" / "-_compact_t1_r1.try1" / "stdout.csv").exists()


def test_threads_that_did_not_run_together_make_a_contention_run_suspect(tmp_path, results):
    # Two counter threads on the one CPU of the placement take turns: no moment has both running, so
    # the "contention" measured is not one. The probe says so (corun_pct) and the guard acts on it;
    # the other guards are opened wide so that only this one can fire.
    spec = tmp_path / "turns.spec"
    spec.write_text("experiment = turns\nbuild = make -s -C c-probes\n"
                    "command = c-probes/build/counters --variant shared-atomic --cpus {cpus} --threads 2 --ops 3000000\n"
                    "placements = compact\nthreads = 1\nrepeats = 1\nwarmup = 0\npin = taskset\n"
                    "max_foreign = 100\nmax_steal = 100\nmax_invol_cs = 1000000000\n")
    run = tmp_path / "run"
    sh("scripts/sweep.py", f"run={run}", "retries=1", "retry_pause=0.2", str(spec), env=results)
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    again = [e for e in events if e["event"] == "remeasured"]
    assert len(again) == 1 and "all threads running" in again[0]["reason"], again
    data = rows(run / "data" / "turns.csv")
    corun = [float(r["value"]) for r in data if r["metric"] == "corun_pct"]
    assert corun and corun[0] < 70
    assert all("all threads running" in r["suspect"] for r in data)
