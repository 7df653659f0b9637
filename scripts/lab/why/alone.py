"""What runs alone: from an evidence run's parallelism timeline (parallel_r<N>.csv: seconds with k of the
counted threads on a CPU) and the on-CPU stacks sampled while one thread ran alone (alone_r<N>.folded),
the share of the wall time spent with one thread running and the function that thread was in — the code a
user must change in a serial phase ("`merge_partials` runs alone for 38% of the wall time"), not the
barrier the others wait at. Read-only over loaded evidence (diff.load's runs)."""
import re
from dataclasses import dataclass

# Frames every thread's stack passes through: never "the function that runs alone".
GENERIC = re.compile(r"^(?:_start|__libc_start_main.*|__libc_start_call_main|main|start_thread|clone3?|"
                     r"__clone3?|thread_start|std::sys::.*|core::ops::function::.*|\[unknown\]|\[truncated\]|"
                     r"0x[0-9a-f]+)$")


@dataclass(frozen=True)
class Alone:
    """One side's serial time: the share of the wall time with exactly one thread running (0–1), the seconds
    behind it, the function whose samples run alone beyond the program's average (None without one), and the
    share of the wall time that function ran alone."""
    share: float
    seconds: float
    function: object
    function_share: float
    samples: int


def of_runs(runs):
    """Alone over the runs that have a parallelism timeline, or None when none has one (older evidence,
    a host without tracepoints)."""
    timed = [r for r in runs if r.get("parallel")]
    if not timed:
        return None
    total = sum(sum(r["parallel"].values()) for r in timed)
    one = sum(r["parallel"].get(1, 0.0) for r in timed)
    lone, every = {}, {}
    for r in timed:
        for table, key in ((lone, "alone"), (every, "oncpu")):
            for s, n in (r.get(key) or {}).items():
                table[s] = table.get(s, 0) + n
    function, in_it = top_function(lone, every)
    samples = sum(lone.values())
    share = one / total if total > 0 else 0.0
    return Alone(share, one, function, share * in_it / samples if samples else 0.0, samples)


def frames_of(stacks):
    """{function: (inclusive samples, deepest position)} of program frames (kernel and generic ones left
    out), each counted once per stack."""
    out = {}
    for stack, n in stacks.items():
        stack = stack.split(";") if isinstance(stack, str) else stack     # diff.load joins a stack's frames
        seen = set()
        for i, f in enumerate(stack[1:], 1):        # stack[0]: the process's comm
            if f in seen or f.endswith("_[k]") or GENERIC.match(f):
                continue
            seen.add(f)
            had, depth = out.get(f, (0, 0))
            out[f] = (had + n, max(depth, i))
    return out


def top_function(lone, every=None):
    """(the function that runs alone, its lone samples): the one whose lone samples most exceed what the
    program's average share of lone samples gives it (a function called in both phases, such as a shared
    leaf, has no excess; the serial phase's own function has all of it); the deepest where several tie.
    Without `every` (all on-CPU stacks), the most lone samples. (None, 0) without one."""
    alone_f = frames_of(lone)
    if not alone_f:
        return None, 0
    all_f = frames_of(every) if every else {}
    total_lone, total_all = sum(lone.values()), sum((every or {}).values())
    p = total_lone / total_all if total_all else 0.0

    def excess(f):
        n, _d = alone_f[f]
        return n - all_f.get(f, (0, 0))[0] * p if all_f else n
    best = max(alone_f, key=lambda f: (round(excess(f), 6), alone_f[f][1]))
    return (best, alone_f[best][0]) if excess(best) > 0 else (None, 0)


def words(base, knee, b, k):
    """The sentence for a serial phase, or "" when the knee side has no timeline or no lone function."""
    if knee is None or knee.function is None or knee.samples == 0:
        return ""
    at_base = f"; {base.share * 100:.0f}% at {b} thread{'s' if b != 1 else ''}" if base is not None else ""
    return (f"`{knee.function}` runs alone for {knee.function_share * 100:.0f}% of the wall time at {k} threads "
            f"(one thread running for {knee.share * 100:.0f}% of it{at_base}).")
