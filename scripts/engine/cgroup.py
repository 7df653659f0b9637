"""A sweep's control group, where the host has the cgroup v1 CPU accounting controller (cpuacct) and
lets the engine make one: every measured command joins it before it runs anything, and nothing it does
(setsid, `env -i`, double forks) takes a process out. Two facts come of it:
- the scheduler's own record of the measured tree's CPU time per CPU (cpuacct.usage_percpu,
  nanoseconds): where the tree ran, exactly (guard.py);
- its members, whatever their environment: what a killed engine left running (orphans.py).
cgroup v2 keeps no time per CPU; without cpuacct (or rights to it) the sweep has no group and the guard
and the reaper fall back on what they read without it (docs/engine.md says which)."""
import os

BASE = "/sys/fs/cgroup/cpuacct"


def own():
    """This process's cpuacct group, relative to BASE ("/" at the top; None without cpuacct): the sweep's
    group is made inside it, so a service or a user slice keeps holding (and limiting) the commands."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _n, controllers, rel = line.rstrip("\n").split(":", 2)
                if "cpuacct" in controllers.split(","):
                    return rel
    except (OSError, ValueError):
        pass
    return None


def path(token):
    rel = own()
    return os.path.join(BASE + rel.rstrip("/") if rel and rel.startswith("/") and ".." not in rel else BASE,
                        f"lab-{token}")


def create(token):
    """The sweep's group, made empty; None where it cannot be."""
    if own() is None:
        return None
    try:
        os.mkdir(path(token))
        with open(os.path.join(path(token), "cpuacct.usage_percpu")):
            pass
    except OSError:
        return None
    return path(token)


def join(group, argv):
    """argv run from inside the group: the shell moves itself (`0`: the writer) and then execs argv, so
    the command and all it starts are members from their first instruction. A group gone meanwhile costs
    the command nothing: it runs outside, and the guard reads the group's zero time as no record."""
    return ["sh", "-c", '{ echo 0 > "$0/cgroup.procs"; } 2>/dev/null; exec "$@"', group, *argv]


def usage(group):
    """[nanoseconds of CPU time per CPU] the group's members used since it was made; None if unreadable."""
    try:
        with open(os.path.join(group, "cpuacct.usage_percpu")) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return None


def members(token):
    """PIDs in the sweep's group (none where there is no group)."""
    try:
        with open(os.path.join(path(token), "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def remove(token):
    """The group gone once empty (rmdir of a group with members fails, and is tried again later)."""
    try:
        os.rmdir(path(token))
    except OSError:
        pass
