"""Where the threads ran and what they did, grouped (issue 53, item 6): at the knee, the program's threads
grouped by the package, NUMA node or L3 they ran in (each thread's domain: the one of the CPU it spent
most time on, from cpus_r<N>.csv), and by what they do (the program's own function and its caller that
the thread's on-CPU samples are in most, from doing_r<N>.csv, named by the caller's rule: classify.named;
groups cannot import classify, which imports diff, which imports groups), and what each group cost:
its off-CPU (waiting) and on-CPU time per thread per unit of work, from threads_r<N>.csv. On a
many-socket host this is "the 128 threads on package 1 waited 3× longer per op than those on package 0";
on one domain (this VM) there is nothing to group by place and nothing is said of it. By what they do:
"the 126 threads in `update_table` ← `worker` waited ×3.0 as long per op as the 2 in `merge` ← `main`".

A group's cost is per run; the words give the median over the kept runs of the ratio of the dearest group
to the cheapest, and say it only when every run shows the same two groups and a ratio beyond ×SAID (one run:
its own ratio, beyond ×SAID_ONE_RUN)."""
import statistics

SAID = 1.25          # a ratio between groups every run shows beyond this is said; smaller is within noise
SAID_ONE_RUN = 2.0   # with one kept run nothing shows the ratio holds: a wider margin (the chiplet guest's
                     # four equal threads once split ×1.3 by what they did, in one run)
SHARE = 0.01         # a thread with less than this share of the busiest thread's on-CPU time is not the
                     # program's (of the run's total, 128 equal workers were each below it: none was left)
LAUNCHER = 0.5       # a thread that started threads and ran less than this share of their median on-CPU time
                     # is their launcher, not one of them (a main thread under TCG had 26% of its workers'
                     # on-CPU time, and its join put it among the workers of package 0); so is one that was
                     # blocked when the last of them exited (it waited for them: creating 64 threads under
                     # TCG made a main thread ×22 as busy as its workers), or that started a process (a
                     # shell, the evidence run's repeat loop: its forks took 70% of the workers' median)
LEVELS = (("package", "package"), ("numa", "NUMA node"), ("l3", "L3"))


def placed(runs):
    """Per kept run, [(cpu the thread ran on most or None, on-CPU µs per unit, off-CPU µs per unit, its
    on-CPU user stacks ((stack, samples), …))] of its threads that did the work (at least SHARE of the
    busiest one's on-CPU time, and not a launcher: launchers()); a run without threads_r<N>.csv is left
    out, and without cpus_r<N>.csv or doing_r<N>.csv (folders written before them) its threads have no cpu
    or no stacks."""
    out = []
    for run in runs:
        threads, cpus, work = run.get("threads") or [], run.get("cpus") or [], float(run.get("work") or 0)
        if not threads or not (cpus or run.get("doing")) or not work > 0:
            continue
        most = {}
        for r in cpus:
            if r["seconds"] > most.get(r["tid"], (None, -1.0))[1]:
                most[r["tid"]] = (r["cpu"], r["seconds"])
        stacks = {}
        for r in run.get("doing") or ():
            stacks.setdefault(r["tid"], []).append((tuple(r["stack"]), r["samples"]))
        busiest = max(t["oncpu_us"] for t in threads) or 1
        skip = launchers(threads)
        out.append([(most.get(t["tid"], (None,))[0], t["oncpu_us"] / work, t["offcpu_us"] / work,
                     tuple(stacks.get(t["tid"], ()))) for t in threads
                    if (t["tid"] in most or t["tid"] in stacks) and t["oncpu_us"] >= SHARE * busiest
                    and t["tid"] not in skip])
    return out


def launchers(threads):
    """The tids of the threads that started others of the recording (threads_r<N>.csv's pid and parent,
    followed up the tree): one that started a process, or started threads and either waited for them (its
    `joined`: blocked as the last of them exited) or ran on-CPU less than LAUNCHER of their median. They
    wait for the work, they do not do it; a main thread that works as much as the threads it started and
    does not wait for them to end stays."""
    parent = {t["tid"]: t.get("parent") or 0 for t in threads}
    pid = {t["tid"]: t.get("pid") or 0 for t in threads}
    on = {t["tid"]: t["oncpu_us"] for t in threads}
    below, forked = {}, set()
    for tid in parent:
        if parent[tid] in pid and pid[tid] and pid[tid] != pid[parent[tid]]:
            forked.add(parent[tid])                  # a new process, not a thread of its parent's
        seen, up = {tid}, parent[tid]
        while up in parent and up not in seen:       # a received file's loop ends here
            below.setdefault(up, []).append(on[tid])
            seen.add(up)
            up = parent[up]
    joined = {t["tid"] for t in threads if t.get("joined")}
    return forked | {tid for tid, ons in below.items() if tid in joined or on[tid] < LAUNCHER * statistics.median(ons)}


def doing(stacks, name):
    """"`f` ← `caller`": the program's own function (name: classify.named, not a library's or a lock's
    internals) that most of one thread's on-CPU samples ((stack, samples), …) are in; None without one."""
    by = {}
    for stack, n in stacks:
        f = name(list(stack))
        if f:
            by[f] = by.get(f, 0) + n
    return max(by, key=lambda k: (by[k], k)) if by else None


def domain(topo, level, cpu):
    pu = topo.by_os.get(cpu)
    if pu is None:
        return None
    return {"package": pu.package, "l3": pu.l3, "numa": (pu.nodes or (None,))[0]}[level]


def words(runs, topo, unit, namer=None):
    """A sentence on where the threads ran (each level whose threads ran in more than one domain) and one
    on what they did (with `namer`: classify.named), each said only where the groups differ beyond ×SAID
    in every run; "" otherwise (no topology or one domain, one kind of thread, no difference)."""
    said = []
    for level, name in LEVELS if topo is not None else ():
        w = apart(runs, lambda cpu, _what, lv=level: domain(topo, lv, cpu), f"on {name} ", unit)
        if w:
            said.append(w)
    what = apart(runs, lambda _cpu, stacks: doing(stacks, namer), "in ", unit) if namer else ""
    return " ".join(x for x in (("Where the threads ran: " + "; ".join(said) + ".") if said else "",
                                f"What the threads did: {what}." if what else "") if x)


def apart(runs, key, where, unit):
    """Words when the threads grouped by key(cpu, what) (None: in no group) form the same dearest and
    cheapest groups in every run, their waits per unit apart beyond ×SAID in each; else ""."""
    ratios, which, counts = [], set(), []
    for threads in runs or ():
        groups = {}
        for cpu, on, off, what in threads:
            d = key(cpu, what)
            if d is not None:
                groups.setdefault(d, []).append((on, off))
        if len(groups) < 2:
            return ""
        waits = {d: statistics.fmean(off for _on, off in g) for d, g in groups.items()}
        hi, lo = max(waits, key=lambda d: (waits[d], str(d))), min(waits, key=lambda d: (waits[d], str(d)))
        if not waits[lo] > 0:
            return ""
        ratios.append(waits[hi] / waits[lo])
        which.add((hi, lo))
        counts.append((len(groups[hi]), len(groups[lo])))
    if not ratios or min(ratios) <= (SAID if len(ratios) > 1 else SAID_ONE_RUN) or len(which) != 1:
        return ""
    ((hi, lo),) = which
    n_hi, n_lo = (span(n) for n in zip(*counts))
    rng = f" (runs ×{min(ratios):.1f}–×{max(ratios):.1f})" if len(ratios) > 1 else " (one run)"
    return (f"the {n_hi} thread{'' if n_hi == '1' else 's'} {where}{hi} waited ×{statistics.median(ratios):.1f}{rng} "
            f"as long per {unit} as the {n_lo} {where}{lo}")


def span(ns):
    """A group's thread count over the runs: '4', or '4–6' where runs differ (an evidence run that repeats
    a short command records each repetition's threads)."""
    return str(min(ns)) if min(ns) == max(ns) else f"{min(ns)}–{max(ns)}"
