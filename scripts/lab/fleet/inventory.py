"""The user's Ansible inventory, read by Ansible itself (ansible-inventory --list): the hosts a pattern
selects, in inventory order. Host names become folder names on the controller, so they are checked."""
import json
import os
import re
import subprocess

from lab.errors import LabError

SAFE_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# An Ansible host pattern (groups, names, :, &, !, *, commas): Ansible's own language, never shell.
SAFE_PATTERN = re.compile(r"^[A-Za-z0-9_.:&!*,\[\]-]{1,200}$")


class InventoryError(LabError):
    """Bad inventory or pattern; str() is the one line to show (file:line where it applies)."""


def line_of(path, word):
    """file:line of the first line naming `word`, else the file."""
    try:
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                if word in line:
                    return f"{path}:{n}"
    except OSError:
        pass
    return path


def members(data, group, seen=None):
    """Hosts of a group and its children, in the order ansible-inventory lists them."""
    seen = set() if seen is None else seen
    if group in seen:
        return []
    seen.add(group)
    g = data.get(group, {})
    out = list(g.get("hosts", []))
    for child in g.get("children", []):
        out += [h for h in members(data, child, seen) if h not in out]
    return out


def load(path, env):
    """{"hosts": [all hosts], "groups": {group: [hosts]}, "hostvars": {...}} of an inventory file."""
    if not os.path.isfile(path):
        raise InventoryError(f"no such inventory: {path}")
    p = subprocess.run(["ansible-inventory", "-i", path, "--list"], capture_output=True, text=True, env=env)
    try:
        data = json.loads(p.stdout) if p.returncode == 0 else None
    except ValueError:
        data = None
    if data is None:
        last = (p.stderr.strip().splitlines() or ["ansible-inventory failed"])[-1]
        raise InventoryError(f"{path}: Ansible cannot read this inventory: {last}")
    hosts = members(data, "all")
    if not hosts:
        raise InventoryError(f"{path}: no host in this inventory (is it an Ansible INI or YAML inventory?)")
    for h in hosts:
        if not SAFE_HOST.match(h) or ".." in h:
            raise InventoryError(f"{line_of(path, h)}: host name {h!r}: use letters, digits, '.', '_' or '-' "
                                 "(it names a folder on this machine)")
    groups = {g: members(data, g) for g in data if g not in ("_meta",)}
    hostvars = data.get("_meta", {}).get("hostvars", {})
    for h in hosts:
        why = hostvar_problem(hostvars.get(h, {}))
        if why:
            raise InventoryError(f"{line_of(path, why[0])}: {h}: {why[0]}={str(why[1])[:80]!r}: {why[2]}")
    for h in hosts:
        why = local_python_problem(hostvars.get(h, {}))
        if why:
            raise InventoryError(f"{line_of(path, 'ansible_python_interpreter')}: {h}: {why}")
    return {"hosts": hosts, "groups": groups, "hostvars": hostvars}


# Host variables the lab puts into paths, ports and Cassandra's options on other hosts: only the shapes
# they can take (a `|` or `&` in lab_dir would break or silently move Cassandra's folders).
HOSTVARS = {
    "lab_dir": (re.compile(r"/?[A-Za-z0-9._/-]{1,255}"), "a path of letters, digits, '.', '_', '-' and '/'"),
    "cassandra_heap": (re.compile(r"[1-9][0-9]{0,5}[MG]"), "a size such as 512M or 4G"),
    "ansible_port": (re.compile(r"[1-9][0-9]{0,4}"), "a port from 1 to 65535"),
    "cassandra_port": (re.compile(r"[1-9][0-9]{0,4}"), "a port from 1 to 65535"),
    "cassandra_storage_port": (re.compile(r"[1-9][0-9]{0,4}"), "a port from 1 to 65535"),
    "cassandra_jmx_port": (re.compile(r"[1-9][0-9]{0,4}"), "a port from 1 to 65535"),
}


def hostvar_problem(hv):
    """(name, value, what it must be) of the first host variable of the wrong shape, or None."""
    if not isinstance(hv, dict):
        return ("hostvars", hv, "not a mapping")
    for name, (shape, what) in HOSTVARS.items():
        v = hv.get(name)
        if v is None:
            continue
        text = str(v)
        if (isinstance(v, (dict, list, bool)) or not shape.fullmatch(text) or ".." in text.split("/")
                or ("port" in name and int(text) > 65535)):
            return (name, v, what)
    return None


LOCAL_PYTHON_TIMEOUT = 30      # seconds for an interpreter to say its version (a cold disk, a slow shim)


def local_python_problem(hv):
    """Why the Python an ansible_connection=local host names cannot run Ansible's modules on this
    machine, in words, or None (remote hosts, templated names and Ansible's own `auto…` choices are
    Ansible's to find; a local host without one gets the controller's own, lab/fleet/play.py).
    Ansible itself would say only "Module result deserialization failed" (a pyenv shim, exit 127)."""
    import shlex
    import sys
    interp = hv.get("ansible_python_interpreter")
    if hv.get("ansible_connection") != "local" or not isinstance(interp, str) or "{{" in interp \
            or interp.startswith("auto"):
        return None
    fix = (f"set ansible_python_interpreter to a working Python 3 for it in the inventory "
           f"(this controller's is {sys.executable}), or remove it to use that one")
    shown = f"ansible_python_interpreter={interp[:120]!r}"
    try:
        argv = shlex.split(interp)
        p = subprocess.run([*argv, "-c", "import sys; print('lab-python', sys.version_info[0])"],
                           capture_output=True, text=True, timeout=LOCAL_PYTHON_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        return f"{shown} cannot run here ({getattr(e, 'strerror', None) or type(e).__name__}): {fix}"
    if p.returncode != 0 or p.stdout.split() != ["lab-python", "3"]:
        said = " ".join((p.stderr or p.stdout).split())[:120]
        said = "".join(c if c.isprintable() else "?" for c in said)
        return f"{shown} is not a working Python 3 here (exit {p.returncode}{': ' + said if said else ''}): {fix}"
    return None


def select(inv, pattern, path, env):
    """The hosts an Ansible pattern selects (ansible --list-hosts), in inventory order."""
    if not SAFE_PATTERN.match(pattern):
        raise InventoryError(f"hosts={pattern!r}: not an Ansible host pattern (group or host "
                             "names, ':', '&', '!', '*')")
    p = subprocess.run(["ansible", "-i", path, "--list-hosts", pattern], capture_output=True, text=True, env=env)
    chosen = {ln.strip() for ln in p.stdout.splitlines()[1:] if ln.strip()}
    hosts = [h for h in inv["hosts"] if h in chosen]
    if not hosts:
        raise InventoryError(f"{path}: hosts={pattern} selects no host (groups: "
                             f"{', '.join(sorted(g for g in inv['groups'] if g not in ('all', 'ungrouped')))})")
    return hosts
