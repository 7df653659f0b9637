"""The named causes of issue 43 (item 5) and their rules: the one owner of each rule, written out in
docs/design.md ("Why it stops scaling: the differential and the causes").

Every finding of the differential (a stack whose cost per unit of work grew beyond the too-few-samples
rule, diff.findings) gets exactly one class, the first whose rule matches, in this order:
  scheduler    off-CPU as [runqueue] (runnable, waiting for a CPU), except a thread preempted right as it
               woke a waiter (leaf in a wake or a mutex's release: WAKE_FRAMES, RELEASE_FRAMES), which is
               the handover's cost: lock, or serial phase inside a barrier/condition variable (same
               condition as below);
  serial phase off-CPU in a barrier or condition-variable wait (SERIAL_FRAMES), while the on-CPU total
               per unit of work does not grow beyond noise (else the row is "other"); a join's wait is
               never a finding (diff.JOINED: it mirrors the joined threads' wall time);
  lock         off-CPU as [futex] outside those waits, or a lock slow path on-CPU (LOCK_FRAMES);
  kernel       on-CPU with a kernel leaf frame (`_[k]`): system time;
  shared data  on-CPU in a user function whose hottest instructions at the knee (hotins) include a
               lock-prefixed or xchg read-modify-write (ATOMIC);
  memory (remote pages)  on-CPU in any other user function, where the knee's evidence runs say the
               program's hot mapping lives on one node and its threads ran elsewhere (why/memory.py:
               `remote`; pages spread or local are not claimed);
  other        anything else (I/O waits, sleeps, user code without an atomic: plain stores to shared lines
               or memory bandwidth, which need counters: "memory: not measurable here").
A class's share is the growth of all its stacks taken together (findings or not: diff.together, summed
per evidence run, counted only when that growth's 95% interval lies above zero) over the added cost
(diff.py's rule: the net growth beyond noise, not the sum of every stack's rise, so many noisy stacks do
not dilute it); a contended lock's cost spread over its waits, wakes and handovers is one class's. The
cause: "scales" when no total
cost per unit of work grows beyond noise and all are flat (scales(): growth a near-linear speedup allows);
"inconclusive" when nothing is a finding but the runs disagree too much to call the totals flat, or when the
curve says scaling stops (d.stops) and nothing grew at all (never "scales" then); else the
class with the largest share if it is at least MAIN_SHARE, or at least LEAD_SHARE and twice the next
named class's; else "no single cause". Memory is never named
without counters or NUMA statistics.
"""
import dataclasses
import re

from lab.core import rules as V
from lab.why import diff
from lab.why.model import CauseClass, Classes

MAIN_SHARE = 0.5     # a class explains at least half of the added cost to be named the cause,
LEAD_SHARE = 0.25    # or at least a quarter and twice the next class's share
MENTION = 0.1        # other classes from this share on are named beside it
SERIAL_FRAMES = re.compile(r"pthread_barrier_wait|pthread_cond_(?:timed|clock)?wait|Condvar.*wait|Barrier.*wait", re.I)
LOCK_FRAMES = re.compile(r"pthread_mutex_(?:timed|clock)?lock|lll_lock_wait|lll_mutex_lock|lll_lock_wake"
                         r"|pthread_mutex_unlock|pthread_rwlock|pthread_spin_lock|Mutex.*lock|lock_contended"
                         r"|RwLock|parking_lot|^futex_wait$", re.I)
WAKE_FRAMES = re.compile(r"lll_lock_wake|futex_wake|pthread_cond_(?:signal|broadcast)", re.I)
# preempted in a mutex's release (the wake's system call returned, the woken waiter took the CPU): the
# handover's cost too (a sampled sched_switch's stack ends there as often as in the wake itself)
RELEASE_FRAMES = re.compile(r"pthread_mutex_unlock|lll_mutex_unlock", re.I)
ATOMIC = re.compile(r"^\s*(?:lock\b|xchg\b)", re.I)
LIBRARY = re.compile(r"^(?:_|lll_|futex|pthread_|syscall|clone|start_thread|\[)|_\[k\]$|@plt|@@GLIBC|\(inlined\)")
# a frame perf could not name (its address, or [unknown]): no code a user could be told to change
UNRESOLVED = re.compile(r"0x[0-9a-f]+$|\[unknown\]$", re.I)
REMOTE = "memory (remote pages)"
CLASSES = ("lock", "shared data", "serial phase", "scheduler", "kernel", "memory", REMOTE, "no single cause",
           "scales", "inconclusive")
REASONS = {"[futex]": "waiting on a futex", "[runqueue]": "waiting for a CPU (run queue)", "[io]": "waiting on I/O",
           "[sleep]": "sleeping", "[other]": "blocked"}


def frames(row):
    """The row's frames root first, without the root frames that are not code ([reason], comm)."""
    f = row.name.split(";")
    return f[2:] if row.kind == "off-CPU" else f[1:]


def user_frames(fs):
    return [f for f in fs if not f.endswith("_[k]")]


def named(fs):
    """'`f` ← `caller`': the innermost frame of the program's own code (not a library or lock internal)
    and its caller; '' when the stack has none (e.g. a run-queue wait caught with no user stack)."""
    own = [i for i, f in enumerate(fs) if not LIBRARY.search(f) and not LOCK_FRAMES.search(f)
           and not UNRESOLVED.match(f)]
    if not own:
        return ""
    i = own[-1]
    caller = fs[i - 1] if i > 0 else ""
    return f"`{fs[i]}`" + (f" ← `{caller}`" if caller and not LIBRARY.search(caller) and not UNRESOLVED.match(caller)
                           else "")


def grows(total):
    """Does a diff.ratio total grow beyond noise: its whole 95% interval above 1 + the lab's EQUAL_WITHIN
    (the point estimate with no interval)."""
    if total is None or total.ratio != total.ratio:
        return None
    low = total.lo if total.lo is not None else total.ratio
    return low > 1 + V.EQUAL_WITHIN


def hot_atomic(d, fn):
    """(instruction, samples) of the hottest lock-prefixed/xchg instruction of fn at the knee, else None."""
    for n, ins, _off in (d.hotins or {}).get(fn, [])[:3]:
        if ATOMIC.search(ins):
            return ins, n
    return None


def rule(d, row):
    """The class of one finding (the order of the module's docstring)."""
    fs = frames(row)
    reason = row.name.split(";")[0] if row.kind == "off-CPU" else None
    if reason == "[runqueue]":
        # preempted right as it woke a waiter (the wakee took its CPU): the handover's cost, not a foreign one
        if fs and (WAKE_FRAMES.search(fs[-1]) or RELEASE_FRAMES.search(fs[-1])):
            return "serial phase" if any(SERIAL_FRAMES.search(f) for f in fs) and not grows(d.total.get("on")) \
                else "lock" if not any(SERIAL_FRAMES.search(f) for f in fs) else "other"
        return "scheduler"
    if row.kind == "off-CPU":
        if any(SERIAL_FRAMES.search(f) for f in fs):
            return "other" if grows(d.total.get("on")) else "serial phase"
        if reason == "[futex]" or any(LOCK_FRAMES.search(f) for f in fs):
            return "lock"
        return "other"
    if any(LOCK_FRAMES.search(f) for f in fs):
        return "lock"
    if fs and fs[-1].endswith("_[k]"):
        return "kernel"
    leaf = user_frames(fs)[-1] if user_frames(fs) else ""
    if leaf and hot_atomic(d, leaf):
        return "shared data"
    # no counter says which memory the code touches: user code's growth where the placement is remote
    return REMOTE if leaf and d.memory is not None and d.memory.kind == "remote" else "other"


def flat(total):
    """Is a diff.ratio total flat: its whole 95% interval (the point with no interval) at most
    1 / the lab's LINEAR_EFFICIENCY, the cost growth a near-linear speedup allows."""
    high = total.hi if total.hi is not None else total.ratio
    return high <= 1 / V.LINEAR_EFFICIENCY


def scales(d):
    """True when nothing grows faster than the work: no total (on-CPU, off-CPU, both) grows beyond noise
    and all are flat; False when a total grows, or when the totals are too uncertain to call flat but some
    stack's growth is a finding; "inconclusive" when neither; None with no evidence at all."""
    totals = [d.total[k] for k in ("all", "on", "off") if d.total.get(k) and grows(d.total[k]) is not None]
    if not totals:
        return None
    if any(grows(t) for t in totals):
        return False
    if all(flat(t) for t in totals):
        return True
    return False if diff.findings(d) else "inconclusive"


def gathers(d):
    """The functions whose self time per unit of work grew beyond noise (verdict.by_function's rows)."""
    return [r for r in d.functions_self if not r.flag and r.growth > 0]


def futex_detail(d):
    """(address text, named stack) of the futex whose waits per unit of work grew most, or None."""
    fb, fk = d.futex.base or {}, d.futex.knee
    if not fk:
        return None
    waited = lambda stack: fb[stack].wait_us if stack in fb else 0.0  # noqa: E731
    stack, a = max(fk.items(), key=lambda kv: (kv[1].wait_us - waited(kv[0]), kv[0]))
    if a.wait_us - waited(stack) <= 0:
        return None
    addrs = a.addrs
    where = addrs[0] if len(addrs) == 1 else f"{addrs[0]}, {len(addrs) - 1} other address(es) across runs (ASLR)"
    return where, named(stack.split(";")), a


def kernel_detail(rows):
    """Which system calls or faults the kernel findings are in."""
    what = []
    for r in rows:
        fs = r.name.split(";")
        m = [re.sub(r"^__(?:x64|se|do)_sys_|_\[k\]$", "", f) for f in fs if re.match(r"__(?:x64|se)_sys_", f)]
        if m:
            what.append(f"system call {m[0]}")
        elif any(re.search(r"page_fault|handle_mm_fault", f) for f in fs):
            what.append("page faults")
        elif any("interrupt" in f or "softirq" in f for f in fs):
            what.append("interrupts")
    return sorted(set(what))


NAMES = {"futex": "futex waits", "sched": "scheduler (run queue, switches)", "hotins": "hot instructions"}


def missing_lines(d):
    """One line per reason, naming every kind of evidence it cost ("off-CPU, futex waits and scheduler
    evidence missing: not available here: … `mount …`"): a host without tracepoints is one line, not three."""
    by_reason = {}
    for kind, why in sorted(d.missing.items()):
        by_reason.setdefault(why, []).append(diff.KINDS[kind][1])
    for key in ("futex", "sched", "hotins"):
        state = d.evidence.get(key)
        if state not in (None, "ok"):
            by_reason.setdefault(state, []).append(NAMES[key])
    return [f"{listed(kinds)} evidence missing: {why}" for why, kinds in by_reason.items()]


def listed(words):
    """"a", "a and b", "a, b and c"."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def classed(d):
    """The differential with each finding's class (rule(): it reads the totals, hot instructions and
    memory of d): what the verdict's words, its tables and a story's cause read. Classed twice, the same."""
    return dataclasses.replace(d, stacks=tuple(dataclasses.replace(r, cls=r.cls or rule(d, r)) if diff.finding(r)
                                               else r for r in d.stacks))


def classify(d):
    """The Classes of one differential (diff.differential): its cause, every class by name with its share
    and rows, the notes and missing lines the words say (each finding's class is the differential's:
    Compared.cls). The rules in the order of the module's docstring."""
    rows, share = {}, {}        # class → its finding rows, its share (insertion order: the findings' first)
    d = classed(d)
    for r in diff.findings(d):
        rows.setdefault(r.cls, []).append(r)
        share.setdefault(r.cls, 0.0)
    # a class's share: all its stacks taken together (one test per class: a cause spread over many thin
    # stacks, as a contended lock's waits, wakes and handovers are, is still one cause)
    members = {}
    for r in d.stacks:
        if r.flag not in (diff.JOINED, diff.PROFILED):
            members.setdefault(r.cls or rule(d, r), []).append(r)
    for c, group in members.items():
        g = diff.together(group)
        if g.lo is not None and g.lo > 0 and d.added > 0:
            share[c] = diff.share(g.growth, d.added)
    classes = {c: CauseClass(v, tuple(rows.get(c, ()))) for c, v in share.items()}
    missing = tuple(missing_lines(d))
    tier = ("c2c", "topdown", "memsource")
    pmu = [d.evidence.get(k, "not said") for k in tier]
    hw = d.hardware
    if hw.words:        # the hardware tier ran (why/hardware.py): the why section gives its words
        memory = "memory: " + (f"top-down supports {hw.supports}" if hw.supports else
                               "the hardware counters were read") + " (the why section says what they found)"
    elif all(p == "ok" for p in pmu):
        memory = "memory: the hardware counters gave nothing readable (" + "; ".join(hw.absent) + ")"
    else:
        memory = "memory: not measurable here (" + "; ".join(f"{k}: {v}" for k, v in zip(tier, pmu)) + ")"
    s = scales(d)
    if s is True and d.stops:
        # "How it scales" says scaling stops here (measured without a profiler: what the lab vouches for);
        # evidence in which nothing grows did not catch why, so it never says "it scales": a cause or no
        # single cause where something grew, else inconclusive (verdict.words says why, with the numbers)
        s = False if diff.findings(d) or gathers(d) else "contradicts"
    if s is None:
        return Classes(None, classes, ("the evidence holds no samples and no waits: no cause can be named",), missing)
    if s is True or s in ("inconclusive", "contradicts"):
        return Classes("scales" if s is True else "inconclusive", classes, (), missing, s == "contradicts")
    named_ = {c: v.share for c, v in classes.items() if c != "other"}
    ranked = sorted(named_, key=lambda c: (-named_[c], c))
    top = ranked[0] if ranked else None
    runner_up = named_[ranked[1]] if len(ranked) > 1 else 0.0
    dominant = top and (named_[top] >= MAIN_SHARE or (named_[top] >= LEAD_SHARE and named_[top] >= 2 * runner_up))
    cause = top if dominant else "no single cause"
    notes = []
    if "other" in classes or cause == "no single cause":
        notes.append(memory)
    where = d.memory
    if where and where.kind != "one node":     # where the memory lives, said beside any cause
        remote = classes[REMOTE].rows if REMOTE in classes else ()
        fn = (named(frames(remote[0])) or f"`{user_frames(frames(remote[0]))[-1]}`") if remote else ""
        notes.append(f"{REMOTE if where.kind == 'remote' else 'memory placement'}: {where.words}" +
                     (f"; the added on-CPU cost is in {fn}" if fn else ""))
    if "shared data" in classes and hw.c2c is None:
        notes.append("perf c2c would confirm the contended cache line where the host has a PMU")
    return Classes(cause, classes, tuple(notes), missing)
