"""Several hosts through Ansible, without another machine: each "host" is an sshd of its own on a
loopback address (127.0.0.2, 127.0.0.3) with its own host key, its own copy of the lab (lab_dir) and an
authorized key the test generates; known_hosts is written from ssh-keyscan here, in the fixture only.
fleet-check, fleet-plan, and a fleet-sweep of one cheap C experiment on both hosts end to end; one host
made unreachable half-way (its sshd and its sweep killed) is reported while the other finishes, and the
same command run again resumes it; both run folders are fetched and compared on one page."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import browser
from conftest import ROOT, TOPO
from labtest import ADDRS, journal, needs_hosts

pytestmark = pytest.mark.slow   # sshd hosts, Ansible runs and fleet sweeps
from lab.core.runfolder import RunFolder

FLEET = ("-m", "lab.cli.fleet")
# One cheap experiment, short: 2 points × 4 repeats per host; no re-measuring, since the two hosts share
# this machine's CPUs with each other (and other work) by construction.
SWEEP = ["profile=smoke", "experiments/counters.spec", "variants=shared-atomic", "placements=compact",
         "repeats=4", "retries=0"]


def fleet_cmd(f, *args, check=None, timeout=300):
    p = subprocess.run([sys.executable, *FLEET, *args], cwd=ROOT, env=f["env"], capture_output=True, text=True,
                       timeout=timeout)
    if check is not None:
        assert p.returncode == check, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p


@needs_hosts
def test_check_and_plan_read_every_host(fleet):
    p = fleet_cmd(fleet, "check", f"inventory={fleet['inv']}", fleet["known"], check=0)
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.startswith("host") and not ln.startswith("host ")}
    assert set(rows) == {"hostA", "hostB"}, p.stdout
    for name, line in rows.items():
        assert ADDRS[name] in line and " PUs" in line and line.rstrip().endswith("ok"), line
    p = fleet_cmd(fleet, "plan", f"inventory={fleet['inv']}", fleet["known"], "hosts=servers", *SWEEP, check=0)
    assert "hostA" in p.stdout and "hostB" not in p.stdout.split("fleet:")[0], p.stdout
    assert "fleet: 2 points on 1 host(s), ETA" in p.stdout, p.stdout


def plan_rows(out):
    """fleet-plan's table: {host: line}."""
    return {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("host") and not ln.startswith("host ")}


def s_per_run(dry_run_txt):
    """The s/run column of a dry run's point lines (lab/engine/price.py)."""
    return {float(ln.split()[-2]) for ln in open(dry_run_txt) if ln.startswith("counters ")}


@needs_hosts
def test_plan_prices_each_host_from_its_own_history(fleet):
    """hostA has measured this sweep before (a run in its lab_dir's results/), hostB never: hostA's dry run
    takes seconds per run from hostA's own run, read there by the lab's history reader, hostB's from the
    spec's cost. Then hostB's python answers the reader with a crafted summary: refused, by hostB's name."""
    from lab.core.runfolder import hostname
    from lab.engine.pricehistory import local
    a, b = fleet["hosts"]["hostA"], fleet["hosts"]["hostB"]
    run = a.dir / "lab" / "results" / f"20260101T000000Z-{hostname()}"
    sh_env = dict(fleet["env"], LAB_RESULTS=str(a.dir / "lab" / "results"))
    subprocess.run([sys.executable, "-m", "lab.cli.sweep", f"run={run}", *SWEEP, "repeats=1",
                    "draw=0"], cwd=ROOT, env=sh_env, check=True, capture_output=True, timeout=300)
    own = local(str(a.dir / "lab" / "results")).get("counters", "smoke")
    assert own and own[3] == run.name, own

    p = fleet_cmd(fleet, "plan", f"inventory={fleet['inv']}", fleet["known"], *SWEEP, check=0)
    rows = plan_rows(p.stdout)
    assert "history of hostA" in rows["hostA"] and "spec cost" not in rows["hostA"], p.stdout
    assert "spec cost (no earlier run of these there)" in rows["hostB"], p.stdout
    out = glob.glob(str(fleet["tmp"] / "results" / "fleet-hosts-*"))
    assert len(out) == 1, out
    dry = {h: os.path.join(out[0], h, "dry-run.txt") for h in ("hostA", "hostB")}
    assert s_per_run(dry["hostA"]) == {float(f"{own[0]:.5g}")}, open(dry["hostA"]).read()
    assert s_per_run(dry["hostB"]) == {0.1}, open(dry["hostB"]).read()     # counters.spec: cost[smoke] = 0.1
    assert f"(run {run.name})" in open(dry["hostA"]).read()

    # A host whose python says something else than the lab's reader would (a compromised host): its
    # summary is data, refused by name; the host is priced from the specs, the others as before. It reads
    # the reader it is sent first: exiting before Ansible has written it all is a broken pipe (rc 32),
    # a reader that failed rather than a crafted answer.
    fake = fleet["tmp"] / "hostB-python"
    fake.write_text("#!/bin/sh\ncase \"$1\" in -c) cat >/dev/null; printf '%s\\n' '{\"format\": "
                    "\"scaling-lab history 1\", "
                    "\"host\": \"hostB\", \"entries\": [{\"experiment\": \"counters\", \"profile\": \"smoke\", "
                    "\"seconds_per_run\": -1, \"repeats\": null, \"remeasured_per_repeat\": 0, \"run\": \"x\"}]}'; "
                    "exit 0;; esac\nexec /usr/bin/python3 \"$@\"\n")
    fake.chmod(0o755)
    inv = fleet["tmp"] / "crafted.ini"
    inv.write_text(open(fleet["inv"]).read().replace(f"lab_dir={b.dir / 'lab'}\n",
                                                     f"lab_dir={b.dir / 'lab'} ansible_python_interpreter={fake}\n"))
    p = fleet_cmd(fleet, "plan", f"inventory={inv}", fleet["known"], *SWEEP, check=1)
    rows = plan_rows(p.stdout)
    assert "spec cost (history refused)" in rows["hostB"] and rows["hostB"].rstrip().endswith("history refused")
    assert "history of hostA" in rows["hostA"] and rows["hostA"].rstrip().endswith("ok"), p.stdout
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("fleet: hostB: its history summary: entry 1: "), p.stderr
    assert "seconds_per_run must be a finite number" in p.stderr, p.stderr


def test_a_history_summary_is_data_checked_strictly(tmp_path):
    """What a host says about its history is parsed, never obeyed: exact keys, plain names, finite values
    in bounds, a bounded size; anything else is one line naming where it came from."""
    from lab.engine.pricehistory import MAX_BYTES, HistoryError, load
    entry = {"experiment": "counters", "profile": "smoke", "seconds_per_run": 0.25, "repeats": 3,
             "remeasured_per_repeat": 0.5, "run": "20260101T000000Z-h"}

    def doc(**change):
        return {"format": "scaling-lab history 1", "host": "h", "entries": [dict(entry, **change)]}
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc()))
    assert load(str(good)).get("counters", "smoke") == (0.25, 3.0, 0.5, "20260101T000000Z-h")
    assert load(str(good)).get("counters", "default") is None
    crafted = {
        "nan": json.dumps(doc()).replace("0.25", "NaN"),
        "inf": json.dumps(doc()).replace("0.25", "1e999"),
        "zero": json.dumps(doc(seconds_per_run=0)),
        "negative": json.dumps(doc(remeasured_per_repeat=-1)),
        "bool": json.dumps(doc(repeats=True)),
        "string": json.dumps(doc(seconds_per_run="1")),
        "huge": json.dumps(doc(seconds_per_run=1e12)),
        "shell": json.dumps(doc(experiment="x;rm -rf ~")),
        "path": json.dumps(doc(run="../../etc")),
        "extra key": json.dumps(doc(command="id")),
        "twice": json.dumps(doc()).replace('"profile": "smoke"', '"profile": "smoke", "profile": "x"'),
        "format": json.dumps(dict(doc(), format="other 1")),
        "host": json.dumps(dict(doc(), host="\x1b]0;x\x07")),
        "many": json.dumps(dict(doc(), entries=[dict(entry, profile=f"p{i}") for i in range(1001)])),
        "big": json.dumps(doc()) + " " * MAX_BYTES,
        "deep": "[" * 100000 + "]" * 100000,
        "binary": "\udcff",
    }
    for name, text in crafted.items():
        path = tmp_path / "bad.json"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        with pytest.raises(HistoryError) as e:
            load(str(path), label="hostB: its summary")
        msg = str(e.value)
        assert msg.startswith("hostB: its summary: ") and "\n" not in msg and len(msg) < 300, (name, msg)


@needs_hosts
def test_unknown_host_key_is_refused_by_name(fleet):
    """A host whose key is not in known_hosts is not trusted: that host fails, by name; the other is read."""
    kh = fleet["tmp"] / "known_hosts_a_only"
    kh.write_text("".join(ln + "\n" for ln in (fleet["tmp"] / "known_hosts").read_text().splitlines()
                          if ADDRS["hostA"] in ln))
    p = fleet_cmd(fleet, "check", f"inventory={fleet['inv']}", f"known_hosts={kh}", check=1)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("hostB"))
    assert "unreachable" in line and "ost key verification failed" in line, p.stdout
    assert next(ln for ln in p.stdout.splitlines() if ln.startswith("hostA")).rstrip().endswith("ok"), p.stdout


@needs_hosts
def test_a_reason_lost_to_a_broken_pipe_is_asked_again(fleet, monkeypatch, tmp_path):
    """With pipelining, ssh may die before Ansible writes the module: Ansible then says only "Data could
    not be sent ... Broken pipe" (seen on CI). The lab asks that host again without pipelining and says ssh's
    own reason. The race is made certain here by rewriting the first play's words for hostB."""
    from lab.fleet import play
    kh = tmp_path / "known_hosts_a_only"
    kh.write_text("".join(ln + "\n" for ln in (fleet["tmp"] / "known_hosts").read_text().splitlines()
                          if ADDRS["hostA"] in ln))
    real, plays = play.Outcome.__init__, []

    def lossy(self, hosts, status_path, rc):
        real(self, hosts, status_path, rc)
        plays.append(list(hosts))
        if len(plays) == 1 and self.unreachable("hostB"):
            self.by_host["hostB"] = (f"unreachable: Kernel and virtualization facts: {play.LOST_REASON} "
                                     f"'{ADDRS['hostB']}'. Make sure ...: [Errno 32] Broken pipe")
    monkeypatch.setattr(play.Outcome, "__init__", lossy)
    env = play.environment(known_hosts=str(kh), base=fleet["env"])
    out = play.run("reach.yml", fleet["inv"], ["hostA", "hostB"], {}, env, str(tmp_path / "a.log"))
    assert plays == [["hostA", "hostB"]] and "Broken pipe" in out.by_host["hostB"]    # reach is never re-asked
    plays.clear()
    out = play.run("check.yml", fleet["inv"], ["hostB"], {"out_dir": str(tmp_path)}, env, str(tmp_path / "c.log"))
    assert plays == [["hostB"], ["hostB"]], plays
    assert "ost key verification failed" in out.by_host["hostB"] and "Broken pipe" not in out.by_host["hostB"]


@needs_hosts
def test_bad_input_is_one_line_and_exit_2(fleet):
    p = fleet_cmd(fleet, "sweep", f"inventory={fleet['inv']}", "run=/tmp/x", check=2)
    assert p.stderr.count("\n") == 1 and "run=" in p.stderr, p.stderr
    bad = fleet["tmp"] / "bad.ini"
    bad.write_text("[servers]\nok-host ansible_host=127.0.0.2\n'bad;name' ansible_host=127.0.0.3\n")
    p = fleet_cmd(fleet, "check", f"inventory={bad}", check=2)
    assert f"{bad}:3:" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    p = fleet_cmd(fleet, "sweep", f"inventory={fleet['inv']}", "threads=two", *SWEEP[:2], check=2)
    assert p.stderr.count("\n") == 1, p.stderr


def host_run(host):
    """The host's run folder of the fleet sweep (<lab_dir>/results/<stamp>-fleet-<hostname>), or None."""
    runs = glob.glob(str(host.dir / "lab" / "results" / "*-fleet-*"))
    return RunFolder(runs[0]) if runs else None


def host_journal(host):
    """The host's journal as its sweep writes it: [] before there is one, a half-written line left out."""
    rf = host_run(host)
    return journal(rf.path, partial=True) if rf is not None and os.path.exists(rf.journal_path) else []


@needs_hosts
def test_sweep_on_two_hosts_survives_a_host_lost_half_way_and_resumes_it(fleet):
    args = [sys.executable, *FLEET, "sweep", f"inventory={fleet['inv']}", fleet["known"], "poll=2", *SWEEP]
    b = fleet["hosts"]["hostB"]
    first = subprocess.Popen(args, cwd=ROOT, env=fleet["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        # hostB goes away half-way: once it has measured a repeat, its sshd and its sweep are killed.
        deadline = time.monotonic() + 300   # shipping and each host's first ./lab, on a loaded machine
        while not any(e["event"] == "done" for e in host_journal(b)):
            assert first.poll() is None and time.monotonic() < deadline, \
                first.stdout.read() if first.poll() else "timeout"
            time.sleep(0.1)
        pid = int(host_run(b).read("sweep/lock").split()[0])
        b.stop()
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        out, _ = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 1, out
    assert "hostB: given up for now" in out and "unreachable" in out, out
    final = dict(re.findall(r"^(host[AB])  +(\S+)", out, re.M))     # the last table: host, state, folder
    assert final == {"hostA": "complete", "hostB": "unreachable"}, out
    done_before = sum(e["event"] == "done" for e in host_journal(b))
    assert 1 <= done_before < 8, host_journal(b)

    # The host is back: the same command resumes its run folder; hostA is kept as it was.
    b.start()
    p = subprocess.run(args, cwd=ROOT, env=fleet["env"], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "(resumed)" in p.stdout and "hostA: complete in an earlier attempt" in p.stdout, p.stdout
    ev = host_journal(b)
    keys = [e["key"] for e in ev if e["event"] == "done"]
    assert len(keys) == 8 and len(set(keys)) == 8, keys          # nothing measured twice, nothing missing
    assert sum(e["event"] == "sweep" for e in ev) == 2, ev       # one run folder, resumed once

    fdir = glob.glob(str(fleet["tmp"] / "results" / "fleet-2*"))
    assert len(fdir) == 1, fdir
    fdir = fdir[0]
    for h in ("hostA", "hostB"):
        rf = RunFolder(os.path.join(fdir, h))
        assert os.path.exists(rf.data_csv("counters")), os.listdir(rf.path)
        assert os.path.exists(rf.report_html)
        # the shipped code says what it is: the controller's commit, in the host's env/
        git = open(rf.env("git.txt")).read()
        assert json.load(open(os.path.join(fdir, "fleet.json")))["identity"]["commit"] in git, git
    page = open(os.path.join(fdir, "fleet.html")).read()
    md = open(os.path.join(fdir, "fleet.md")).read()
    assert "hostA median (CI)" in page and "hostB median (CI)" in page, page[:2000]
    row = next(ln for ln in md.splitlines() if ln.startswith("| counters | shared-atomic | compact | 1 | ops_per_s"))
    assert row.count(" ops/s") + row.count("/s (") >= 2 and "×" in row, row
    assert json.load(open(os.path.join(fdir, "fleet.json")))["state"] == "complete"
    if browser.chromium():      # the page opens from the file system, fetches nothing, runs without error
        b = browser.Browser()
        try:
            b.load(os.path.join(fdir, "fleet.html"))
            assert b.errors() == [] and all(r.startswith("file://") for r in b.requests()), (b.errors(), b.requests())
            assert b.eval("document.querySelectorAll('svg.chart').length") >= 1
        finally:
            b.close()


def test_a_fetched_archive_is_only_a_run_folder(tmp_path):
    """What a host sends back is data: a link, a path out of the folder, or two top folders are refused."""
    import io
    import tarfile

    from lab.fleet.folder import FetchError, unpack

    def archive(name, members):
        path = tmp_path / name
        with tarfile.open(path, "w:gz") as t:
            for m, data in members:
                info = tarfile.TarInfo(m)
                if data is None:
                    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                    t.addfile(info)
                else:
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        return str(path)
    good = archive("good.tgz", [("run/data/x.csv", b"a,b\n"), ("run/sweep/state", b"complete\n")])
    unpack(good, str(tmp_path / "hostA"))
    assert (tmp_path / "hostA" / "data" / "x.csv").read_bytes() == b"a,b\n"
    for name, members in (("link.tgz", [("run/env/lscpu.txt", None)]),
                          ("escape.tgz", [("run/../../evil", b"x")]),
                          ("two.tgz", [("run/a", b"x"), ("other/b", b"y")])):
        with pytest.raises(FetchError):
            unpack(archive(name, members), str(tmp_path / "hostB"))
    assert not (tmp_path / "evil").exists() and not (tmp_path / "hostB").exists()


def test_progress_reads_a_run_as_its_sweep_goes(tmp_path, results):  # noqa: F811 (the fixture imported above)
    """What fleet-sweep polls on each host: the state, whether the engine still runs, repeats done."""
    run = tmp_path / "run"
    sweep = subprocess.Popen([sys.executable, "-m", "lab.cli.sweep", f"run={run}", *SWEEP[:4],
                              "repeats=1", "retries=0"], cwd=ROOT,
                             env=dict(os.environ, **results, PATH=os.path.dirname(sys.executable) + os.pathsep
                                      + os.environ.get("PATH", "")),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = []
    try:
        while sweep.poll() is None:
            p = subprocess.run([sys.executable, "-m", "lab.cli.progress", str(run)],
                               capture_output=True, text=True, check=True)
            seen.append(json.loads(p.stdout))
            time.sleep(0.05)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0
    assert any(s["state"] == "running" and s["alive"] for s in seen), seen[-3:]
    p = subprocess.run([sys.executable, "-m", "lab.cli.progress", str(run)],
                       capture_output=True, text=True, check=True)
    last = json.loads(p.stdout)
    assert last["state"] == "complete" and not last["alive"] and last["done"] == 2 and last["sweeps"] == 1, last
    assert last["last"].startswith("counters shared-atomic compact threads="), last
    assert last["left"] == 1 and last["eta_s"] >= 0, last   # the last repeat of the plan: itself alone


def test_what_a_host_sends_back_is_shown_not_obeyed(capsys):
    # A host's CPU model or error text reaches the terminal through the fleet's one printer.
    from lab.cli.fleet import common as fleet  # the fleet's one printer
    fleet.say("hostA | \x1b]0;owned\x07\x1b[2J Xeon | ok\nhostB | EPYC | ok")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07\\x1b[2J Xeon" in out and out.count("\n") == 2     # the table's lines stay lines


@needs_hosts
def test_cluster_plan_on_the_cassandra_hosts(fleet, tmp_path):
    """cluster-up with an inventory, as a plan (Ansible's check mode): every `cassandra` host is reached,
    the first is the seed, each node's CQL address and Java are shown, and nothing is started."""
    hosts = fleet["hosts"]
    inv = tmp_path / "cassandra.ini"
    inv.write_text(fleet["tmp"].joinpath("inventory.ini").read_text() +
                   "[cassandra]\n" + "".join(f"{n} cassandra_port=29142 cassandra_jmx_port={27400 + i}\n"
                                             for i, n in enumerate(hosts)))
    env = dict(fleet["env"], CLUSTER_WORK=str(tmp_path / "cluster"))
    # through cassandra/cluster.sh, as `./lab cluster-up inventory=… plan=1` runs it
    p = subprocess.run([os.path.join(ROOT, "cassandra", "cluster.sh"), "up", f"inventory={inv}", fleet["known"],
                        "plan=1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.startswith("host") and not ln.startswith("host ")}
    assert set(rows) == {"hostA", "hostB"}, p.stdout
    assert "127.0.0.2:29142" in rows["hostA"] and " seed " in rows["hostA"] and rows["hostA"].rstrip().endswith("ok")
    assert "127.0.0.3:29142" in rows["hostB"] and " joins " in rows["hostB"], p.stdout
    assert "plan only: nothing was started" in p.stdout
    assert not (tmp_path / "cluster" / "cluster.txt").exists()
    assert not any((h.dir / "lab").exists() for h in hosts.values())
    p = subprocess.run([sys.executable, *FLEET, "cluster-up", f"inventory={inv}", fleet["known"], "nodes=3"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "nodes=3" in p.stderr, p.stderr



def test_the_nix_shell_is_its_variables_and_the_store_paths_they_name():
    """What a Nix host gets (scripts/lab/fleet/nixenv.py): the shell's variables (PATH by its store entries only)
    and the store paths they name; Nix's own settings and this machine's session stay here."""
    from lab.fleet.nixenv import digest, shell
    gcc, py, jars = (f"/nix/store/{c * 32}-{n}" for c, n in (("a", "gcc-wrapper-14"), ("b", "python3-3.13"),
                                                             ("c", "cassandra-jars")))
    env = {"IN_NIX_SHELL": "impure", "PATH": f"{gcc}/bin:/usr/bin:{py}/bin:/root/.cargo/bin",
           "NIX_CFLAGS_COMPILE": f"-isystem {py}/include", "NIX_HARDENING_ENABLE": "", "CC": "gcc",
           "CASSANDRA_LIB": jars, "NIX_SSHOPTS": "-p 22", "NIX_PATH": f"nixpkgs={gcc}", "HOME": "/root",
           "_": f"{py}/bin/python3", "BASH_FUNC_x%%": f"() {{ {gcc}; }}", "EDITOR": "vi"}
    variables, paths = shell(env)
    assert variables == {"IN_NIX_SHELL": "impure", "PATH": f"{gcc}/bin:{py}/bin", "NIX_CFLAGS_COMPILE":
                         f"-isystem {py}/include", "NIX_HARDENING_ENABLE": "", "CC": "gcc", "CASSANDRA_LIB": jars}
    assert paths == sorted([gcc, py, jars])
    assert shell(dict(env, IN_NIX_SHELL="")) == ({}, [])
    assert digest(paths) != digest(paths[:2]) and digest([]).startswith("none")


NIX_STORE = shutil.which("nix-store")


@needs_hosts
@pytest.mark.skipif(NIX_STORE is None or shutil.which("nix-daemon") is None or shutil.which("nix") is None,
                    reason="no nix here (nix copy, nix-store --add and ssh-ng's nix-daemon)")
def test_a_nix_host_gets_the_controllers_store_paths(fleet):
    """A Nix host (lab_nix=true) gets the controller's Nix shell by `nix copy` over ssh (host key checked)
    and its sweep runs in it; the other host (lab_nix=false) builds with its own packages, from the same
    git archive. Nothing here builds the flake (no Nix cache): the controller's "shell" is one store path
    this test makes (nix-store --add) holding the `just` the host's ./lab runs (in a Nix shell, ./lab
    installs nothing: just must come from the shell), and the controller runs with IN_NIX_SHELL and that
    path first on PATH, as `nix develop` would. The hosts are this machine, so hostA's copy goes into a
    store of its own (lab_nix_store=local?root=…) where the path was not valid before."""
    import lab.fleet.nix
    from lab.fleet.nixenv import digest
    tmp, hosts = fleet["tmp"], fleet["hosts"]
    pkg = tmp / "lab-test-shell"
    (pkg / "bin").mkdir(parents=True)
    shutil.copy(shutil.which("just", path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]),
                pkg / "bin" / "just")
    # nix/shell.nix's python3 carries the reading side's libraries (NumPy, SciPy, Jinja2…): the stand-in's
    # python3 is the test's own, which ./lab gave the same pins (a host's system python3 has none of them)
    (pkg / "bin" / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (pkg / "bin" / "python3").chmod(0o755)
    path = subprocess.run([NIX_STORE, "--add", str(pkg)], capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(r"/nix/store/[0-9a-z]{32}-lab-test-shell", path), path
    root = tmp / "hostA-store"
    text = open(fleet["inv"]).read()
    inv = tmp / "nix.ini"
    inv.write_text(text.replace(f"lab_dir={hosts['hostA'].dir / 'lab'}\n",
                                f"lab_dir={hosts['hostA'].dir / 'lab'} lab_nix=true lab_nix_store=local?root={root}\n")
                       .replace(f"lab_dir={hosts['hostB'].dir / 'lab'}\n",
                                f"lab_dir={hosts['hostB'].dir / 'lab'} lab_nix=false\n"))
    env = dict(fleet["env"], IN_NIX_SHELL="impure", LAB_NIX_PINNED_NIXPKGS="test-stand-in",
               PATH=f"{path}/bin" + os.pathsep + fleet["env"]["PATH"])
    shell_env = dict(fleet, env=env)
    args = ["sweep", f"inventory={inv}", fleet["known"], "poll=2", *SWEEP[:4], "repeats=1"]

    # bad inventory values: one line naming the file and line, exit 2, nothing run
    for bad, word in (("lab_nix=true", "lab_nix=maybe"), (f"lab_nix_store=local?root={root}", "lab_nix_store=a&b=c")):
        crafted = tmp / "crafted.ini"
        crafted.write_text(inv.read_text().replace(bad, word))
        p = fleet_cmd(shell_env, *args[:1], f"inventory={crafted}", *args[2:], check=2)
        assert p.stderr.count("\n") == 1 and f"{crafted}:2:" in p.stderr and word.split("=")[0] in p.stderr, p.stderr
    p = fleet_cmd(fleet, *args, check=2)      # lab_nix=true from a controller outside a Nix shell
    assert "hostA: lab_nix=true, but this controller is not in the lab's Nix shell" in p.stderr, p.stderr

    never = subprocess.run(["nix", "--extra-experimental-features", "nix-command", "path-info", "--offline",
                            "--store", f"local?root={root}", path], capture_output=True, text=True)
    assert never.returncode != 0, never.stdout
    p = fleet_cmd(shell_env, *args, check=0, timeout=600)
    assert "hostA: sweep started in" in p.stdout \
        and "Nix host: the controller's 1 store paths copied there" in p.stdout
    assert "hostB: sweep started in" in p.stdout and "hostB" in p.stdout.split("the host's own packages")[0], p.stdout
    # the path is valid in hostA's store now: nix copy put it there
    there = subprocess.run(["nix", "--extra-experimental-features", "nix-command", "path-info", "--offline",
                            "--store", f"local?root={root}", path], capture_output=True, text=True)
    assert there.returncode == 0 and there.stdout.strip() == path, there.stderr
    fdir = glob.glob(str(tmp / "results" / "fleet-2*"))[0]
    st = json.load(open(os.path.join(fdir, "fleet.json")))
    assert st["nix_paths"] == [path] and open(os.path.join(fdir, "nix-paths.txt")).read() == path + "\n"
    assert {h: j["nix"] in (True, "True") for h, j in st["jobs"].items()} == {"hostA": True, "hostB": False}, st
    # hostA's sweep ran in the shell: its env says so, and its build record names the controller's store paths
    a, b = (RunFolder(os.path.join(fdir, h)) for h in ("hostA", "hostB"))
    nix_txt = open(a.env("nix.txt")).read().splitlines()
    assert nix_txt[0] == "IN_NIX_SHELL=impure" and f"{path}/bin" in nix_txt, nix_txt
    assert nix_txt[nix_txt.index(next(ln for ln in nix_txt if ln.startswith("--- store paths"))) + 1:] == [path]
    build = lambda rf: next(ln for ln in open(rf.env("build.txt")) if ln.startswith("nix store: ")).strip()  # noqa: E731
    assert build(a) == f"nix store: {digest([path])}", build(a)
    assert build(b).startswith("nix store: none (not in a Nix shell"), build(b)
    assert open(b.env("nix.txt")).read().startswith("unavailable: not in a Nix shell")
    md = open(os.path.join(fdir, "fleet.md")).read()
    assert "differently built code" in md and "nix store" in md, md[:3000]

    # nix copy checks the host key against the fleet's known_hosts: a file without hostA's key fails it
    kh = tmp / "known_hosts_b_only"
    kh.write_text("".join(ln + "\n" for ln in (tmp / "known_hosts").read_text().splitlines() if ADDRS["hostB"] in ln))
    from lab.fleet.inventory import load
    hv = load(str(inv), env)["hostvars"]
    plan = lab.fleet.nix.copy_plan(hv, "hostA", str(inv), str(kh), [path])
    assert "StrictHostKeyChecking=yes" in plan["sshopts"] and f"UserKnownHostsFile={kh}" in plan["sshopts"]
    refused = subprocess.run(plan["argv"], env=dict(env, NIX_SSHOPTS=plan["sshopts"]), capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0 and "ost key verification failed" in refused.stderr, refused.stderr


def test_fleet_plan_prices_in_process_and_a_hostile_history_is_one_line(tmp_path, capsys):
    """fleet-plan prices every host in-process (lab/engine/api.py) on its fetched topology. What a host sends
    for its prices is its history summary: a hostile one (not an object, numbers beyond any bound, wrong
    types) is one line naming the host, and that host is priced from the specs' cost, never a traceback."""
    from lab.cli.fleet import plan as fleet
    xml = os.path.join(TOPO, "Intel-Haswell-2xXeon-E5-2680v3.v2.xml")
    args = [os.path.join(ROOT, a) if a.endswith(".spec") else a for a in SWEEP]
    entry = {"experiment": "counters", "profile": "smoke", "seconds_per_run": 0.25, "repeats": 4,
             "remeasured_per_repeat": 0, "run": "20260101T000000Z-hostB"}

    def doc(**change):
        return json.dumps({"format": "scaling-lab history 1", "host": "hostB", "entries": [dict(entry, **change)]})
    good = tmp_path / "good.json"
    good.write_text(doc())
    history, note = fleet.host_history("hostB", {"history": str(good)})
    price = fleet.dry_run(xml, history, args, str(tmp_path / "good.txt"))
    assert note == "" and fleet.prices("hostB", price, note) == "history of hostB"
    assert price.points > 0 and {pp.seconds for x in price.experiments for pp in x.points} == {0.25}
    assert price.expected > 0 and price.fewest <= price.expected <= price.most <= price.worst
    assert open(tmp_path / "good.txt").read().rstrip().endswith(price.line())
    hostile = {"not an object": "[1, 2, 3]", "a string": '"fast"', "huge float": doc(seconds_per_run=1e308),
               "huge integer": doc().replace('"repeats": 4', '"repeats": ' + "9" * 500),
               "wrong type": doc(seconds_per_run="0.25"),
               "entries not a list": doc().replace("[{", "{").replace("}]", "}"),
               "a list for a name": doc(experiment=["counters"])}
    for name, text in hostile.items():
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        history, note = fleet.host_history("hostB", {"history": str(bad)})
        err = capsys.readouterr().err
        assert history is None and note == "history refused", name
        assert err.count("\n") == 1 and err.startswith("fleet: hostB: its history summary: "), (name, err)
        assert "Traceback" not in err and len(err) < 400, (name, err)
        price = fleet.dry_run(xml, history, args, str(tmp_path / "bad.txt"))
        assert fleet.prices("hostB", price, note) == "spec cost (history refused)", name
        assert {pp.seconds for x in price.experiments for pp in x.points} == {0.1}, name   # counters: cost[smoke]
