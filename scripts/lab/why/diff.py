"""The differential of issue 43 (item 3): what each unit of work costs at the knee of a placement curve
against its 1-thread point, per stack and per function, on-CPU and off-CPU. The rules are written in
docs/design.md ("Why it stops scaling: the differential and the causes"); this module is their one owner.

- Cost per unit of work of a stack in evidence run r: on-CPU samples / hz × 1e6 / work_r µs, off-CPU
  µs / work_r (work: ops for a throughput metric, 1 for a fixed-work command: meta.json says which).
- Growth = mean over the knee's runs − mean over the 1-thread point's runs, with a 95% interval (Welch's t
  over the evidence runs; none with fewer than 2 runs on a side).
- A growth is a finding only if (a) the stack has at least MIN_SAMPLES samples (on-CPU) or MIN_SAMPLES
  sampling periods of time (off-CPU) on its larger side, summed over runs, (b) on-CPU, the counts differ
  beyond counting noise (exact Poisson rate test per unit of work, p < P_MAX), and (c) its interval
  excludes zero. Otherwise it is flagged (TOO_FEW, NOISE, ONE_RUN) and never named as a cause.
- Shares are of the added cost beyond noise: the net growth of the total cost per unit of work (every
  stack's growth, shrinking ones included, both kinds; so the noise of many stacks, as often down as up,
  cancels instead of adding up), or the findings' summed growth where that is larger. The part of it no
  finding explains is said apart as spread thin (`spread`).
- Off-CPU waits in a join (JOIN_FRAMES) are flagged JOINED, on-CPU stacks ending in `[profiler]` PROFILED:
  shown, never a finding, out of every total.
"""
import dataclasses
import math
import re
import warnings

import numpy as np

from lab.engine.evidence import gate
from lab.engine.evidence import store as evidence
from lab.why import alone, groups, hardware, memory
from lab.why.model import Added, Compared, Differential, FutexWait, Ratio, Sides, Together

LEVEL = 0.95
MIN_SAMPLES = 20   # a stack needs this many samples (or sampling periods of off-CPU time) on its larger side
P_MAX = 0.05       # on-CPU: the exact Poisson test of the two sample rates per unit of work
TOO_FEW = "too few samples to tell"
NOISE = "within noise"
ONE_RUN = "one evidence run: no interval"
JOINED = "a join's wait: the joined threads' wall time"
KINDS = {"on": ("oncpu", "on-CPU"), "off": ("offcpu", "off-CPU")}
# A join's wait lasts as long as the joined threads run, whatever slows them (a main thread waits the whole
# run at 1 thread): it mirrors the wall time, not a cost of the work. Off-CPU stacks in a join are shown
# (flag JOINED) but never a finding, and left out of the totals and of the added cost.
# A parent waiting for its threads or child processes (a shell's wait4 on its children too) waits as long
# as they run: its wait mirrors the wall time, it is no cause.
JOIN_FRAMES = re.compile(r"pthread_(?:clock|timed|try)?join|JoinHandle.*join|(?:\b|_)(?:wait4|waitpid|waitid)\b|"
                         r"__x64_sys_wait4|do_wait\b", re.I)


PROFILED = "the profiler's own time (perf's kernel code), not the program's"


def joined(stack):
    return stack.startswith("[") and any(JOIN_FRAMES.search(f) for f in stack.split(";"))


def left_out(stack):
    """Why a stack is shown but never a finding nor part of any total, or None: a join's wait, or an
    on-CPU stack ending in fold.py's `[profiler]` leaf (exists only because perf records)."""
    if joined(stack):
        return JOINED
    if stack == REST:         # many thin stacks summed (bounded): never one finding
        return NOISE
    return PROFILED if stack.rsplit(";", 1)[-1] == "[profiler]" else None


def counted(run):
    """A run's total cost per unit of work, joins' waits and the profiler's own time left out."""
    return sum(v for s, v in run.items() if not left_out(s))


def load(folder, kept=True):
    """One point's evidence through evidence.py (the format's one reader; EvidenceError names file:line),
    as {"meta", "runs": [{"oncpu", "offcpu", "futex", "threads", "hotins", "hz", "work"}]}: only the runs
    the validity gate kept (gate.kept_runs; kept=False: every recorded run, for what holds of any stack),
    stacks ';'-joined, a file the run did not leave None."""
    meta = evidence.read_meta(folder)
    hz = {j["run"]: j["hz"] for j in meta.get("runs_judged") or [] if j.get("run") and j.get("hz")}
    runs = []
    for r in gate.kept_runs(meta) if kept else range(1, meta["runs"] + 1):
        got = evidence.read_run(folder, r)
        run = {k: None for k in ("oncpu", "offcpu", "futex", "threads", "hotins")}
        # each run's own work and sample frequency (a redone run may be recorded at a lighter tier)
        run["work"], run["hz"] = meta["work"][r - 1], hz.get(r, (meta.get("sample") or {}).get("hz"))
        for kind in ("oncpu", "offcpu"):
            if kind in got:
                run[kind] = {";".join(s): v for s, v in got[kind].items()}
        if "futex" in got:
            run["futex"] = [dict(row, stack=";".join(row["stack"])) for row in got["futex"]]
        run["threads"], run["hotins"] = got.get("threads"), got.get("hotins")
        run["lock"] = got.get("lock")     # per futex word: its symbol, wakes and waker (absent before it)
        # the parallelism timeline and the stacks sampled while one thread ran (lab/why/alone.py)
        run["parallel"], run["alone"] = got.get("parallel"), got.get("alone")
        run["numa"], run["cpus"] = got.get("numa"), got.get("cpus")     # where the memory lives (why/memory.py)
        runs.append(run)
    # the hardware tier's raw texts of its kept runs (why/hardware.py parses them in the differential)
    return {"meta": meta, "runs": runs, "hardware": hardware.load(folder, meta)}


def _side(ev):
    """Per kind, the per-run {key: cost per unit of work} and {key: raw amount}, or why it is missing."""
    meta = ev["meta"]
    work = [float(run_work(ev, i)) for i in range(len(ev["runs"]))]
    if any(not w > 0 for w in work):
        raise ValueError("meta.json: every evidence run's work must be > 0")
    hzs = [float(r.get("hz") or meta["sample"]["hz"]) for r in ev["runs"]]
    # the too-few-samples rule's sampling period: the side's coarsest (a lighter tier samples less often)
    hz = min(hzs) if hzs else float(meta["sample"]["hz"])
    said = meta.get("evidence", {})
    # on-CPU samples are drawn at work × frequency: the Poisson test's exposure, so tiers compare
    out = {"work": work, "hz": hz, "exposure": [w * h for w, h in zip(work, hzs)], "missing": {},
           "runs": len(ev["runs"])}
    for kind, (key, _) in KINDS.items():
        state = said.get(key, "not said in meta.json")
        files = [r[key] for r in ev["runs"]]
        if not files:
            out["missing"][kind] = "no evidence runs"
        elif state != "ok":
            out["missing"][kind] = state
        elif any(f is None for f in files):
            out["missing"][kind] = f"{key}_r<N>.folded missing"
        else:
            scale = [1e6 / h if kind == "on" else 1.0 for h in hzs]
            out[kind] = {"raw": files,
                         "cost": [{s: v * k / w for s, v in f.items()} for f, w, k in zip(files, work, scale)]}
    return out


def run_work(ev, i):
    """The work of the i-th loaded run: its own (load() keeps only the gate's runs), else meta's i-th
    (evidence handed in already shaped, as the tests build it)."""
    return ev["runs"][i].get("work", ev["meta"]["work"][i])


def _functions(per_run, kind, inclusive):
    """Re-key per-run stack amounts by function: the leaf (self) or every distinct frame (inclusive),
    skipping the root frames that are not functions (comm; off-CPU: [reason] and comm)."""
    skip = 1 if kind == "on" else 2
    out = []
    for run in per_run:
        agg = {}
        for stack, v in run.items():
            if left_out(stack):         # a join's wait, the profiler's own time: no function's cost
                continue
            frames = stack.split(";")
            fns = frames[skip:] or frames[:1]
            for f in (set(fns) if inclusive else fns[-1:]):
                agg[f] = agg.get(f, 0.0) + v
        out.append(agg)
    return out


def interval(xb, xk):
    """95% interval of mean(xk) − mean(xb) over the runs (Welch's t), None with < 2 runs on a side."""
    if len(xb) < 2 or len(xk) < 2:
        return None
    d = float(np.mean(xk) - np.mean(xb))
    if np.var(xb) == 0 and np.var(xk) == 0:
        return d, d
    with warnings.catch_warnings():      # nearly equal runs: SciPy warns, the interval is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        from scipy import stats as st  # imported when used: 0.4 s a program start otherwise
        ci = st.ttest_ind(xk, xb, equal_var=False).confidence_interval(LEVEL)
    return float(ci.low), float(ci.high)


def ratio(xb, xk):
    """Ratio: knee/base of per-run totals, as the ratio of geometric means with a 95% interval from
    Welch's t on the log costs (lo, hi None with < 2 runs a side)."""
    base, knee = float(np.mean(xb)) if xb else math.nan, float(np.mean(xk)) if xk else math.nan
    if not xb or not xk or min(xb) <= 0 or min(xk) <= 0:
        return Ratio(base, knee, math.nan)
    lb, lk = np.log(xb), np.log(xk)
    ci = interval(list(lb), list(lk))
    return Ratio(base, knee, float(math.exp(np.mean(lk) - np.mean(lb))),
                 math.exp(ci[0]) if ci else None, math.exp(ci[1]) if ci else None)


def poisson_p(kb, kk, wb, wk):
    """Two-sided p of 'the same rate per unit of work' for kb samples over work wb and kk over wk."""
    n = int(round(kb + kk))
    if n == 0:
        return 1.0
    from scipy import stats as st
    return float(st.binomtest(int(round(kk)), n, wk / (wb + wk)).pvalue)


def flag(kind, most, p, ci, hz):
    """The too-few-samples rule: '' for a finding, else why not (see the module's docstring)."""
    least = MIN_SAMPLES if kind == "on" else MIN_SAMPLES * 1e6 / hz
    if most < least or (kind == "on" and p >= P_MAX):
        return TOO_FEW
    if ci is None:
        return "" if kind == "on" else ONE_RUN
    return NOISE if ci[0] <= 0 <= ci[1] else ""


MAX_ROWS = 400      # compared rows per kind: the costliest; the rest are one row, as the flame graph does
REST = "[the rest]"


def bounded(cb, rb, ck, rk):
    """The per-run tables with at most MAX_ROWS keys: the costliest at either point kept, the others summed
    into REST per run. Each key costs a test and an interval: 4,000 stacks took 175 s and 648 MB."""
    keys = set().union(*cb, *ck)
    if len(keys) <= MAX_ROWS:
        return cb, rb, ck, rk
    runs = max(1, len(cb) + len(ck))
    worth = {key: max(sum(r.get(key, 0.0) for r in cb), sum(r.get(key, 0.0) for r in ck)) / runs for key in keys}
    kept = set(sorted(keys, key=lambda x: (-worth[x], x))[:MAX_ROWS - 1])

    def fold(tables):
        out = []
        for t in tables:
            rest = sum(v for key, v in t.items() if key not in kept)
            out.append({**{key: v for key, v in t.items() if key in kept}, **({REST: rest} if rest else {})})
        return out
    return fold(cb), fold(rb), fold(ck), fold(rk)


def rows(what, kind, b, k, hz, named=None):
    """Compared rows of one kind (named: the rows' kind in words, KINDS' by default): b and k are (per-run
    costs, per-run raw amounts, per-run exposure: the work, × the sample frequency for sampled amounts)."""
    (cb, rb, wb), (ck, rk, wk) = b, k
    cb, rb, ck, rk = bounded(cb, rb, ck, rk)
    out = []
    for key in set().union(*cb, *ck):
        xb = [run.get(key, 0.0) for run in cb]
        xk = [run.get(key, 0.0) for run in ck]
        tb, tk = sum(run.get(key, 0.0) for run in rb), sum(run.get(key, 0.0) for run in rk)
        p = poisson_p(tb, tk, sum(wb), sum(wk)) if kind == "on" else math.nan
        ci = interval(xb, xk)
        base, knee_ = float(np.mean(xb)), float(np.mean(xk))
        out.append(Compared(what=what, kind=named or KINDS[kind][1], name=key, base=base, knee=knee_,
                            growth=knee_ - base, lo=ci[0] if ci else None, hi=ci[1] if ci else None,
                            runs=(xb, xk), amount=(tb, tk), p=p, share=0.0,
                            flag=left_out(key) or flag(kind, max(tb, tk), p, ci, hz)))
    return sorted(out, key=lambda r: (-r.growth, r.name))


def _futex(ev):
    """Futex waits per unit of work, grouped by the stack that waited (stable across runs, unlike the
    address under ASLR): {stack: FutexWait} means over runs; None when missing."""
    runs = [r["futex"] for r in ev["runs"]]
    if not runs or any(r is None for r in runs) or ev["meta"].get("evidence", {}).get("futex") != "ok":
        return None
    agg = {}
    for i, run in enumerate(runs):
        w = run_work(ev, i)
        locks = {r["addr"]: r for r in ev["runs"][i].get("lock") or ()}
        for row in run:
            a = agg.setdefault(row["stack"], {"waits": 0.0, "wait_us": 0.0, "addrs": [], "symbol": "",
                                              "wakes": 0.0, "wakers": {}})
            a["waits"] += float(row["waits"]) / w / len(runs)
            a["wait_us"] += float(row["wait_us"]) / w / len(runs)
            if row["addr"] not in a["addrs"]:
                a["addrs"].append(row["addr"])
            lk = locks.get(row["addr"])
            if lk:            # who let this word go: the holder's stack at its futex wake
                a["symbol"] = a["symbol"] or lk["symbol"]
                a["wakes"] += float(lk["wakes"]) / w / len(runs)
                waker = ";".join(lk["waker"])
                if waker:
                    a["wakers"][waker] = a["wakers"].get(waker, 0.0) + float(lk["wakes"]) / w / len(runs)
    return {s: FutexWait(a["waits"], a["wait_us"], tuple(a["addrs"]), a["symbol"], a["wakes"], a["wakers"])
            for s, a in agg.items()}


def _hotins(ev):
    """{symbol: [(samples, instruction, offset)] hottest first} summed over the runs; None when missing."""
    runs = [r["hotins"] for r in ev["runs"]]
    if not runs or any(r is None for r in runs):
        return None
    agg = {}
    for run in runs:
        for row in run:
            key = (row["symbol"], row["instruction"], row["offset"])
            agg[key] = agg.get(key, 0) + float(row["samples"])
    out = {}
    for (sym, ins, off), n in agg.items():
        out.setdefault(sym, []).append((n, ins, off))
    return {s: sorted(v, reverse=True) for s, v in out.items()}


def _sched(ev):
    """Per run {name: count} of the scheduler's counts from threads_r<N>.csv, or None."""
    runs = [r["threads"] for r in ev["runs"]]
    if not runs or any(r is None for r in runs):
        return None
    return [{n: sum(float(t[n]) for t in run) for n in ("migrations", "involuntary")} for run in runs]


SAMPLED_KINDS = (("oncpu", "on-CPU"), ("offcpu", "off-CPU"), ("futex", "futex"))


def sampled(meta):
    """[(kind, words)]: how the evidence runs were sampled (meta.json's `sampled`, collect.sampled: the
    full tier as the counting calibration planned it), each a received string, bounded; [] in folders
    written before it."""
    said = meta.get("sampled")
    if not isinstance(said, dict):
        return []
    return [(name, said[k][:300]) for k, name in SAMPLED_KINDS if isinstance(said.get(k), str) and said[k]]


def differential(base_ev, knee_ev, placement="", base_threads=1, knee_threads=None, knee_why="", stops=False):
    """Compare two points' evidence (as load() gives it): the Differential, everything the verdict and
    the flame graph need (its findings not yet classed: classify.classed gives each its class). `stops`:
    the curve says scaling stops at the knee (knee()), so the verdict may not say it scales."""
    b, k = _side(base_ev), _side(knee_ev)
    unit_b, unit_k = base_ev["meta"].get("unit"), knee_ev["meta"].get("unit")
    if unit_b != unit_k:
        raise ValueError(f"the two points count work in different units ({unit_b} vs {unit_k})")
    missing, total = {}, {}
    table = {"stacks": [], "functions_self": [], "functions_incl": []}
    for kind in KINDS:
        why = b["missing"].get(kind) or k["missing"].get(kind)
        if why:
            missing[kind] = why
            continue
        side = lambda s, cost: (cost, s[kind]["raw"], s["exposure"])  # noqa: E731
        table["stacks"] += rows("stack", kind, side(b, b[kind]["cost"]), side(k, k[kind]["cost"]), k["hz"])
        for incl, name in ((False, "functions_self"), (True, "functions_incl")):
            fb = (_functions(b[kind]["cost"], kind, incl), _functions(b[kind]["raw"], kind, incl), b["exposure"])
            fk = (_functions(k[kind]["cost"], kind, incl), _functions(k[kind]["raw"], kind, incl), k["exposure"])
            table[name] += rows("function", kind, fb, fk, k["hz"])
        total[kind] = ratio([counted(r) for r in b[kind]["cost"]], [counted(r) for r in k[kind]["cost"]])
    if not missing:
        both = lambda s: [counted(a) + counted(o) for a, o in zip(s["on"]["cost"], s["off"]["cost"])]  # noqa: E731
        total["all"] = ratio(both(b), both(k))
    cost = added_cost(table["stacks"])
    for name, rs in table.items():     # each row's share of the added cost, largest growth first
        table[name] = tuple(dataclasses.replace(r, share=r.growth / cost.added if cost.added > 0 else 0.0)
                            for r in sorted(rs, key=lambda r: (-r.growth, r.name)))
    sched = ()
    sb, sk = _sched(base_ev), _sched(knee_ev)
    if sb is not None and sk is not None:
        per = lambda runs, s: [{n: v / w for n, v in r.items()} for r, w in zip(runs, s["work"])]  # noqa: E731
        sched = tuple(rows("scheduler", "on", (per(sb, b), sb, b["work"]), (per(sk, k), sk, k["work"]), k["hz"],
                           named="count"))
    return Differential(
        placement=placement, base_threads=base_threads, knee_threads=knee_threads, knee_why=knee_why,
        stops=stops, unit=unit_k, runs=(b["runs"], k["runs"]), missing=missing, total=total, hz=k["hz"],
        evidence=dict(knee_ev["meta"].get("evidence", {})),
        speed=(gate.kept_speed(base_ev["meta"]), gate.kept_speed(knee_ev["meta"])),
        alone=(alone.of_runs(base_ev["runs"]), alone.of_runs(knee_ev["runs"])),
        memory=memory.of_runs(knee_ev["runs"]), sampled=tuple(sampled(knee_ev["meta"])),
        placed=groups.placed(knee_ev["runs"]),
        judged=tuple(x for x in (gate.summary(base_ev["meta"], base_threads),
                                 gate.summary(knee_ev["meta"], knee_threads)) if x),
        added=cost.added, found=cost.found, spread=cost.spread, sched=sched,
        futex=Sides(_futex(base_ev), _futex(knee_ev)), hotins=_hotins(knee_ev),
        hardware=hardware.compare(base_ev.get("hardware"), knee_ev.get("hardware"), base_threads, knee_threads),
        **table)


def finding(r):
    """Is a compared row a finding that grew (the rows the verdict names and classify classes)?"""
    return not r.flag and r.growth > 0


def added_cost(stacks):
    """Added: the added cost the shares are of (the module's rule), the findings' part of it and the part
    spread thin (growth beyond noise in total that no single stack explains)."""
    net = sum(r.growth for r in stacks if r.flag not in (JOINED, PROFILED))
    found = sum(r.growth for r in stacks if finding(r))
    added = max(net, found, 0.0)
    return Added(added, found, added - found)


def share(growth, added):
    """The part of the added cost a growth explains: 0 without added cost, and at most all of it (a group
    of stacks can grow more than the net added cost when other stacks got cheaper)."""
    return min(1.0, growth / added) if added > 0 else 0.0


def together(rows):
    """Together: a set of stack rows taken as one (their costs per
    unit of work summed per evidence run, the growth's 95% interval over the runs as interval() gives it).
    For a cause named before the runs (a story's): one hypothesis, one test, where each of its many
    stacks alone may be too thin to clear the noise rule. Joins and the profiler's time are left out."""
    rows = [r for r in rows if r.flag not in (JOINED, PROFILED)]
    if not rows:
        return Together(0.0, 0.0, 0.0, None, None, 0)
    xb = [sum(v) for v in zip(*(r.runs[0] for r in rows))]
    xk = [sum(v) for v in zip(*(r.runs[1] for r in rows))]
    ci = interval(xb, xk)
    base, knee_ = float(np.mean(xb)), float(np.mean(xk))
    return Together(base, knee_, knee_ - base, ci[0] if ci else None, ci[1] if ci else None, len(rows))


def findings(d, kind=None):
    """The stack rows that grew and are findings (flag ''), largest growth first."""
    return [r for r in d.stacks if finding(r) and (kind is None or r.kind == kind)]
