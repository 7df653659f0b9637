"""Nix hosts of a fleet sweep: the controller's Nix shell, copied to the host as store paths (`nix copy`),
and the host's sweep run in it; the code still arrives as the git archive (lab/fleet/code.py).

Which hosts: the inventory's `lab_nix` per host (true: a Nix host, nix must be there; false: never;
unset: a Nix host when this controller runs inside the lab's Nix shell and the host has `nix-store` on the
PATH of a non-interactive ssh session, which fleet/start.yml probes). `lab_nix_store` (optional) is the store
on the host that `nix copy` writes to (`ssh-ng://…?remote-store=VALUE`; default its nix-daemon's store).
What is copied: the store paths the shell's variables name (scripts/lab/fleet/nixenv.py, the same rule the host's
env.sh records them by), with their closures. How: `nix copy --to ssh-ng://USER@HOST` from here, as an
argv; ssh gets NIX_SSHOPTS (nix splits it on spaces: every word is checked to hold none) with the fleet's
host-key checking (StrictHostKeyChecking=yes, the fleet's known_hosts), BatchMode, the inventory's port and
key. Nothing from the inventory is shell text; a value that is not plain is refused as `file:line`.
"""
import re

from .inventory import InventoryError, line_of

TRUE, FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")
ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$")
USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
# A store URI on the host's side (local, daemon, local?root=/path…): no '&' (another setting), no space.
STORE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:?=+-]{0,255}$")
SSHOPT = re.compile(r"^\S{1,4096}$")
NIX = ["nix", "--extra-experimental-features", "nix-command"]


def mode(hostvars, host, path):
    """'yes', 'no' or 'auto' from the host's lab_nix."""
    v = hostvars.get(host, {}).get("lab_nix")
    if v is None or v == "":
        return "auto"
    s = str(v).strip().lower()
    if s in TRUE:
        return "yes"
    if s in FALSE:
        return "no"
    raise InventoryError(f"{line_of(path, 'lab_nix')}: {host}: lab_nix={v!r}: true or false "
                         "(unset: a Nix host when this controller is in the lab's Nix shell and the host has nix)")


def ssh_opts(known_hosts, port, key):
    """NIX_SSHOPTS: nix splits it on whitespace, so no word may hold any."""
    words = ["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30"]
    if known_hosts:
        words += ["-o", f"UserKnownHostsFile={known_hosts}"]
    if port:
        words += ["-p", str(port)]
    if key:
        words += ["-i", str(key)]
    bad = next((w for w in words if not SSHOPT.match(w)), None)
    if bad is not None:
        raise ValueError(f"{bad!r} holds a space: nix passes NIX_SSHOPTS to ssh split on spaces")
    return " ".join(words)


def copy_plan(hostvars, host, path, known_hosts, paths):
    """{'argv': nix copy's argv, 'sshopts': NIX_SSHOPTS, 'store': the URI} for one host; InventoryError
    (file:line) for a value that is not plain."""
    v = hostvars.get(host, {})
    address, user = str(v.get("ansible_host") or host), v.get("ansible_user")
    port, key, store = v.get("ansible_port"), v.get("ansible_ssh_private_key_file"), v.get("lab_nix_store")
    if not ADDRESS.match(address):
        raise InventoryError(f"{line_of(path, host)}: {host}: ansible_host={address!r} is not a plain address "
                             "(nix copy names it in a store URI)")
    if user is not None and not USER.match(str(user)):
        raise InventoryError(f"{line_of(path, 'ansible_user')}: {host}: ansible_user={user!r} is not a plain user name")
    if port is not None and not (str(port).isdigit() and 1 <= int(port) <= 65535):
        raise InventoryError(f"{line_of(path, 'ansible_port')}: {host}: ansible_port={port!r} is not a port")
    if store is not None and not STORE.match(str(store)):
        raise InventoryError(f"{line_of(path, 'lab_nix_store')}: {host}: lab_nix_store={store!r}: a store URI "
                             "of letters, digits and . _ / : ? = + - (such as daemon or local?root=/path)")
    try:
        opts = ssh_opts(known_hosts, port, key)
    except ValueError as e:
        raise InventoryError(f"{line_of(path, host)}: {host}: {e}")
    uri = f"ssh-ng://{f'{user}@' if user else ''}{address}" + (f"?remote-store={store}" if store else "")
    return {"argv": NIX + ["copy", "--to", uri, *paths],
            "sshopts": opts, "store": uri}
