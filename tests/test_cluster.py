"""The multi-node Cassandra (cassandra/cluster.sh, issue 26 item 3): bad settings are refused before anything
starts, and once per test run a real cluster on this host's loopback addresses with runner-cql's smoke
sweep against it (nodes=), its record in the run's env/ and report, and cluster-down stopping exactly the
nodes it started. The cluster's ports (29042, 27000, 273xx) are its own: the single node of
rust-runner/tests uses 19042/17000/17199 and the default one 9042."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, results, rows, sh  # noqa: F401  (fixture)
from lab.core.runfolder import RunFolder
from lab.engine.journal import read as read_journal

CLUSTER = os.path.join(ROOT, "cassandra", "cluster.sh")
CASSANDRA = os.path.join(ROOT, "cassandra", "cassandra.sh")
LIB = os.path.join(ROOT, ".work", "cassandra", "lib")
RUNNER = os.path.join(ROOT, "rust-runner", "target", "release", "runner")
# Two nodes are the smallest cluster (a seed and a node that joins it); a third JVM added nothing the
# test checks but its start (3 nodes: cluster-up 81 s on a loaded host, docs/measured.md).
NODES = 2
PORTS = {"CLUSTER_PORT": "29042", "CLUSTER_STORAGE_PORT": "27000", "CLUSTER_JMX_PORT": "27300"}


def test_bad_settings_are_refused(tmp_path):
    env = {"CLUSTER_WORK": str(tmp_path / "c")}
    for arg in ("nodes=0", "nodes=17", "nodes=3;id", "size=3", "plan=1"):
        p = sh(CLUSTER, "up", arg, env=env, check=False)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (arg, p.stderr)
    # Values that would add YAML or options to a node's config (from an inventory, too) stop cassandra.sh.
    for k, v in (("CASSANDRA_SEEDS", '127.0.0.2:7000"\nauthenticator: x'), ("CASSANDRA_ADDRESS", "a b"),
                 ("CASSANDRA_NUMA_NODE", "--all"), ("CASSANDRA_PORT", "70000")):
        p = sh(CASSANDRA, "status", env={"CASSANDRA_WORK": str(tmp_path / "n"), k: v}, check=False)
        assert p.returncode == 2 and k.split("_", 1)[1].lower() in p.stderr.lower(), (k, p.stderr)
    assert not (tmp_path / "c").exists() and not (tmp_path / "n").exists()


def test_nodes_override_is_checked(results):  # noqa: F811 (the fixture imported above)
    p = sh(".work/tools/bin/python", "-m", "lab.cli.sweep", "experiments/runner-cql.spec", "dry=1",
           "nodes=127.0.0.2:9042;touch /tmp/x", env=results, check=False)
    assert p.returncode == 2 and "nodes must be ADDRESS:PORT" in p.stderr, p.stderr


def alive(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except (ProcessLookupError, ValueError):
        return False


@pytest.mark.skipif(shutil.which("java") is None, reason="no java (./lab installs openjdk-17)")
@pytest.mark.rust_build
def test_cluster_up_runner_cql_cluster_down(tmp_path, results):  # noqa: F811 (the fixture imported above)
    # The nodes' folder lies inside the project, as the default .work/cluster does: the sweep's `server`
    # (pidfiles inside the project) names every node's pidfile, so their JVMs are the measurement's own.
    work = os.path.join(".work", "tests", f"cluster-{os.getpid()}")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    cluster = os.path.join(ROOT, work)
    env = dict(PORTS, CLUSTER_WORK=cluster, CASSANDRA_HEAP="384M", CASSANDRA_LIB=LIB,
               CLUSTER_RING_TIMEOUT="240", CASSANDRA_UP_TIMEOUT="200", **results)
    env["PATH"] = os.path.join(ROOT, ".work", "tools", "bin") + os.pathsep + os.environ.get("PATH", "")
    # What the cluster needs, made as the lab makes it: in a clean clone this test runs before anything
    # has fetched the jars or built the runner (a skip here would never run it in CI); both are reused
    # by the later tests and test-runner.
    sh(CASSANDRA, "jars", env={k: v for k, v in env.items() if k != "CASSANDRA_LIB"}, timeout=900)
    if not os.access(RUNNER, os.X_OK):
        sh("just", "build-runner", env=env, timeout=1800)
    pids = []
    t0 = time.monotonic()
    up = sh(CLUSTER, "up", f"nodes={NODES}", env=env, check=False)
    try:
        assert up.returncode == 0, up.stderr
        print(f"cluster-up nodes={NODES}: {time.monotonic() - t0:.0f} s")
        assert f"{NODES} nodes UN" in up.stderr
        nodes = sh(CLUSTER, "nodes", env=env).stdout.strip()
        assert nodes == ",".join(f"127.0.0.{i + 2}:29042" for i in range(NODES))
        record = open(os.path.join(cluster, "cluster.txt")).read()
        assert record.count("node=") == NODES and f"127.0.0.{NODES + 1}:29042" in record
        pids = [open(os.path.join(cluster, f"node{i}", "cassandra.pid")).read().strip() for i in range(1, NODES + 1)]
        assert len(pids) == NODES and all(alive(p) for p in pids)

        # The smoke sweep against the cluster. Its JVMs share this host's CPUs with the client by design:
        # with nodes= set, `nodes_server` names them all (runner-cql.spec names the default .work/cluster's
        # the same way; its `server`, the single node's, is then not the run's server).
        sweep = sh(".work/tools/bin/python", "-m", "lab.cli.sweep", "experiments/runner-cql.spec", "profile=smoke",
                   f"nodes={nodes}", "variants=basic_read", "threads=1", "retries=0",
                   f"nodes_server={work}/node*/cassandra.pid", env=env, check=False, timeout=600)
        assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
        run = RunFolder(sorted(p for p in (tmp_path / "results").iterdir() if p.is_dir())[-1])
        ops = [float(r["value"]) for r in rows(run.data_csv("runner-cql")) if r["metric"] == "ops_per_s"]
        assert ops and all(v > 0 for v in ops)
        done = [e for e in read_journal(run.journal_path) if e["event"] == "done"]
        assert done and all(e["noise"].get("servers") == NODES for e in done), [e["noise"] for e in done]
        assert f"nodes={nodes}" in open(os.path.join(run.path, "sweep", "specs", "runner-cql.spec")).read()
        assert f"node={NODES} " in open(run.env("cassandra-cluster.txt")).read()
        report = open(run.report_md).read()
        assert f"| Cassandra cluster | {NODES} node(s), this host" in report
        # the lab's single node was neither started nor stopped by the sweep
        assert "not started or stopped here" in open(run.sweep_file("setup.log")).read()
    finally:
        down = subprocess.run([CLUSTER, "down"], cwd=ROOT, env=dict(os.environ, **env), capture_output=True, text=True)
    assert down.returncode == 0, down.stderr
    assert not any(alive(p) for p in pids)
    assert not os.path.exists(os.path.join(cluster, "cluster.txt"))
    shutil.rmtree(cluster, ignore_errors=True)


def test_cluster_row_of_a_received_record_is_bounded(tmp_path):
    """A run folder from elsewhere may carry any env/cassandra-cluster.txt: the report's row stays one line
    of bounded length, counting the nodes it lists."""
    from lab.report.model import cluster_row
    rec = tmp_path / "cassandra-cluster.txt"
    rec.write_text("where=hosts a, b of inv.ini\n" + "".join(f"node={i} host=h{i} cql=10.0.0.{i}:9042 numa={i % 2}\n"
                                                           for i in range(1, 71)) + "x" * 100000 + "\n")
    row = cluster_row(str(rec))
    assert row.startswith("70 node(s), hosts a, b of inv.ini: 10.0.0.1:9042 (NUMA 1, h1)") and row.endswith(", …")
    assert "\n" not in row and len(row) < 64 * 60
