#!/usr/bin/env python3
"""The cache point's load generators on other hosts (spec key `clients`; cache-server/point.sh calls it).

  loadclients.py address --clients=DEST[,DEST…]
      this host's address every client reaches it by (the server listens there)
  loadclients.py run --clients=DEST[,…] --server=ADDR --port=N --measure-file=F --raw=DIR --timeout=S -- LOADGEN…
      on the server's host: loadgen on every client at once over ssh; F is created once all of them are
      in their measured window; prints the point's rows (tidy CSV) and records the network path
  loadclients.py client --server=ADDR --port=N --timeout=S -- LOADGEN…
      on a client host (what ssh runs there): loadgen against the server under the guard's window over
      this host's CPUs; prints `@boot_id`, `@measuring` and then its rows

Exit: 0 rows; 1 a failed point (a client unreachable, its host key unknown, loadgen failed: the host is
named); 2 bad arguments.
"""
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from lab import ROOT
from lab.core.runfolder import of_raw, write_atomic_text
from lab.core.term import visible
from lab.engine.guard import Window
from lab.errors import LabError, program, run
from lab.fleet import clients as cl

LOG_MOST = 1 << 20          # a client's stderr kept in raw/, at most
METRIC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
UNIT = re.compile(r"[A-Za-z0-9%/_.µ-]{0,16}")


def fail(msg, code=1):
    """A failed point (a client unreachable, loadgen failed: the host is named): its own exit code, not bad
    input's (a LabError, exit 2)."""
    print(f"loadclients: {visible(msg)}", file=sys.stderr)
    sys.exit(code)


def options(argv, want):
    opts, rest = {}, []
    for i, a in enumerate(argv):
        if a == "--":
            rest = argv[i + 1:]
            break
        k, eq, v = a.partition("=")
        if not eq or k[2:] not in want or not k.startswith("--"):
            raise LabError(f"unknown argument {a!r} (want {' '.join('--' + w + '=' for w in want)} -- LOADGEN ARGS)")
        opts[k[2:]] = v
    missing = [w for w in want if w not in opts]
    if missing:
        raise LabError(f"missing --{missing[0]}=")
    return opts, rest


def seconds(text, name):
    try:
        v = float(text)
        if not 0 < v <= 86400:
            raise ValueError
        return v
    except ValueError:
        raise LabError(f"--{name} wants seconds from 0 to 86400, not {text!r}")


def ssh_config():
    cfg = os.environ.get("LAB_SSH_CONFIG") or None
    if cfg and not os.path.isfile(cfg):
        raise LabError(f"LAB_SSH_CONFIG={cfg}: no such file")
    return cfg


def csv_rows(lines):
    """A client's metric,value,unit lines. What a host sends is data: a metric or unit that is not a plain
    name, or a value that is not a finite number, is dropped, never written into the run as it came."""
    out = []
    for line in lines:
        parts = line.strip().split(",")
        if len(parts) == 3 and parts[0] != "metric" and METRIC.fullmatch(parts[0]) and UNIT.fullmatch(parts[2]):
            try:
                v = float(parts[1])
                if math.isfinite(v):
                    out.append((parts[0], v, parts[2]))
            except ValueError:
                pass
    return out


def cmd_client(argv):
    """On the client host: loadgen under a guard window over the CPUs it may use."""
    opts, words = options(argv, ("server", "port", "timeout"))
    loadgen = os.path.join(ROOT, "cache-server", "build", "loadgen")
    if not os.access(loadgen, os.X_OK):
        raise LabError(f"{loadgen} missing on {os.uname().nodename}: run 'just build-cache' there")
    print(f"@boot_id {cl.boot_id()}", flush=True)
    cpus = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        measuring = os.path.join(tmp, "measuring")
        argv = [loadgen, "-s", opts["server"], "-p", opts["port"], "--measure-file", measuring, *words]
        window = Window(cpus, cpus)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        said = threading.Event()

        def watch():
            while p.poll() is None and not os.path.exists(measuring):
                time.sleep(0.02)
            if os.path.exists(measuring):
                print("@measuring", flush=True)
            said.set()
        threading.Thread(target=watch, daemon=True).start()
        try:
            out, _ = p.communicate(timeout=seconds(opts["timeout"], "timeout"))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail(f"loadgen ran past --timeout={opts['timeout']} s on {os.uname().nodename}")
        reading = window.stop()
        said.wait(1)
    if p.returncode != 0:
        sys.exit(p.returncode)
    print("metric,value,unit")
    sys.stdout.write(out)
    for r in reading.rows():
        print(f"{r['metric']},{r['value']},{r['unit']}")
    print(f"client_cpus_seen,{len(cpus)},count")


class Remote:
    """One client's ssh session: its lines read as they come, its stderr kept (bounded)."""

    def __init__(self, dest, argv, log):
        self.dest, self.lines, self.boot, self.measuring = dest, [], None, threading.Event()
        self.log = open(log, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, errors="replace")
        self.err = []
        self.threads = [threading.Thread(target=self.read_out, daemon=True),
                        threading.Thread(target=self.read_err, daemon=True)]
        for t in self.threads:
            t.start()

    def read_out(self):
        for line in self.p.stdout:
            if line.startswith("@boot_id "):
                self.boot = line.split()[1][:64]
            elif line.startswith("@measuring"):
                self.measuring.set()
            elif len(self.lines) < 10000:
                self.lines.append(line[:1000])

    def read_err(self):
        kept = 0
        for line in self.p.stderr:
            if kept < LOG_MOST:
                self.log.write(line)
                kept += len(line)
            self.err = (self.err + [line.strip()])[-3:]

    def finish(self, deadline):
        try:
            self.p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise cl.ClientError(f"client host {self.dest}: no answer within the point's time limit")
        for t in self.threads:
            t.join(5)
        self.log.close()
        last = " ".join(e for e in self.err if e)[-300:]
        if self.p.returncode == 255:
            raise cl.ClientError(f"client host {self.dest} unreachable: {last or 'ssh failed'}")
        if self.p.returncode != 0:
            raise cl.ClientError(f"client host {self.dest}: load generator failed (exit {self.p.returncode}): "
                                 f"{last}", self.p.returncode)

    def kill(self):
        # ssh is one process in point.sh's group (so the engine's timeout reaches it too); killing it
        # ends the session, and the remote loadgen stops at its own --duration
        self.p.kill()
        self.p.wait()


def record_path(dests, remotes, server):
    """raw/network.txt of the point, and env/network.txt of its run (what the report's table shows)."""
    own = cl.boot_id()
    lines, names = [], set()
    for r in remotes:
        name, detail = cl.path_name(server, r.boot or "?", own)
        names.add(name)
        lines.append(f"client={r.dest} path={name} server={server} detail={detail}\n")
    text = f"path={' + '.join(sorted(names))}\n" + "".join(lines)
    return text


def cmd_run(argv):
    opts, words = options(argv, ("clients", "server", "port", "measure-file", "raw", "timeout"))
    dests = cl.parse(opts["clients"])       # ClientError: bad input, exit 2
    if not dests:
        raise LabError("--clients= is empty")
    config = ssh_config()
    limit = seconds(opts["timeout"], "timeout")
    remote = ["env", "PYTHONPATH=" + os.path.join(cl.remote_lab(ROOT), "scripts")]
    client_words = [*remote, "python3", "-m", "lab.cli.loadclients", "client", f"--server={opts['server']}",
                    f"--port={opts['port']}", f"--timeout={limit:g}", "--", *words]
    argvs = {d: cl.remote_argv(d, client_words, config) for d in dests}
    os.makedirs(opts["raw"], exist_ok=True)
    deadline = time.monotonic() + limit + 2 * cl.SSH_CONNECT_TIMEOUT
    # every client starts at once; the window opens for the server when the last one is measuring
    remotes = [Remote(d, argvs[d], os.path.join(opts["raw"], f"client-{d}.log")) for d in dests]
    try:
        for r in remotes:
            while not r.measuring.wait(0.05):
                if r.p.poll() is not None or time.monotonic() > deadline:
                    break
        if all(r.measuring.is_set() for r in remotes):
            open(opts["measure-file"], "w").close()
        for r in remotes:
            r.finish(deadline)
    except cl.ClientError as e:
        for r in remotes:
            r.kill()
        code = e.args[1] if len(e.args) > 1 and e.args[1] == 2 else 1
        fail(str(e), code)
    text = record_path(dests, remotes, opts["server"])
    write_atomic_text(os.path.join(opts["raw"], "network.txt"), text)
    rf = of_raw(opts["raw"])
    if rf is not None:
        rf.write_text("env/network.txt", text)
    print("metric,value,unit")
    for metric, value, unit in cl.merge({r.dest: csv_rows(r.lines) for r in remotes}):
        print(f"{metric},{value:.10g},{unit}")


def cmd_address(argv):
    opts, _ = options(argv, ("clients",))
    try:
        print(cl.server_address(cl.parse(opts["clients"]), ssh_config()))
    except (cl.ClientError, subprocess.TimeoutExpired) as e:
        fail(str(e))


@program("loadclients")
def main(argv):
    cmds = {"address": cmd_address, "run": cmd_run, "client": cmd_client}
    if not argv or argv[0] not in cmds:
        raise LabError("usage: loadclients.py address|run|client --KEY=VALUE… [-- LOADGEN ARGS]")
    return cmds[argv[0]](argv[1:])


if __name__ == "__main__":
    run(main)
