"""Nothing a sweep started outlives it. Every process the engine starts (build, setup, each measured
command and whatever they start) carries LAB_SWEEP_TOKEN=<token> in its environment, which a process
keeps across fork, exec, setsid and daemonizing. A reaper process, started with the sweep, waits on a
pipe only the engine holds: when the engine dies however it dies (kill -9, the OOM killer), the pipe
closes and the reaper ends every process with the token. A process that clears its environment (`env
-i`, as sudo and service managers do) drops the token; where the host gives the sweep control groups
(cgroup.py), every measured command is in them whatever it does, and the reaper ends their members too. The
token is also kept in sweep/engine.json, so a resume ends what is left when the reaper died too, before
it measures anything."""
import json
import os
import secrets
import signal
import subprocess
import sys
import time

from . import cgroup

VAR = "LAB_SWEEP_TOKEN"


def new_token():
    return secrets.token_hex(8)


def holders(token):
    """PIDs of the processes whose environment carries this sweep's token (not this process)."""
    needle = f"{VAR}={token}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(name))
        except OSError:          # gone, or not ours to read (then not ours to kill either)
            continue
    return out


def end(token, rounds=20):
    """SIGKILL every holder of the token and every member of the sweep's control groups until none is
    left (a dying parent may fork once more), then remove the groups. Returns how many were ended."""
    me = os.getpid()
    n = end_all(lambda: sorted((set(holders(token)) | set(cgroup.members(token))) - {me}), rounds)
    cgroup.remove(token)
    return n


def end_all(find, rounds=20, after=None):
    """SIGKILL what find() returns until it returns nothing; after() (else a short pause) between rounds.
    Returns how many processes were ended."""
    ended = set()
    for _ in range(rounds):
        pids = find()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                ended.add(pid)
            except ProcessLookupError:
                pass
        after() if after else time.sleep(0.05)
    return len(ended)


def start_reaper(token, scripts_dir):
    """The reaper: a process in its own session (a terminal's Ctrl-C is the engine's to handle) that
    reads a pipe until the engine's end closes and then ends the token's holders. Returns (its pid,
    the pipe's write end, which the engine keeps open and never lets a child inherit)."""
    r, w = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != VAR}
    env["PYTHONPATH"] = scripts_dir
    p = subprocess.Popen([sys.executable, "-c", "from lab.engine import orphans; orphans.reap()", token],
                         stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True, close_fds=True)
    os.close(r)
    return p.pid, w


def reap():
    """The reaper's body (argv[1]: the token)."""
    token = sys.argv[1]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    end(token)


def leftover(path):
    """The token a previous engine of this run recorded, or None."""
    try:
        with open(path) as f:
            token = json.load(f).get("token")
    except (OSError, ValueError, AttributeError):
        return None
    return token if isinstance(token, str) and token.isalnum() else None
