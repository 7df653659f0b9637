"""fleet sweep: ship this checkout (git archive of the commit with the uncommitted diff) to every host, start
`./lab sweep` on all of them at once, print each host's progress, fetch every run folder (a failed host's
partial one too) into results/fleet-<time>/<host>/, and write fleet.md and fleet.html, one column per host.
Rerun the same command to resume: every host's run folder is resumed by the engine (run=), a running one
reattached. The steps, in order: prepare (nothing touched before every argument is checked), start, follow,
fetch, page."""
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

from lab import ROOT
from lab.cli.fleet.common import hosts_of, say, table
from lab.core.run import DataError
from lab.core.runfolder import RunFolder, is_run, results_dir, write_atomic_text
from lab.core.term import visible
from lab.engine import api
from lab.engine.price import hms
from lab.errors import LabError
from lab.fleet import clients as cl
from lab.fleet import code, folder, nix, play
from lab.fleet.inventory import load, select
from lab.fleet.nixenv import digest, shell
from lab.report import model, nway
from lab.report.journal import JournalError


def controller_text(env):
    p = subprocess.run(["ansible-playbook", "--version"], capture_output=True, text=True, env=env)
    return ((p.stdout.strip().splitlines() or ["ansible-playbook: unavailable"])[0]
            + f"\npython {sys.version.split()[0]}\n")


def progress_line(p):
    """A host's progress (scripts/lab/cli/progress.py there, as JSON) in one line; what is not of its shape
    is '?'."""
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
    (an ssh config and the clients' host keys from known_hosts); bad input is a LabError, before any host."""
    inv = load(keys["inventory"], env)
    names = select(inv, keys["clients"], keys["inventory"], env)
    both = sorted(set(names) & set(hosts))
    if both:
        raise LabError(f"clients={keys['clients']} selects {', '.join(both)}, also a sweep host "
                       f"(hosts={keys['hosts']})")
    hv = inv["hostvars"]
    labs = {str(hv.get(h, {}).get("lab_dir", "")) for h in hosts + names}
    if len(labs) > 1:
        raise LabError("clients run the lab from the same lab_dir as the servers (loadclients.py finds it there): "
                       f"lab_dir differs ({', '.join(sorted(x or 'default' for x in labs))})")
    known = keys["known_hosts"] or os.path.expanduser("~/.ssh/known_hosts")
    rows, lines = [], []
    for h in names:
        v = hv.get(h, {})
        hostname, port = v.get("ansible_host", h), v.get("ansible_port", 22)
        rows.append((h, hostname, port, v.get("ansible_user")))
        found = cl.known_host_lines(known, str(hostname), port) if os.path.isfile(known) else []
        if not found:
            raise LabError(f"client {h}: no host key for {hostname} port {port} in {known} (ssh to it once, or "
                           "ssh-keyscan it and check the fingerprint)")
        lines += found
    config = cl.ssh_config(rows, keys["client_identity"])
    return names, f"clients={','.join(names)}", {"client_ssh_config": config, "client_known_hosts":
                                                  "\n".join(lines) + "\n", "known_hosts_mark": cl.KNOWN_HOSTS_MARK}


def nix_setup(keys, hosts, env):
    """The Nix hosts of this sweep (lab/fleet/nix.py): (the controller's store paths, what start.yml gets:
    per candidate host its mode and nix copy's argv, the shell's variables). Bad input is a LabError here."""
    variables, paths = shell(os.environ)
    hv = load(keys["inventory"], env)["hostvars"]
    modes = {h: nix.mode(hv, h, keys["inventory"]) for h in hosts}
    want = [h for h in hosts if modes[h] == "yes"]
    if want and not paths:
        raise LabError(f"{', '.join(want)}: lab_nix=true, but this controller is not in the lab's Nix shell "
                       "(nix develop): there are no store paths to copy")
    known = os.path.abspath(keys["known_hosts"]) if keys["known_hosts"] else None
    plans = {h: dict(nix.copy_plan(hv, h, keys["inventory"], known, paths), mode=modes[h])
             for h in hosts if paths and modes[h] != "no"}
    shell_vars = {k: v for k, v in variables.items() if k != "PATH"}
    return paths, {"nix_hosts": plans, "nix_env": shell_vars, "nix_path": variables.get("PATH", "")}


@dataclass
class Fleet:
    """One fleet sweep, as its steps share it."""
    keys: dict
    env: dict
    hosts: list
    fdir: str               # results/fleet-<time>/: the hosts' run folders, the state, Ansible's log
    st: dict                # its state (lab/fleet/folder.py), saved after each step
    extra: dict             # what the plays get: the code, the sweep's arguments, clients, Nix
    nix_paths: list
    clients: list
    status: dict = field(default_factory=dict)      # host → "complete" or why it is not, this attempt
    todo: list = field(default_factory=list)        # the hosts started (or reattached) this attempt
    t0: float = 0.0

    @property
    def log(self):
        return os.path.join(self.fdir, "ansible.log")


def prepare(keys, args, env):
    """Every argument checked (the engine plans the sweep here, before any host is touched), the code packed,
    the fleet folder found again (the same command resumes it) or made."""
    hosts = hosts_of(keys, env)
    nix_paths, nix_extra = nix_setup(keys, hosts, env)
    client_names, client_extra = [], {}
    if keys["clients"]:
        client_names, override, client_extra = client_setup(keys, hosts, env)
        args = [a for a in args if not a.startswith("clients=")] + [override]
    api.request(["dry=1", *args])
    ident = code.identity(ROOT)
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
    tar, code_id, ident = code.pack(ROOT, fdir)
    st.update(inventory=os.path.abspath(keys["inventory"]), hosts=hosts, args=args, code_id=code_id,
              identity=ident, state="running", nix_paths=nix_paths)
    if nix_paths:
        # what a Nix host's env/nix.txt lists, and its env/build.txt's `nix store` line
        write_atomic_text(os.path.join(fdir, "nix-paths.txt"), "".join(p + "\n" for p in nix_paths))
    folder.save(fdir, st)
    write_atomic_text(os.path.join(fdir, "controller.txt"), controller_text(env))
    say(f"fleet folder {fdir} ({'resumed' if resumed else 'new'}); code {ident['commit'][:12]}, "
        f"uncommitted diff {ident['diff_sha256'][:8]}; hosts: {', '.join(hosts)}")
    prev = {h: j["jid"] for h, j in st["jobs"].items() if h in hosts}
    extra = {"out_dir": fdir, "fleet_stamp": st["stamp"], "code_tar": tar, "code_id": code_id, "sweep_args": args,
             "async_timeout": int(keys["timeout"]), "prev_jobs": prev, **client_extra, **nix_extra}
    return Fleet(keys, env, hosts, fdir, st, extra, nix_paths, client_names)


def start(f):
    """The same code everywhere, the sweep started everywhere at once (or reattached where it still runs);
    False when a client host is not ready (nothing started)."""
    f.t0 = time.monotonic()
    inv = f.keys["inventory"]
    if f.clients:
        # the load generators' hosts first: the same code, loadgen built; a client not ready stops here
        ready = play.run("clients.yml", inv, f.clients, f.extra, f.env, f.log)
        for h in f.clients:
            say(f"{h}: client {'ready (code shipped, loadgen built)' if ready.ok(h) else ready.by_host[h]}")
        if not all(ready.ok(h) for h in f.clients):
            say("a client host is not ready: nothing was started; run the same command again once it is")
            return False
    jobs = os.path.join(f.fdir, "jobs")
    os.makedirs(jobs, exist_ok=True)
    for name in os.listdir(jobs):
        os.remove(os.path.join(jobs, name))
    # A host this fleet sweep already completed and fetched is kept as it is.
    f.status = {h: "complete" for h in f.hosts if f.st["hosts_state"].get(h) == "complete"
                and is_run(os.path.join(f.fdir, h))}
    for h in f.status:
        say(f"{h}: complete in an earlier attempt, kept ({os.path.join(f.fdir, h)})")
    f.todo = [h for h in f.hosts if h not in f.status]
    started = play.run("start.yml", inv, f.todo, f.extra, f.env, f.log) if f.todo else None
    for h in f.todo:
        path = os.path.join(jobs, f"{h}.json")
        if os.path.exists(path):
            f.st["jobs"][h] = json.load(open(path))
            j = f.st["jobs"][h]
            say(f"{h}: sweep {'reattached (still running)' if j['reattached'] in (True, 'True') else 'started'}"
                f" in {j['run_dir']}; " + (f"Nix host: the controller's {len(f.nix_paths)} store paths copied there "
                                           f"({f.extra['nix_hosts'][h]['store']}), the sweep runs in its Nix shell"
                                           if j.get("nix") in (True, "True") else "the host's own packages (./lab)"))
        else:
            f.status[h] = started.by_host[h]
            say(f"{h}: not started: {f.status[h]}")
    folder.save(f.fdir, f.st)
    return True


def follow(f):
    """Each host's progress, polled until every host has finished or cannot be reached (twice unanswered)."""
    active = [h for h in f.hosts if h in f.st["jobs"] and h not in f.status]
    misses = {}
    while active:
        time.sleep(int(f.keys["poll"]))
        pdir = os.path.join(f.fdir, "poll")
        os.makedirs(pdir, exist_ok=True)
        for name in os.listdir(pdir):
            os.remove(os.path.join(pdir, name))
        polled = play.run("poll.yml", f.keys["inventory"], active, {"out_dir": f.fdir, "jobs": f.st["jobs"]}, f.env,
                          f.log)
        elapsed = hms(int(time.monotonic() - f.t0))
        for h in list(active):
            path = os.path.join(pdir, f"{h}.json")
            if not os.path.exists(path):
                misses[h] = misses.get(h, 0) + 1
                say(f"[{elapsed}] {h}: {polled.by_host[h]}")
                if misses[h] >= 2:
                    f.status[h] = f"unreachable since {elapsed} ({polled.by_host[h].removeprefix('unreachable: ')})"
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
                f.status[h] = ("complete" if str(rc) == "0" else
                               play.one_line(f"sweep ended with rc {rc}: "
                                             f"{' / '.join(r.get('stderr_tail') or [])[-300:]}")
                               if int(r["finished"]) == 1 else
                               "sweep stopped: its engine is gone (killed, or the host restarted)" if lost else
                               f"sweep not running ({r.get('msg') or 'job lost'})")
                say(f"[{elapsed}] {h}: {f.status[h]}; {progress_line(r)}")
                active.remove(h)
            else:
                say(f"[{elapsed}] {h}: running; {progress_line(r)}")


def fetch(f):
    """Every run folder there is, complete or not, into the fleet folder; the state saved."""
    ended = [h for h in f.todo if h in f.st["jobs"] and not f.status.get(h, "").startswith("unreachable")]
    if ended:
        fetched = play.run("fetch.yml", f.keys["inventory"], ended, {"out_dir": f.fdir, "jobs": f.st["jobs"]}, f.env,
                           f.log)
        for h in ended:
            tgz = os.path.join(f.fdir, "fetched", f"{h}.tgz")
            if os.path.exists(tgz):
                try:
                    folder.unpack(tgz, os.path.join(f.fdir, h))
                    os.remove(tgz)
                except (folder.FetchError, OSError) as e:
                    f.status[h] = f"fetch failed: {e}"
            elif not fetched.ok(h):
                f.status[h] = f"{f.status.get(h, '')}; fetch: {fetched.by_host[h]}".lstrip("; ")
    f.st["hosts_state"] = {h: f.status.get(h, "?") for h in f.hosts}
    f.st["state"] = "complete" if all(f.status.get(h) == "complete" for h in f.hosts) else "incomplete"
    folder.save(f.fdir, f.st)


def page(f):
    """One page, one column per host (fleet.md, fleet.html), and the table of where each host stands."""
    runs, missing = [], []
    for h in f.hosts:
        rf = RunFolder(os.path.join(f.fdir, h))
        if os.path.isdir(rf.data_dir):
            try:
                runs.append((h, model.build(rf.path)))
            except (DataError, JournalError) as e:
                missing.append((h, f"its run folder cannot be read: {e}"))
        else:
            missing.append((h, f.status.get(h, "no run folder")))
    if runs:
        title = f"Fleet sweep {os.path.basename(f.fdir)}: {', '.join(lab for lab, _m in runs)}"
        cmp = nway.compare(runs)
        write_atomic_text(os.path.join(f.fdir, "fleet.md"),      # received names: shown, not obeyed
                          visible(nway.markdown(runs, cmp, title, missing), lines=True))
        write_atomic_text(os.path.join(f.fdir, "fleet.html"),
                          nway.html(runs, cmp, title, missing, [(lab, f"{lab}/report.html") for lab, _m in runs]))
    say(table(["host", "state", "run folder"],
              [[h, f.status.get(h, "?"), os.path.join(f.fdir, h) if os.path.isdir(os.path.join(f.fdir, h)) else "–"]
               for h in f.hosts]))
    if runs:
        say(f"comparison: {os.path.join(f.fdir, 'fleet.html')} (and fleet.md)")
    if f.st["state"] != "complete":
        say("not every host is complete: run the same command again to resume (each host's run folder is kept)")
    return 0 if f.st["state"] == "complete" else 1


def main(keys, args, env):
    f = prepare(keys, args, env)
    if not start(f):
        return 1
    follow(f)
    fetch(f)
    return page(f)
