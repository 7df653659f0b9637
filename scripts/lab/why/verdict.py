"""The verdict in words (issue 43, item 5), per placement: one paragraph of plain text and the rows of the
report's "Why it stops scaling" table. Plain text only: names read from evidence files are data, and the
report's view layer escapes them (no HTML, no shell, no gnuplot is built here)."""
from lab.core import rules
from lab.engine.evidence import gate
from lab.engine.evidence import store as evidence
from lab.why import alone, diff, groups
from lab.why import classify as C
from lab.why.model import Curve, Row, Verdict

TOP = 3          # findings named in the paragraph
TABLE = 12       # rows of each table (stacks, functions)


def x(v):
    return f"×{v:.2f}"


def ci(t):
    return f" (95% CI {x(t.lo)}–{x(t.hi)})" if t.lo is not None else " (one evidence run: no interval)"


def ratio_words(t, what, base=""):
    """'×1.90 the CPU time it cost at 1 thread (95% CI ×1.70–×2.10)'."""
    if t is None or t.ratio != t.ratio:
        return ""
    return f"{x(t.ratio)} the {what}" + (f" it cost at {base}" if base else "") + ci(t)


def threads(n):
    return f"{n} thread" + ("" if n == 1 else "s")


def describe(d, r):
    """What one finding is, in words: where the added cost goes."""
    fs = C.frames(r)
    where = C.named(fs) or (f"`{C.user_frames(fs)[-1]}`" if C.user_frames(fs) else "no user stack")
    if r.kind == "off-CPU":
        reason = r.name.split(";")[0]
        api = [f for f in fs if C.SERIAL_FRAMES.search(f) or C.LOCK_FRAMES.search(f)]
        inside = f" in `{api[0]}`" if api else ""
        if reason == "[runqueue]" and r.cls in ("lock", "serial phase"):
            return f"waiting for a CPU after waking a waiter{inside} from {where}"
        if reason == "[futex]" and r.cls == "lock":
            fx = C.futex_detail(d)
            if fx:
                return f"waiting on one futex ({fx[0]}) from {fx[1] or where}"
        return f"{C.REASONS.get(reason, 'off-CPU')}{inside} from {where}"
    leaf = fs[-1] if fs else "?"
    own = C.named(fs)
    text = "on-CPU in " + (own if own.startswith(f"`{leaf}`")
                           else f"`{leaf}`" + (f" (called from {own})" if own else ""))
    if r.cls == "shared data":
        ins = C.hot_atomic(d, C.user_frames(fs)[-1])
        text += f", hottest instruction `{ins[0]}`"
    elif r.cls == "kernel":
        k = C.kernel_detail([r])
        text += f" ({', '.join(k)})" if k else ""
    return text


def amount(us, sign=True):
    """A cost per unit of work given in µs, in ns, µs or ms as its size asks: '+65.8 ns'."""
    m = abs(us)
    k, u = (1e3, "ns") if m < 1 else (1e-3, "ms") if m >= 1000 else (1, "µs")
    return f"{us * k:{'+' if sign else ''}.3g} {u}"


def by_function(d, unit):
    """' Where the spread growth gathers, by function (self time, beyond noise): …' — many thin stacks of
    one hot loop (the runner's inlined refcounts under `Vm::run`) are one function's growth; '' if none."""
    rows = C.gathers(d)[:TOP]
    if not rows:
        return ""
    said = [f"{r.kind} `{r.name}` {amount(r.growth)} per {unit} ({r.share * 100:.0f}%)" for r in rows]
    return " Where it gathers, by function (self time, beyond noise): " + "; ".join(said) + "."


def contradiction(d, unit):
    """Why the evidence cannot say what the curve says: scaling stops, and nothing grew."""
    said = [f"at {threads(t)} they {gate.pace(v)}" for t, v in zip((d.base_threads, d.knee_threads), d.speed)
            if v is not None]
    return (f"the curve says scaling stops: {threads(d.knee_threads)} is {d.knee_why}, yet no cost per {unit} "
            "grows beyond noise in the evidence runs: they did not show what slows the timed runs" +
            (f" ({'; '.join(said)})" if said else ""))


def words(d, c):
    """The paragraph for one placement from its differential d and its Classes c."""
    d = C.classed(d)
    unit = "op" if d.unit == "op" else "run"
    head = f"{d.placement}, {threads(d.knee_threads)}: " if d.placement else f"{threads(d.knee_threads)}: "
    base = threads(d.base_threads)
    parts = []
    all_, on = d.total.get("all"), d.total.get("on")
    off = d.total.get("off")
    valid = lambda t: t is not None and t.ratio == t.ratio  # noqa: E731
    if valid(on):
        parts.append(f"each {unit} costs {ratio_words(on, 'CPU time', base)}")
        if valid(all_):
            parts.append(f"{ratio_words(all_, 'thread time counting its waits')}")
    elif valid(off):
        parts.append(f"each {unit} costs {ratio_words(off, 'off-CPU time', base)}")
    text = head + ("; ".join(parts) if parts else "no evidence to compare") + "."
    if c.cause == "scales":
        text += " Nothing grows faster than the work: it scales."
    elif c.cause == "inconclusive" and c.contradicts:
        text += f" Inconclusive: {contradiction(d, unit)}."
    elif c.cause == "inconclusive":
        text += (" Inconclusive: no stack's growth is beyond noise and the evidence runs disagree too much to "
                 "call the totals flat.")
    elif c.cause is not None:
        found = diff.findings(d)
        said = [f"{r.share * 100:.0f}% is {describe(d, r)} ({r.cls or 'other'})" for r in found[:TOP]]
        if said:
            said[0] = said[0].replace(" is ", " of the added cost is ", 1)
            text += " " + "; ".join(said) + "."
        else:
            text += " No single stack's growth is beyond noise."
        if said and d.added > 0 and d.spread > 0:
            text += f" {d.spread / d.added * 100:.0f}% is spread thin (no single stack's growth beyond noise)."
        if "scheduler" in c.classes:
            moved = [f"{r.name} per {unit} {r.base:.1f} → {r.knee:.1f}" for r in d.sched if diff.finding(r)]
            if moved:
                text += f" Scheduler counts that grew: {', '.join(moved)}."
        fx = C.futex_detail(d) if c.cause == "lock" else None
        taker = ""
        if fx:
            a = fx[2]
            sym = f" (`{a.symbol.split(' ')[0]}` in {a.symbol.partition(' ')[2].strip('()')})" \
                if a.symbol else ""
            text += (f" The lock: futex {fx[0]}{sym}, waited on from {fx[1] or 'an unnamed stack'}"
                     f" ({a.waits:.0f} waits, {a.wait_us:,.0f} µs per {unit} at the knee)")
            waker = max(a.wakers.items(), key=lambda kv: kv[1])[0] if a.wakers else ""
            held = C.named(waker.split(";")) if waker else ""
            text += (f"; released to a waiter from {held} (the holder: {a.wakes:.0f} wakes per {unit};"
                     " its hold time is not measured: an uncontended take and release make no system call)."
                     if held else ".")
            taker = (fx[1] or held).split(" ← ")[0]
        if c.cause == "lock" and not taker:      # no futex named: the lock's costliest stack that names code
            taker = next((C.named(r.name.split(";")).split(" ← ")[0] for r in diff.findings(d)
                          if r.cls == "lock" and C.named(r.name.split(";"))), "")
        other = c.classes.get("other")
        if c.cause == "no single cause" and other and other.share >= C.MAIN_SHARE and found:
            # most of the cost is in one place no rule names (a sleep, I/O, plain user code): not "spread thin"
            top = next((r for r in found if r.cls == "other"), found[0])
            text += (f" No named cause: {other.share * 100:.0f}% of the added cost is where no rule of the lab "
                     f"names a cause (other: sleeps, I/O, plain user code); the code to look at is "
                     f"{C.named(C.frames(top)) or describe(d, top)}.")
            text += by_function(d, unit)
        elif c.cause == "no single cause":
            text += " No single cause: the growth is spread thin (the flame graph is the answer)."
            text += by_function(d, unit)
        else:
            others = [f"{n} {v.share * 100:.0f}%"
                      for n, v in sorted(c.classes.items(), key=lambda kv: -kv[1].share)
                      if n not in (c.cause, "other") and v.share >= C.MENTION]
            text += f" Cause: {c.cause}" + (f", taken in {taker}" if c.cause == "lock" and taker else "") + \
                    f" ({c.classes[c.cause].share * 100:.0f}% of the added cost" + \
                    (f"; also {', '.join(others)}" if others else "") + ")."
            if c.cause == "serial phase":     # the code to change: what runs while the others wait
                said = alone.words(*(d.alone or (None, None)), d.base_threads, d.knee_threads)
                text += f" {said}" if said else ""
    for note in c.notes:       # what is missing is said once, above every curve's words (report.view.why)
        text += f" {note[0].upper()}{note[1:]}."
    if d.sampled:        # what was counted exactly and what only sampled (issue 53: said, not assumed)
        text += " How the knee's evidence was sampled: " + \
            "; ".join(f"{name}: {how}" for name, how in d.sampled) + "."
    if d.judged:         # the validity gate rejected runs or recorded lighter: what the words rest on
        text += f" Evidence runs (validity gate, ±{gate.WHY_DISTURBANCE * 100:.0f}%): {'; '.join(d.judged)}."
    nb, nk = d.runs
    if min(nb, nk) < 2:      # two a side is the default (why_runs): their intervals are in the words already
        text += f" Only {min(nb, nk)} evidence run on a side: no interval (why_runs=3 or more gives narrower ones)."
    return text


def table(d, key):
    """Rows for the report (model.Row): stack or function, kind, cost at the base and at the knee (µs per
    unit of work), growth, share of the added cost, the growth's 95% interval, flag and class."""
    return tuple(Row(name=r.name, what=r.what, kind=r.kind, cost_base=r.base, cost_knee=r.knee, growth=r.growth,
                     share=r.share, interval=(r.lo, r.hi) if r.lo is not None else None,
                     flag=r.flag or "finding", cls=r.cls) for r in getattr(d, key)[:TABLE])


def verdict(d):
    """The Verdict of one differential: all plain data for report.md, report.html and ./lab scale."""
    d = C.classed(d)
    c = C.classify(d)
    return Verdict(placement=d.placement, base_threads=d.base_threads, knee_threads=d.knee_threads,
                   knee_why=d.knee_why, unit=d.unit, cause=c.cause, text=words(d, c),
                   classes={n: v.share for n, v in c.classes.items()},
                   stacks=table(d, "stacks"), functions=table(d, "functions_self"),
                   functions_inclusive=table(d, "functions_incl"), totals=d.total, missing=c.missing)


def none(placement, b, k, why, missing, text, cause=None, variant="", unit=None, placed=()):
    """A placement's Curve when there is nothing to compare: no differential, no cause (or "inconclusive":
    the gate kept no evidence run; then placed: the knee's kept runs, where it has them)."""
    return Curve(Verdict(placement=placement, base_threads=b, knee_threads=k, knee_why=why, unit=unit,
                         cause=cause, text=text, missing=tuple(missing)), None, variant, tuple(placed))


def curve(series, better, evidence_of, variant=""):
    """[Curve] for every placement of a sweep (of one variant): series {placement: {threads: summary}} as
    reporting.scaling takes it; evidence_of(placement, threads) → that point's loaded evidence, or None
    when the point has none (a sweep without why=1, or evidence that could not be read: the text says so)."""
    out = []
    for placement, (b, k, why, stops) in sorted(rules.knees(series, better).items()):
        got, bad = {}, []
        for t in (b, k):
            try:
                got[t] = evidence_of(placement, t)
            except (evidence.EvidenceError, ValueError) as e:
                got[t] = None
                bad.append(str(e))
        eb, ek = got[b], got[k]
        if eb is None or ek is None:
            at = " and ".join(threads(t) for t, e in ((b, eb), (k, ek)) if e is None)
            said = f"unreadable evidence ({'; '.join(bad)})" if bad else "run with why=1"
            out.append(none(placement, b, k, why, [f"no evidence at {at}"] + bad,
                            f"{placement}, {threads(k)}: no evidence at {at} ({said}).", variant=variant))
            continue
        # the validity gate kept no run at a side: nothing the verdict may rest on, said with the numbers
        empty = [gate.none_kept(e["meta"], t) for t, e in ((b, eb), (k, ek))
                 if not e["runs"] and "runs_judged" in e["meta"]]
        if empty:
            # the knee's own kept runs still say which of its threads paid (groups): a description of the
            # knee, not a cause, so it is carried beside the inconclusive words and said as such
            knee = groups.placed(ek["runs"]) if ek["runs"] else ()
            out.append(none(placement, b, k, why, [f"no evidence run kept: {'; '.join(empty)}"],
                            f"{placement}, {threads(k)}: inconclusive: {'; '.join(empty)}.", "inconclusive",
                            variant, ek["meta"].get("unit"), knee))
            continue
        try:
            d = C.classed(diff.differential(eb, ek, placement, b, k, why, stops))
        except ValueError as e:                     # e.g. the two points count work in different units
            out.append(none(placement, b, k, why, [str(e)],
                            f"{placement}, {threads(k)}: the evidence cannot be compared: {e}.", variant=variant))
            continue
        out.append(Curve(verdict(d), d, variant))
    return out
