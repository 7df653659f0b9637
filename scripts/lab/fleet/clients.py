"""Load generators on other hosts (issue 26 item 2): the cache point's server runs here under the engine,
which times and guards it; each client host named by the spec key `clients` runs loadgen over ssh.

- A client is an ssh destination (`[user@]name`): `ssh NAME` must work from this host in batch mode
  (keys, not passwords), with its host key already known (StrictHostKeyChecking=yes: an unknown or
  changed key fails the point, by name). $LAB_SSH_CONFIG names an ssh config file (default: the user's).
- The remote command is fixed: the lab's own `scripts/lab/cli/loadclients.py client` at the same place as this
  checkout (relative to the home folder when it lies under it), its words checked here and quoted once
  for the remote shell. Nothing else from the user reaches it.
- The path between them is named from facts, not from the address alone: the client says its boot id,
  so "same host" / "loopback" (one machine) and "between hosts" (two) are told apart honestly.
Nothing here runs shell text; every remote step has a timeout.
"""
import ipaddress
import os
import re
import shlex
import socket
import subprocess

# The `clients` value's grammar is the spec's (lab/engine/clients.py); the error is shared with it.
from lab.engine.clients import DEST, MOST_CLIENTS, ClientError, parse  # noqa: F401,E402

# Words of the remote command: options and values of loadgen's, an address, a path. No quotes, no spaces.
WORD = re.compile(r"[A-Za-z0-9_.,:/=+-]{1,4096}")
SSH_CONNECT_TIMEOUT = 15


def ssh_base(config=None):
    """ssh's argv up to the destination: batch mode, host keys checked, every wait bounded."""
    argv = ["ssh"]
    if config:
        argv += ["-F", config]
    return argv + ["-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                   "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT}", "-o", "ServerAliveInterval=5",
                   "-o", "ServerAliveCountMax=3"]


def resolve(dest, config=None):
    """{'hostname', 'port', 'user'} as ssh would use them (ssh -G: the config applied, no connection)."""
    p = subprocess.run(ssh_base(config) + ["-G", "--", dest], capture_output=True, text=True, timeout=10,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise ClientError(f"client {dest}: ssh cannot read its settings: "
                          f"{(p.stderr.strip().splitlines() or ['(nothing on stderr)'])[-1]}")
    out = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k in ("hostname", "port", "user"):
            out[k] = v.strip()
    return out


def address_of(hostname):
    """The client's IPv4 address (loadgen and the servers speak IPv4 only)."""
    try:
        return socket.getaddrinfo(hostname, None, socket.AF_INET)[0][4][0]
    except (socket.gaierror, IndexError) as e:
        raise ClientError(f"client host {hostname}: no IPv4 address ({e})")


def local_address_toward(addr):
    """This host's source address toward addr (the kernel's route; a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((addr, 9))
        except OSError as e:
            raise ClientError(f"no route to client address {addr}: {e.strerror}")
        return s.getsockname()[0]


def server_address(dests, config=None):
    """The one address of this host every client reaches it by: the server listens there (not on all)."""
    addrs = {local_address_toward(address_of(resolve(d, config).get("hostname", d))) for d in dests}
    if len(addrs) != 1:
        raise ClientError(f"clients {','.join(dests)} reach this host by different addresses "
                          f"({', '.join(sorted(addrs))}): give clients one network")
    return addrs.pop()


def remote_lab(root, home=None):
    """Where the client's copy of the lab is: the same place as ours (home-relative under the home)."""
    home = os.path.realpath(home or os.path.expanduser("~"))
    root = os.path.realpath(root)
    return os.path.relpath(root, home) if root.startswith(home + os.sep) else root


def remote_argv(dest, words, config=None):
    """ssh argv running `words` on dest. ssh joins the words for the remote shell, so each is checked
    against a narrow alphabet and quoted once: nothing reaches that shell as code."""
    for w in words:
        if not WORD.fullmatch(w):
            raise ClientError(f"client {dest}: refusing remote word {w!r}")
    return ssh_base(config) + ["--", dest, " ".join(shlex.quote(w) for w in words)]


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def route_device(addr):
    """The device `ip route get` names toward addr, or "" (argv, no shell)."""
    try:
        p = subprocess.run(["ip", "-o", "route", "get", addr], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"\bdev (\S+)", p.stdout)
    return m.group(1) if m else ""


def path_name(server_addr, client_boot, own_boot):
    """same host / loopback / between hosts, from who the client is (its boot id), not from its name."""
    if client_boot != own_boot:
        dev = route_device(server_addr)
        return "between hosts", f"two machines (the client's boot id differs), server {server_addr}" + \
            (f" via {dev}" if dev else "")
    if ipaddress.ip_address(server_addr).is_loopback:
        return "loopback", (f"one machine: the client host is this host reached over ssh at another "
                            f"127/8 address; traffic to {server_addr} never leaves the kernel")
    return "same host", f"one machine: the client is this host, reaching the server at {server_addr}"


# Rows the clients' sum stands for; every other metric of the combined rows is the worst client's.
SUMMED = ("ops_per_s", "get_per_s", "set_per_s", "client_conns", "client_threads")


def label(host):
    """Metric prefix of one client's rows: client.<host>.<metric>."""
    return f"client.{host}."


def merge(per_host):
    """{host: [(metric, value, unit)]} → rows of the point: with one client its rows as they are, with
    several the rate summed and every other metric the highest (the worst client's); then each client's
    own rows labelled with its host."""
    out, seen = [], {}
    for host, rows in per_host.items():
        for metric, value, unit in rows:
            if metric.startswith("noise_"):
                continue    # the engine's guard rows on this host have these names; the client's are labelled
            if metric not in seen:
                seen[metric] = [value, unit]
            elif metric in SUMMED:
                seen[metric][0] += value
            else:
                seen[metric][0] = max(seen[metric][0], value)
    out += [(m, v, u) for m, (v, u) in seen.items()]
    for host, rows in per_host.items():
        out += [(label(host) + m, v, u) for m, v, u in rows]
    return out


# --- fleet-sweep: the client hosts of an inventory, as the server hosts' ssh sees them -------------------
SSH_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:-]{0,252}")      # an address or name (a config line's value)
SSH_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
KNOWN_HOSTS_MARK = "@KNOWN_HOSTS@"                             # the file's place on each server host


IDENTITY = re.compile(r"[A-Za-z0-9_./~-]{1,1024}")                # a key file's path on the server hosts


def ssh_config(clients, identity=None):
    """[(name, hostname, port, user or None)] → an ssh config that names each client as the inventory
    does. Every value is checked: it becomes a line of ssh's config, where a space or newline would be a
    second option. UserKnownHostsFile is KNOWN_HOSTS_MARK, put in on each server host; identity is a
    key file's path there (the key itself never travels)."""
    if identity is not None and not IDENTITY.fullmatch(identity):
        raise ClientError(f"client_identity={identity!r}: a path of letters, digits, '_', '.', '/', '~', '-'")
    out = []
    for name, hostname, port, user in clients:
        if not DEST.fullmatch(name) or "@" in name:
            raise ClientError(f"client {name!r}: not a plain host name")
        if not SSH_HOST.fullmatch(str(hostname)):
            raise ClientError(f"client {name}: ansible_host {hostname!r} is not an address or host name")
        if not str(port).isdigit() or not 1 <= int(port) <= 65535:
            raise ClientError(f"client {name}: ansible_port {port!r} is not a port")
        if user is not None and not SSH_USER.fullmatch(str(user)):
            raise ClientError(f"client {name}: ansible_user {user!r} is not a user name")
        out += [f"Host {name}", f"  HostName {hostname}", f"  Port {int(port)}"]
        out += [f"  User {user}"] if user else []
        out += [f"  IdentityFile {identity}", "  IdentitiesOnly yes"] if identity else []
        out += [f"  UserKnownHostsFile {KNOWN_HOSTS_MARK}", "  StrictHostKeyChecking yes", "  BatchMode yes", ""]
    return "\n".join(out)


def known_host_lines(known_hosts, hostname, port):
    """The lines of a known_hosts file (hashed or not) for hostname:port, as ssh looks them up; [] if none."""
    key = hostname if int(port) == 22 else f"[{hostname}]:{int(port)}"
    p = subprocess.run(["ssh-keygen", "-F", key, "-f", known_hosts], capture_output=True, text=True, timeout=10)
    return [ln for ln in p.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
