"""Client and server on different hosts (issue 26 item 2), without another machine: the engine and the
cache server run here, and the load generator runs on test_fleet's sshd "host" hostB (127.0.0.3), reached
over ssh with its host key checked. Both are this machine, so the report must say "loopback"."""
import json

import pytest

from conftest import rows, sh
from labtest import journal, needs_hosts

POINT = ["profile=smoke", "variants=global", "placements=compact", "threads=1", "warmup=0", "retries=0",
         "experiments/cache-get.spec"]


def ssh_env(f, results):
    """An ssh config naming the hosts as a user's would: address, port, key, and the test's known_hosts."""
    cfg = f["tmp"] / "ssh_config"
    cfg.write_text("".join(f"Host {n}\n  HostName {h.addr}\n  Port {h.port}\n  User root\n"
                           f"  IdentityFile {f['tmp'] / 'client_key'}\n"
                           f"  UserKnownHostsFile {f['tmp'] / 'known_hosts'}\n"
                           for n, h in f["hosts"].items()))
    return dict(results, LAB_SSH_CONFIG=str(cfg), PATH=f["env"]["PATH"])


@needs_hosts
def test_a_cache_point_with_its_load_generators_on_other_hosts(fleet, tmp_path, results):  # noqa: F811
    """Two client "hosts" at once: their rates summed into the point's, each one's rows labelled."""
    env = ssh_env(fleet, results)
    run = tmp_path / "split"
    p = sh("python3", "-m", "lab.cli.sweep", f"run={run}", "clients=hostB,hostA", *POINT, env=env, check=False)
    assert p.returncode == 0, p.stderr[-4000:]
    got = {r["metric"]: float(r["value"]) for r in rows(run / "data" / "cache-get.csv")}
    # each client's rows labelled with its host, its own guard readings among them; the point's rate the sum
    for h in ("hostA", "hostB"):
        for m in ("ops_per_s", "noise_steal_pct", "noise_foreign_pct", "client_cpu_share", "latency_p99"):
            assert f"client.{h}.{m}" in got, sorted(got)
    assert got["client.hostA.ops_per_s"] > 0 and got["client.hostB.ops_per_s"] > 0
    assert got["ops_per_s"] == pytest.approx(got["client.hostA.ops_per_s"] + got["client.hostB.ops_per_s"])
    assert got["latency_p99"] == max(got["client.hostA.latency_p99"], got["client.hostB.latency_p99"])
    # and the server's, measured here by the point around the clients' window
    assert got["server_cpu_share"] > 0 and got["cpus_shared"] == 0, got
    net = (run / "env" / "network.txt").read_text()
    assert net.startswith("path=loopback\n") and "client=hostB path=loopback" in net, net
    assert "client=hostA path=loopback" in net, net
    report = (run / "report.md").read_text()
    assert "network path: loopback" in report and "hostB" in report, report[:3000]


@needs_hosts
def test_an_unreachable_client_host_fails_the_point_by_name(fleet, tmp_path, results):  # noqa: F811
    env = ssh_env(fleet, results)
    fleet["hosts"]["hostB"].stop()
    run = tmp_path / "gone"
    p = sh("python3", "-m", "lab.cli.sweep", f"run={run}", "clients=hostB", *POINT, env=env, check=False)
    assert p.returncode != 0
    failed = journal(run, "failed")
    assert failed and "client host hostB unreachable" in json.dumps(failed), failed
    assert not (run / "env" / "network.txt").exists()


def test_a_client_list_is_destinations_only(tmp_path, results):
    for bad in ("host;reboot", "-oProxyCommand=x", "a,a", "$(id)"):
        p = sh("python3", "-m", "lab.cli.sweep", "dry=1", f"clients={bad}", *POINT, env=results, check=False)
        assert p.returncode == 2 and "clients" in p.stderr and p.stderr.count("\n") == 1, (bad, p.stderr)
    # and the remote command's words are checked before ssh sees them
    from lab.fleet import clients
    with pytest.raises(clients.ClientError):
        clients.remote_argv("hostB", ["python3", "x; rm -rf ~"])
    argv = clients.remote_argv("hostB", ["python3", "-m", "lab.cli.loadclients", "client", "--port=1"])
    assert argv[argv.index("--") + 1] == "hostB" and "StrictHostKeyChecking=yes" in argv


def test_fleet_clients_become_checked_ssh_config_lines(tmp_path):
    """fleet-sweep clients=: what the inventory says about a client becomes lines of the server hosts'
    ssh config, so a value that would add a second option (a space, a newline) is refused by name."""
    from lab.fleet import clients
    text = clients.ssh_config([("hostB", "127.0.0.3", 2222, "root")], "~/.ssh/lab_key")
    assert "Host hostB\n  HostName 127.0.0.3\n  Port 2222\n  User root\n  IdentityFile ~/.ssh/lab_key\n" in text
    assert f"UserKnownHostsFile {clients.KNOWN_HOSTS_MARK}" in text and "StrictHostKeyChecking yes" in text
    for bad in ([("hostB", "10.0.0.1\n  ProxyCommand touch /tmp/x", 22, None)],
                [("hostB", "10.0.0.1", "22 -oProxyCommand=x", None)], [("hostB", "10.0.0.1", 22, "root x")]):
        with pytest.raises(clients.ClientError, match="hostB"):
            clients.ssh_config(bad)
    with pytest.raises(clients.ClientError):
        clients.ssh_config([("hostB", "10.0.0.1", 22, None)], "key file")
    # the client's host key comes from known_hosts as ssh looks it up (port 22 plain, others [host]:port)
    kh = tmp_path / "known_hosts"
    kh.write_text("[127.0.0.3]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ0ewHRvGuIekY5nWHGqBUwQ+cJpG6xyl1ZVdBy9Ngw8\n")
    assert len(clients.known_host_lines(str(kh), "127.0.0.3", 2222)) == 1
    assert clients.known_host_lines(str(kh), "127.0.0.3", 22) == []


def test_the_path_is_named_from_who_the_client_is():
    """Two machines only when the client's boot id differs from ours; one machine at 127/8 is loopback."""
    from lab.fleet import clients
    own = clients.boot_id()
    assert clients.path_name("127.0.0.1", own, own)[0] == "loopback"
    assert clients.path_name("10.1.2.3", own, own)[0] == "same host"
    name, detail = clients.path_name("127.0.0.1", "another-boot", own)
    assert name == "between hosts" and "two machines" in detail
