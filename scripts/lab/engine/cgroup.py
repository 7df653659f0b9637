"""A sweep's control groups: every measured command joins them before it runs anything, and nothing it
does (setsid, `env -i`, double forks) takes a process out. Two facts come of them:
- with cgroup v1's CPU accounting controller (cpuacct), the scheduler's own record of the measured
  tree's CPU time per CPU (cpuacct.usage_percpu, nanoseconds): where the tree ran, exactly (guard.py);
- with either version, its members whatever their environment: what a killed engine left running
  (orphans.py).
cgroup v2 keeps no time per CPU. Each group is made inside the engine's own group of that hierarchy,
so a service's or a user slice's limits keep holding the commands; where neither can be made (no
rights, no cgroup file system) the guard and the reaper fall back on what they read without them
(docs/design.md says which)."""
import os

V1 = "/sys/fs/cgroup/cpuacct"
V2 = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")     # unified alone, or beside v1 (a hybrid host)


def own():
    """{hierarchy's mount point: this process's group in it} for v1 cpuacct and v2 (/proc/self/cgroup)."""
    out = {}
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return out
    v2 = next((m for m in V2 if os.path.exists(os.path.join(m, "cgroup.controllers"))), None)
    for parts in lines:
        if len(parts) != 3 or not parts[2].startswith("/") or ".." in parts[2]:
            continue
        if "cpuacct" in parts[1].split(","):
            out[V1] = parts[2]
        elif parts[0] == "0" and parts[1] == "" and v2:
            out[v2] = parts[2]
    return out


def paths(token):
    """Where the sweep's groups are (or would be), cpuacct's first."""
    return [os.path.join(base + rel.rstrip("/"), f"lab-{token}") for base, rel in sorted(own().items(),
                                                                                          key=lambda kv: kv[0] != V1)]


def create(token):
    """The sweep's groups that could be made (empty), cpuacct's first; [] where none can be."""
    made = []
    for path in paths(token):
        try:
            os.mkdir(path)
        except OSError:
            continue
        made.append(path)
    return made


def join(groups, argv):
    """argv run from inside the groups: the shell moves itself (`0`: the writer) into each and then
    execs argv, so the command and all it starts are members from their first instruction. A group gone
    meanwhile costs the command nothing: it runs outside, and the guard reads no time as no record."""
    return ["sh", "-c", 'while [ "$1" != -- ]; do { echo 0 > "$1/cgroup.procs"; } 2>/dev/null; shift; done; '
            'shift; exec "$@"', "lab-cgroup", *groups, "--", *argv]


def usage(groups):
    """[nanoseconds of CPU time per CPU] the cpuacct group's members used since it was made; None
    without one or if unreadable."""
    for group in groups or ():
        try:
            with open(os.path.join(group, "cpuacct.usage_percpu")) as f:
                return [int(x) for x in f.read().split()]
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    return None


def members(token):
    """PIDs in the sweep's groups (none where there are none)."""
    out = set()
    for path in paths(token):
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                out.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return sorted(out)


def remove(token):
    """The groups gone once empty (rmdir of a group with members fails, and is tried again later)."""
    for path in paths(token):
        try:
            os.rmdir(path)
        except OSError:
            pass
