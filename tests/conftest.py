"""Shared fixtures, process helpers and the `slow` rule of the lab's own tests (runs of the lab, made or
written by hand: labtest.py). Nothing here reads ../shared: the fixtures are the project's."""
import ast
import contextlib
import csv
import importlib
import io
import os
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
# The one place the tests find the lab's package (above, for themselves) and every program
# they start (PYTHONPATH: python3 -m lab.cli.VERB).
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (os.path.join(ROOT, "scripts"), os.environ.get("PYTHONPATH")) if p)
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
    config.addinivalue_line("markers", "slow: sweeps, builds or boots (a fixture of SLOW_FIXTURES, a cargo "
                            "build, or a mark of its own); `./lab test-fast` leaves them out")


# What `slow` means, one plain rule: a test is slow when it uses (itself or through another fixture) a
# fixture that sweeps, builds or boots, named here; or needs the runner's cargo build (rust_build); or says
# so itself (@pytest.mark.slow, a module's pytestmark: a Nix build, a recipe the test runs by hand).
# A test sweeps through the `lab_run` fixture (labtest.LabRun); one that builds its own LabRun may only price
# (dry=1) or be refused, and a FakeRun (a run folder written by hand) is fast.
# `./lab test-fast` runs `-m "not slow"`; `./lab test` runs all (test_fast_split checks the split loses none).
SLOW_FIXTURES = {
    "lab_run": "sweeps: the lab's measuring programs (labtest.LabRun)",
    "fleet": "boots two sshd hosts and runs Ansible (labtest)",
    "build": "compiles the why fixtures (test_why_collect)",
    "swept": "sweeps the why fixtures with perf (test_why_collect)",
    "lab_sort": "scales sort (test_import)",
    "hyperfine_file": "measures sort with hyperfine (test_import)",
    "pyperf_file": "measures sort with pyperf (test_import)",
    "gbench_binary": "builds a Google Benchmark program (test_import)",
    "sort_run": "sweeps sort, to export (test_export)",
    "browsed_runs": "sweeps two runs and opens them in chromium (test_report_html)",
    "remote_build": "compiles the first-touch program (test_numa_evidence)",
    "numa_swept": "sweeps it with why=1 (test_numa_evidence)",
}


@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item):
    if item.get_closest_marker("rust_build") or SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
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


def in_process(module, *args, check=True):
    """A reading program's main(argv) (lab.cli.report, lab.cli.compare: all their work is in main) run in
    this process, its output caught: the CompletedProcess sh() gives, without an interpreter start and its
    imports (~0.5 s a call). Each such program keeps end-to-end tests through sh()."""
    program = importlib.import_module(module)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = program.main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    p = subprocess.CompletedProcess([module, *args], code or 0, out.getvalue(), err.getvalue())
    if check and p.returncode != 0:
        raise AssertionError(f"{module} {args} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def source_opens(*subs):
    """(path relative to scripts/, the call, its mode expression or None) of every open(), os.open() and
    os.fdopen() call in the lab's Python under scripts/lab/<sub> (every folder when none is named), read
    from the source with ast: what the writer and reader guards count."""
    scripts = os.path.join(ROOT, "scripts")
    for top in [os.path.join(scripts, "lab", s) for s in subs] or [scripts]:
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read(), path)
                for n in ast.walk(tree):
                    f = getattr(n, "func", None)
                    if isinstance(f, ast.Name) and f.id == "open" or isinstance(f, ast.Attribute) and \
                            f.attr in ("open", "fdopen") and isinstance(f.value, ast.Name) and f.value.id == "os":
                        mode = n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == "mode"),
                                                                      None)
                        yield os.path.relpath(path, scripts), n, mode


def assert_garbled_is_one_line(parse, sample, error, alphabet, most, tries=300, seed=56):
    """A received tool output garbled `tries` times (up to `most` characters replaced by some of
    `alphabet`, seeded: the same cases every run): `parse` accepts it or raises `error` in one line, never
    anything else."""
    import random
    rng = random.Random(seed)
    for _ in range(tries):
        chars = list(sample)
        for _ in range(rng.randint(1, most)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        try:
            parse("".join(chars))
        except error as e:
            assert "\n" not in str(e), str(e)


TRACEPOINT_PARTS = ("offcpu", "futex", "sched")


def evidence_of(folder, needs=TRACEPOINT_PARTS):
    """(meta, [run]) of one point's why folder; a part in `needs` this host did not give fails the test in
    one line naming what is missing and how to get it (the meta's own reason), never a KeyError later."""
    from lab.engine.evidence import store as ev
    meta = ev.read_meta(folder)
    for part in needs:
        state = meta["evidence"].get(part, "not recorded")
        if state != ev.OK:
            pytest.fail(f"{folder}: this host gave no {part} evidence: {state}", pytrace=False)
    return meta, [ev.read_run(folder, r) for r in range(1, meta["runs"] + 1)]


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


# The fixtures of labtest (the one helper module), for every test module: `lab_run` and `fleet`.
from labtest import fleet, lab_run  # noqa: E402,F401
