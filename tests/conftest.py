"""Shared helpers of the lab's own tests. Nothing here reads ../shared: the fixtures are the project's."""
import contextlib
import csv
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
