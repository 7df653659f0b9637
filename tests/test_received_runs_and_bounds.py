"""Received runs and the engine's bounds (hostile input, issue 44): a received run folder is an untrusted
file system, a received archive chooses no targets, every key value is one line in its real domain, a
fleet host's record is data, and the engine's bounds cover the whole process tree. Each test's set-up is
the reproduction. (test_hostile.py: values a user passes never become shell text.)"""
import json
import os
import tarfile

import pytest

from conftest import sh
from labtest import set_cells


# --- 1a. writes into a run folder -------------------------------------------------------------------
def test_charts_never_write_through_a_linked_dat_and_a_cell_never_becomes_a_line(tmp_path, results, lab_run):
    run = lab_run.quick()
    spec = run / "sweep" / "specs" / "spin.spec"
    spec.write_text(spec.read_text() + "chart = speedup iters_per_s\n")
    canary = tmp_path / "pwned"
    set_cells(run / "data" / "spin.csv", placement=f"compact\ntouch {canary}\n")
    outside = tmp_path / "outside.sh"
    outside.write_text("echo mine\n")
    dat = run / "plots" / "spin-speedup-iters_per_s.dat"
    dat.unlink(missing_ok=True)
    dat.symlink_to(outside)
    sh("python3", "-m", "lab.cli.charts", str(run), check=False)
    assert outside.read_text() == "echo mine\n"
    assert not dat.is_symlink()
    assert all(line.count('"') % 2 == 0 for line in dat.read_text().splitlines())
    assert not any(line.startswith("touch") for line in dat.read_text().splitlines())


def test_a_plots_folder_that_is_a_link_is_refused_and_nothing_written_there(tmp_path, results, lab_run):
    run = lab_run.quick()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for f in (run / "plots").iterdir():
        f.unlink()
    (run / "plots").rmdir()
    (run / "plots").symlink_to(elsewhere)
    p = sh("python3", "-m", "lab.cli.charts", str(run), check=False)
    assert p.returncode == 2 and "not a real folder inside the run" in p.stderr and "Traceback" not in p.stderr
    assert os.listdir(elsewhere) == []


def test_report_refuses_a_linked_folder_and_replaces_a_linked_report_not_its_target(tmp_path, results, lab_run):
    run = lab_run.quick()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    (run / "report.md").unlink()
    (run / "report.md").symlink_to(outside)
    sh("python3", "-m", "lab.cli.report", str(run))
    assert outside.read_text() == "mine\n" and not (run / "report.md").is_symlink()


# --- 1b. a received archive carries measurement settings only -----------------------------------------
def packed(lab_run, tmp_path, **overrides):
    """A real quick run, its args.json's overrides extended as a sender would, packed."""
    run = lab_run.quick(name="theirs")
    args = json.loads((run / "sweep" / "args.json").read_text())
    args["overrides"].update(overrides)
    (run / "sweep" / "args.json").write_text(json.dumps(args))
    with tarfile.open(tmp_path / "theirs.tar.gz", "w:gz") as t:
        t.add(run, arcname="theirs")
    return tmp_path / "theirs.tar.gz"


def test_a_replay_drops_the_hosts_servers_and_files_an_archive_names(tmp_path, results, lab_run):
    archive = packed(lab_run, tmp_path, clients="victim@example.org", nodes="10.9.9.9:9042",
                     server=".work/cassandra/cassandra.pid", nodes_server=".work/cluster/node1/cassandra.pid",
                     history="/etc/shadow")
    p = lab_run.program("archive", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"), timeout=300)
    for key in ("clients", "nodes", "server", "nodes_server", "history"):
        assert f"archive: not applying {key}=" in p.stderr
    replay = next(d for d in os.listdir(tmp_path / "results") if "replay" in d)
    command = (tmp_path / "results" / replay / "sweep" / "command").read_text()
    assert "victim" not in command and "10.9.9.9" not in command and "cassandra.pid" not in command
    assert "shadow" not in command


def test_a_replay_is_priced_at_its_worst_case_not_its_expected_one(tmp_path, results, lab_run):
    archive = packed(lab_run, tmp_path, retries="1000", retry_pause="86400", max_steal="0", max_foreign="0")
    p = lab_run.program("archive", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"), check=False,
           timeout=300)
    assert p.returncode == 2 and "at worst" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not any("replay" in n for n in os.listdir(tmp_path / "results"))


# --- 2. one reader for everything that may have come from elsewhere ---------------------------------------
def report_of(run, *more):
    return sh("python3", "-m", "lab.cli.report", str(run), check=False, timeout=120, *more)


def refused_in_one_line(p, name):
    assert p.returncode == 2 and name in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len([ln for ln in p.stderr.splitlines() if name in ln]) == 1


def test_env_files_that_link_outside_are_refused_not_copied_into_reports(tmp_path, results, lab_run):
    run = lab_run.quick()
    secret = tmp_path / "id_rsa"
    secret.write_text("SECRET-KEY-MATERIAL\n")
    (run / "env" / "build.txt").unlink(missing_ok=True)
    (run / "env" / "build.txt").symlink_to(secret)
    (run / "report.md").unlink()
    p = report_of(run)
    refused_in_one_line(p, "build.txt")
    assert not (run / "report.md").exists()
    other = lab_run.quick(name="other")
    p = sh("python3", "-m", "lab.cli.compare", str(other), str(run), str(tmp_path / "cmp.md"), check=False)
    refused_in_one_line(p, "build.txt")
    assert "SECRET" not in p.stdout + p.stderr


def test_a_dev_zero_link_or_a_fifo_in_env_is_refused_at_once(tmp_path, results, lab_run):
    run = lab_run.quick()
    cpuinfo = run / "env" / "cpuinfo.txt"
    cpuinfo.unlink(missing_ok=True)
    cpuinfo.symlink_to("/dev/zero")
    refused_in_one_line(report_of(run), "cpuinfo.txt")
    cpuinfo.unlink()
    os.mkfifo(cpuinfo)
    refused_in_one_line(report_of(run), "cpuinfo.txt")     # sh's timeout fails the test if it hangs


def test_a_huge_env_file_is_refused_not_read_whole(tmp_path, results, lab_run):
    run = lab_run.quick()
    with open(run / "env" / "build.txt", "wb") as f:
        f.truncate(400 << 20)       # 400 MB of hole: cheap to make, costly to read
    p = report_of(run)
    refused_in_one_line(p, "build.txt")
    assert "more than" in p.stderr


def test_a_journal_key_that_climbs_out_of_the_run_is_refused(tmp_path, results, lab_run):
    run = lab_run.quick()
    journal = run / "sweep" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    evs = [json.loads(ln) for ln in lines]
    for ev in evs:
        if ev.get("key"):
            ev["key"] = "../../../../etc"
    journal.write_text("".join(json.dumps(ev) + "\n" for ev in evs))
    p = report_of(run)
    refused_in_one_line(p, "journal.jsonl")
    assert "is not a repeat's name" in p.stderr


def test_a_wrongly_typed_import_record_or_a_ran_on_folder_gives_one_line(tmp_path, results, lab_run):
    run = lab_run.quick()
    (run / "env" / "imported.json").write_text(json.dumps({"cpu": "x", "cpus": "many", "pairs": [1]}))
    refused_in_one_line(report_of(run), "imported.json")
    (run / "env" / "imported.json").write_text("[]")
    refused_in_one_line(report_of(run), "imported.json")
    (run / "env" / "imported.json").unlink()
    raw = next((run / "raw" / "spin").iterdir())
    (raw / "ran-on.csv").mkdir()
    refused_in_one_line(report_of(run), "ran-on.csv")


# --- 3. every key value is one line of printable text, every number in its real domain --------------------
def test_a_newline_in_a_scale_key_adds_no_spec_line(tmp_path, results):
    canary = tmp_path / "pwned"
    p = sh("python3", "-m", "lab.cli.scale", f"variants=a\nbuild = touch {canary}", "retries=0", "--", "true",
           env=results, check=False)
    assert p.returncode == 2 and "one line of printable text" in p.stderr and not canary.exists()
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_a_newline_in_a_replayed_override_never_reaches_the_snapshot(tmp_path, results, lab_run):
    archive = packed(lab_run, tmp_path, variants="loop\nbuild = touch /tmp/x")
    p = lab_run.program("archive", "replay", str(archive), env=dict(results, LAB_SPECS="tests/fixtures"), check=False,
           timeout=300)
    assert p.returncode == 2 and "one line of printable text" in p.stderr, p.stderr
    assert not any("replay" in n for n in os.listdir(tmp_path / "results"))


@pytest.mark.parametrize("arg, says", [
    ("timeout=0", "timeout must be a number above 0"),
    ("max_steal=101", "max_steal must be a number from 0 to 100"),
    ("min_corun=1000", "min_corun must be a number from 0 to 100"),
])
def test_numbers_outside_their_real_domain_are_refused(tmp_path, results, arg, says):
    p = sh("python3", "-m", "lab.cli.sweep", f"run={tmp_path / 'run'}", "dry=1", arg, "tests/fixtures/spin.spec",
           env=results,
           check=False)
    assert p.returncode == 2 and says in p.stderr, p.stderr


def test_hex_and_octal_counts_are_read_as_hwloc_reads_them():
    from lab.topology.topo import PlacementError, Topology, synthetic_pus
    assert synthetic_pus("pack:1 core:0x40 pu:2") == 128 and synthetic_pus("core:010 pu:1") == 8
    with pytest.raises(PlacementError, match="at most 8192"):
        Topology("pack:0x40 core:0x40 pu:0x40")


def test_a_huge_numa_index_mask_is_read_in_linear_time():
    import time

    from lab.topology.topo import bitmap
    t0 = time.process_time()
    got = bitmap("0x1" + ",0x0" * 200_000)      # one bit at index 6,400,000: a crafted os_index
    assert got == {6_400_000}
    assert time.process_time() - t0 < 30      # quadratic took many minutes


@pytest.mark.parametrize("metric, says", [
    ("wall_s:([0-9.]+)", "one of the engine's own rows"),
    ("noise_steal_pct:([0-9.]+)", "one of the engine's own rows"),
    ("perf_cycles:([0-9.]+)", "one of the engine's own rows"),
    ("x:(a+)+$", "repeats a repetition"),
])
def test_metric_names_of_the_engine_and_nested_quantifiers_are_refused(results, metric, says):
    p = sh("python3", "-m", "lab.cli.scale", f"metric={metric}", "--", "true", env=results, check=False, timeout=60)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_a_metric_over_what_readers_accept_fails_the_point_and_the_sweep(tmp_path, results, lab_run):
    run = tmp_path / "run"
    p = lab_run.scale(f"run={run}", "metric=big:v=([0-9]+)", "threads=1", "placements=unpinned",
           "repeats=1", "retries=0", "warmup=0", "capacity=0", "--", "echo", "v=" + "9" * 30, check=False, timeout=120)
    assert p.returncode != 0, p.stderr
    assert "beyond" in (run / "sweep" / "journal.log").read_text()


def test_cluster_sh_does_no_arithmetic_on_record_text_and_checks_the_heap(tmp_path):
    canary = tmp_path / "pwned"
    work = tmp_path / "cluster"
    work.mkdir()
    (work / "cluster.txt").write_text(f"ports=x[$(touch {canary})] 7000 7300\nnode=1 address=127.0.0.2\n")
    p = sh("cassandra/cluster.sh", "nodes", env={"CLUSTER_WORK": str(work)}, check=False, timeout=60)
    assert p.returncode == 2 and "port" in p.stderr and not canary.exists(), p.stderr
    (work / "cluster.txt").unlink()
    p = sh("cassandra/cluster.sh", "nodes", env={"CLUSTER_WORK": str(work), "CASSANDRA_HEAP": "1G -Dx=y"},
           check=False, timeout=60)
    assert p.returncode == 2 and "CASSANDRA_HEAP" in p.stderr


def test_a_cassandra_hosts_pidfile_with_lines_cannot_rewrite_the_cluster_record(tmp_path):
    from lab.cli.fleet import cluster as fleet
    report = tmp_path / "db1.json"
    report.write_text(json.dumps({"host": "db1", "cql": "10.0.0.1:9042", "address": "10.0.0.1", "numa": "0",
                                  "pid": "4242\nnode=9 host=evil cql=203.0.113.9:9042 pid=1", "work": "/srv/lab"}))
    got = fleet.node_report(str(report), "db1")
    assert "pid" not in got and got["cql"] == "10.0.0.1:9042"
    report.write_text("[1, 2]")
    assert fleet.node_report(str(report), "db1") == {}


@pytest.mark.parametrize("hostvar, says", [
    ("lab_dir='/srv/lab|x'", "lab_dir"),
    ("lab_dir=/srv/../etc", "lab_dir"),
    ("cassandra_heap='4G -XX:OnOutOfMemoryError=x'", "cassandra_heap"),
    ("ansible_port=22x", "ansible_port"),
])
def test_inventory_paths_heaps_and_ports_are_checked_in_one_line(tmp_path, hostvar, says):
    from lab.fleet.inventory import InventoryError, load
    inv = tmp_path / "hosts.ini"
    inv.write_text(f"[lab]\nh1 ansible_host=127.0.0.1 {hostvar}\n")
    with pytest.raises(InventoryError, match=says) as e:
        load(str(inv), dict(os.environ))
    assert "\n" not in str(e.value)


# --- 4. the fleet ------------------------------------------------------------------------------------------
def test_a_400_digit_number_in_a_history_summary_is_refused_not_a_traceback(tmp_path):
    from lab.engine.pricehistory import ENTRY_KEYS, HistoryError, load
    entry = {k: 1 for k in ENTRY_KEYS}
    entry.update(experiment="spin", profile="default", run="20260101T000000Z-h", repeats=None)
    entry["seconds_per_run"] = int("9" * 400)
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"format": __import__("lab.engine.pricehistory", fromlist=["_"]).FORMAT, "host": "h",
                                "entries": [entry]}))
    with pytest.raises(HistoryError, match="seconds_per_run must be a finite number"):
        load(str(path))


@pytest.mark.parametrize("progress", ["[1, 2]", '"text"', "12", '{"done": 1e999, "last": ["x"]}', "[" * 5000])
def test_progress_json_that_is_not_an_object_gives_a_line_not_a_traceback(progress):
    from lab.cli.fleet import sweep as fleet
    line = fleet.progress_line({"progress": progress})
    assert "\n" not in line and ("starting" in line or "? repeats done" in line), line


def test_progress_shows_what_a_host_has_left_only_when_it_is_of_its_shape():
    from lab.cli.fleet import sweep as fleet
    ok = fleet.progress_line({"progress": json.dumps({"done": 3, "left": 7, "eta_s": 125.0, "last": "p"})})
    assert "3 repeats done" in ok and "7 repeats left, ETA 0:02:05" in ok, ok
    for left, eta in ((-1, 5), (7, float("nan")), ("7", 5), (7, 1e300), (True, 5)):
        line = fleet.progress_line({"progress": json.dumps({"done": 3, "left": left, "eta_s": eta})})
        assert "left" not in line and "\n" not in line, line


def test_a_fetched_tarball_with_a_sparse_member_is_refused(tmp_path):
    import subprocess

    from lab.fleet.folder import FetchError, unpack
    (tmp_path / "run" / "data").mkdir(parents=True)
    with open(tmp_path / "run" / "data" / "x.csv", "wb") as f:
        f.truncate(1 << 30)
    subprocess.run(["tar", "-S", "-czf", "sparse.tgz", "run"], cwd=tmp_path, check=True)
    with pytest.raises(FetchError, match="sparse"):
        unpack(str(tmp_path / "sparse.tgz"), str(tmp_path / "hostA"))
    assert not (tmp_path / "hostA").exists()


def test_local_hosts_run_with_the_controllers_own_python(tmp_path):
    import subprocess
    import sys

    from lab.fleet import play
    inv = tmp_path / "hosts.ini"
    inv.write_text("[lab]\nh1 ansible_connection=local\n"
                   "h2 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
                   "h3 ansible_host=192.0.2.1\n")
    env = play.environment()
    extra = play.local_python(str(inv), env, str(tmp_path))
    def var(h):
        out = subprocess.run(["ansible-inventory", "-i", str(inv), *extra, "--host", h], capture_output=True,
                             text=True, env=env, check=True).stdout
        return json.loads(out).get("ansible_python_interpreter")
    assert var("h1") == sys.executable and var("h2") == "/usr/bin/python3" and var("h3") is None


def test_a_local_hosts_broken_interpreter_is_one_line_and_an_unset_one_is_the_controllers(tmp_path):
    # A pyenv-like shim: an executable `python3` that prints junk and exits 127. Named as a local host's
    # interpreter it is refused in one line naming the host, the interpreter and the fix; first on PATH
    # (where Ansible's discovery would find it), a local host without an interpreter still works.
    import subprocess
    import sys

    from conftest import ROOT
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3: command not found'\nexit 127\n")
    shim.chmod(0o755)
    env = dict(os.environ, LAB_RESULTS=str(tmp_path / "results"), ANSIBLE_HOME=str(tmp_path / "ansible"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible" / "tmp"), ANSIBLE_REMOTE_TMP=str(tmp_path / "remote-tmp"),
               PATH=f"{shims}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    bad = tmp_path / "bad.ini"
    bad.write_text(f"[lab]\nlocalbad ansible_connection=local ansible_python_interpreter={shim}\n")
    p = subprocess.run([sys.executable, "-m", "lab.cli.fleet", "check", f"inventory={bad}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{bad}:2: localbad: ansible_python_interpreter='{shim}'" in p.stderr and "exit 127" in p.stderr
    assert "set ansible_python_interpreter to a working Python 3" in p.stderr and sys.executable in p.stderr
    good = tmp_path / "good.ini"
    good.write_text("[lab]\nlocalok ansible_connection=local\n")
    p = subprocess.run([sys.executable, "-m", "lab.cli.fleet", "check", f"inventory={good}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    row = [ln for ln in p.stdout.splitlines() if ln.startswith("localok ")]
    assert p.returncode == 0 and row and row[0].rstrip().endswith("ok"), p.stdout + p.stderr
    # A remote host's Python that Ansible cannot use (the callback's record of it): its row says how to fix it.
    from lab.fleet import play
    status = tmp_path / "status.jsonl"
    status.write_text(json.dumps({"host": "h1", "task": "Kernel and virtualization facts", "status": "failed",
                                  "msg": "Module result deserialization failed: No start of json char found"}) + "\n")
    why = play.Outcome(["h1"], str(status), 2).by_host["h1"]
    assert "\n" not in why and "set ansible_python_interpreter=/path/to/python3 for it" in why, why


def test_vm_or_bare_metal_names_every_layer():
    from lab.cli.fleet import check as fleet
    assert fleet.virt_word({"detect_vm": "kvm", "detect_container": "docker", "detect_virt": "docker"}) == \
        "VM (kvm), in a container (docker)"
    assert fleet.virt_word({"detect_vm": "none", "detect_container": "none"}) == "bare metal"
    assert "detect_vm" in open(os.path.join(os.path.dirname(__file__), "..", "fleet", "check.yml")).read()


# --- 5. the engine's bounds cover the whole process tree ------------------------------------------------
SCALE_ONE = ("threads=1", "placements=unpinned", "repeats=1", "retries=0", "warmup=0", "capacity=0")


def test_a_setsid_grandchild_holding_stdout_does_not_outlast_the_timeout(tmp_path, results, lab_run):
    run = tmp_path / "run"
    p = lab_run.scale(f"run={run}", *SCALE_ONE, "timeout=3", "--", "bash", "-c",
           "setsid sleep 91.25 & sleep 92.5", check=False, timeout=60)
    assert "timeout" in (run / "sweep" / "journal.log").read_text(), p.stderr
    assert not [ln for ln in sh("ps", "-eo", "args").stdout.splitlines() if "sleep 91.25" in ln]


def test_a_child_that_clears_its_environment_does_not_outlive_its_repeat(tmp_path, results, lab_run):
    run = tmp_path / "run"
    lab_run.scale(f"run={run}", *SCALE_ONE, "--", "bash", "-c",
       "env -i setsid sleep 287.25 </dev/null >/dev/null 2>&1 & echo started", timeout=120)
    assert not [ln for ln in sh("ps", "-eo", "args").stdout.splitlines() if "sleep 287.25" in ln]


def test_children_that_clear_their_environment_and_detach_die_with_a_killed_engine(tmp_path, results, lab_run):
    # The engine itself SIGKILLed mid-repeat: its reaper must still end the command's detached children,
    # those that dropped the sweep's environment marker (`env -i`) as well as a plain one.
    import signal
    import subprocess
    import time

    from lab.engine import cgroup, orphans
    probe = orphans.new_token()
    if not cgroup.create(probe):
        pytest.skip("no cgroup v1 cpuacct group can be made here: the reaper has only the environment token")
    cgroup.remove(probe)
    marks = ("301.125", "302.125", "303.125")
    run = tmp_path / "run"
    cmd = (f"setsid env -i sleep {marks[0]} </dev/null >/dev/null 2>&1 & "
           f"env -i setsid sleep {marks[1]} </dev/null >/dev/null 2>&1 & "
           f"sleep {marks[2]} </dev/null >/dev/null 2>&1 & sleep 299.5")
    p = lab_run.start(f"run={run}", *SCALE_ONE, "timeout=600", "--", "bash", "-c", cmd, program="scale",
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def alive():
        return [ln for ln in sh("ps", "-eo", "pid=,args=").stdout.splitlines()
                if ln.split(None, 1)[1:] in ([f"sleep {m}"] for m in marks)]
    try:
        deadline = time.monotonic() + 60
        while len(alive()) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(alive()) == 3, alive()
        engine = json.loads((run / "sweep" / "engine.json").read_text())["pid"]
        os.kill(engine, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive()
    finally:
        for ln in alive():
            os.kill(int(ln.split()[0]), signal.SIGKILL)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def test_a_member_of_the_sweeps_cgroup_v2_group_alone_is_ended_by_the_reaper():
    # Hosts with cgroup v2 only have no cpuacct: the v2 group alone must hold what the reaper ends.
    import signal
    import subprocess
    import time

    from lab.engine import cgroup, orphans
    token = orphans.new_token()
    v2 = [g for g in cgroup.create(token) if not g.startswith(cgroup.V1)]
    try:
        if not v2:
            pytest.skip("no cgroup v2 group can be made here")
        subprocess.run(cgroup.join(v2, ["setsid", "env", "-i", "sh", "-c", "sleep 304.125 &"]), check=True)
        alive = lambda: [ln for ln in sh("ps", "-eo", "pid=,args=").stdout.splitlines()  # noqa: E731
                         if ln.split(None, 1)[1:] == ["sleep 304.125"]]
        assert len(alive()) == 1 and cgroup.members(token), "the sleep is not in the v2 group"
        assert orphans.end(token) == 1
        deadline = time.monotonic() + 30
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive() and not any(os.path.exists(p) for p in cgroup.paths(token))
    finally:
        for pid in cgroup.members(token):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        cgroup.remove(token)


# --- 6. the cosmetic batch -------------------------------------------------------------------------------
def test_save_is_a_file_inside_the_project_and_not_written_under_dry(tmp_path, results):
    from conftest import ROOT
    p = sh("python3", "-m", "lab.cli.scale", "save=../abs.spec", "--", "true", env=results, check=False)
    assert p.returncode == 2 and "or absolute" in p.stderr      # the message says what it accepts
    folder = os.path.join(ROOT, ".work", "tests", f"received-{os.getpid()}.spec")
    os.makedirs(folder, exist_ok=True)
    try:
        p = sh("python3", "-m", "lab.cli.scale", f"save={os.path.relpath(folder, ROOT)}", "--", "true", env=results,
               check=False)
        assert p.returncode == 2 and "a folder of that name exists" in p.stderr and "Traceback" not in p.stderr
    finally:
        os.rmdir(folder)
    rel = os.path.join(".work", "tests", f"received-dry-{os.getpid()}.spec")
    p = sh("python3", "-m", "lab.cli.scale", f"save={rel}", "dry=1", *SCALE_ONE, "--", "true", env=results, check=False)
    assert "not written" in p.stderr and not os.path.exists(os.path.join(ROOT, rel)), p.stderr


def test_open_says_it_will_not_open_a_received_page_as_it_is(tmp_path, results):
    page = tmp_path / "compare-x.html"
    page.write_text("<script>document.title='pwned'</script>")
    p = sh("scripts/open.sh", str(page), env=dict(results, DISPLAY="", WAYLAND_DISPLAY=""), check=False)
    assert p.returncode == 2 and "not opening" in p.stderr and str(page) not in p.stdout
