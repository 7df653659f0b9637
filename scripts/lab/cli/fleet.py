#!/usr/bin/env python3
"""Several hosts through Ansible (fleet/): the same sweep on every host of an inventory.

  fleet.py check inventory=FILE [hosts=PATTERN] [known_hosts=FILE]
  fleet.py plan  inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [KEY=VALUE…] [experiments/X.spec…]
  fleet.py sweep inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [poll=SECONDS] [timeout=SECONDS]
                 [clients=PATTERN [client_identity=PATH]] [KEY=VALUE…] [experiments/X.spec…]
  fleet.py cluster-up inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [nodes=N] [plan=1]
  fleet.py cluster-down

check: reach every host, read its topology (lstopo XML), lscpu, kernel, VM or bare metal: one row per
host; and its history summary (scripts/lab/cli/history.py run there: what its own earlier runs took). plan: the
dry run of the sweep (./lab sweep dry=1) on each host's fetched topology, priced from that host's
history (a summary that is not one is refused by the host's name: that host is priced from the specs'
cost), and the fleet's ETA (the hosts measure at once: the slowest host's). sweep: ship this checkout (git archive of
the commit with the uncommitted diff) to every host, start `./lab sweep` on all of them at once, print
each host's progress, fetch every run folder (a failed host's partial one too) into
results/fleet-<time>/<host>/, and write fleet.md and fleet.html, one column per host. Rerun the same
command to resume: every host's run folder is resumed by the engine (run=), a running one reattached.
Host keys are checked (known_hosts=FILE, else the user's). KEY=VALUE and specs go to every host's sweep.
Nix hosts (lab/fleet/nix.py; the inventory's lab_nix, else nix on the host when this controller is in the
lab's Nix shell) get the shell's store paths by `nix copy` and run their sweep in that shell.
clients=PATTERN (sweep): those hosts run the cache point's load generators: the code is shipped there and
loadgen built (fleet/clients.yml), and each server host's sweep gets `clients=` their names with an ssh
config and their host keys from known_hosts (its own ssh identity reaches them, or the key file at
client_identity=PATH on the server hosts; no key is shipped).
cluster-up: a Cassandra node on each host of the group `cassandra` (hosts=, the first nodes=N of them),
the first one the seed, from the lab's locked jars (fleet/cassandra.yml), until the seed's ring shows every
node UN; the record goes where cassandra/cluster.sh keeps its own (CLUSTER_WORK, .work/cluster/cluster.txt),
so that `cassandra/cluster.sh nodes` gives runner-cql its contact points. plan=1: Ansible's check mode,
nothing started: what would run where. cluster-down: stop the recorded nodes, each by its PID.
Exit: 0 every host complete, 1 a host failed or could not be reached, 2 bad input (nothing run).
"""
import base64
import json
import os
import re
import subprocess
import sys
import time

from lab import ROOT
from lab.fleet import clients as cl
from lab.fleet import code, folder, play
from lab.fleet import nix
from lab.fleet.inventory import InventoryError, load, select
from lab.engine import api
from lab.engine.pricehistory import HistoryError
from lab.engine.pricehistory import load as load_history
from lab.engine.price import hms
from lab.report import model, nway
from lab.report.journal import JournalError
from lab.fleet.nixenv import NixEnvError, digest, shell
from lab.core.runfolder import RunFolder, RunFolderError, is_run, read_json, results_dir, stamp_now, write_atomic_text, writing
from lab.core.term import visible
from lab.topology.topo import PlacementError, Topology

FLEET_KEYS = {"inventory": None, "hosts": "all", "known_hosts": None, "poll": "30", "timeout": "172800",
              "clients": None, "client_identity": None}
NOT_HERE = {"run": "each host's run folder is chosen by fleet-sweep (one per fleet sweep, resumed by a rerun)",
            "dry": "use fleet-plan for the dry run", "topology": "fleet-plan reads each host's own topology",
            "history": "fleet-plan reads each host's own history"}


# What a host sends back (its CPU model, kernel, errors, progress) is shown, never obeyed: every line the
# fleet prints goes through term.visible, so a control sequence in it is written out, not run.
def die(msg):
    print(f"fleet: error: {visible(msg, lines=True)}", file=sys.stderr)
    sys.exit(2)


def say(msg):
    print(visible(msg, lines=True), flush=True)


def parse(argv):
    keys, sweep_args = dict(FLEET_KEYS), []
    for a in argv:
        if a.endswith(".spec") and "=" not in a:
            rel = os.path.relpath(os.path.abspath(a), ROOT)
            if not os.path.isfile(a) or rel.startswith(".."):
                die(f"{a}: not a spec file of this lab (every host runs this checkout's experiments/)")
            sweep_args.append(rel)
        elif "=" in a:
            k, v = a.split("=", 1)
            if k in NOT_HERE:
                die(f"{k}= is not for a fleet: {NOT_HERE[k]}")
            if k in FLEET_KEYS:
                keys[k] = v
            elif re.match(r"^[a-z_][a-z0-9_]*$", k):
                sweep_args.append(a)
            else:
                die(f"argument {a!r}: expected KEY=VALUE with a lowercase key")
        else:
            die(f"unknown argument {a!r} (expected KEY=VALUE or experiments/NAME.spec)")
    if not keys["inventory"]:
        die("inventory=FILE is required (an Ansible inventory: fleet/inventory.example.ini)")
    for k, lo, hi in (("poll", 1, 3600), ("timeout", 60, 30 * 86400)):
        if not keys[k].isdigit() or not lo <= int(keys[k]) <= hi:
            die(f"{k}={keys[k]!r}: a whole number of seconds from {lo} to {hi}")
    if keys["known_hosts"] and not os.path.isfile(keys["known_hosts"]):
        die(f"known_hosts={keys['known_hosts']}: no such file")
    return keys, sweep_args


def hosts_of(keys, env):
    try:
        inv = load(keys["inventory"], env)
        return select(inv, keys["hosts"], keys["inventory"], env)
    except InventoryError as e:
        die(str(e))


def table(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


# --- check -----------------------------------------------------------------------------------------
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


def cmd_check(keys, _args, env):
    hosts = hosts_of(keys, env)
    out = os.path.join(results_dir(), f"fleet-hosts-{stamp_now()}")
    found = read_hosts(keys, hosts, env, out)
    say(table(["host", "address", "CPU", "topology", "kernel", "VM or bare metal", "status"], check_rows(found)))
    bad = [h for h, r in found.items() if r["status"] != "ok"]
    say(f"{len(hosts) - len(bad)} of {len(hosts)} hosts reached; what each returned: {out}/<host>/ "
        f"(Ansible's log: {out}/ansible.log)")
    return 1 if bad else 0


# --- plan ------------------------------------------------------------------------------------------
def dry_run(xml, history, args, path):
    """The dry run of the sweep on a host's fetched topology, priced from its history (in-process,
    lab/engine/api.py), written to path as the host's dry-run.txt; its price.Price. Bad arguments die."""
    try:
        req = api.request(["dry=1", f"topology={xml}", *([f"history={history}"] if history else []), *args])
        with writing(path) as g:
            return api.dry_run(req, g)
    except api.EngineError as e:
        die(str(e))


def host_history(h, r):
    """(the host's summary to price from or None, a note when it has none); a summary that is not one is
    refused here, by the host's name, and the host priced from the specs' cost."""
    if not r.get("history"):
        return None, f"no history: {r.get('history_error') or 'not read'}"
    try:
        load_history(r["history"], label=f"{h}: its history summary")
    except HistoryError as e:
        print(f"fleet: {visible(str(e))}", file=sys.stderr)
        return None, "history refused"
    return r["history"], ""


def prices(h, price, note):
    """Where a host's seconds per run came from: its price's sources per experiment."""
    found = [x.source for x in price.experiments]
    mine = sum(1 for x in found if x.startswith("history of "))
    if found and mine == len(found):
        return f"history of {h}"
    cost = f"spec cost ({note or 'no earlier run of these there'})"
    return f"history of {h} ({mine} of {len(found)} experiments), {cost}" if mine else cost


def cmd_plan(keys, args, env):
    hosts = hosts_of(keys, env)
    out = os.path.join(results_dir(), f"fleet-hosts-{stamp_now()}")
    found = read_hosts(keys, hosts, env, out)
    rows, worst = [], None
    total_points = 0
    for h, r in found.items():
        if not r["xml"]:
            rows.append([h, "–", "–", "–", "–", r["status"] if r["status"] != "ok" else r["shape"]])
            continue
        history, note = host_history(h, r)
        price = dry_run(r["xml"], history, args, os.path.join(out, h, "dry-run.txt"))
        total_points += price.points
        if worst is None or price.expected > worst[0]:
            worst = (price.expected, h)
        rows.append([h, str(price.points), hms(price.expected),
                     f"{hms(price.fewest)} – {hms(price.most)}" if price.fewest != price.most else "–",
                     prices(h, price, note), "history refused" if note == "history refused" else "ok"])
    say(table(["host", "points", "ETA", "range", "prices from", "status"], rows))
    if worst:
        say(f"fleet: {total_points} points on {sum(1 for r in rows if r[1] != '–')} host(s), ETA {hms(worst[0])} "
            f"(the hosts measure at once: the slowest is {worst[1]}); each host's dry run: {out}/<host>/dry-run.txt")
    return 0 if all(r[5] == "ok" for r in rows) else 1


# --- sweep -----------------------------------------------------------------------------------------
def controller_text(env):
    p = subprocess.run(["ansible-playbook", "--version"], capture_output=True, text=True, env=env)
    return ((p.stdout.strip().splitlines() or ["ansible-playbook: unavailable"])[0]
            + f"\npython {sys.version.split()[0]}\n")


def progress_line(p):
    """A host's progress (scripts/lab/cli/progress.py there, as JSON) in one line; what is not of its shape is '?'."""
    try:
        g = json.loads(str(p.get("progress") or "{}")[:65536])
    except (ValueError, RecursionError):
        g = {}
    if not isinstance(g, dict) or not g:
        return "starting (installing tools, building)"

    def count(k):
        v = g.get(k, 0)
        return v if type(v) is int and 0 <= v < 10**12 else "?"
    last, left, eta = g.get("last"), g.get("left"), g.get("eta_s")
    # the host's own count of what is still to run, from its plan and price (lab/engine/rounds.py)
    togo = (f"; {left} repeats left, ETA {hms(eta)}" if type(left) is int and 0 <= left < 10**12
            and type(eta) in (int, float) and 0 <= eta < 10**9 else "")
    return play.one_line(f"{count('done')} repeats done, {count('failed')} failed, {count('suspect')} "
                         f"suspect, {count('remeasured')} re-measured{togo}; last: "
                         f"{last[:200] if isinstance(last, str) and last else '–'}")


def client_setup(keys, hosts, env):
    """clients=PATTERN: the client hosts, the sweep override naming them, and what each server host gets
    (an ssh config and the clients' host keys from known_hosts); bad input dies here, before any host."""
    try:
        inv = load(keys["inventory"], env)
        names = select(inv, keys["clients"], keys["inventory"], env)
    except InventoryError as e:
        die(str(e))
    both = sorted(set(names) & set(hosts))
    if both:
        die(f"clients={keys['clients']} selects {', '.join(both)}, also a sweep host (hosts={keys['hosts']})")
    hv = inv["hostvars"]
    labs = {str(hv.get(h, {}).get("lab_dir", "")) for h in hosts + names}
    if len(labs) > 1:
        die("clients run the lab from the same lab_dir as the servers (loadclients.py finds it there): "
            f"lab_dir differs ({', '.join(sorted(x or 'default' for x in labs))})")
    known = keys["known_hosts"] or os.path.expanduser("~/.ssh/known_hosts")
    rows, lines = [], []
    for h in names:
        v = hv.get(h, {})
        hostname, port = v.get("ansible_host", h), v.get("ansible_port", 22)
        rows.append((h, hostname, port, v.get("ansible_user")))
        found = cl.known_host_lines(known, str(hostname), port) if os.path.isfile(known) else []
        if not found:
            die(f"client {h}: no host key for {hostname} port {port} in {known} (ssh to it once, or "
                "ssh-keyscan it and check the fingerprint)")
        lines += found
    try:
        config = cl.ssh_config(rows, keys["client_identity"])
    except cl.ClientError as e:
        die(str(e))
    return names, f"clients={','.join(names)}", {"client_ssh_config": config, "client_known_hosts":
                                                  "\n".join(lines) + "\n", "known_hosts_mark": cl.KNOWN_HOSTS_MARK}


def nix_setup(keys, hosts, env):
    """The Nix hosts of this sweep (lab/fleet/nix.py): (the controller's store paths, what start.yml gets:
    per candidate host its mode and nix copy's argv, the shell's variables). Bad input dies here."""
    try:
        variables, paths = shell(os.environ)
    except NixEnvError as e:
        die(str(e))
    try:
        hv = load(keys["inventory"], env)["hostvars"]
        modes = {h: nix.mode(hv, h, keys["inventory"]) for h in hosts}
        want = [h for h in hosts if modes[h] == "yes"]
        if want and not paths:
            die(f"{', '.join(want)}: lab_nix=true, but this controller is not in the lab's Nix shell (nix develop): "
                "there are no store paths to copy")
        known = os.path.abspath(keys["known_hosts"]) if keys["known_hosts"] else None
        plans = {h: dict(nix.copy_plan(hv, h, keys["inventory"], known, paths), mode=modes[h])
                 for h in hosts if paths and modes[h] != "no"}
    except InventoryError as e:
        die(str(e))
    shell_vars = {k: v for k, v in variables.items() if k != "PATH"}
    return paths, {"nix_hosts": plans, "nix_env": shell_vars, "nix_path": variables.get("PATH", "")}


def cmd_sweep(keys, args, env):
    hosts = hosts_of(keys, env)
    nix_paths, nix_extra = nix_setup(keys, hosts, env)
    client_names, client_extra = [], {}
    if keys["clients"]:
        client_names, override, client_extra = client_setup(keys, hosts, env)
        args = [a for a in args if not a.startswith("clients=")] + [override]
    # Bad arguments are found here, before any host is touched: the engine checks and plans them here.
    try:
        api.request(["dry=1", *args])
    except api.EngineError as e:
        die(str(e))
    try:
        ident = code.identity(ROOT)
    except code.CodeError as e:
        die(str(e))
    code_id = f"{ident['commit'][:12]}-{ident['diff_sha256'][:8]}"
    signature = json.dumps({"inventory": os.path.abspath(keys["inventory"]), "hosts": hosts, "args": args,
                            "code": code_id, **({"clients": client_names} if client_names else {}),
                            **({"nix": digest(nix_paths)} if nix_paths else {})},
                           sort_keys=True)
    untracked = code.untracked(ROOT)
    if untracked:
        say(f"fleet: note: files git does not track are not shipped ({', '.join(untracked[:5])}"
            f"{', …' if len(untracked) > 5 else ''}): git add them to measure them")
    fdir, st, resumed = folder.find_or_new(results_dir(), signature)
    try:
        tar, code_id, ident = code.pack(ROOT, fdir)
    except code.CodeError as e:
        die(str(e))
    st.update(inventory=os.path.abspath(keys["inventory"]), hosts=hosts, args=args, code_id=code_id,
              identity=ident, state="running", nix_paths=nix_paths)
    if nix_paths:
        # what a Nix host's env/nix.txt lists, and its env/build.txt's `nix store` line
        write_atomic_text(os.path.join(fdir, "nix-paths.txt"), "".join(p + "\n" for p in nix_paths))
    folder.save(fdir, st)
    write_atomic_text(os.path.join(fdir, "controller.txt"), controller_text(env))
    log = os.path.join(fdir, "ansible.log")
    say(f"fleet folder {fdir} ({'resumed' if resumed else 'new'}); code {ident['commit'][:12]}, "
        f"uncommitted diff {ident['diff_sha256'][:8]}; hosts: {', '.join(hosts)}")

    # 1. the same code everywhere, the sweep started everywhere at once (or reattached where it still runs)
    t0 = time.monotonic()
    prev = {h: j["jid"] for h, j in st["jobs"].items() if h in hosts}
    extra = {"out_dir": fdir, "fleet_stamp": st["stamp"], "code_tar": tar, "code_id": code_id, "sweep_args": args,
             "async_timeout": int(keys["timeout"]), "prev_jobs": prev, **client_extra, **nix_extra}
    if client_names:
        # the load generators' hosts first: the same code, loadgen built; a client not ready stops here
        ready = play.run("clients.yml", keys["inventory"], client_names, extra, env, log)
        for h in client_names:
            say(f"{h}: client {'ready (code shipped, loadgen built)' if ready.ok(h) else ready.by_host[h]}")
        if not all(ready.ok(h) for h in client_names):
            say("a client host is not ready: nothing was started; run the same command again once it is")
            return 1
    os.makedirs(os.path.join(fdir, "jobs"), exist_ok=True)
    for name in os.listdir(os.path.join(fdir, "jobs")):
        os.remove(os.path.join(fdir, "jobs", name))
    # A host this fleet sweep already completed and fetched is kept as it is.
    status = {h: "complete" for h in hosts if st["hosts_state"].get(h) == "complete"
              and is_run(os.path.join(fdir, h))}
    for h in status:
        say(f"{h}: complete in an earlier attempt, kept ({os.path.join(fdir, h)})")
    todo = [h for h in hosts if h not in status]
    started = play.run("start.yml", keys["inventory"], todo, extra, env, log) if todo else None
    for h in todo:
        path = os.path.join(fdir, "jobs", f"{h}.json")
        if os.path.exists(path):
            st["jobs"][h] = json.load(open(path))
            j = st["jobs"][h]
            say(f"{h}: sweep {'reattached (still running)' if j['reattached'] in (True, 'True') else 'started'}"
                f" in {j['run_dir']}; " + (f"Nix host: the controller's {len(nix_paths)} store paths copied there "
                                           f"({nix_extra['nix_hosts'][h]['store']}), the sweep runs in its Nix shell"
                                           if j.get("nix") in (True, "True") else "the host's own packages (./lab)"))
        else:
            status[h] = started.by_host[h]
            say(f"{h}: not started: {status[h]}")
    folder.save(fdir, st)

    # 2. progress per host until every host has finished or cannot be reached
    active = [h for h in hosts if h in st["jobs"] and h not in status]
    misses = {}
    while active:
        time.sleep(int(keys["poll"]))
        pdir = os.path.join(fdir, "poll")
        os.makedirs(pdir, exist_ok=True)
        for name in os.listdir(pdir):
            os.remove(os.path.join(pdir, name))
        polled = play.run("poll.yml", keys["inventory"], active, {"out_dir": fdir, "jobs": st["jobs"]}, env, log)
        elapsed = hms(int(time.monotonic() - t0))
        for h in list(active):
            path = os.path.join(pdir, f"{h}.json")
            if not os.path.exists(path):
                misses[h] = misses.get(h, 0) + 1
                say(f"[{elapsed}] {h}: {polled.by_host[h]}")
                if misses[h] >= 2:
                    status[h] = f"unreachable since {elapsed} ({polled.by_host[h].removeprefix('unreachable: ')})"
                    say(f"[{elapsed}] {h}: given up for now (the others go on); rerun the same command to resume it")
                    active.remove(h)
                continue
            misses[h] = 0
            r = json.load(open(path))
            try:
                g = json.loads(r.get("progress") or "{}")
            except ValueError:
                g = {}
            # A job that never finishes because its engine was killed (the host restarted, kill -9)
            # leaves Ansible's job file "started" for ever: the engine's own pid says it is gone.
            lost = g.get("state") == "running" and not g.get("alive") and int(r["finished"]) == 0
            if int(r["finished"]) == 1 or r["known"] in (False, "False") or lost:
                rc = r.get("rc")
                status[h] = ("complete" if str(rc) == "0" else
                             play.one_line(f"sweep ended with rc {rc}: {' / '.join(r.get('stderr_tail') or [])[-300:]}")
                             if int(r["finished"]) == 1 else
                             "sweep stopped: its engine is gone (killed, or the host restarted)" if lost else
                             f"sweep not running ({r.get('msg') or 'job lost'})")
                say(f"[{elapsed}] {h}: {status[h]}; {progress_line(r)}")
                active.remove(h)
            else:
                say(f"[{elapsed}] {h}: running; {progress_line(r)}")

    # 3. every run folder there is, complete or not
    ended = [h for h in todo if h in st["jobs"] and not status.get(h, "").startswith("unreachable")]
    if ended:
        fetched = play.run("fetch.yml", keys["inventory"], ended, {"out_dir": fdir, "jobs": st["jobs"]}, env, log)
        for h in ended:
            tgz = os.path.join(fdir, "fetched", f"{h}.tgz")
            if os.path.exists(tgz):
                try:
                    folder.unpack(tgz, os.path.join(fdir, h))
                    os.remove(tgz)
                except (folder.FetchError, OSError) as e:
                    status[h] = f"fetch failed: {e}"
            elif not fetched.ok(h):
                status[h] = f"{status.get(h, '')}; fetch: {fetched.by_host[h]}".lstrip("; ")
    st["hosts_state"] = {h: status.get(h, "?") for h in hosts}
    st["state"] = "complete" if all(status.get(h) == "complete" for h in hosts) else "incomplete"
    folder.save(fdir, st)

    # 4. one page, one column per host
    runs, missing = [], []
    for h in hosts:
        rf = RunFolder(os.path.join(fdir, h))
        if os.path.isdir(rf.data_dir):
            try:
                runs.append((h, model.build(rf.path)))
            except (model.DataError, JournalError) as e:
                missing.append((h, f"its run folder cannot be read: {e}"))
        else:
            missing.append((h, status.get(h, "no run folder")))
    if runs:
        title = f"Fleet sweep {os.path.basename(fdir)}: {', '.join(lab for lab, _m in runs)}"
        cmp = nway.compare(runs)
        write_atomic_text(os.path.join(fdir, "fleet.md"),      # received names: shown, not obeyed
                          visible(nway.markdown(runs, cmp, title, missing), lines=True))
        write_atomic_text(os.path.join(fdir, "fleet.html"),
                          nway.html(runs, cmp, title, missing, [(lab, f"{lab}/report.html") for lab, _m in runs]))
    say(table(["host", "state", "run folder"],
              [[h, status.get(h, "?"), os.path.join(fdir, h) if os.path.isdir(os.path.join(fdir, h)) else "–"]
               for h in hosts]))
    if runs:
        say(f"comparison: {os.path.join(fdir, 'fleet.html')} (and fleet.md)")
    if st["state"] != "complete":
        say("not every host is complete: run the same command again to resume (each host's run folder is kept)")
    return 0 if st["state"] == "complete" else 1


# --- cluster-up / cluster-down ---------------------------------------------------------------------
def cluster_record_path():
    """cassandra/cluster.sh's record: one place for the local cluster and an inventory's."""
    return os.path.join(os.environ.get("CLUSTER_WORK") or os.path.join(ROOT, ".work", "cluster"), "cluster.txt")


def read_record(path):
    """(settings {key: value}, nodes [{key: value}]) of a cluster record."""
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
               "seed": r"True|False|true|false",
               "java": r"[^\x00-\x1f\x7f]{0,200}"}


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


def cmd_cluster_up(keys, args, env):
    extra_keys = {}
    for a in args:
        k, _, v = a.partition("=")
        if k not in ("nodes", "plan") or not v:
            die(f"cluster-up takes inventory=, hosts=, known_hosts=, nodes= and plan=1, not {a!r}")
        extra_keys[k] = v
    hosts = hosts_of(keys, env)
    if "nodes" in extra_keys:
        n = extra_keys["nodes"]
        if not n.isdigit() or not 1 <= int(n) <= len(hosts):
            die(f"nodes={n}: a whole number from 1 to {len(hosts)} (the hosts {keys['hosts']} selects)")
        hosts = hosts[:int(n)]
    plan = extra_keys.get("plan") == "1"
    record = cluster_record_path()
    if os.path.exists(record) and not plan:
        die(f"a cluster is recorded in {record}: cluster-down first")
    hostvars = load(keys["inventory"], env)["hostvars"]
    seed = hosts[0]
    sv = hostvars.get(seed, {})
    seeds = f"{sv.get('cassandra_address') or sv.get('ansible_host') or seed}:{sv.get('cassandra_storage_port', 7000)}"
    work = os.path.dirname(record)
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, f"ansible-{stamp_now()}")
    os.makedirs(out)
    try:
        tar, code_id, _ident = code.pack(ROOT, work)
    except code.CodeError as e:
        die(str(e))
    t0 = time.monotonic()
    say(f"cluster: {'plan (check mode, nothing started)' if plan else 'starting'}: {len(hosts)} node(s) on "
        f"{', '.join(hosts)}; seed {seed} ({seeds})")
    outcome = play.run("cassandra.yml", keys["inventory"], hosts,
                       {"cluster_action": "up", "code_tar": tar, "code_id": code_id, "seed_host": seed, "seeds": seeds,
                        "out_dir": out, "node_code_dirs": {}}, env, os.path.join(out, "ansible.log"), check=plan)
    rows, nodes = [], []
    for i, h in enumerate(hosts, 1):
        path = os.path.join(out, f"{h}.json")
        r = node_report(path, h)
        nodes.append(dict(r, i=i))
        rows.append([h, r.get("cql", "–"), "seed" if h == seed else "joins", r.get("numa", "–"),
                     play.one_line(r.get("java") or "–"), r.get("pid") or "–", outcome.by_host[h]])
    say(table(["host", "CQL", "role", "NUMA node", "Java", "PID", "status"], rows))
    bad = [h for h in hosts if not outcome.ok(h)]
    if plan:
        say(f"plan only: nothing was started (Ansible's log: {out}/ansible.log)")
        return 1 if bad else 0
    lines = [f"# The lab's Cassandra cluster (scripts/lab/cli/fleet.py cluster-up), started {stamp_now()}",
             f"where=hosts {', '.join(hosts)} of {os.path.abspath(keys['inventory'])}",
             f"inventory={os.path.abspath(keys['inventory'])}", f"known_hosts={keys['known_hosts'] or ''}"]
    lines += [f"node={n['i']} host={n.get('host', '?')} address={n.get('address', '?')} cql={n.get('cql', '?')} "
              f"numa={n.get('numa', '?')} pid={n.get('pid') or '?'} code={n.get('code_dir', '?')} "
              f"work={n.get('work', '?')}" for n in nodes if n.get("pid")]
    if bad:
        say(f"cluster: not up on {', '.join(bad)} (Ansible's log: {out}/ansible.log)")
    if any(n.get("pid") for n in nodes):
        # Recorded whenever a node runs, also after a failure: cluster-down must find and stop it.
        write_atomic_text(record, "\n".join(lines + [f"up_seconds={int(time.monotonic() - t0)}"]) + "\n")
    if bad:
        say("cluster: run cluster-down to stop the nodes that did start")
        return 1
    say(f"cluster: {len(hosts)} nodes UN in {int(time.monotonic() - t0)} s; contact points: "
        f"{','.join(n['cql'] for n in nodes)}; record: {record}")
    return 0


def cmd_cluster_down(env):
    record = cluster_record_path()
    if not os.path.exists(record):
        say(f"cluster: no cluster recorded in {record}")
        return 0
    settings, nodes = read_record(record)
    if "inventory" not in settings:
        die(f"{record}: a cluster of this host: cassandra/cluster.sh down stops it")
    env = play.environment(settings.get("known_hosts") or None)
    hosts = [n["host"] for n in nodes]
    out = os.path.join(os.path.dirname(record), f"ansible-{stamp_now()}")
    os.makedirs(out)
    outcome = play.run("cassandra.yml", settings["inventory"], hosts,
                       {"cluster_action": "down", "code_tar": "", "code_id": "", "seed_host": hosts[0], "seeds": "",
                        "out_dir": out, "node_code_dirs": {n["host"]: n["code"] for n in nodes}},
                       env, os.path.join(out, "ansible.log"))
    say(table(["host", "PID", "status"], [[n["host"], n.get("pid", "?"), outcome.by_host[n["host"]]] for n in nodes]))
    if all(outcome.ok(h) for h in hosts):
        os.remove(record)
        return 0
    say(f"cluster: not every node could be stopped; the record stays ({record}): run cluster-down again")
    return 1


def main(argv):
    if argv and argv[0] == "cluster-down":
        if argv[1:]:
            die("cluster-down takes no arguments (the record says which nodes run where)")
        return cmd_cluster_down(None)
    if not argv or argv[0] not in ("check", "plan", "sweep", "cluster-up"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] == "cluster-up" and not any(a.startswith("hosts=") for a in argv[1:]):
        argv = argv + ["hosts=cassandra"]
    keys, args = parse(argv[1:])
    if argv[0] == "check" and args:
        die(f"check takes inventory=, hosts= and known_hosts= only, not {args[0]!r}")
    if argv[0] != "sweep" and (keys["clients"] or keys["client_identity"]):
        die("clients= and client_identity= are fleet-sweep's (the cache experiment's load generators)")
    if keys["client_identity"] and not keys["clients"]:
        die("client_identity= goes with clients=GROUP")
    env = play.environment(keys["known_hosts"])
    try:
        return {"check": cmd_check, "plan": cmd_plan, "sweep": cmd_sweep,
                "cluster-up": cmd_cluster_up}[argv[0]](keys, args, env)
    except KeyboardInterrupt:
        # The hosts' sweeps are detached: they go on, and the same command follows them again.
        print("fleet: interrupted; sweeps already started go on, on their hosts: run the same command again "
              "to follow them and fetch their run folders", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
