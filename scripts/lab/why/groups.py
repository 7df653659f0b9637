"""Where the threads ran, grouped (issue 53, item 6): at the knee, the program's threads grouped by the
package, NUMA node or L3 they ran in (each thread's domain: the one of the CPU it spent most time on,
from cpus_r<N>.csv), and what each group cost: its off-CPU (waiting) and on-CPU time per thread per unit
of work, from threads_r<N>.csv. On a many-socket host this is "the 128 threads on package 1 waited 3×
longer per op than those on package 0"; on one domain (this VM) there is nothing to group and nothing is
said.

A group's cost is per run; the words give the median over the kept runs of the ratio of the dearest group
to the cheapest, and say it only when every run's ratio is beyond ×SAID (one run: its own ratio)."""
import statistics

SAID = 1.25          # a ratio between groups every run shows beyond this is said; smaller is within noise
SHARE = 0.01         # a thread with less than this share of the run's on-CPU time is not the program's
LEVELS = (("package", "package"), ("numa", "NUMA node"), ("l3", "L3"))


def placed(runs):
    """Per kept run, [(cpu the thread ran on most, on-CPU µs per unit, off-CPU µs per unit)] of its
    threads that did the work (at least SHARE of the run's on-CPU time); [] where the run left no
    cpus_r<N>.csv or threads_r<N>.csv (folders written before them)."""
    out = []
    for run in runs:
        threads, cpus, work = run.get("threads") or [], run.get("cpus") or [], float(run.get("work") or 0)
        if not threads or not cpus or not work > 0:
            continue
        most = {}
        for r in cpus:
            if r["seconds"] > most.get(r["tid"], (None, -1.0))[1]:
                most[r["tid"]] = (r["cpu"], r["seconds"])
        total = sum(t["oncpu_us"] for t in threads) or 1
        out.append([(most[t["tid"]][0], t["oncpu_us"] / work, t["offcpu_us"] / work) for t in threads
                    if t["tid"] in most and t["oncpu_us"] >= SHARE * total])
    return out


def domain(topo, level, cpu):
    pu = topo.by_os.get(cpu)
    if pu is None:
        return None
    return {"package": pu.package, "l3": pu.l3, "numa": (pu.nodes or (None,))[0]}[level]


def words(runs, topo, unit):
    """One sentence per level whose threads ran in more than one domain and whose groups differ beyond
    ×SAID in every run; "" otherwise (no topology, one domain, no difference)."""
    if topo is None or not runs:
        return ""
    said = []
    for level, name in LEVELS:
        ratios, which = [], set()
        for threads in runs:
            groups = {}
            for cpu, on, off in threads:
                d = domain(topo, level, cpu)
                if d is not None:
                    groups.setdefault(d, []).append((on, off))
            if len(groups) < 2:
                break
            waits = {d: statistics.fmean(off for _on, off in g) for d, g in groups.items()}
            hi, lo = max(waits, key=waits.get), min(waits, key=waits.get)
            if not waits[lo] > 0:
                break
            ratios.append(waits[hi] / waits[lo])
            which.add((hi, len(groups[hi]), lo, len(groups[lo])))
        else:
            if ratios and min(ratios) > SAID and len(which) == 1:     # the same groups, dearest and cheapest
                ((hi, n_hi, lo, n_lo),) = which
                rng = f" (runs ×{min(ratios):.1f}–×{max(ratios):.1f})" if len(ratios) > 1 else " (one run)"
                said.append(f"the {n_hi} thread{'s' if n_hi != 1 else ''} on {name} {hi} waited "
                            f"×{statistics.median(ratios):.1f}{rng} as long per {unit} as the {n_lo} on {name} {lo}")
    return ("Where the threads ran: " + "; ".join(said) + ".") if said else ""
