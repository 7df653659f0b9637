"""Shared helpers of the lab's own tests. Nothing here reads ../shared: the fixtures are the project's."""
import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
TOPO = os.path.join(ROOT, "topologies")


# The runner's cargo build (release binary and test harnesses) is the suite's largest piece of CPU work,
# and most tests leave a CPU idle while they wait on a process, a socket or a sleep. So a session that
# collects a test marked `rust_build` starts that build at once in the background, as SCHED_IDLE (it
# runs only on a CPU nothing else wants, and the scheduler preempts it at once for any process that
# wakes; a niced build may keep the CPU until its slice ends), and runs the marked tests last; the
# first of them waits for it. The tests still build for themselves (`just build-runner`, cargo test):
# a failed or stopped background build only means they do the work, and show its error.
# RUST_PREBUILD=0 turns it off.
PREBUILD = ["cargo", "test", "--release", "--locked", "--no-run", "--manifest-path",
            os.path.join(ROOT, "rust-runner", "Cargo.toml")]
PREBUILD_LOG = os.path.join(ROOT, ".work", "tests", "rust-prebuild.log")
_prebuild = None


def pytest_configure(config):
    config.addinivalue_line("markers", "rust_build: needs the runner's cargo build or the crates it fetches "
                            "(runs after every other test, while the build runs in the background)")
    config.addinivalue_line("markers", "slow: starts fleets, clusters, guests, Nix builds, the runner's cargo "
                            "build or whole multi-instrument sweeps; `./lab test-fast` leaves these out")


# A cargo build is minutes of CPU: every rust_build test is slow too (one rule, not a second mark to forget).
@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item):
    if item.get_closest_marker("rust_build"):
        item.add_marker(pytest.mark.slow)


def _idle():
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


# trylast: after `-m "not slow"` has deselected, so that the fast loop never starts the build.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    global _prebuild
    late = [i for i in items if i.get_closest_marker("rust_build")]
    if not late:
        return
    items[:] = [i for i in items if not i.get_closest_marker("rust_build")] + late
    if os.environ.get("RUST_PREBUILD", "1") == "0" or shutil.which("cargo") is None or len(items) == len(late):
        return
    os.makedirs(os.path.dirname(PREBUILD_LOG), exist_ok=True)
    # In pytest's process group: Ctrl-C, or a kill of the whole run, stops the build with it.
    with open(PREBUILD_LOG, "w") as log:
        _prebuild = subprocess.Popen(PREBUILD, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     preexec_fn=_idle)


def _build_tree():
    return [_prebuild.pid] + children(_prebuild.pid)


def pytest_runtest_setup(item):
    global _prebuild
    if _prebuild is None or not item.get_closest_marker("rust_build"):
        return
    # Now the build is what the test waits for: a normal process again where that is allowed (leaving
    # SCHED_IDLE may need privilege), so that whatever else loads the host does not starve it.
    for pid in _build_tree():
        with contextlib.suppress(OSError):   # gone already, or not allowed: the others still are
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    _prebuild.wait()
    _prebuild = None


def pytest_sessionfinish(session, exitstatus):
    """A session that ends first (-x, a deselected tail) leaves no build running."""
    if _prebuild is not None and _prebuild.poll() is None:
        for pid in reversed(_build_tree()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        _prebuild.wait()


def children(pid):
    """Every descendant of pid (from /proc): an sshd's sessions, cargo's rustc and linker processes."""
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                kids += [int(d)] + children(int(d))
    return kids


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
