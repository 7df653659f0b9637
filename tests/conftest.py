"""Shared helpers of the lab's own tests. Nothing here reads ../shared: the fixtures are the project's."""
import ast
import contextlib
import csv
import importlib
import io
import json
import os
import re
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
    config.addinivalue_line("markers", "slow: starts a measurement or a build as a process (a sweep, a fleet, a "
                            "cluster, a guest, a Nix or cargo build): conftest marks these by rule; "
                            "`./lab test-fast` leaves them out")


# A cargo build is minutes of CPU: every rust_build test is slow too; so is every test that starts a
# measurement (the rule below). Marked here, so that no test needs a second mark to forget.
@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item):
    if item.get_closest_marker("rust_build") or starts_measurement(item):
        item.add_marker(pytest.mark.slow)


# What `slow` means, one rule: a test is slow when it starts a measurement as a process: the sweep engine
# (scripts/lab/cli/sweep.py, scale.py, bench_*.py, an archive's replay) or its host probe (env.sh, seconds of
# tools), a fleet, a Cassandra node or cluster, a guest, a Nix or cargo build, a hyperfine or pyperf run,
# or a `just`/`./lab` recipe that does one of these. The rule reads the test's source, the helpers it calls
# (its module's, another test module's it imports, this file's: one_point) and the fixtures it uses, so a
# new test that sweeps is slow without a mark to forget. What stays fast: parsing, rules on
# recorded evidence, charts and reports of fixture data, dry runs (`dry=1` in the call), and hostile input
# the engine refuses before it measures (a call whose result the test asserts exits 2, the lab's bad-input
# exit). A test the rule misses can still say `@pytest.mark.slow` (or a module's `pytestmark`).
# `./lab test-fast` runs `-m "not slow"`; `./lab test` runs all (test_fast_split checks the split loses none).
ENTRIES = {"sweep.py", "scale.py", "bench_scale.py", "bench_lab.py", "fleet.py", "cluster.sh", "cassandra.sh",
           "test.sh", "env.sh", "hyperfine", "pyperf", "cargo", "nix-build", "nix-shell", "qemu-system-x86_64"}
RECIPES = re.compile(r"(sweep|scale|replay|bench-.*|build-.*|test.*|fleet-.*|cluster-up|cassandra-up|c2c.*|"
                     r"counters|channel|numa-mem|cache.*|runner-.*|fuzz-.*)")
_trees = {}
CONFTEST = os.path.abspath(__file__)


def _module_index(path):
    """A test module's top level, parsed once: {name: FunctionDef}, {name: value} of its assignments, and
    {name: (path, name)} of what it imports from another test module or this file."""
    if path not in _trees:
        tree = ast.parse(open(path).read(), path)
        funcs, consts, imports = {}, {}, {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs[node.name] = node
            elif isinstance(node, ast.ClassDef):
                funcs.update({f"{node.name}.{n.name}": n for n in node.body if isinstance(n, ast.FunctionDef)})
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                consts[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                source = os.path.join(os.path.dirname(path), node.module + ".py")
                if os.path.isfile(source):
                    imports.update({a.asname or a.name: (source, a.name) for a in node.names})
        _trees[path] = funcs, consts, imports
    return _trees[path]


def _lookup(name, path, depth=0):
    """(FunctionDef, its module's path) of `name` as seen from module `path`, else None."""
    funcs, _, imports = _module_index(path)
    if name in funcs:
        return funcs[name], path
    if name in imports and depth < 5:
        return _lookup(imports[name][1], imports[name][0], depth + 1)
    return None


def _words(node, consts, depth=0):
    """The strings a call's argument stands for, as far as the source says them (None for the unknown)."""
    if depth > 5:
        return [None]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "?" for v in node.values)]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [w for e in node.elts for w in _words(e, consts, depth + 1)]
    if isinstance(node, ast.Starred):
        return _words(node.value, consts, depth + 1)
    if isinstance(node, ast.Name) and node.id in consts:
        return _words(consts[node.id], consts, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return ["/".join(w or "" for a in node.args for w in _words(a, consts, depth + 1))]
    return [None]


def _program(word):
    """A program's file name from a word that runs it: a path (scripts/lab/cli/sweep.py) or a module run with
    `python3 -m` (lab.cli.sweep: the package layout's way)."""
    return word.rsplit(".", 1)[-1] + ".py" if word.startswith("lab.cli.") else os.path.basename(word)


def _runs_entry(words):
    """Whether a call's words run an entry above: its program (the first word the source says, or the one
    after `-m`), or a recipe of `just`, `./lab` or `nix` that measures or builds."""
    known = [w for w in words if w is not None]
    progs = known[:1] + [b for a, b in zip(known, known[1:]) if a == "-m"]
    if any(_program(p) in ENTRIES for p in progs):
        return True
    if len(known) > 1:
        if known[0].startswith("python") and known[1] == "-m":
            known = known[2:]
        prog, verb = (_program(known[0]), known[1]) if len(known) > 1 else ("", "")
        return (prog in ("just", "lab") and RECIPES.fullmatch(verb) is not None
                or prog == "nix" and verb in ("build", "develop", "shell", "run")
                or prog == "archive.py" and verb == "replay")
    return False


def _refused(func):
    """Names whose `.returncode == 2` the function asserts: the engine refused the input before measuring."""
    return {c.left.value.id for c in ast.walk(func) if isinstance(c, ast.Compare)
            and isinstance(c.left, ast.Attribute) and c.left.attr == "returncode"
            and isinstance(c.left.value, ast.Name) and len(c.ops) == 1 and isinstance(c.ops[0], ast.Eq)
            and isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value == 2}


def _sweeps(name, path, seen):
    """Whether function `name`, as module `path` (else this file) sees it, starts a measurement, itself or
    through a helper it calls."""
    found = _lookup(name, path) or _lookup(name, CONFTEST)
    if found is None or (name, found[1]) in seen:
        return False
    seen.add((name, found[1]))
    func, path = found
    consts = dict(_module_index(path)[1])     # and the function's own names: `args = [...]; Popen(args)`
    consts.update({n.targets[0].id: n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                   and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)})
    refused = _refused(func)
    skip = {id(n.value) for n in ast.walk(func) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and n.targets[0].id in refused}
    for call in ast.walk(func):
        if not isinstance(call, ast.Call) or id(call) in skip:
            continue
        words = [w for a in call.args for w in _words(a, consts)]
        if "dry=1" in words:
            continue
        if _runs_entry(words):
            return True
        if isinstance(call.func, ast.Name) and _sweeps(call.func.id, path, seen):
            return True
    return False


def starts_measurement(item):
    """The rule above for one collected test: its function, or a fixture it uses, starts a measurement."""
    name = getattr(item, "originalname", item.name)
    if item.cls is not None:
        name = f"{item.cls.__name__}.{name}"
    return any(_sweeps(n, str(item.path), set()) for n in [name, *getattr(item, "fixturenames", ())])


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


def one_point(tmp_path, results, experiment, lines, pause="0.1"):
    """Sweep one compact 1-thread point of `experiment` (spec `lines`: its command and build) with the
    steal, foreign, switch and capacity guards opened wide, so that only the guard under test can fire; one retry.
    Returns (journal events, data rows)."""
    spec = tmp_path / f"{experiment}.spec"
    spec.write_text(f"experiment = {experiment}\n{lines}placements = compact\nthreads = 1\nrepeats = 1\nwarmup = 0\n"
                    "pin = taskset\nmax_foreign = 100\nmax_neighbour = 100\nmax_steal = 100\n"
                    "max_invol_cs = 1000000000\ncapacity = 0\n")
    run = tmp_path / "run"
    sh("python3", "-m", "lab.cli.sweep", f"run={run}", "retries=1", f"retry_pause={pause}", str(spec), env=results)
    events = [json.loads(line) for line in open(run / "sweep" / "journal.jsonl")]
    return events, rows(run / "data" / f"{experiment}.csv")
