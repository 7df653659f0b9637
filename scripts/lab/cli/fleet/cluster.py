"""fleet cluster-up / cluster-down: the Ansible half of cassandra/cluster.sh for an inventory's hosts.

cassandra/cluster.sh owns the cluster record (.work/cluster/cluster.txt, or CLUSTER_WORK's): it refuses a
second cluster, writes the record and removes it, for a cluster of this host and of an inventory alike. It
runs these two verbs and hands them its folder: cluster-up starts a Cassandra node on each host of the group
`cassandra` (hosts=, the first nodes=N of them), the first one the seed, from the lab's locked jars
(fleet/cassandra.yml), until the seed's ring shows every node UN, and writes the nodes it started, one
`node=` line each, to work=DIR/nodes.txt for cluster.sh to record; plan=1: Ansible's check mode, nothing
started. cluster-down stops the nodes of record=FILE, each by its PID on its host.
"""
import os
import re
import time

from lab import ROOT
from lab.cli.fleet.common import hosts_of, say, table
from lab.core.runfolder import RunFolderError, read_json, stamp_now, write_atomic_text
from lab.core.term import visible
from lab.errors import LabError
from lab.fleet import code, play
from lab.fleet.inventory import load

NODES = "nodes.txt"         # in cluster.sh's folder: the `node=` lines cluster-up leaves for the record


def read_record(path):
    """(settings {key: value}, nodes [{key: value}]) of cluster.sh's record."""
    settings, nodes = {}, []
    for line in open(path, errors="replace"):
        if line.startswith("node="):
            nodes.append(dict(w.split("=", 1) for w in line.split() if "=" in w))
        elif "=" in line and not line.startswith("#"):
            k, v = line.rstrip("\n").split("=", 1)
            settings[k] = v
    return settings, nodes


# What a Cassandra host reports (fleet/cassandra.yml) goes into the controller's cluster record, one
# `key=value` line per node that cluster-down and the contact points are read from: each field in its shape.
NODE_FIELDS = {"pid": r"[0-9]{1,10}", "cql": r"[A-Za-z0-9.-]{1,253}:[0-9]{1,5}", "address": r"[A-Za-z0-9.-]{1,253}",
               "numa": r"[0-9]{1,4}|unbound", "host": r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
               "work": r"[A-Za-z0-9._/~-]{1,255}", "code_dir": r"[A-Za-z0-9._/~-]{1,255}",
               "seed": r"True|False|true|false", "java": r"[^\x00-\x1f\x7f]{0,200}"}


def node_report(path, host):
    """A Cassandra host's report (out/<host>.json): the fields of their shape; another is dropped and said."""
    try:
        r = read_json(path, root=os.path.dirname(path)) or {}
    except RunFolderError as e:
        say(f"cluster: {host}: {e}")
        return {}
    out = {}
    for k, v in r.items():
        if k in NODE_FIELDS and isinstance(v, (str, int)) and re.fullmatch(NODE_FIELDS[k], str(v)):
            out[k] = str(v)
        elif k in NODE_FIELDS and v not in ("", None):
            say(visible(f"cluster: {host}: its {k} {str(v)[:60]!r} is not what cassandra.yml reports: left out"))
    return out


def up(keys, args, env):
    extra_keys = {}
    for a in args:
        k, _, v = a.partition("=")
        if k not in ("nodes", "plan", "work") or not v:
            raise LabError(f"cluster-up takes inventory=, hosts=, known_hosts=, nodes= and plan=1, not {a!r}")
        extra_keys[k] = v
    hosts = hosts_of(keys, env)
    if "nodes" in extra_keys:
        n = extra_keys["nodes"]
        if not n.isdigit() or not 1 <= int(n) <= len(hosts):
            raise LabError(f"nodes={n}: a whole number from 1 to {len(hosts)} (the hosts {keys['hosts']} selects)")
        hosts = hosts[:int(n)]
    if "work" not in extra_keys:
        raise LabError("cluster-up is cassandra/cluster.sh's (it keeps the cluster's record): run "
                       "`./lab cluster-up inventory=FILE …`")
    plan = extra_keys.get("plan") == "1"
    work = extra_keys["work"]
    hostvars = load(keys["inventory"], env)["hostvars"]
    seed = hosts[0]
    sv = hostvars.get(seed, {})
    seeds = f"{sv.get('cassandra_address') or sv.get('ansible_host') or seed}:{sv.get('cassandra_storage_port', 7000)}"
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, f"ansible-{stamp_now()}")
    os.makedirs(out)
    tar, code_id, _ident = code.pack(ROOT, work)
    t0 = time.monotonic()
    say(f"cluster: {'plan (check mode, nothing started)' if plan else 'starting'}: {len(hosts)} node(s) on "
        f"{', '.join(hosts)}; seed {seed} ({seeds})")
    outcome = play.run("cassandra.yml", keys["inventory"], hosts,
                       {"cluster_action": "up", "code_tar": tar, "code_id": code_id, "seed_host": seed, "seeds": seeds,
                        "out_dir": out, "node_code_dirs": {}}, env, os.path.join(out, "ansible.log"), check=plan)
    rows, nodes = [], []
    for i, h in enumerate(hosts, 1):
        r = node_report(os.path.join(out, f"{h}.json"), h)
        nodes.append(dict(r, i=i))
        rows.append([h, r.get("cql", "–"), "seed" if h == seed else "joins", r.get("numa", "–"),
                     play.one_line(r.get("java") or "–"), r.get("pid") or "–", outcome.by_host[h]])
    say(table(["host", "CQL", "role", "NUMA node", "Java", "PID", "status"], rows))
    bad = [h for h in hosts if not outcome.ok(h)]
    if plan:
        say(f"plan only: nothing was started (Ansible's log: {out}/ansible.log)")
        return 1 if bad else 0
    # Every node that runs, also after a failure: cluster.sh records it, and cluster-down must find and stop it.
    write_atomic_text(os.path.join(work, NODES), "".join(
        f"node={n['i']} host={n.get('host', '?')} address={n.get('address', '?')} cql={n.get('cql', '?')} "
        f"numa={n.get('numa', '?')} pid={n.get('pid') or '?'} code={n.get('code_dir', '?')} "
        f"work={n.get('work', '?')}\n" for n in nodes if n.get("pid")))
    if bad:
        say(f"cluster: not up on {', '.join(bad)} (Ansible's log: {out}/ansible.log)")
        say("cluster: run cluster-down to stop the nodes that did start")
        return 1
    say(f"cluster: {len(hosts)} nodes UN in {int(time.monotonic() - t0)} s; contact points: "
        f"{','.join(n['cql'] for n in nodes)}")
    return 0


def down(args):
    """Stop the nodes of cluster.sh's record=FILE on their hosts; exit 0 when every one stopped (cluster.sh
    then removes the record)."""
    if len(args) != 1 or not args[0].startswith("record=") or not os.path.isfile(args[0][7:]):
        raise LabError("cluster-down is cassandra/cluster.sh's: run `./lab cluster-down` (the record says which "
                       "nodes run where)")
    record = args[0][7:]
    settings, nodes = read_record(record)
    if "inventory" not in settings:
        raise LabError(f"{record}: a cluster of this host: cassandra/cluster.sh down stops it")
    env = play.environment(settings.get("known_hosts") or None)
    hosts = [n["host"] for n in nodes]
    out = os.path.join(os.path.dirname(record), f"ansible-{stamp_now()}")
    os.makedirs(out)
    outcome = play.run("cassandra.yml", settings["inventory"], hosts,
                       {"cluster_action": "down", "code_tar": "", "code_id": "", "seed_host": hosts[0], "seeds": "",
                        "out_dir": out, "node_code_dirs": {n["host"]: n["code"] for n in nodes}},
                       env, os.path.join(out, "ansible.log"))
    say(table(["host", "PID", "status"], [[n["host"], n.get("pid", "?"), outcome.by_host[n["host"]]] for n in nodes]))
    return 0 if all(outcome.ok(h) for h in hosts) else 1
