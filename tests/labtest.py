"""The one helper of the lab's tests: a run of the lab made by the real engine (`LabRun`, which the `lab_run`
fixture hands a test), or written by hand as test input (`FakeRun`), and `Run`, what both give: a run
folder read the way the tests read it (journal events, tidy rows, report). Also the hand-made run
folders more than one module uses (a NUMA matrix) and the `fleet` fixture (two sshd "hosts").

`slow` is decided by fixtures (conftest.SLOW_FIXTURES): a test that takes `lab_run` or `fleet` measures
or boots and is slow; one that writes a `FakeRun`, or makes a `LabRun` of its own for a dry run or input
the engine refuses, is fast. A `LabRun` not from the fixture refuses to start a sweep and fails the test
whose run measured, so that the rule is not side-stepped by accident."""
import csv
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, children, rows, sh

SPIN = "tests/fixtures/spin.spec"
# One repeat of one point of the spin fixture, no re-measuring: a real run folder, quickly.
QUICK = ("retries=0", "repeats=1", "placements=compact", "threads=1")


def journal(folder, kind=None, partial=False):
    """The events of a run folder's sweep/journal.jsonl (of one `kind` when named). `partial`: the journal
    is read while a sweep writes it, so a line that does not parse (half written) is left out."""
    events = []
    with open(Path(folder) / "sweep" / "journal.jsonl") as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except ValueError:
                if not partial:
                    raise
    return [e for e in events if kind is None or e["event"] == kind]


def set_cells(csv_path, **cells):
    """Rewrite every row of a tidy CSV with the given cells (fixture input: a hostile sender's edit)."""
    rs = rows(csv_path)
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, list(rs[0]))
        w.writeheader()
        w.writerows(dict(r, **cells) for r in rs)


class Run:
    """A run folder and, when a program made it, that program's outcome (returncode, stdout, stderr)."""

    def __init__(self, folder, proc=None):
        self.folder = Path(folder) if folder is not None else None
        self.proc = proc

    returncode = property(lambda self: self.proc.returncode)
    stdout = property(lambda self: self.proc.stdout)
    stderr = property(lambda self: self.proc.stderr)

    def journal(self, kind=None):
        return journal(self.folder, kind)

    def rows(self, experiment=None):
        """The tidy rows of data/<experiment>.csv (of the one experiment when none is named)."""
        if experiment is None:
            (name,) = [f[:-4] for f in os.listdir(self.folder / "data") if f.endswith(".csv")]
            experiment = name
        return rows(self.folder / "data" / f"{experiment}.csv")

    def report(self):
        return (self.folder / "report.md").read_text()


@dataclasses.dataclass(frozen=True)
class LabRun:
    """A run of the lab's own programs, built in steps, each step a new builder:
    `lab_run.spec("x", command="...", threads=1).at("run").sweep("retries=0")`, `lab_run.scale("--", "cmd")`,
    `lab_run.recipe("bench-probes", ...)`. `measures`: made by the `lab_run` fixture (the test is slow)."""
    tmp: Path = None
    env: dict = dataclasses.field(default_factory=dict)
    measures: bool = False
    folder: Path = None
    spec_file: Path = None
    overrides: tuple = ()

    def at(self, folder):
        """The run folder (relative: inside the test's tmp_path), passed as run=."""
        return dataclasses.replace(self, folder=Path(self.tmp) / folder)

    def spec(self, experiment, text="", **keys):
        """A spec of its own, written as `key = value` lines in the order given, then `text` as it is."""
        path = Path(self.tmp) / f"{experiment}.spec"
        path.write_text(f"experiment = {experiment}\n" + "".join(f"{k} = {v}\n" for k, v in keys.items()) + text)
        return dataclasses.replace(self, spec_file=path)

    def args(self, *overrides):
        return dataclasses.replace(self, overrides=self.overrides + tuple(overrides))

    def argv(self, program, *args):
        """python3 -m lab.cli.PROGRAM [run=FOLDER] OVERRIDES ARGS [SPEC]."""
        where = [f"run={self.folder}"] if self.folder is not None else []
        spec = [str(self.spec_file)] if self.spec_file is not None else []
        return ["python3", "-m", f"lab.cli.{program}", *where, *self.overrides, *args, *spec]

    def sweep(self, *args, **kw):
        return self._run(self.argv("sweep", *args), **kw)

    def program(self, name, *args, **kw):
        """Another of the lab's measuring programs (bench_lab, bench_scale): python3 -m lab.cli.NAME ARGS."""
        return self._run(self.argv(name, *args), **kw)

    def record_host(self, folder, **kw):
        """scripts/env.sh FOLDER: the host's record a sweep starts with (seconds of probing tools)."""
        return self._run(["scripts/env.sh", str(folder)], **kw)

    def scale(self, *args, **kw):
        """`./lab scale`: ARGS hold the keys, then -- and the command."""
        return self._run(self.argv("scale", *args), **kw)

    def recipe(self, name, *args, **kw):
        """just NAME ARGS: a recipe that sweeps (bench-probes, bench-mem, ...)."""
        return self._run(["just", name, *self.overrides, *args], **kw)

    def quick(self, name="run", variants=None):
        """A real run of the spin fixture (one repeat of one point), e.g. to be edited as a hostile sender would."""
        extra = [f"variants={variants}"] if variants else []
        return self.at(name).sweep(*QUICK, *extra, SPIN).folder

    def start(self, *args, program="sweep", env=None, **popen):
        """The sweep (or `program`) started, not waited for, for a test that stops it half-way: its Popen."""
        assert self.measures, "a test that sweeps takes the `lab_run` fixture (it is marked slow)"
        return subprocess.Popen(self.argv(program, *args), cwd=ROOT, env={**os.environ, **self.env, **(env or {})},
                                **popen)

    def point(self, experiment, lines, pause="0.1", folder="run"):
        """Sweep one compact 1-thread point of `experiment` (spec `lines`: its command and build) with the
        steal, foreign, switch and capacity guards opened wide, so that only the guard under test can fire;
        one retry after `pause` seconds."""
        return (self.spec(experiment, lines + "placements = compact\nthreads = 1\nrepeats = 1\nwarmup = 0\n"
                          "pin = taskset\nmax_foreign = 100\nmax_neighbour = 100\nmax_steal = 100\n"
                          "max_invol_cs = 1000000000\ncapacity = 0\n")
                .at(folder).sweep("retries=1", f"retry_pause={pause}"))

    def _run(self, argv, env=None, check=True, **kw):
        results = self.env.get("LAB_RESULTS")
        before = set(os.listdir(results)) if results and os.path.isdir(results) else set()
        p = sh(*argv, env={**self.env, **(env or {})}, check=check, **kw)
        folder = self.folder or next((Path(a[4:]) for a in argv if a.startswith("run=")), None)
        if folder is None and results and os.path.isdir(results):
            new = set(os.listdir(results)) - before
            folder = Path(results) / new.pop() if len(new) == 1 else None
        if not self.measures and folder is not None and (folder / "sweep" / "journal.jsonl").exists() \
                and journal(folder, "done", partial=True):
            raise AssertionError(f"{argv} measured: a test that sweeps takes the `lab_run` fixture (marked slow)")
        return Run(folder, p)


@pytest.fixture
def lab_run(tmp_path, results):
    """The lab's measuring programs, run for this test into its own folders: the test is slow."""
    return LabRun(tmp_path, results, measures=True)


# --- two sshd "hosts" on loopback addresses, for the fleet's tests ---------------------------------------
# sshd must be started by its absolute path (it re-executes itself).
SSHD = shutil.which("sshd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or "/usr/sbin/sshd"
SFTP = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/libexec/sftp-server", "/usr/lib/ssh/sftp-server")
             if os.path.exists(p)), "internal-sftp")
ADDRS = {"hostA": "127.0.0.2", "hostB": "127.0.0.3"}
HOSTS = [
    pytest.mark.skipif(not os.path.exists(SSHD), reason="no sshd (apt openssh-server; ./lab test installs it)"),
    pytest.mark.skipif(shutil.which("ansible-playbook", path=os.path.dirname(sys.executable) + os.pathsep
                                    + os.environ.get("PATH", "")) is None,
                       reason="ansible-playbook not installed (./lab test installs ansible-core into .work/tools)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="sshd's privilege separation needs root here"),
]


def free_port(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


class Host:
    def __init__(self, tmp, name, addr):
        self.name, self.addr, self.dir = name, addr, tmp / name
        self.dir.mkdir()
        self.port = free_port(addr)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "host_key")], check=True)
        self.config = self.dir / "sshd_config"
        self.config.write_text(
            f"ListenAddress {addr}:{self.port}\nHostKey {self.dir / 'host_key'}\n"
            f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nPidFile {self.dir / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\n"
            # The test hosts are this machine's root, whose login shell may run `pyenv init`: a pyenv
            # rehash lock left by a killed shell (this test kills a host half-way) would make every later
            # login wait 60 s for it. No real fleet host shares a login shell with the test.
            "SetEnv PYENV_REHASH_TIMEOUT=0\n"
            # Ansible copies files over sftp, as to any real host.
            f"Subsystem sftp {SFTP}\n")
        self.proc = None

    def start(self):
        os.makedirs("/run/sshd", exist_ok=True)
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)],
                                     stderr=open(self.dir / "sshd.log", "a"))
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex((self.addr, self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError(f"sshd on {self.addr}:{self.port} did not start: {(self.dir / 'sshd.log').read_text()}")

    def stop(self):
        """The host goes away: its listener and every session it started."""
        if self.proc and self.proc.poll() is None:
            for pid in [self.proc.pid] + children(self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()


def needs_hosts(f):
    for mark in HOSTS:
        f = mark(f)
    return f


@pytest.fixture
def fleet(tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "client_key")], check=True)
    shutil.copy(tmp_path / "client_key.pub", tmp_path / "authorized_keys")
    hosts = {n: Host(tmp_path, n, a) for n, a in ADDRS.items()}
    known = []
    try:
        for h in hosts.values():
            h.start()
            scan = subprocess.run(["ssh-keyscan", "-t", "ed25519", "-p", str(h.port), h.addr],
                                  capture_output=True, text=True, timeout=20)
            assert scan.stdout.strip(), scan.stderr
            known.append(scan.stdout)
        (tmp_path / "known_hosts").write_text("".join(known))
        inv = tmp_path / "inventory.ini"
        inv.write_text(
            f"[servers]\nhostA ansible_host={ADDRS['hostA']} ansible_port={hosts['hostA'].port} "
            f"lab_dir={hosts['hostA'].dir / 'lab'}\n"
            f"[clients]\nhostB ansible_host={ADDRS['hostB']} ansible_port={hosts['hostB'].port} "
            f"lab_dir={hosts['hostB'].dir / 'lab'}\n"
            f"[all:vars]\nansible_user=root\nansible_ssh_private_key_file={tmp_path / 'client_key'}\n"
            "ansible_python_interpreter=/usr/bin/python3\n")
        env = dict(os.environ, LAB_RESULTS=str(tmp_path / "results"),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                   # Ansible's own working folders stay in the test's folder, on both sides.
                   ANSIBLE_HOME=str(tmp_path / "ansible"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible" / "tmp"),
                   ANSIBLE_REMOTE_TMP=str(tmp_path / "remote-tmp"), ANSIBLE_ASYNC_DIR=str(tmp_path / "async"))
        yield {"tmp": tmp_path, "hosts": hosts, "inv": str(inv), "env": env,
               "known": f"known_hosts={tmp_path / 'known_hosts'}"}
    finally:
        for h in hosts.values():
            h.stop()


class FakeRun:
    """A run folder written by hand, as test input (never a measurement): the folders the engine makes
    (data, plots, env, sweep/specs), then what the test gives."""

    def __init__(self, tmp_path, name="run"):
        self.folder = Path(tmp_path) / name
        for d in ("data", "plots", "env", "sweep/specs"):
            (self.folder / d).mkdir(parents=True)

    def csv(self, experiment, lines):
        (self.folder / "data" / f"{experiment}.csv").write_text("\n".join(lines) + "\n")
        return self

    def spec(self, experiment, text):
        (self.folder / "sweep" / "specs" / f"{experiment}.spec").write_text(text)
        return self

    def env(self, name, text):
        (self.folder / "env" / name).write_text(text)
        return self


TIDY = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"


def numa_run(tmp_path, cells, distances):
    """A numa-mem run (c-probes/mem's matrix): cells {(cpu_node, mem_node): (latency ns, node GB/s)}, three
    repeats each (value, ×1.01, ×0.99); `distances` the firmware's table. Returns its folder."""
    lines = [TIDY]
    for (c, m), (lat, bw) in cells.items():
        for rep, f in enumerate((1.0, 1.01, 0.99), 1):
            v = f"cpu{c}-mem{m}"
            lines += [f"r,numa-mem,{v},unpinned,1,{c * 2},{rep},latency_ns,{lat * f},ns,",
                      f"r,numa-mem,{v},unpinned,1,{c * 2},{rep},read_gbps,{bw / 3 * f},GB/s,",
                      f'r,numa-mem,{v},unpinned,2,"{c * 2},{c * 2 + 1}",{rep},read_gbps,{bw * f},GB/s,',
                      f"r,numa-mem,{v},unpinned,1,{c * 2},{rep},mem_on_node_pct,100,%,"]
    return (FakeRun(tmp_path).csv("numa-mem", lines)
            .spec("numa-mem", "experiment = numa-mem\nchart = heatmap latency_ns\nchart = heatmap read_gbps\n")
            .env("numa-nodes.txt", "".join(f"node{n} cpus={n * 2}-{n * 2 + 1} packages={n} mem_kb=1000 "
                                           f"distance={','.join(map(str, row))}\n" for n, row in enumerate(distances)))
            .folder)


# Two NUMA nodes, remote memory slower and narrower.
TWO_NODES = {(0, 0): (100, 60), (0, 1): (150, 30), (1, 0): (160, 30), (1, 1): (100, 60)}
