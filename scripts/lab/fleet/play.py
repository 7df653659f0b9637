"""Running one of fleet/*.yml with ansible-playbook, and reading what it did to each host from the lab's
status callback (fleet/callback_plugins/lab_status.py), never from Ansible's text. Variables go in as a
JSON file (-e @file): nothing from the inventory or the command line is ever shell text."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

from lab import ROOT

FLEET = os.path.join(ROOT, "fleet")


def environment(known_hosts=None, base=None):
    """ansible's environment: the lab's config and callback; host keys always checked, against the
    user's known_hosts or a given file."""
    env = dict(base or os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(FLEET, "ansible.cfg"),
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(FLEET, "callback_plugins"),
               ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_NOCOLOR="1")
    opts = "-o StrictHostKeyChecking=yes"
    if known_hosts:
        opts += f" -o UserKnownHostsFile={shlex.quote(os.path.abspath(known_hosts))}"
    env["ANSIBLE_SSH_COMMON_ARGS"] = opts
    return env


def one_line(text):
    """A message from a host, fit for one table cell: no line breaks, no control characters."""
    return " ".join("".join(c if c.isprintable() else " " for c in text.replace("\n", " ")).split())


NO_PYTHON = "Module result deserialization failed"
# Ansible's words when ssh died before it could write the module (pipelining): ssh's own reason is lost.
LOST_REASON = "Data could not be sent to remote host"


class Outcome:
    """Per host: 'ok', 'failed: why' or 'unreachable: why' (the first failure counts)."""

    def __init__(self, hosts, status_path, rc):
        self.rc = rc
        self.by_host = {h: "not run" for h in hosts}
        seen = set()
        for line in open(status_path) if os.path.exists(status_path) else []:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            h = r.get("host")
            if h not in self.by_host or h in seen:
                continue
            if r["status"] in ("failed", "unreachable"):
                msg = str(r.get("msg") or "")
                if NO_PYTHON in msg:      # Ansible's words for an interpreter that printed no module result
                    msg = (f"{msg}: Ansible cannot use this host's Python (a pyenv-like shim?): set "
                           "ansible_python_interpreter=/path/to/python3 for it in the inventory")
                self.by_host[h] = one_line(f"{r['status']}: {r['task']}: {msg or 'rc ' + str(r.get('rc'))}")
                seen.add(h)
            elif r["status"] in ("ok", "skipped", "ignored"):
                self.by_host[h] = "ok"

    def ok(self, h):
        return self.by_host.get(h) == "ok"

    def unreachable(self, h):
        return self.by_host.get(h, "").startswith("unreachable")

    def reason_lost(self):
        return [h for h, s in self.by_host.items() if s.startswith("unreachable") and LOST_REASON in s]


def local_python(inventory, env, tmp):
    """["-i", overlay] giving hosts with ansible_connection=local the controller's own Python (the one
    running this), unless the inventory names one: Ansible's discovery may pick a `python3` that is a
    pyenv shim with no interpreter behind it, and then says only "Module result deserialization failed"."""
    from lab.fleet.inventory import InventoryError, load
    try:
        hostvars = load(inventory, env)["hostvars"]
    except InventoryError:
        return []       # the play says what is wrong with the inventory
    local = sorted(h for h, v in hostvars.items() if isinstance(v, dict) and v.get("ansible_connection") == "local"
                   and "ansible_python_interpreter" not in v)
    if not local:
        return []
    overlay = os.path.join(tmp, "local-python.yml")
    with open(overlay, "w") as f:       # JSON is YAML: names and the path are data, never inventory syntax
        json.dump({"all": {"hosts": {h: {"ansible_python_interpreter": sys.executable} for h in local}}}, f)
    return ["-i", overlay]


def run(playbook, inventory, hosts, extra, env, log_path, check=False):
    """Run fleet/<playbook> on `hosts` (names); Ansible's own output is appended to log_path. check: Ansible's
    check mode (nothing is changed on the hosts; tasks marked check_mode: false still report)."""
    with tempfile.TemporaryDirectory(prefix="lab-fleet-") as tmp:
        vars_file = os.path.join(tmp, "vars.json")
        status = os.path.join(tmp, "status.jsonl")
        with open(vars_file, "w") as f:
            json.dump(dict(extra, fleet_hosts=",".join(hosts)), f)
        argv = ["ansible-playbook", "-i", os.path.abspath(inventory), *local_python(inventory, env, tmp),
                "-e", "@" + vars_file,
                os.path.join(FLEET, playbook)] + (["--check"] if check else [])
        with open(log_path, "a") as log:
            log.write(f"\n### {' '.join(shlex.quote(a) for a in argv)}\n")
            log.flush()
            p = subprocess.run(argv, env=dict(env, LAB_FLEET_STATUS=status), stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, cwd=ROOT)
        outcome = Outcome(hosts, status, p.returncode)
    lost = outcome.reason_lost()
    if lost and playbook != "reach.yml":
        # Asked again without pipelining, ssh's own words come back (a refused host key, a wrong user).
        again = run("reach.yml", inventory, lost, {}, dict(env, ANSIBLE_PIPELINING="False"), log_path)
        for h in lost:
            if again.unreachable(h) and LOST_REASON not in again.by_host[h]:
                outcome.by_host[h] = again.by_host[h]
    return outcome
