"""Issue 25 items 1 and 2: the capacity probe around every repeat catches a disturbance on the point's
CPUs by what it costs (not by whose CPU time it is), and involuntary switches between the measured
processes' own threads are not counted as interference. Second round: the CPU time of the spec's
`server` on the probed CPUs is the measurement's own load, taken out of the probe's loss. Third: both
probes of a repeat from one probe process (--serve), and a server's threads that start or end during a
probe."""
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, burner, pidfiles, rows, sh

GUARDS_OPEN = "max_foreign = 100\nmax_neighbour = 100\nmax_steal = 100\nmin_corun = 0\n"
LOOP = "end=$((SECONDS + 120)); while ((SECONDS < end)); do :; done"


def spin_point(lab_run, name, lines):
    """The spin fixture at one pinned compact 1-thread point, spec `lines` added; its run folder tmp/<name>."""
    return lab_run.spec(name, lines, command="tests/fixtures/spin.sh 1 60000", placements="compact", threads=1,
                        repeats=1, warmup=0, pin="taskset").at(name)


@contextlib.contextmanager
def killed_at_exit(pidfile):
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(open(pidfile).read()), signal.SIGKILL)


def test_a_burner_started_after_the_baseline_is_caught_by_the_capacity_probe(tmp_path, results, lab_run):
    # The spec's setup runs after the sweep's baseline: it starts a busy loop on the point's CPU, as a
    # neighbour arriving mid-sweep would. Foreign CPU accounting is opened wide (and switches too), so
    # the reason can only come from the probe timing less work on that CPU than at the start.
    cpu = sh("python3", "-m", "lab.cli.topo", "plan", "compact", "1").stdout.strip()
    pidfile = tmp_path / "burner.pid"
    lines = (GUARDS_OPEN + "max_invol_cs = 1000000000\nretries = 1\nretry_pause = 0.1\n"
             f"setup = taskset -c {cpu} bash -c '{LOOP}' & echo $! > {pidfile}\n"
             f"teardown = kill $(cat {pidfile})\n")
    with killed_at_exit(pidfile):
        probed = spin_point(lab_run, "probed", lines).sweep()
    events, data = probed.journal(), probed.rows()
    base = [e for e in events if e["event"] == "capacity_baseline"]
    assert len(base) == 1 and base[0]["ns"][cpu]["core"] > 0 and base[0]["ns"][cpu]["memory"] > 0
    # Caught: measured again, or kept as suspect, with the probe's core chain named as the reason (the
    # memory walk is recorded, not judged, by default).
    caught = [e for e in events if e["event"] in ("remeasured", "suspect")]
    assert caught and caught[0]["reason"].startswith("capacity −") and "(core)" in caught[0]["reason"], events
    assert "(memory)" not in caught[0]["reason"]
    if caught[0]["event"] == "remeasured":
        c = caught[0]["noise"]["capacity"]
        assert c["core_pct"] < 100 - 25 or c["core_change_pct"] > 25
    # The probe's readings are rows like the other guard readings, and the report lists them.
    assert {"capacity_core_pct", "capacity_memory_pct", "capacity_core_change_pct",
            "capacity_memory_change_pct"} <= {r["metric"] for r in data}
    report = probed.report()
    assert "capacity_core_pct" in report and "| capacity baseline | core " in report


# A memory-bandwidth hog: copies 64 MiB over and over (memcpy), far beyond any L2, for at most 120 s.
MEMORY_HOG = ("import time\nb = bytearray(64 << 20)\nend = time.monotonic() + 120\n"
              "while time.monotonic() < end:\n    c = bytes(b)\n")


def test_a_memory_hog_on_the_other_cpu_is_caught_as_a_neighbour(tmp_path, results, lab_run):
    """The hog takes none of the point's CPU time and the point's own CPU's ticks show nothing; it runs on
    the host's other CPU, sharing the point's cache and memory bandwidth. Foreign accounting on the point's
    CPUs and the capacity probe are off, so the reason can only be the neighbour's busy time, named."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no other CPU for a neighbour")
    point = sh("python3", "-m", "lab.cli.topo", "plan", "compact", "1").stdout.strip()
    other = str(next(c for c in cpus if str(c) != point))
    hog = subprocess.Popen(["taskset", "-c", other, sys.executable, "-c", MEMORY_HOG], start_new_session=True)
    try:
        caught_run = spin_point(lab_run, "neighboured", GUARDS_OPEN + "retries = 1\nretry_pause = 0.1\n").sweep(
            "capacity=0", "max_invol_cs=1000000000", "max_neighbour=50")
        # The same point with the neighbour's limit opened (GUARDS_OPEN): kept, the hog's share a row.
        open_run = spin_point(lab_run, "neighbour-open", GUARDS_OPEN).sweep("capacity=0", "retries=0",
                                                                           "max_invol_cs=1000000000")
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
    events, data = caught_run.journal(), caught_run.rows()
    open_events, open_data = open_run.journal(), open_run.rows()
    caught = [e for e in events if e["event"] in ("remeasured", "suspect")]
    assert caught and "neighbour " in caught[0]["reason"] and f"on CPU {other} > 50%" in caught[0]["reason"], events
    assert caught[0]["noise"]["neighbour_pct"] > 50
    assert "noise_neighbour_pct" in {r["metric"] for r in data}
    assert not [e for e in open_events if e["event"] == "suspect"], open_events
    assert [float(r["value"]) for r in open_data if r["metric"] == "noise_neighbour_pct"][0] > 50


def test_capacity_0_turns_the_probe_off(tmp_path, results, lab_run):
    unprobed = spin_point(lab_run, "unprobed", GUARDS_OPEN).sweep("capacity=0", "retries=0")
    events, data = unprobed.journal(), unprobed.rows()
    assert not [e for e in events if e["event"].startswith("capacity")]
    assert data and not [r for r in data if r["metric"].startswith("capacity_")]


def test_a_cache_point_sharing_its_cpus_is_not_suspect_for_its_own_switches(tmp_path, results, lab_run):
    # Server threads and the load generator on the same two CPUs preempt each other by design. The
    # switch limit is the default 2000/s (the spec sets none): the raw count is far above it, and only
    # the share that other processes' CPU time on those CPUs can explain counts.
    run = tmp_path / "cache"
    lab_run.at(run).sweep("profile=smoke", "variants=global", "placements=compact", "threads=2", "warmup=0",
                          "retries=0", "capacity=0", "experiments/cache-get.spec")
    data = rows(run / "data" / "cache-get.csv")
    got = {r["metric"]: float(r["value"]) for r in data}
    assert got["cpus_shared"] == 1 and got["noise_invol_cs"] > 2000, got
    assert got["noise_forced_cs"] < got["noise_invol_cs"]
    why = data[0]["suspect"]
    # On a loaded host other processes do run on these CPUs, and their share of the switches is then
    # counted; the test cannot make the host quiet, so the claim "not suspect" is asserted where the
    # other processes' load on the pair is small.
    if got["noise_foreign_pct"] < 2:
        assert "switches" not in why, (why, got)
    else:
        assert "switches" not in why or got["noise_forced_cs"] > 2000


def probe_csv(*args):
    sh("make", "-s", "-C", "c-probes", "build/capacity")
    out = sh("c-probes/build/capacity", "--core-steps", "40000000", "--loads", "1000", *args).stdout
    header, *lines = out.splitlines()
    return header, {int(line.split(",")[0]): line.split(",") for line in lines}


def settled_asleep(pid, comm, secs=20):
    """Waits until the process has exec'd `comm` and sleeps: state S, and its run time (schedstat)
    unchanged over 50 ms. Started just before, on a loaded host it may still be exec'ing and loading
    when a probe begins, and that run time is then rightly charged to it."""
    deadline, last = time.monotonic() + secs, None
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            name, rest = f.read().split("(", 1)[1].rsplit(")", 1)
        with open(f"/proc/{pid}/schedstat") as f:
            ran = f.read().split()[0]
        asleep = name == comm and rest.split()[0] == "S"
        if asleep and ran == last:
            return
        last = ran if asleep else None
        time.sleep(0.05)
    raise AssertionError(f"{comm} (pid {pid}) did not settle asleep in {secs} s")


def test_the_probe_charges_a_watched_process_to_the_cpu_it_ran_on(tmp_path):
    # A busy loop pinned to one CPU, watched: its share shows on that CPU (it ran there while the probe
    # did, however loaded the host) and on no other (it cannot run elsewhere); a sleeping process takes
    # none; without --watch the probe prints its three columns as before.
    cpus = sorted(os.sched_getaffinity(0))
    cpu, other = cpus[0], cpus[-1]
    listed = ",".join(str(c) for c in sorted({cpu, other}))
    with burner(str(cpu)) as busy:
        header, got = probe_csv("--cpus", listed, "--watch", str(busy.pid))
        assert header == "cpu,core_ns,memory_ns,watched_share"
        assert 0.02 < float(got[cpu][3]) <= 1, got
        if other != cpu:
            assert float(got[other][3]) == 0, got
        header, got = probe_csv("--cpus", str(cpu))
        assert header == "cpu,core_ns,memory_ns" and len(got[cpu]) == 3
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        settled_asleep(sleeper.pid, "sleep")
        _header, got = probe_csv("--cpus", str(cpu), "--watch", str(sleeper.pid))
        assert float(got[cpu][3]) == 0, got
    finally:
        sleeper.kill()
        sleeper.wait()
    p = sh("c-probes/build/capacity", "--watch", "0", check=False)
    assert p.returncode == 2 and "--watch" in p.stderr
    p = sh("c-probes/build/capacity", *[w for pid in range(1, 66) for w in ("--watch", str(pid))], check=False)
    assert p.returncode == 2 and "at most 64" in p.stderr


def test_the_probe_sums_every_watched_process_of_the_server_side(tmp_path):
    # A server side of several processes (a local Cassandra cluster's nodes): a busy loop on each CPU,
    # both watched in one probe, shows on both CPUs; each watched alone shows only on its own.
    cpus = sorted(os.sched_getaffinity(0))
    cpu, other = cpus[0], cpus[-1]
    if cpu == other:
        return
    listed = f"{cpu},{other}"
    with burner(str(cpu)) as a, burner(str(other)) as b:
        _header, got = probe_csv("--cpus", listed, "--watch", str(a.pid), "--watch", str(b.pid),
                                 "--watch", str(a.pid))
        assert 0.02 < float(got[cpu][3]) <= 1 and 0.02 < float(got[other][3]) <= 1, got
        _header, got = probe_csv("--cpus", listed, "--watch", str(b.pid))
        assert float(got[cpu][3]) == 0 and float(got[other][3]) > 0.02, got


def test_a_busy_server_is_the_measurements_own_load_for_the_probe_too(tmp_path, results, lab_run):
    # The busy loop stands in for the lab's Cassandra still working on the point's CPU when the probe
    # runs after the window (runner-cql). Unnamed, it is a disturbance (foreign load in the window, lost
    # capacity in the probes); named as the spec's `server`, the probe reads its share of the CPU and
    # judges only what that share does not explain. How much capacity the rest of this shared host
    # takes is not the test's to fix, so the named run is not asserted unflagged outright: its share is
    # asserted seen and taken out, and any capacity reason left must say it is beyond the server's share.
    cpu = sh("python3", "-m", "lab.cli.topo", "plan", "compact", "1").stdout.strip()
    lines = "max_steal = 100\nmax_invol_cs = 1000000000\nmin_corun = 0\nretries = 0\n"
    got = {}
    with burner(cpu) as server, pidfiles("probe-server", [server]) as (pidfile,):
        for named in (False, True):
            name = f"served{int(named)}"
            got[named] = spin_point(lab_run, name, lines + (f"server = {pidfile}\n" if named else "")).sweep()
    events, data = got[False].journal(), got[False].rows()
    caught = [e for e in events if e["event"] == "suspect"]
    assert caught and ("capacity" in caught[0]["reason"] or "foreign" in caught[0]["reason"]), events
    assert not [r for r in data if r["metric"] == "capacity_server_share_pct"]
    events, data = got[True].journal(), got[True].rows()
    share = [float(r["value"]) for r in data if r["metric"] == "capacity_server_share_pct"]
    assert share and share[0] > 2, data
    done = [e for e in events if e["event"] == "done"][0]["noise"]["capacity"]
    # the journal rounds the probe's figure to 0.1, the row keeps more digits (60.6500… → 60.7 and 60.65)
    assert abs(done["server_share_pct"] - share[0]) <= 0.05 + 1e-9, (done, share)
    # Judged net of the share: the worst CPU and side read at least what the probe measured, and more
    # by the factor the share explains, 1 / (1 - share), on the side where the share was largest.
    assert done["core_pct"] > done["core_measured_pct"], done
    why = [e["reason"] for e in events if e["event"] == "suspect"]
    for w in why:
        for part in w.split("; "):
            assert not part.startswith("capacity −") or "beyond the server's" in part, why


def test_the_judgement_takes_out_what_the_servers_share_explains_and_no_more():
    # The judgement alone, on probe readings written out (the timing itself is tested above): the core
    # chain at baseline before the window and slowed to 69% after it, as runner-cql's probes read while
    # Cassandra kept working on the CPU.
    from lab.engine import capacity
    base = {0: {"core": 1.0, "memory": 10.0}}
    before = {0: {"core": 1.0, "memory": 10.0}}
    slowed = {0: {"core": 1 / 0.69, "memory": 10 / 0.69}}
    limits = {"core": 25, "memory": 100}
    unnamed = capacity.Reading(base, before, slowed, 0.03)
    assert unnamed.disturbed(limits) == "capacity −31% (core)" and unnamed.server_pct is None
    assert "capacity_server_share_pct" not in {r["metric"] for r in unnamed.rows()}
    # The server took 31% of the CPU after the window, none before: the slowdown is its share.
    served = capacity.Reading(base, {0: dict(before[0], server=0.0)}, {0: dict(slowed[0], server=0.31)}, 0.03)
    assert served.disturbed(limits) == "" and round(served.pct["core"]) == 100 and round(served.change["core"]) == 0
    assert round(served.measured["core"]) == 69 and served.server_pct == 31
    assert {"metric": "capacity_server_share_pct", "value": "31", "unit": "%"} in served.rows()
    # A burner besides: slowed to 46% with the server's 31% of it, the rest is still lost capacity.
    burnt = capacity.Reading(base, {0: dict(before[0], server=0.0)},
                             {0: {"core": 1 / 0.46, "memory": 10 / 0.46, "server": 0.31}}, 0.03)
    assert burnt.disturbed(limits) == "capacity −33% (core) beyond the server's 31%"
    # A share the probe's times do not show (read while its thread was not competing) makes no change
    # between before and after, and never judges below what was measured.
    unseen = capacity.Reading(base, {0: dict(before[0], server=0.0)}, {0: dict(before[0], server=0.5)}, 0.03)
    assert unseen.change["core"] == 0 and unseen.pct["core"] >= unseen.measured["core"] \
        and unseen.disturbed(limits) == ""
    # No more than SHARE_CAP of a CPU is explained.
    swamped = capacity.Reading(base, {0: dict(before[0], server=0.0)},
                               {0: {"core": 50.0, "memory": 500.0, "server": 1.0}}, 0.03)
    assert swamped.pct["core"] == 100 * 1.0 / (50.0 * (1 - capacity.SHARE_CAP))


@contextlib.contextmanager
def threads_server(cpu):
    """tests/fixtures/threads.py, all its threads on `cpu` unless a command pins them elsewhere; yields
    the process and say(command), which waits for its "ok"."""
    p = subprocess.Popen(["taskset", "-c", str(cpu), "tests/fixtures/threads.py"], cwd=ROOT, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def say(command):
        p.stdin.write(command + "\n")
        p.stdin.flush()
        assert p.stdout.readline() == "ok\n", command

    try:
        yield p, say
    finally:
        p.kill()
        p.wait()


def test_the_probe_counts_a_thread_started_during_it_and_outlives_one_that_ended():
    # A server's thread pool changes while the probe runs: thread A, busy on `cpu` when the probe reads
    # the threads, ends once the probe's workers run; thread B starts then and spins to the end. B's run
    # time is all inside the window and must show on `cpu` (it is not among the threads read before);
    # A's is lost (a lower bound), and must not break the probe. Twenty threads pinned to `other` that
    # ran before the probe (20 ms each) and sleep through it must add nothing there: only run time
    # during the probe counts, not a thread's whole life.
    cpus = sorted(os.sched_getaffinity(0))
    cpu, other = cpus[0], cpus[-1]
    sh("make", "-s", "-C", "c-probes", "build/capacity")
    with threads_server(cpu) as (server, say):
        say(f"idle 20 {other}")
        say(f"busy {cpu}")
        listed = ",".join(str(c) for c in sorted({cpu, other}))
        probe = subprocess.Popen(["c-probes/build/capacity", "--cpus", listed,
                                  "--core-steps", "300000000", "--loads", "1000", "--watch", str(server.pid)],
                                 cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        # The window opens when the probe starts its workers, after it has read the watched threads.
        while len(os.listdir(f"/proc/{probe.pid}/task")) < 2 and probe.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        say("stop")
        say(f"busy {cpu}")
        out, err = probe.communicate(timeout=120)
        say("stop")
    assert probe.returncode == 0, err
    got = {int(line.split(",")[0]): float(line.split(",")[3]) for line in out.splitlines()[1:]}
    assert got[cpu] > 0.1, out
    if other != cpu:
        assert got[other] < 0.01, out


def test_one_probe_process_serves_both_probes_of_a_repeat():
    # The engine's two probes around a repeat come from one process (--serve): the watched threads'
    # files opened for the first probe are read again for the second, a thread that ended in between
    # has its file closed, a thread that started in between is opened; end of input ends the process.
    from lab.engine import capacity
    cpu = sorted(os.sched_getaffinity(0))[0]
    sh("make", "-s", "-C", "c-probes", "build/capacity")
    with threads_server(cpu) as (server, say):
        say(f"idle 30 {cpu}")
        session = capacity.Session(ROOT, [cpu], [server.pid])
        try:
            first = session.probe()
            files = len(os.listdir(f"/proc/{session.p.pid}/fd"))
            say("release 10")
            say(f"idle 5 {cpu}")
            second = session.probe()
            assert len(os.listdir(f"/proc/{session.p.pid}/fd")) == files - 10 + 5
        finally:
            session.close()
    assert session.p.returncode == 0 and session.seconds > 0
    for reading in (first, second):
        assert set(reading) == {cpu} and reading[cpu]["core"] > 0 and 0 <= reading[cpu]["server"] <= 1
    # A probe that cannot run says why, and its process is gone.
    offline = os.cpu_count() + 7
    session = capacity.Session(ROOT, [offline])
    with pytest.raises(capacity.ProbeError, match="exited 2: .*CPU"):
        session.probe()
    assert session.p.returncode == 2
