"""One measured command: started in its own session, reaped with wait4(2), killed as a group at the timeout.

wait4 gives what the engine measures of any command, every repeat (RESOURCE_METRICS):
- wall_s: from just before fork to the moment the command was reaped (a thread blocks in wait4, so
  no polling interval is added);
- cpu_user_s, cpu_sys_s: user and system CPU time of the command and of every descendant it waited for
  (a daemon it left running, or a server started elsewhere, is not in them);
- max_rss_kib: the peak resident set of the *largest single process* among the command and the
  descendants it waited for (Linux keeps the maximum, not a sum: two 1 GiB workers read 1 GiB). Linux
  also keeps a process's peak across exec, so a command forked from this Python process would read at
  least the engine's own RSS (~20 MiB): with LAUNCHER (c-probes/rusage.c) between them, the command is
  forked by a process of a few hundred KiB, which writes the command's own figure to a file.
These are results of the command, not conditions of the run: they are not the guard's noise metrics.

Output: the lab's own instruments write their files directly. A command from `exec` (any program)
writes through pipes, and at most `cap` bytes of each stream are kept: its first and its last half,
with a line saying how much was left out between them (a command that prints gigabytes must not
fill the disk).
"""
import collections
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from . import orphans

LAUNCHER = os.path.join("c-probes", "build", "rusage")
RESOURCE_METRICS = (("wall_s", "s"), ("cpu_user_s", "s"), ("cpu_sys_s", "s"), ("max_rss_kib", "KiB"))
PER_CALL = "cpu_us_per_call"   # with the spec's `calls`
OUTPUT_CAP = 1 << 20     # bytes kept of each of stdout and stderr of an `exec` command
CHUNK = 1 << 16
DRAIN = 5                # seconds to wait for a left-over descendant to close the pipes


@dataclass
class Usage:
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_kib: int

    def rows(self, calls=None):
        """RESOURCE_METRICS; with `calls` (the spec's count of calls one run makes) also cpu_us_per_call:
        the whole command's CPU, start-up and warm-up included, over every call, as measured from outside
        whatever the program says of itself."""
        vals = (f"{self.wall_s:.6f}", f"{self.user_s:.6f}", f"{self.sys_s:.6f}", str(self.maxrss_kib))
        out = [{"metric": m, "value": v, "unit": u} for (m, u), v in zip(RESOURCE_METRICS, vals)]
        if calls:
            out.append({"metric": PER_CALL, "value": f"{(self.user_s + self.sys_s) * 1e6 / calls:.6g}", "unit": "us"})
        return out


class Capped(threading.Thread):
    """Copy a pipe into a file, keeping its first and last cap/2 bytes."""

    def __init__(self, pipe, path, cap):
        super().__init__(daemon=True)
        self.pipe, self.path, self.half = pipe, path, cap // 2
        self.total = self.dropped = 0

    def run(self):
        head_left, tail, tail_len = self.half, collections.deque(), 0
        # streamed as the program writes (a live tail to watch), not through runfolder's atomic writer
        with open(self.path, "wb") as f:
            while True:
                try:
                    chunk = os.read(self.pipe.fileno(), CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                self.total += len(chunk)
                if head_left:
                    part = chunk[:head_left]
                    f.write(part)
                    head_left -= len(part)
                    chunk = chunk[len(part):]
                if chunk:
                    tail.append(chunk)
                    tail_len += len(chunk)
                    while tail_len - len(tail[0]) >= self.half:
                        tail_len -= len(tail.popleft())
            if tail_len > self.half and self.total > 2 * self.half:     # exactly the last half
                tail[0] = tail[0][tail_len - self.half:]
                tail_len = self.half
            self.dropped = self.total - (self.half - head_left) - tail_len
            if self.dropped > 0:
                f.write(f"\n[engine: {self.dropped} bytes left out here: the lab keeps the first and the last "
                        f"{self.half // 1024} KiB of each stream]\n".encode())
            for chunk in tail:
                f.write(chunk)
        self.pipe.close()


# The command's whole tree, whatever it does to its session, pipes or environment: while a command runs,
# the engine is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so what the command orphans (a
# `setsid … &`, a daemon started with `env -i`) becomes the engine's child instead of init's; every such
# new child and everything under it is ended with the repeat (at the timeout, or when it holds the
# command's pipes, or when the command has exited and left it running).
PR_SET_CHILD_SUBREAPER = 36


def subreaper(on):
    """Make this process a child subreaper (on) or not; False where the kernel cannot."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parents():
    """{pid: parent pid} of every process (from /proc/<pid>/stat)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                out[int(name)] = int(stat[stat.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def tree(roots, ppid):
    """The processes under roots (roots included when alive), from a {pid: parent} map."""
    kids = {}
    for pid, parent in ppid.items():
        kids.setdefault(parent, []).append(pid)
    out, todo = set(), [r for r in roots if r in ppid]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += kids.get(pid, [])
    return out


def end_tree(root, known):
    """SIGKILL the command's tree: root's descendants and the engine's children that are not in known
    (what the command orphaned); reap the orphans. Returns how many processes were ended."""
    me, strays = os.getpid(), []

    def find():      # a dying parent may fork once more; its orphans come to the engine
        ppid = parents()
        strays[:] = [pid for pid, parent in ppid.items() if parent == me and pid not in known and pid != root]
        return tree(strays + ([root] if root else []), ppid) - {root}

    def reap():
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return orphans.end_all(find, after=reap)


def signal_group(p, sig):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def launched_rss(path):
    """The command's own peak RSS in KiB that LAUNCHER wrote, or None (not written: it was killed)."""
    try:
        with open(path) as f:
            key, value = f.read().split()
        os.remove(path)
        return int(value) if key == "maxrss_kib" else None
    except (OSError, ValueError):
        return None


def run(argv, env, cwd, out_path, err_path, timeout, on_start=None, cap=None, launcher=None):
    """Run argv (through launcher, LAUNCHER's path, when given); returns (exit code, Usage or None,
    note). The exit code is negative for a signal and 124 for a timeout, as timeout(1) says; note says
    what the engine did (killed, output truncated)."""
    rss_path = err_path + ".maxrss"
    if launcher:
        argv = [launcher, rss_path, *argv]
    piped = cap is not None
    files = [] if piped else [open(out_path, "w"), open(err_path, "w")]
    reaped = {}

    def reap(pid):
        try:
            _pid, status, ru = os.wait4(pid, 0)
        except ChildProcessError:      # reaped by the interrupt handler's kill first
            return
        reaped.update(t1=time.monotonic(), status=status, ru=ru)

    ppid = parents()
    known = {pid for pid, parent in ppid.items() if parent == os.getpid()}     # the engine's own helpers
    guarded = subreaper(True)
    try:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if piped else files[0],
                             stderr=subprocess.PIPE if piped else files[1], start_new_session=True)
    finally:
        for f in files:
            f.close()
    readers = [Capped(p.stdout, out_path, cap), Capped(p.stderr, err_path, cap)] if piped else []
    for r in readers:
        r.start()
    waiter = threading.Thread(target=reap, args=(p.pid,), daemon=True)
    waiter.start()
    if on_start:
        on_start(p)
    notes = []
    try:
        waiter.join(timeout)
        if waiter.is_alive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                signal_group(p, sig)
                waiter.join(DRAIN)
                if not waiter.is_alive():
                    break
            notes.append(f"engine: killed after the {timeout:g} s timeout")
            end_tree(p.pid, known)      # and what it started in other sessions
    finally:
        if on_start:
            on_start(None)
    for r in readers:
        r.join(DRAIN)
        if r.is_alive():            # a descendant still holds the pipe open: end it, keep what came
            signal_group(p, signal.SIGKILL)
            end_tree(p.pid, known)
            r.join()
    if guarded:
        left = end_tree(p.pid, known)
        subreaper(False)
        if left:
            notes.append(f"engine: ended {left} process(es) the command left running")
    notes += [f"engine: {r.dropped} bytes of {name} left out (over the {cap // 1024} KiB cap)"
              for r, name in zip(readers, ("stdout", "stderr")) if r.dropped > 0]
    if "status" not in reaped:
        p.returncode = p.returncode if p.returncode is not None else -signal.SIGKILL
        return p.returncode, None, "; ".join(notes)
    code = os.waitstatus_to_exitcode(reaped["status"])
    p.returncode = code                 # Popen must not wait for a child already reaped
    if notes and notes[0].startswith("engine: killed"):
        code = 124
    ru = reaped["ru"]
    own = launched_rss(rss_path) if launcher else None
    usage = Usage(reaped["t1"] - t0, ru.ru_utime, ru.ru_stime, own if own is not None else ru.ru_maxrss)
    return code, usage, "; ".join(notes)
