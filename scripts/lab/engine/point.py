"""Run one repeat of one point: the command with its placeholders, pinned and guarded, into tidy rows.

Placeholders become quoted references to LAB_* environment variables (`{cpus}` → "${LAB_CPUS}"), so a
value never becomes shell text, whatever a variant name or run folder contains. The command itself
is the project's spec, not user input.
"""
import os
import re
import shlex
import signal
import subprocess
import time

from lab.core import tidy
from lab.core.runfolder import write_atomic_text
from lab.topology.topo import cpu_list

from . import capacity, cgroup, child, guard, perfstat, perfsummary, prefix
from . import execmetric as av
from .spec import PLACEHOLDERS, SpecError

PLACEHOLDER = re.compile(r"(?<!\$)\{(" + "|".join(PLACEHOLDERS) + r")\}")


def expand_args(command, args):
    return command.replace("{args}", args)


def check_quoting(text, where):
    """A placeholder inside quotes would be quoted twice: the engine quotes it itself."""
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
        elif quote and PLACEHOLDER.match(text, i):
            name = PLACEHOLDER.match(text, i).group(1)
            raise SpecError(f"{where}: {{{name}}} stands inside {quote}quotes{quote}: write it bare, "
                            "the engine passes it quoted")
        i += 1


def check_program(spec, where, root):
    """An exec spec's program must exist here and be executable: SpecError otherwise."""
    try:
        av.program(av.parse_exec(spec["exec"], PLACEHOLDERS)[0], root)
    except ValueError as e:
        raise SpecError(f"{where}: exec: {e}")


def shell_text(command):
    return PLACEHOLDER.sub(lambda m: f'"${{LAB_{m.group(1).upper()}}}"', command)


def display(command, values):
    """The command as it ran, values filled in and shell-quoted: for people, never executed."""
    return PLACEHOLDER.sub(lambda m: shlex.quote(str(values[m.group(1)])), command)


def values_for(point, repeat, raw, perf, root, pinned):
    return {"variant": point.variant, "placement": point.placement, "threads": point.threads,
            "repeat": repeat, "cpus": cpu_list(point.cpus),
            "other_cpus": cpu_list(point.others), "raw": raw, "perf": perf, "root": root,
            "pinned": int(pinned), "pairs": point.pairs, "smt_pairs": point.smt_pairs,
            "ncpus": len(point.cpus)}


def kill_group(p, grace=5):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


class Outcome:
    def __init__(self, rc, reading=None, rows=None, reason="", capacity=None):
        self.rc, self.reading, self.rows, self.reason = rc, reading, rows, reason
        self.capacity = capacity     # a capacity.Reading, or None when the probe did not run


def exec_words(spec, values):
    """The words of an `exec` spec with this run's values, or None for a shell `command` spec."""
    if not spec.get("exec"):
        return None
    return av.substitute(av.parse_exec(spec["exec"], PLACEHOLDERS), values)


def shown_command(spec, values):
    """The command as it ran, for the journal and the report (never executed)."""
    words = exec_words(spec, values)
    if words is not None:
        return av.shown(words)
    return display(expand_args(spec["command"], spec["args"]), values)


def command_line(ctx, spec, point, repeat, raw, perf_by_engine=False, inner=()):
    """(argv with the point's pinning, env, exec words or None, shell command text, values) of one run:
    the timed repeats and the evidence runs (why=1) run the same thing; `inner` goes between the pinning
    and the command (the evidence runs' perf record: pinned, and recording only the command)."""
    pinned = point.placement != "unpinned"
    values = values_for(point, repeat, raw, ctx.perf, ctx.root, pinned)
    env = dict(spec_env(ctx.env, spec), LAB_PERF_EVENT=ctx.perf_event)
    env.update({f"LAB_{k.upper()}": str(v) for k, v in values.items()})
    words = exec_words(spec, values)
    command = "" if words is not None else expand_args(spec["command"], spec["args"])
    argv = prefix.wrap(spec["pin"], pinned, spec["membind"], point, raw, perf_by_engine) + list(inner) + \
        (words if words is not None else ["bash", "-c", shell_text(command)])
    return argv, env, words, command, values


def measure(ctx, spec, point, repeat, raw, discard=False):
    """One run. ctx: the sweep (root, run_id, perf, env). Returns an Outcome with tidy rows (dicts)
    on success; the caller decides whether to keep them."""
    os.makedirs(raw, exist_ok=True)
    pinned = point.placement != "unpinned"
    perf_by_engine = ctx.perf == 1 and spec["perf"] == "engine" and not discard
    argv, env, words, command, values = command_line(ctx, spec, point, repeat, raw, perf_by_engine)
    counting = ctx.perf == "stat" and not discard
    argv = (perfstat.prefix(raw) if counting else []) + argv
    if ctx.cgroups:         # the sweep's control groups hold the measured tree (lab/engine/cgroup.py)
        argv = cgroup.join(ctx.cgroups, argv)
    # The CPUs the measured tree may use: its placement, and where it puts its load generator.
    span = point.cpus if pinned else ctx.all_cpus
    probe_cpus = point.cpus
    if pinned and spec["pin"] == "self" and "{other_cpus}" in command:
        # The load generator's CPUs are the measurement's too: the probe times them as well (it is not
        # running during the probes; a server there is explained by its share, capacity.py).
        span = probe_cpus = point.cpus + point.others
    if words is not None:      # any program: plain text out, bounded
        out = os.path.join(raw, "warmup.out" if discard else "stdout.txt")
        cap = child.OUTPUT_CAP
    else:                      # the lab's instruments: tidy CSV
        out = os.path.join(raw, "warmup.out" if discard else "stdout.csv")
        cap = None
    err = os.path.join(raw, "warmup.log" if discard else "stderr.log")
    base = ctx.capacity if spec["capacity"] == "1" and not discard else None
    servers = guard.server_pids(ctx.root, server_pidfiles(spec))
    session = probe_session(ctx.root, probe_cpus, base, err, servers)
    try:
        before = probe(session, err)
        # The tree is held to its span from its first instruction only when the engine pins it (taskset): a
        # command that pins itself (pin = self) runs its start-up, and any wrapper before it (numactl),
        # wherever the scheduler puts them, which is not leaving its placement (vm/check.py's wrong-membind
        # run: 0.15 s of a short run's start-up on other CPUs).
        fence = point.placement if pinned and spec["pin"] == "taskset" else None
        window = guard.Window(point.cpus, span, servers, fence, ctx.cgroups)
        rc, usage, note = child.run(argv, env, ctx.root, out, err, float(spec["timeout"]), ctx.track, cap,
                                    ctx.launcher)
        reading = window.stop()
        after = probe(session, err) if before else None
    finally:
        if session:
            session.close()
    probed = capacity.Reading(base, before, after, session.seconds) if before and after else None
    if note:
        with open(err, "a") as f:
            f.write(f"\n{note}\n")
    if discard or rc != 0:
        why = tail(err)
        if rc < 0:
            why = f"killed by signal {-rc}: {why}"
        return Outcome(rc, reading, reason=why, capacity=probed)
    fields = {"run_id": ctx.run_id, "experiment": point.experiment, "variant": point.variant,
              "placement": point.placement, "threads": str(point.threads), "cpus": values["cpus"],
              "repeat": str(repeat)}
    try:
        if words is not None:
            with open(out, errors="replace") as f:
                rows = [dict(fields, **r) for r in av.read_metrics(metrics_of(spec), f.read())]
        else:
            rows = tidy.fill(fields, open(out).read())
        if os.path.exists(os.path.join(raw, "perf.data")):
            rows += perf_rows(ctx, raw, fields)
        if counting:
            rows += [dict(fields, **r) for r in perfstat.read(raw)[0]]
    except ValueError as e:
        with open(err, "a") as f:
            f.write(f"engine: {e}\n")
        return Outcome(3, reading, reason=str(e), capacity=probed)
    if usage is not None:
        rows += [dict(fields, **r) for r in usage.rows(int(spec["calls"]) if spec.get("calls") else None)]
    rows += [dict(fields, **r) for r in reading.rows()]
    if probed:
        rows += [dict(fields, **r) for r in probed.rows()]
    return Outcome(0, reading, rows, capacity=probed)


def probe_session(root, cpus, base, err, servers=()):
    """The capacity probe's process for this repeat's two probes on `cpus` when there is a baseline to
    judge them by, else None; with the spec's `server` PIDs it reads their share of each CPU too."""
    if not base or any(c not in base for c in cpus):
        return None
    try:
        return capacity.Session(root, cpus, servers)
    except capacity.ProbeError as e:
        with open(err, "a") as f:
            f.write(f"engine: {e}\n")
        return None


def probe(session, err):
    """The session's next reading, or None without one; a failed probe is written to the repeat's
    stderr.log and leaves the repeat unjudged by it."""
    if session is None:
        return None
    try:
        return session.probe()
    except capacity.ProbeError as e:
        with open(err, "a") as f:
            f.write(f"engine: {e}\n")
        return None


def metrics_of(spec):
    return [av.parse_metric(m) for m in spec.get("metric") or []]


def perf_rows(ctx, raw, fields):
    """The summary of raw/perf.data as rows (perfsummary, in process); a failed summary is logged, not fatal."""
    try:
        text = perfsummary.summarise(raw, ctx.perf_event, env=ctx.env)
    except perfsummary.PerfError as e:
        with open(os.path.join(raw, "stderr.log"), "a") as f:
            f.write(f"{e}\n")
        return []
    write_atomic_text(os.path.join(raw, "perf.csv"), text)
    return tidy.fill(fields, text)


def tail(path, n=3):
    try:
        with open(path, errors="replace") as f:
            return " ".join(line.strip() for line in f.readlines()[-n:])
    except OSError:
        return ""


def server_pidfiles(spec):
    """The pidfiles of the server side this point talks to: the spec's own server (`server`), or, when
    `nodes` names contact points, theirs (`nodes_server`). A server it does not talk to (a local cluster
    left running beside a single-node run, or the single node beside a cluster run) is foreign load."""
    return spec["nodes_server"] if spec["nodes"] else spec["server"]


def spec_env(env, spec):
    """The environment of a spec's shell text and command: the sweep's, the server's contact points and
    the load generators' hosts."""
    return dict(env, LAB_NODES=spec["nodes"], LAB_CLIENTS=spec["clients"])


def run_shell(text, root, env, log_path, own_session=False):
    """build / setup / teardown: the spec's own shell text, output kept in the run's log. With
    own_session (teardown) it runs in its own session and is born ignoring SIGINT: a Ctrl-C sent to the
    sweep's process group after the fork but before the child's setsid would otherwise end it (seen once
    in CI: the second Ctrl-C of test_hostile cut a teardown off). SIGTERM keeps its default: a teardown's
    `kill` of what it starts must still work."""
    with open(log_path, "a") as log:
        log.write(f"\n$ {text}\n")
        log.flush()
        t0 = time.monotonic()
        saved = signal.signal(signal.SIGINT, signal.SIG_IGN) if own_session else None
        try:
            p = subprocess.Popen(["bash", "-c", text], cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=log, start_new_session=own_session)
        finally:
            if own_session:
                signal.signal(signal.SIGINT, saved)
        with p:
            try:
                rc = p.wait()
            except BaseException:         # the sweep interrupted: its child goes with it, as before
                p.kill()
                raise
        return rc, time.monotonic() - t0
