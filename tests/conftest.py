"""Shared helpers of the lab's own tests. Nothing here reads ../shared: the fixtures are the project's."""
import contextlib
import csv
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
TOPO = os.path.join(ROOT, "topologies")


def sh(*args, env=None, check=True, **kw):
    """Run a command from the project root; returns CompletedProcess with text output."""
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(list(args), cwd=ROOT, env=full_env, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def results(tmp_path):
    """A private results folder, so tests never touch the user's results/."""
    d = tmp_path / "results"
    d.mkdir()
    return {"LAB_RESULTS": str(d)}


@contextlib.contextmanager
def burner(cpu):
    """A real disturbance: a busy loop pinned to `cpu`, stopped on leaving (and after 120 s by itself,
    should the test die first). Yields its process, whose PID is the loop's own (taskset execs bash)."""
    loop = "end=$((SECONDS + 120)); while ((SECONDS < end)); do :; done"
    p = subprocess.Popen(["taskset", "-c", cpu, "bash", "-c", loop], cwd=ROOT, start_new_session=True)
    try:
        yield p
    finally:
        os.killpg(p.pid, 9)
        p.wait()


@contextlib.contextmanager
def pidfiles(stem, procs):
    """Pidfiles for `procs` inside the project, as a spec's `server` takes only such paths, removed on
    leaving. Yields their paths from the project root: .work/tests/<stem>-<test's pid>-<i>.pid."""
    rel = [os.path.join(".work", "tests", f"{stem}-{os.getpid()}-{i}.pid") for i in range(1, len(procs) + 1)]
    os.makedirs(os.path.join(ROOT, ".work", "tests"), exist_ok=True)
    try:
        for path, p in zip(rel, procs):
            with open(os.path.join(ROOT, path), "w") as f:
                f.write(f"{p.pid}\n")
        yield rel
    finally:
        for path in rel:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(ROOT, path))


def one_point(tmp_path, results, experiment, lines, pause="0.1"):
    """Sweep one compact 1-thread point of `experiment` (spec `lines`: its command and build) with the
    steal, foreign, switch and capacity guards opened wide, so that only the guard under test can fire; one retry.
    Returns (journal events, data rows)."""
    spec = tmp_path / f"{experiment}.spec"
    spec.write_text(f"experiment = {experiment}\n{lines}placements = compact\nthreads = 1\nrepeats = 1\nwarmup = 0\n"
                    "pin = taskset\nmax_foreign = 100\nmax_neighbour = 100\nmax_steal = 100\nmax_invol_cs = 1000000000\ncapacity = 0\n")
    run = tmp_path / "run"
    sh("scripts/sweep.py", f"run={run}", "retries=1", f"retry_pause={pause}", str(spec), env=results)
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    return events, rows(run / "data" / f"{experiment}.csv")
