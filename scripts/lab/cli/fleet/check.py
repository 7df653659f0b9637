"""fleet check: reach every host, read its topology (lstopo XML), lscpu, kernel, VM or bare metal: one row per
host; and its history summary (scripts/lab/cli/history.py run there: what its own earlier runs took)."""
import base64
import json
import os

from lab import ROOT
from lab.cli.fleet.common import hosts_of, say, table
from lab.core.runfolder import results_dir, stamp_now, write_atomic_text
from lab.fleet import code, play
from lab.topology.topo import PlacementError, Topology


def virt_word(f):
    """Every layer systemd-detect-virt finds (--vm and --container: `VM (kvm), in a container (docker)`),
    else its one word, else Ansible's facts."""
    vm, ct = (play.one_line(str(f.get(k) or ""))[:40] for k in ("detect_vm", "detect_container"))
    if vm or ct:
        layers = [f"VM ({vm})" if vm not in ("", "none") else "bare metal" if ct in ("", "none") else ""]
        if ct not in ("", "none"):
            layers.append(f"in a container ({ct})" if layers[0] else f"container ({ct}), no VM found")
        return ", ".join(x for x in layers if x)
    d = play.one_line(str(f.get("detect_virt") or ""))[:40]
    if d == "none":
        return "bare metal"
    if d:
        return f"container ({d})" if d in ("docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "wsl") \
            else f"VM ({d})"
    role, typ = f.get("virtualization_role", ""), f.get("virtualization_type", "")
    if role == "guest":
        return f"VM ({typ})"
    if role == "host":
        return "bare metal"
    return f"unknown (no systemd-detect-virt; Ansible says {role or '?'}/{typ or '?'})"


def read_hosts(keys, hosts, env, out):
    """Run check.yml; {host: row dict} with the topology saved as out/<host>/lstopo.xml and the host's
    history summary, as it sent it, as out/<host>/history.json (read by the dry run, strictly)."""
    os.makedirs(out, exist_ok=True)
    with open(code.history_reader(ROOT, out), "rb") as f:   # kept in out/: what the hosts ran
        reader = base64.b64encode(f.read()).decode()
    extra = {"out_dir": out, "history_reader": reader, "history_boot": code.HISTORY_BOOT}
    outcome = play.run("check.yml", keys["inventory"], hosts, extra, env, os.path.join(out, "ansible.log"))
    found = {}
    for h in hosts:
        row = {"host": h, "status": outcome.by_host[h], "xml": None}
        path = os.path.join(out, f"{h}.json")
        if os.path.exists(path):
            f = json.load(open(path))
            os.makedirs(os.path.join(out, h), exist_ok=True)
            os.replace(path, os.path.join(out, h, "facts.json"))
            model_name = next((ln.split(":", 1)[1].strip() for ln in f.get("lscpu", "").splitlines()
                               if ln.startswith("Model name:")), "?")
            write_atomic_text(os.path.join(out, h, "lscpu.txt"), str(f.get("lscpu", "")), out)
            shape = f"no topology: {f.get('lstopo_error') or 'lstopo failed'}"
            if str(f.get("lstopo_rc")) == "0" and f.get("lstopo_xml"):
                xml = os.path.join(out, h, "lstopo.xml")
                write_atomic_text(xml, str(f["lstopo_xml"]), out)
                try:
                    s = Topology(xml).shape()
                    shape = (f"{s['packages']} pkg, {s['numa_nodes']} NUMA, {s['l3_domains']} L3, "
                             f"{s['cores']} cores, {s['pus']} PUs")
                    row["xml"] = xml
                except PlacementError as e:
                    shape = f"unreadable topology: {e}"
            if str(f.get("history_rc")) == "0":
                row["history"] = os.path.join(out, h, "history.json")
                write_atomic_text(row["history"], str(f.get("history", "")), out)
            else:
                row["history_error"] = play.one_line(str(f.get("history_error") or "the reader did not run"))[:300]
            row.update(address=f.get("address", ""), cpu=model_name, shape=shape,
                       kernel=f.get("kernel", ""), virt=virt_word(f), status="ok")
        found[h] = row
    return found


def check_rows(found):
    return [[r["host"], r.get("address", ""), r.get("cpu", ""), r.get("shape", ""), r.get("kernel", ""),
             r.get("virt", ""), r["status"]] for r in found.values()]


def main(keys, _args, env):
    hosts = hosts_of(keys, env)
    out = os.path.join(results_dir(), f"fleet-hosts-{stamp_now()}")
    found = read_hosts(keys, hosts, env, out)
    say(table(["host", "address", "CPU", "topology", "kernel", "VM or bare metal", "status"], check_rows(found)))
    bad = [h for h, r in found.items() if r["status"] != "ok"]
    say(f"{len(hosts) - len(bad)} of {len(hosts)} hosts reached; what each returned: {out}/<host>/ "
        f"(Ansible's log: {out}/ansible.log)")
    return 1 if bad else 0
