"""perf script text → the evidence of one run: on-CPU stacks, off-CPU time per reason and stack, futex
waits per address, per-thread scheduling.

The input is `perf script -F comm,pid,tid,cpu,time,period,event,trace,ip,sym,symoff,dso
--show-switch-events --show-task-events --show-mmap-events` of a recording made by collect.py: cpu-clock
samples, sched_switch (the stack where a thread left the CPU), sched:sched_wakeup, sys_enter_futex (the
futex word, the operation and the stack) and PERF_RECORD_SWITCH IN/OUT (exact times a thread of the tree
got and left a CPU). sched_switch and sys_enter_futex may be sampled, 1 event in `period` (collect.py
chooses it from a counting calibration): what they add is weighted by their period, and a futex wait
ends at its thread's next SWITCH IN (every switch is recorded): the time it was blocked. It is read as a
stream: memory stays bounded by the number of distinct stacks and threads, whatever the recording's length.
"""
import re

from . import store as ev

HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(.*)$")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.+?)\s+\((.*)\)\s*$")
SYMOFF = re.compile(r"\+0x[0-9a-f]+$")
# A frame in memory no file backs: code a JIT (a JVM, V8) wrote at run time. perf's `[unknown]` map is
# not one: it is also where an unwinder's bad guess lands, so it stays `[unknown]`.
JIT_DSO = re.compile(r"^(//anon|\[anon.*\]|/tmp/perf-\d+\.map|/memfd:.*|\[jit\].*)$")
SLEEP = re.compile(r"nanosleep")
FORK = re.compile(r"PERF_RECORD_FORK\(\d+:(\d+)\):\(\d+:(\d+)\)")
IO = re.compile(r"__x64_sys_(read|write|pread64|pwrite64|readv|writev|preadv2?|pwritev2?|poll|ppoll|select|"
                r"pselect6|epoll_wait|epoll_pwait2?|recvfrom|recvmsg|recvmmsg|sendto|sendmsg|sendmmsg|accept4?|"
                r"connect|openat|fsync|fdatasync|io_getevents|io_uring_enter)|io_schedule")
# The kernel's perf code: time a thread spends there (a traced futex call, a clone copying the events)
# exists only under the profiler. Its frames end the stack as one `[profiler]` leaf, kept apart from the
# program's own kernel time.
PROFILER_FRAME = re.compile(r"^_*perf_\w*_\[k\]$")
PROFILER = "[profiler]"
FUTEX_WAIT_OPS = {0, 6, 9, 11, 13}    # FUTEX_WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2
FUTEX_WAKE_OPS = {1, 5, 7, 10}        # FUTEX_WAKE, WAKE_OP, UNLOCK_PI, WAKE_BITSET: the holder letting go
# an executable mapping (perf records those only): where a binary's static data (a mutex) is, by its base
MMAP = re.compile(r"PERF_RECORD_MMAP2? (\d+)/\d+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) .*\]: r-xp (/\S+)$")
# A futex wait that blocks leaves the CPU within microseconds of its system call (here 6–242 µs, median
# 32, under perf's own stack copy); a thread that leaves it later returned from the sampled call and
# blocked on another, unrecorded one (sampled 1 in N): its time is not the sampled wait's. Ending the
# sampled wait only at the next SWITCH IN counted that later time N times over: the lock fixture's 15
# runs at the light tier (1 in 3,000) gave 266 s of futex wait, 38.5 s with this rule, where its threads
# were off-CPU 1.6 s in all (2026-12-07). What is left: at 1.5M calls a second a call that returned and
# another that blocked within this window are still one wait (without sys_exit_futex the two cannot be
# told apart): the futex rows' µs are an upper bound; the off-CPU stacks' time (from switches) is not.
FUTEX_BLOCKS_WITHIN = 0.0005
MAX_THREADS = 100000
MAX_HELD = 10 * ev.MAX_STACKS    # distinct stacks held while folding; new ones beyond go to [truncated]
DOING_HELD, DOING_KEPT = 64, 8     # a thread's distinct on-CPU stacks held while folding, and written


def bump(table, stack, amount):
    """table[stack] += amount, bounded: a program with endless distinct stacks cannot exhaust memory."""
    if stack not in table and len(table) >= MAX_HELD:
        stack = stack[:1] + (ev.TRUNCATED,)
    table[stack] = table.get(stack, 0) + amount


def frame_name(sym, dso, addr):
    """One frame as the format names it: the symbol; a kernel one with `_[k]`; a file without symbols
    keeps perf's address; memory no file backs is `[jit]`."""
    sym = SYMOFF.sub("", sym)
    kernel = dso.startswith("[kernel") or dso.endswith(".ko") or dso.startswith("[") and dso.endswith(".ko]")
    if sym != "[unknown]":
        return sym + ("_[k]" if kernel else "")
    if kernel:
        return "[unknown]_[k]"
    if JIT_DSO.match(dso):
        return "[jit]"
    if dso == "[unknown]":
        return "[unknown]"
    return f"0x{addr}"


class Event:
    __slots__ = ("comm", "pid", "tid", "cpu", "time", "kind", "trace", "frames", "period")

    def __init__(self, comm, pid, tid, cpu, time, kind, trace, period=1):
        self.comm, self.pid, self.tid, self.cpu, self.time = comm, pid, tid, cpu, time
        self.kind, self.trace, self.frames = kind, trace, []   # frames: (addr, sym, dso), innermost first
        self.period = period     # a sampled tracepoint stands for this many events


def events(lines):
    """Events of perf script text (an iterable of lines)."""
    ev_ = None
    for line in lines:
        line = line.rstrip("\n")
        m = HEADER.match(line)
        if m:
            if ev_ is not None:
                yield ev_
            comm, pid, tid, cpu, t, rest = m.groups()
            if rest.startswith("PERF_RECORD_SWITCH"):
                kind, trace = ("switch_out_preempt" if "preempt" in rest else "switch_out") if " OUT" in rest \
                    else "switch_in", ""
            elif rest.startswith("PERF_RECORD_MMAP"):
                kind, trace = "mmap", rest      # where a binary is: its static data's symbols (a mutex)
            elif rest.startswith("PERF_RECORD_"):
                # --show-task-events: a thread's exit (an exiting thread gets no SWITCH OUT), a fork (which
                # thread started which: why/groups.py's launchers); comm records say nothing more
                kind, trace = ("exit" if rest.startswith("PERF_RECORD_EXIT") else
                               "fork" if rest.startswith("PERF_RECORD_FORK") else "task"), rest
            else:
                # `      4  sys_enter_futex: …`: the period first (-F period), then the event's name
                period, _, after = rest.strip().partition(" ")
                if period.isdigit():
                    rest = after
                kind, _, trace = rest.strip().partition(": ")
                # `cpu-clock/freq=999/:`, `sched:sched_switch:`, `sys_enter_futex:` → cpu-clock, sched_switch, …
                kind = kind.strip().rstrip(":").split("/")[0].rpartition(":")[2]
                ev_ = Event(comm, int(pid), int(tid), int(cpu), float(t), kind, trace,
                            int(period) if period.isdigit() and kind != "cpu-clock" and kind != "cycles" else 1)
                continue
            ev_ = Event(comm, int(pid), int(tid), int(cpu), float(t), kind, trace)
            continue
        f = FRAME.match(line)
        if f and ev_ is not None and len(ev_.frames) < 4 * ev.MAX_DEPTH:
            ev_.frames.append((f.group(1), f.group(2), f.group(3)))
    if ev_ is not None:
        yield ev_


def user_frames(frames):
    """Root-first names of the user-space frames of a callchain (innermost first in perf's order)."""
    return [frame_name(s, d, a) for a, s, d in reversed(frames)
            if not (d.startswith("[kernel") or d.endswith(".ko") or d.endswith(".ko]"))]


# the C and C++ runtime and the loader: their frames are no thread's own work (`doing`): a main thread
# creating 64 threads was "in `allocate_stack`", a worker "in `alloc_new_heap`" (glibc's own functions)
RUNTIME_DSO = re.compile(r"/(?:libc|libpthread|libm|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so[.\d]*$")


def own_frames(frames):
    """Root-first names of the user-space frames of a callchain outside the C runtime (RUNTIME_DSO)."""
    return [frame_name(s, d, a) for a, s, d in reversed(frames)
            if not (d.startswith("[kernel") or d.endswith(".ko") or d.endswith(".ko]") or RUNTIME_DSO.search(d))]


def all_frames(frames):
    return [frame_name(s, d, a) for a, s, d in reversed(frames)]


def profiler_cut(names):
    """Root-first names with the kernel's perf frames and all below them as one PROFILER leaf."""
    i = next((i for i, f in enumerate(names) if PROFILER_FRAME.match(f)), None)
    return names if i is None else names[:i] + [PROFILER]


def trace_field(trace, name):
    m = re.search(rf"(?:^|[ ,]){name}[=:] ?(\S+?)(?:,|\s|$)", trace)
    return m.group(1) if m else None


class Thread:
    __slots__ = ("tid", "pid", "comm", "oncpu", "offcpu", "runq", "vol", "invol", "migr", "last_cpu", "on_at",
                 "off_at", "off_reason", "off_stack", "woke_at", "futex", "cpus", "off_weight", "doing", "joined")

    def __init__(self, tid, comm, pid=0):
        self.tid, self.comm, self.pid = tid, comm, pid
        self.oncpu = self.offcpu = self.runq = 0.0
        self.vol = self.invol = self.migr = 0
        self.joined = False       # blocked when the last thread it started exited: it waited for them
        self.last_cpu = self.on_at = self.off_at = self.woke_at = None
        # off_weight: the sampled sched_switch's period (0: this switch's stack was not sampled)
        self.off_reason, self.off_stack, self.futex, self.off_weight = None, (), None, 0
        self.cpus = {}            # cpu → seconds on it, from the switch records (where it ran: numamaps)
        self.doing = {}           # user stack → on-CPU samples of this thread (what it does: why/groups.py)


class Folder:
    """Accumulates one recording's events into the format's tables; with `comms`, only the events of
    threads of those names (the spec's why_comm: collect.scope's rule), the rest of the tree dropped."""

    def __init__(self, comms=()):
        self.comms = frozenset(comms)
        self.threads = {}
        self.leader = {}          # pid → comm of the thread group leader
        self.parent = {}          # tid → the tid of the thread that started it (a fork record)
        self.oncpu = {}
        self.offcpu = {}
        self.futex = {}           # addr → {"waits", "wait_us", "stacks": {stack: us}, "pid"}
        self.wakes = {}           # addr → {"wakes", "stacks": {stack: wakes}}: who lets the lock go
        self.maps = {}            # pid → [(load base, path)] of its executable mappings
        self.switch_period = 1    # the largest period of a sampled sched_switch (1: every one has its stack)
        self.samples = 0
        self.unknown = {}         # dso → [frames, unknown frames]
        self.leaves = {}          # (symbol, dso, symoff) → samples, user-space leaves of on-CPU samples
        self.first = self.last = None   # the tree's first and last recorded event (seconds)
        # The parallelism timeline (what perf --latency gives on Linux >= 6.15; this host's perf is 6.1):
        # which counted threads are on a CPU, seconds spent with k of them running, and the on-CPU stacks
        # sampled while their thread ran alone (a serial phase's code, while the others wait).
        self.on = set()           # tids on a CPU now (a sampled thread is on one, whatever was seen before)
        self.since = None         # time of the last change of `on`
        self.parallel = {}        # threads running → seconds
        self.alone = {}           # stack → samples taken while no other counted thread ran

    def comm_of(self, e):
        return self.leader.get(e.pid, e.comm)

    def thread(self, e):
        if e.tid == e.pid:
            self.leader[e.pid] = e.comm
        t = self.threads.get(e.tid)
        if t is None and len(self.threads) < MAX_THREADS:
            t = self.threads[e.tid] = Thread(e.tid, e.comm, e.pid)
        elif t is not None:
            t.comm = e.comm          # its name after an exec or a pthread_setname_np
        return t

    def add(self, e):
        if e.kind == "fork":      # PERF_RECORD_FORK(pid:tid):(ppid:ptid): who started whom, no event of the tree
            m = FORK.match(e.trace)
            if m and len(self.parent) < MAX_THREADS:
                self.parent[int(m.group(1))] = int(m.group(2))
            return
        if e.kind == "task":      # a comm record (perf's own at time 0 too): no event of the tree
            return
        if e.kind == "mmap":
            self.mapped(e)
            return
        if self.comms and e.comm not in self.comms:
            if e.kind == "sched_wakeup":       # another process woke a counted thread: its run-queue wait
                self.woken(e)
            return
        if e.kind != "exit":      # the tree's span is that of its samples and switches
            self.first = e.time if self.first is None else min(self.first, e.time)
            self.last = e.time if self.last is None else max(self.last, e.time)
        t = self.thread(e)
        if t is None:
            return
        if e.kind == "exit":
            starter = self.threads.get(self.parent.get(e.tid))
            if starter is not None:     # exact: every switch is recorded (a join's stack may not be)
                starter.joined = starter.off_at is not None and starter.off_reason != "[runqueue]"
        if e.kind in ("cpu-clock", "cycles", "switch_in", "switch_out", "switch_out_preempt", "exit"):
            self.running(e)
        if e.kind == "exit" and t.on_at is not None:       # it ran until it exited
            t.oncpu += e.time - t.on_at
            t.cpus[t.last_cpu] = t.cpus.get(t.last_cpu, 0.0) + e.time - t.on_at
            t.on_at = None
        if e.kind == "cpu-clock" or e.kind == "cycles":
            self.samples += 1
            stack = (self.comm_of(e),) + tuple(profiler_cut(all_frames(e.frames)))
            bump(self.oncpu, stack, 1)
            mine = tuple(own_frames(e.frames))
            if len(t.doing) < DOING_HELD or mine in t.doing:
                t.doing[mine] = t.doing.get(mine, 0) + 1
            if len(self.on) == 1:
                bump(self.alone, stack, 1)
            code = [(s, d) for _a, s, d in e.frames if d != "inlined"]    # the functions the code is in
            for s, d in code:
                if not d.startswith("[kernel"):
                    n = self.unknown.setdefault(d, [0, 0])
                    n[0] += 1
                    n[1] += s.startswith("[unknown]")
            leaf = next(((s, d) for s, d in code[:1] if not d.startswith("[kernel")), None)
            if leaf and "+0x" in leaf[0]:
                sym, _, off = leaf[0].rpartition("+")
                key = (sym, leaf[1], off)
                self.leaves[key] = self.leaves.get(key, 0) + 1
        elif e.kind == "sched_switch":
            state = trace_field(e.trace, "prev_state") or "S"
            t.off_stack, t.off_weight = e.frames, e.period
            self.switch_period = max(self.switch_period, e.period)
            t.off_reason = "[runqueue]" if state.startswith("R") else self.reason(t, e.frames, state)
        elif e.kind in ("switch_out", "switch_out_preempt"):
            if t.on_at is not None:
                t.oncpu += e.time - t.on_at
                t.cpus[e.cpu] = t.cpus.get(e.cpu, 0.0) + e.time - t.on_at
            t.on_at, t.off_at, t.woke_at = None, e.time, None
            if e.kind == "switch_out_preempt":
                t.invol += 1
                t.off_reason = "[runqueue]"
                self.wait_ends(t, e.time)      # preempted after the wait returned: it did not block
            else:
                t.vol += 1
                if t.futex is not None and e.time - t.futex[1] > FUTEX_BLOCKS_WITHIN:
                    self.wait_ends(t, e.time)      # the sampled call returned; this block is another's
                if t.off_reason is None:
                    t.off_reason = "[futex]" if t.futex is not None else "[other]"
        elif e.kind == "switch_in":
            if t.last_cpu is not None and t.last_cpu != e.cpu:
                t.migr += 1
            t.last_cpu = e.cpu
            self.wait_ends(t, e.time, blocked=t.off_at is not None)
            if t.off_at is not None:
                self.off_cpu(t, e)
            t.on_at, t.off_at, t.off_reason, t.off_stack, t.off_weight = e.time, None, None, (), 0
        elif e.kind == "sched_wakeup":
            self.woken(e)
        elif e.kind == "sys_enter_futex":
            self.wait_ends(t, e.time)
            op = trace_field(e.trace, "op")
            addr = trace_field(e.trace, "uaddr")
            try:
                cmd = int(op, 16) & 0x7f
            except (TypeError, ValueError):
                return
            if cmd in FUTEX_WAIT_OPS and addr:
                # (word, since, stack, weight, pid): it ends at the thread's next SWITCH IN or event on a CPU
                t.futex = (addr.lower(), e.time, tuple(user_frames(e.frames)), e.period, e.pid)
            elif cmd in FUTEX_WAKE_OPS and addr:
                self.woke(addr.lower(), tuple(user_frames(e.frames)), e.period)
        elif e.kind in ("cpu-clock", "cycles"):
            self.wait_ends(t, e.time)

    def wait_ends(self, t, now, blocked=False):
        """A sampled futex wait of t ends: at its SWITCH IN when it blocked (the time it waited), else at
        the thread's next event on a CPU (it returned at once: the word had changed; 0 µs). Weighted by
        the sample's period, so a sampled wait stands for the waits it was drawn from."""
        if t.futex is None:
            return
        addr, t0, stack, weight, pid = t.futex
        t.futex = None
        us = (now - t0) * 1e6 * weight if blocked else 0.0
        f = self.futex.get(addr)
        if f is None:
            if len(self.futex) >= ev.MAX_STACKS:
                return
            f = self.futex[addr] = {"waits": 0, "wait_us": 0.0, "stacks": {}, "pid": pid}
        f["waits"] += weight
        f["wait_us"] += us
        if len(f["stacks"]) < 256 or stack in f["stacks"]:
            f["stacks"][stack] = f["stacks"].get(stack, 0.0) + us

    def woke(self, addr, stack, weight):
        w = self.wakes.get(addr)
        if w is None:
            if len(self.wakes) >= ev.MAX_STACKS:
                return
            w = self.wakes[addr] = {"wakes": 0, "stacks": {}}
        w["wakes"] += weight
        if len(w["stacks"]) < 256 or stack in w["stacks"]:
            w["stacks"][stack] = w["stacks"].get(stack, 0) + weight

    def mapped(self, e):
        m = MMAP.search(e.trace)
        if m:
            pid, start, off, path = int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16), m.group(4)
            maps = self.maps.setdefault(pid, [])
            if len(maps) < 256 and all(p != path for _b, p in maps):
                maps.append((start - off, path))   # a text segment's address less its file offset: the base

    def running(self, e):
        """Advance the parallelism timeline to e.time, then apply e: a switch moves its thread on or off a
        CPU; a sample says its thread is on one (a thread that ran before the first switch was seen)."""
        if self.since is not None and e.time > self.since:
            k = len(self.on)
            self.parallel[k] = self.parallel.get(k, 0.0) + (e.time - self.since)
        self.since = e.time if self.since is None else max(self.since, e.time)
        if e.kind in ("switch_out", "switch_out_preempt", "exit"):
            self.on.discard(e.tid)
        else:
            self.on.add(e.tid)

    def parallel_rows(self):
        return [{"running": k, "seconds": s} for k, s in sorted(self.parallel.items())]

    def woken(self, e):
        pid = trace_field(e.trace, "pid")
        w = self.threads.get(int(pid)) if pid and pid.isdigit() else None
        if w is not None and w.off_at is not None and w.woke_at is None:
            w.woke_at = e.time

    @staticmethod
    def reason(t, frames, state):
        if t.futex is not None:
            return "[futex]"
        names = " ".join(s for _a, s, _d in frames[:24])
        if "futex" in names:
            return "[futex]"
        if SLEEP.search(names):
            return "[sleep]"
        if state.startswith("D") or IO.search(names):
            return "[io]"
        return "[other]"

    def off_cpu(self, t, e):
        """t was off-CPU from t.off_at until now (e.time): blocked (its reason) until woken, then
        runnable in the run queue until it ran."""
        total = e.time - t.off_at
        if t.off_reason == "[runqueue]":
            blocked, queued = 0.0, total
        else:
            woke = t.woke_at if t.woke_at is not None and t.off_at <= t.woke_at <= e.time else e.time
            blocked, queued = woke - t.off_at, e.time - woke
        comm = self.comm_of(e)
        stack = tuple(user_frames(t.off_stack))
        # where switches' stacks are sampled, a sampled one stands for `period` blocks; the others are in
        # the thread's totals only (every switch's time is recorded: PERF_RECORD_SWITCH)
        weight = t.off_weight or (1 if self.switch_period <= 1 else 0)
        if blocked > 0 and weight:
            key = (t.off_reason or "[other]", comm) + stack
            bump(self.offcpu, key, blocked * 1e6 * weight)
        if queued > 0:
            key = ("[runqueue]", comm) + (stack if t.off_reason == "[runqueue]" else ())
            bump(self.offcpu, key, queued * 1e6)
        t.offcpu += blocked
        t.runq += queued

    def lock_rows(self, name=None):
        """Per futex word that was waited on or woken: its symbol (`name(pid, addr)`: a mutex in a binary's
        static data; '' elsewhere), the wakes (weighted) and the stack that woke it most: the holder."""
        out = []
        for a in set(self.futex) | set(self.wakes):
            w = self.wakes.get(a, {"wakes": 0, "stacks": {}})
            pid = self.futex.get(a, {}).get("pid")
            out.append({"addr": a, "symbol": (name(pid, a) if name and pid is not None else "") or "",
                        "wakes": w["wakes"],
                        "waker": max(w["stacks"].items(), key=lambda kv: kv[1])[0] if w["stacks"] else ()})
        return out

    def futex_rows(self):
        return [{"addr": a, "waits": f["waits"], "wait_us": f["wait_us"],
                 "stack": max(f["stacks"].items(), key=lambda kv: kv[1])[0] if f["stacks"] else ()}
                for a, f in self.futex.items()]

    def thread_rows(self):
        return [{"tid": t.tid, "comm": t.comm, "oncpu_us": t.oncpu * 1e6,
                 "offcpu_us": t.offcpu * 1e6, "runq_us": t.runq * 1e6, "voluntary": t.vol,
                 "involuntary": t.invol, "migrations": t.migr, "pid": t.pid,
                 "parent": self.parent.get(t.tid, 0), "joined": int(t.joined)}
                for t in self.threads.values()]

    def doing_rows(self):
        """Per thread, its DOING_KEPT most-sampled user stacks: what each thread does (why/groups.py groups
        the threads by the program's own function in them)."""
        return [{"tid": t.tid, "samples": n, "stack": st} for t in self.threads.values()
                for st, n in sorted(t.doing.items(), key=lambda kv: -kv[1])[:DOING_KEPT]]

    def cpu_rows(self):
        """Per thread and CPU, the seconds it ran there (between its switch records)."""
        return [{"tid": t.tid, "comm": t.comm, "cpu": c, "seconds": s}
                for t in self.threads.values() for c, s in sorted(t.cpus.items()) if c is not None and s > 0]

    def span(self):
        """Seconds from the tree's first to its last recorded event: its run under the profiler, without
        perf's own start-up and write-out (0 without events)."""
        return self.last - self.first if self.first is not None else 0.0

    def stripped(self):
        """Binaries whose user frames are mostly unnamed (a stripped binary, or one without symbols),
        among those with a share of the samples: taskset's few frames before it execs do not count."""
        total = sum(n for n, _u in self.unknown.values())
        return sorted(d for d, (n, unk) in self.unknown.items()
                      if n >= max(5, total / 100) and unk * 2 >= n and d.startswith("/") and not JIT_DSO.match(d))


def fold(lines, into=None, comms=()):
    """A Folder (`into`, or a new one counting `comms` only when given) holding perf script text's events."""
    f = into if into is not None else Folder(comms)
    for e in events(lines):
        f.add(e)
    return f
