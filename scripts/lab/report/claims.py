"""Each seed story's claim and its verdict at the spans this host measured (the claim's words and the
points it judges, which a sweep with a budget measures first: lab/engine/stories.py).

A story's row in the report says the claim, the published figure *of that claim* at the span measured
here (or the nearest the source published), what was measured, and yes / no / inconclusive / not
measurable here, with why. The detailed comparisons (every published figure beside its point, shapes,
ratios between variants) stay in each experiment's section; they no longer decide the story.

  seed-000  the per-thread ÷ shared-arc gap grows with threads (runner-empty, calls_per_s)
  seed-004  a same-CCX hop beats crossing a CCX (c2c/c2c-matrix relations, else channel ns_per_msg)
  seed-001  the global lock has a knee (a thread count past which GET/s falls) and its mutex share of
            CPU grows with threads (cache-get, perf=1 for the share)

Each story also says whether the lab found the seed's *cause* (issue 43, item 6), from the why=1 evidence
of the points involved: cause() → found / not found / no evidence (run with why=1), with the words. The
rules (written out in docs/design.md, "The stories' causes"):
  seed-000  shared-arc's CPU time per call grows at its knee, the refcount findings (on-CPU stacks through
            an Arc clone/drop frame or the runner's vm_for_call, or classed shared data) explain at least
            FOUND_SHARE of the added CPU time per call (diff.added_cost's rule over the on-CPU stacks), and
            per-thread's refcount findings at the same
            thread counts grew less than half as much per call;
  seed-001  the server's lock findings (class lock, in a cache-server thread) explain at least FOUND_SHARE
            of global's added cost per GET at its knee, and every other lock mode with evidence at the
            same thread counts grew less there per GET;
  seed-004  no thread curve (the pipeline is 2 threads): unpadded against padded at each placement, per
            run of the same messages; the slot handover's findings (frames ring_push / ring_pop, the
            ring's inlined send and receive) explain at least FOUND_SHARE of what unpadded adds.
"""
import dataclasses
import re
from dataclasses import dataclass

from lab.core import rules as V
from lab.core.runfolder import RunFolder
from lab.engine.evidence import gate
from lab.engine.evidence import store as evidence
from lab.engine.perfsummary import MUTEX
from lab.engine.stories import CLAIMS  # noqa: F401 (the claims' words and the points each judges: one owner)
from lab.report import scaling
from lab.report.causes import evidence_of
from lab.why import c2creport, diff, perfmem
from lab.why import classify as C
from lab.why import verdict as W

GROWS_ABOVE = 1.10    # "grows": the whole 95% interval of the growth factor above ×1.10


@dataclass(frozen=True)
class Claim:
    """A story's claim judged on the run: yes / no / inconclusive / not measurable here, what was measured,
    the published figure it is held against, and why."""
    verdict: str
    measured: str = ""
    published: str = ""
    why: str = ""


@dataclass(frozen=True)
class Cause:
    """Whether the why=1 evidence names the seed's cause: found / not found / no evidence, and the words."""
    word: str
    why: str = ""


@dataclass(frozen=True)
class Judged:
    """A story's claim (its words), how it was judged, and its cause."""
    claim: str
    judged: Claim
    cause: Cause


def _by_threads(pts, metric, variant):
    """{threads: [points]} of one variant's metric (over placements, as the published series has none)."""
    out = {}
    for p in pts:
        if p.metric == metric and p.variant == variant and str(p.threads).isdigit():
            out.setdefault(int(p.threads), []).append(p)
    return out


def _pub(pub, source, experiment, variant, metric, host=None):
    out = {}
    for r in pub:
        if (r["source"], r["experiment"], r["variant"], r["metric"]) == (source, experiment, variant, metric) \
                and r["threads"].isdigit() and (host is None or r["host"] == host):
            out[int(r["threads"])] = float(r["value"])
    return out


def arc_gap_grows(exps, pub, merged):
    """seed-000: the per-thread ÷ shared-arc gap grows with threads."""
    e = exps.get("runner-empty")
    if not e:
        return None
    pt, sa = _by_threads(e.points, "calls_per_s", "per-thread"), _by_threads(e.points, "calls_per_s", "shared-arc")
    common = sorted(set(pt) & set(sa))
    if len(common) < 2:
        return Claim(verdict="not measurable here", measured="per-thread and shared-arc at two thread counts needed",
                     published="", why=f"measured both at {common or 'no'} thread count(s)")
    lo, hi = common[0], common[-1]
    s = {(v, t): merged(d[t]) for v, d in (("per-thread", pt), ("shared-arc", sa)) for t in (lo, hi)}
    host = "2x Xeon E5-2650L v3 24C/48T 1.8GHz"
    ppt = _pub(pub, "seed-000", "runner-empty", "per-thread", "calls_per_s", host)
    psa = _pub(pub, "seed-000", "runner-empty", "shared-arc", "calls_per_s", host)
    both = sorted(set(ppt) & set(psa))
    # the published gap at the span measured here, else the source's nearest span starting at lo
    phi = hi if hi in both else max((t for t in both if t <= hi), default=None)
    plo = lo if lo in both else min(both, default=None)
    if plo is not None and phi is not None and phi > plo:
        g = (ppt[phi] / psa[phi]) / (ppt[plo] / psa[plo])
        published = (f"gap ×{ppt[plo] / psa[plo]:.2f} at {plo} → ×{ppt[phi] / psa[phi]:.2f} at {phi} threads: "
                     f"grows ×{g:.2f} (seed-000, {host})")
    else:
        published = "no published pair of figures at this span"
    if min(x.median for x in s.values()) <= 0:
        return Claim(verdict="inconclusive", measured="a median of 0 calls/s", published=published,
                     why="a run measured nothing")
    gap_lo = s[("per-thread", lo)].median / s[("shared-arc", lo)].median
    gap_hi = s[("per-thread", hi)].median / s[("shared-arc", hi)].median
    measured = (f"per-thread {lo}→{hi} threads ×{s[('per-thread', hi)].median / s[('per-thread', lo)].median:.2f}, "
                f"shared-arc ×{s[('shared-arc', hi)].median / s[('shared-arc', lo)].median:.2f}: gap ×{gap_lo:.2f} → "
                f"×{gap_hi:.2f}, grows ×{gap_hi / gap_lo:.2f}")
    doubt = V.doubt_of([(f"{v} {t} threads", x) for (v, t), x in s.items()])
    if doubt:
        return Claim(verdict="inconclusive", measured=measured, published=published, why=doubt)
    # growth of the gap at the worst ends of the four medians' 95% CIs
    hi_lo, hi_hi = V.quotient_range(s[("per-thread", hi)], s[("shared-arc", hi)])
    lo_lo, lo_hi = V.quotient_range(s[("per-thread", lo)], s[("shared-arc", lo)])
    glo, ghi = (hi_lo / lo_hi, hi_hi / lo_lo) if lo_lo > 0 and lo_hi > 0 else (float("-inf"), float("inf"))
    verdict, why = V.claim_above(glo, ghi, GROWS_ABOVE)
    return Claim(verdict=verdict, measured=measured, published=published, why=why)


def ccx_crossing_dearer(exps, merged):
    """seed-004: a same-CCX hop beats crossing a CCX."""
    rel = next((exps[n].relations for n in ("c2c-matrix", "c2c") if n in exps and exps[n].relations), None)
    claim = rel and rel.get("ccx_crossing")
    if claim and claim.get("ratio") is not None:
        return Claim(verdict=claim["verdict"], published=f"×{claim['published']:.2f} ({claim['pub_where']})",
                     measured=f"cross-l3 ÷ same-l3 ×{claim['ratio']:.2f} (95% CI ×{claim['ci'][0]:.2f}–"
                              f"×{claim['ci'][1]:.2f}; {claim['spread']})", why=claim["why"])
    if claim:
        return Claim(verdict="not measurable here", published=f"×{claim['published']:.2f} ({claim['pub_where']})",
                     measured="", why=claim["why"])
    e = exps.get("channel")
    if not e:
        return None
    same = [p for p in e.points if p.metric == "ns_per_msg" and p.placement == "same-l3" and p.variant == "unpadded"]
    cross = [p for p in e.points if p.metric == "ns_per_msg" and p.placement == "cross-l3" and p.variant == "unpadded"]
    if not same or not cross:
        return Claim(verdict="not measurable here", published="", measured="",
                     why="no same-l3 and cross-l3 pair measured (one L3 domain: no CCX to cross)")
    ratio, _w, verdict, why = V.ratio_verdict("higher", merged(cross), merged(same), ("cross-l3", "same-l3"))
    return Claim(verdict=verdict, published="", measured=f"channel unpadded cross-l3 ÷ same-l3 ×{ratio:.2f}",
                 why=why)


def global_lock_knee(exps, pub, merged):
    """seed-001: the global lock has a knee and its mutex share grows."""
    e = exps.get("cache-get")
    if not e:
        return None
    parts, verdicts = [], []
    tp = _by_threads(e.points, "ops_per_s", "global")
    ts = sorted(tp)
    knee_pub = _pub(pub, "seed-001", "cache-get", "global", "best_thread_count")
    kp = next(iter(knee_pub.values()), None)
    if len(ts) >= 3:
        # a knee: the best thread count is not the last one, its GET/s above the last one's beyond both CIs
        best = max(ts, key=lambda t: merged(tp[t]).median)
        if best == ts[-1]:
            verdict, why = "no", "GET/s highest at the most threads measured"
        else:
            doubt = V.doubt_of([(f"{best} threads", merged(tp[best])), (f"{ts[-1]} threads", merged(tp[ts[-1]]))])
            verdict, why = ("inconclusive", doubt) if doubt else \
                V.claim_above(*V.quotient_range(merged(tp[best]), merged(tp[ts[-1]])), 1.0)
        verdicts.append(verdict)
        parts.append(f"knee: GET/s best at {best} of {ts[0]}–{ts[-1]} threads: {verdict} ({why})")
    else:
        parts.append(f"knee: not measurable here (global lock measured at {len(ts)} thread count(s); 3 needed)")
    ms = _by_threads(e.points, MUTEX, "global")
    mt = sorted(ms)
    share_pub = _pub(pub, "seed-001", "cache-get", "global", MUTEX)
    published = (", ".join(f"{v:g}% at {t}" for t, v in sorted(share_pub.items())) + " threads (seed-001)"
                 if share_pub else "")
    if len(mt) >= 2:
        lo, hi = merged(ms[mt[0]]), merged(ms[mt[-1]])
        doubt = V.doubt_of([(f"{mt[0]} threads", lo), (f"{mt[-1]} threads", hi)])
        if doubt:
            verdicts.append("inconclusive")
            parts.append(f"mutex share {lo.median:.1f}% → {hi.median:.1f}%: inconclusive ({doubt})")
        else:
            qlo, qhi = V.quotient_range(hi, lo)
            v, why = V.claim_above(qlo, qhi, GROWS_ABOVE)
            verdicts.append(v)
            parts.append(f"mutex share {mt[0]}→{mt[-1]} threads {lo.median:.1f}% → {hi.median:.1f}%: {v} ({why})")
    else:
        parts.append("mutex share: not measured (sweep with perf=1)")
    if not verdicts:
        word = "not measurable here"
    elif len(set(verdicts)) == 1:
        word = verdicts[0]
    else:
        word = "no" if "no" in verdicts else "inconclusive"
    return Claim(verdict=word,
                 published=f"best at {kp:g} threads on 2 × 8 cores; mutex {published}" if kp else published,
                 measured="; ".join(parts), why="; ".join(parts))


# --- the cause (issue 43, item 6) ------------------------------------------------------------------
FOUND_SHARE = C.LEAD_SHARE     # the seed's cause explains at least a quarter of the added cost
NO_EVIDENCE = "no evidence (run with why=1)"
INCONCLUSIVE = "inconclusive (no evidence run kept)"
# Rust's Arc reference counts: the clone (strong count +1) and the drop (-1, drop_slow at zero), as perf
# names them in the runner's release build, inlined frames included (seen here: `drop_in_place<alloc::sync::
# Arc<rune::…>>`, `drop<alloc::sync::Arc<…>>`, `alloc::sync::Arc<T,A>::drop_slow`). Only the frame's own
# function counts, not an Arc among another function's type parameters.
ARC = re.compile(r"^(?:drop_in_place|drop|clone|drop_slow)<alloc::sync::Arc<"
                 r"|^alloc::sync::Arc<[^>]*>::(?:drop_slow|clone|drop)\b"
                 r"|^<alloc::sync::Arc<.*> as core::(?:clone::Clone|ops::drop::Drop)>::(?:clone|drop)$")
RING = re.compile(r"^ring_(?:push|pop)$")     # c-probes/ring.h: the slot handover, inlined into stage_main
STAGE_MAIN = re.compile(r"^stage_main$")       # c-probes/channel.c: what perf c2c names for the inlined handover
SERVER = "cache-server"


def series(pts, metric, variant, merged):
    """{placement: {threads: summary}} of one variant's metric, as why.verdict.curve takes it."""
    return scaling.curves(pts, metric, pool=merged).get(variant, {})


def part(d, match, added=None):
    """The story's cause in differential d: every stack that match(row, frames) (findings or not) taken
    together (diff.together: one test of the named cause, not one per stack), its classes among the
    findings, "beyond" (its growth's interval above zero) and "share": of the net added cost (`added`,
    else d's) it explains, 0 unless beyond noise."""
    rows = [r for r in d.stacks if match(r, C.frames(r))]
    g = dataclasses.asdict(diff.together(rows))       # the story's words add to it (beyond, share, classes)
    added = d.added if added is None else added
    g["beyond"] = g["lo"] is not None and g["lo"] > 0
    g["share"] = diff.share(g["growth"], added) if g["beyond"] else 0.0
    g["classes"] = sorted({r.cls or "other" for r in diff.findings(d) if r in rows})
    return g


def beyond(g, unit):
    """'+G per unit (95% CI lo to hi)' of a together() group (µs, ns or ms: verdict.amount)."""
    m = abs(g["growth"])
    ci = (f" (95% CI {W.amount(g['lo'])} to {W.amount(g['hi'])})" if g["lo"] is not None
          else " (one run a side: no interval)")
    return f"{W.amount(g['growth'])} per {unit}{ci}" if m == m else "?"


def compare(run, exp, variant, placement, b, k):
    """Classified differential of one variant between b and k threads, or (None, why)."""
    get = evidence_of(run, exp, variant)
    try:
        eb, ek = get(placement, b), get(placement, k)
    except (ValueError, OSError, evidence.EvidenceError) as e:
        return None, str(e)
    if eb is None or ek is None:
        return None, "no evidence"
    empty = [gate.none_kept(e["meta"], t) for t, e in ((b, eb), (k, ek)) if not e["runs"]]
    if empty:
        return None, "inconclusive: " + "; ".join(empty)
    try:
        d = diff.differential(eb, ek, placement, b, k)
    except ValueError as e:
        return None, str(e)
    return C.classed(d), ""                 # each finding with its class (part() names them)


def unit(d):
    return "op" if d.unit == "op" else "run"


def cause_word(results):
    """The story's word from its placements' (found?, text) pairs: found anywhere → found."""
    if not results:
        return NO_EVIDENCE
    if not any(f is not None for f, _ in results) and any("inconclusive: " in t for _, t in results):
        return INCONCLUSIVE          # evidence was recorded, the validity gate kept none (the text says why)
    return ("found" if any(f for f, _ in results)
            else "not found" if any(f is False for f, _ in results) else NO_EVIDENCE)


def curves(run, exp, variant, e, metric, merged):
    """verdict.curve of one variant: [(placement, base, knee, diff or None, text)]."""
    out = []
    for c in W.curve(series(e.points, metric, variant, merged), "higher", evidence_of(run, exp, variant)):
        v = c.verdict
        out.append((v.placement, v.base_threads, v.knee_threads, c.diff, v.text))
    return out


def refcount(r, fs):
    """A seed-000 refcount stack: on-CPU, through an Arc clone/drop frame or the runner's vm_for_call (it
    clones the shared program's Arcs for each call, rust-runner/src/exec/call.rs), or classed shared data."""
    return r.kind == "on-CPU" and (r.cls == "shared data"
                                      or any(ARC.search(f) or f == "vm_for_call" for f in fs))


def on_added(d):
    """The on-CPU added cost per unit of work, by diff.py's rule of the added cost (beyond noise)."""
    return diff.added_cost([r for r in d.stacks if r.kind == "on-CPU"]).added


VM_FOR_CALL = re.compile(r"(?:^|::)vm_for_call(?:::h[0-9a-f]{16})?$")   # perf c2c's symbol: the function's path


def refcount_symbol(sym):
    """A c2c access in the refcount's code: an Arc clone/drop (ARC) or the runner's vm_for_call, into which
    the release build inlines the clones (c2c names the function holding the code address)."""
    return bool(ARC.search(sym) or VM_FOR_CALL.search(sym))


def witness_line(report, mine, what, whose):
    """The hottest line of a perf c2c report (hardware.compare's "c2c", or a Pareto alone) with HITM whose
    HITM accesses (or stores) are in the code `mine(symbol)` says is the seed's, as (line, words naming it
    `what`), or (None, why not: no line is `whose`)."""
    pareto = report.pareto if hasattr(report, "pareto") else tuple(report)
    for cl in pareto:
        hits = [a for a in cl.accesses if mine(a.symbol)
                and (a.remote_hitm_share > 0 or a.local_hitm_share > 0 or a.stores)]
        if not hits or cl.remote_hitm + cl.local_hitm == 0:
            continue
        nodes = sorted({n for a in cl.accesses for n in a.nodes})
        on = f"node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))}" if nodes else "nodes not printed"
        where = ("from both packages" if cl.remote_hitm and len(nodes) > 1 else
                 f"(accesses from {on})" if cl.remote_hitm else f"(local HITM only: within one package, {on})")
        offsets = ", ".join(f"{o:#x}" for o in sorted({a.offset for a in hits}))
        who = sorted({a.symbol for a in hits})
        return cl, (f"{what} {cl.address:#x} (offset {offsets}) with {cl.remote_hitm} remote "
                    f"and {cl.local_hitm} local HITM, in {', '.join(f'`{w}`' for w in who[:3])} {where} (perf c2c)")
    return None, f"no contended line of perf c2c's is {whose} ({c2creport.words(pareto)})"


def refcount_line(report):
    """Seed 000's witness: the Arc's strong count, bumped by a lock-prefixed add (its load half finds the
    line modified in another core's cache: the HITM) from every thread's clone and drop."""
    return witness_line(report, refcount_symbol, "the Arc's strong count line", "the refcount's")


def slot_symbol(sym):
    """A c2c access in the channel's slot handover: ring_push/ring_pop, or stage_main into which they inline."""
    return bool(RING.search(sym) or STAGE_MAIN.search(sym))


def slot_line(report):
    """Seed 004's witness: a ring slot's line handed between the two stages' caches."""
    return witness_line(report, slot_symbol, "the ring's slot line", "a slot's")


def arc_refcount_cause(run, e, merged):
    res = []
    for placement, b, k, d, text in curves(run, "runner-empty", "shared-arc", e, "calls_per_s", merged):
        if d is None:
            res.append((None, f"shared-arc {text}"))
            continue
        if not d.total.get("on"):
            res.append((None, f"{placement}: on-CPU evidence missing ({d.missing.get('on', '?')})"))
            continue
        sa = part(d, refcount, on_added(d))
        said = (f"{placement} {b}→{k} threads: shared-arc's Arc refcount stacks ({sa['stacks']} together) "
                f"{sa['base'] * 1e3:.1f} → {sa['knee'] * 1e3:.1f} ns per call, {beyond(sa, 'call')}: "
                f"{sa['share'] * 100:.0f}% of the added CPU time per call (CPU time per call "
                f"×{d.total['on'].ratio:.2f}{W.ci(d.total['on'])}; the classifier's cause: "
                f"{C.classify(d).cause})")
        dp, why = compare(run, "runner-empty", "per-thread", placement, b, k)
        pt = part(dp, refcount, on_added(dp)) if dp else None
        said += (f"; per-thread's {pt['base'] * 1e3:.1f} → {pt['knee'] * 1e3:.1f} ns, {beyond(pt, 'call')}" if pt
                 else f"; per-thread: {why}")
        report = d.hardware.c2c
        line = True
        if report is not None:
            # the hardware tier ran (issue 56 item 3): the line the refcounts bounce is the witness, where
            # PMU-free it is the refcount's lock-prefixed instructions; a c2c naming another line is not found
            line, words = refcount_line(report)
            said += f"; at {k} threads {words}"
        if sa["share"] < FOUND_SHARE or not C.grows(d.total.get("on")) or line is None:
            res.append((False, said))
        else:                           # without per-thread's evidence the contrast is unknown
            res.append((pt["growth"] < sa["growth"] / 2 if pt else None, said))
    return res


def in_server(r, fs):
    """Is the stack a cache-server thread's (its comm: the first frame on-CPU, after the reason off-CPU)?"""
    return r.name.split(";")[1 if r.kind == "off-CPU" else 0] == SERVER


def lock_waits(d):
    """'; the server's lock futex: N waits per 1000 GETs at k threads (M at b)' from futex_r*.csv, the
    lock frames' presence whatever the differential's noise rule said."""
    per = {}
    for side in ("base", "knee"):
        rows = getattr(d.futex, side) or {}
        per[side] = sum(v.waits for s, v in rows.items() if any(C.LOCK_FRAMES.search(f) for f in s.split(";")))
    if d.futex.knee is None:
        return ""
    return (f"; lock futex waits (lll_lock_wait) per 1000 GETs: {per['base'] * 1000:.2f} at {d.base_threads} → "
            f"{per['knee'] * 1000:.2f} at {d.knee_threads} threads")


def server_lock(d):
    """The seed-001 match in d: a cache-server thread's stack that classify's rule calls lock."""
    return lambda r, fs: in_server(r, fs) and C.rule(d, r) == "lock"


def server_lock_cause(run, e, merged):
    res = []
    others = sorted({p.variant for p in e.points} - {"global", "memcached"})
    for placement, b, k, d, text in curves(run, "cache-get", "global", e, "ops_per_s", merged):
        if d is None:
            res.append((None, f"global {text}"))
            continue
        g = part(d, server_lock(d))
        cause = C.classify(d).cause
        said = (f"{placement} {b}→{k} server threads: global's server lock stacks ({g['stacks']} together) "
                f"{beyond(g, 'GET')}: {g['share'] * 100:.0f}% of the added cost per GET (the "
                f"classifier's cause: {cause})")
        worse = []
        for v in others:
            dv, why = compare(run, "cache-get", v, placement, b, k)
            if dv is None:
                said += f"; {v}: {why}"
                continue
            o = part(dv, server_lock(dv))
            said += f"; {v} {beyond(o, 'GET')} ({o['share'] * 100:.0f}%)"
            if o["growth"] >= g["growth"]:
                worse.append(v)
        worse = worse if g["growth"] > 0 else []
        found = g["share"] >= FOUND_SHARE and not worse
        res.append((found, said + (f"; {', '.join(worse)} grew as much" if worse else "") + lock_waits(d)))
    return res


# The pair placements whose two CPUs are in different L3s by their definition (topology/topo.py), for a
# run without its topology; with it, the CPUs recorded decide (scaling.spans).
CROSS_L3 = ("cross-l3", "cross-die", "cross-numa", "cross-package")


def crosses_l3(topo, placement, cpus):
    """Do a point's CPUs span more than one L3 (the seed's handover across CCXs)? None: cannot tell."""
    if topo is not None and cpus:
        return scaling.spans(topo, [int(c) for c in cpus.split(",") if c.strip().isdigit()])["l3"] > 1
    return True if placement in CROSS_L3 else False if placement in ("smt", "same-l2", "same-l3") else None


def slot_handover_cause(run, e):
    """Seed 004's cause, PMU-free (issue 56 item 3): unpadded slots' added cost in the slot handover, at a
    point whose two threads are in different L3s; within one L3 the growth is false sharing, not the
    seed's cross-CCX cost, and is said so."""
    res = []
    handover = lambda r, fs: any(RING.search(f) for f in fs)  # noqa: E731
    have = {(p.placement, p.threads) for p in e.points if p.variant == "unpadded"}
    cpus = {(p.placement, p.threads): p.cpus for p in e.points if p.variant == "unpadded"}
    topo = RunFolder(run).topology()
    for placement, t in sorted(have):
        across = crosses_l3(topo, placement, cpus[(placement, t)])
        t = int(t)
        try:
            ep = evidence_of(run, "channel", "padded")(placement, t)
            eu = evidence_of(run, "channel", "unpadded")(placement, t)
        except (ValueError, OSError, evidence.EvidenceError) as err:
            res.append((None, f"{placement}: {err}"))
            continue
        if ep is None or eu is None:
            continue
        try:
            d = C.classed(diff.differential(ep, eu, placement, t, t, "unpadded against padded slots"))
        except ValueError as err:
            res.append((None, f"{placement}: {err}"))
            continue
        c = C.classify(d)
        h = part(d, handover)
        tot = d.total.get("on")
        grew = (f"×{tot.ratio:.2f}{W.ci(tot)} the CPU time per {unit(d)}"
                if tot and tot.ratio == tot.ratio else "?")
        said = (f"{placement}, {t} threads: unpadded costs {grew} of padded; the slot handover (ring_push/ring_pop, "
                f"{h['stacks']} stacks together) {beyond(h, unit(d))}: {h['share'] * 100:.0f}% of the added cost "
                f"({', '.join(h['classes']) or 'no finding'}; the classifier's cause: {c.cause})")
        if not C.grows(tot):
            said += ": unpadded adds no CPU time beyond noise here, so there is no added cost to explain"
        elif not across:
            said += (": " + ("its two CPUs share one L3" if across is False else "whether its CPUs share an L3 is "
                             "not known (no topology recorded)") +
                     ", so this is the slots' false sharing, not the seed's handover across an L3 (a cross-l3, "
                     "cross-die, cross-numa or cross-package point says that)")
        line = True
        hw = d.hardware
        if hw.c2c is not None:
            # the hardware tier ran (issue 56 item 3): the slot's line HITM'd across the two stages is the witness
            line, words = slot_line(hw.c2c)
            said += f"; {words}"
        if hw.mem is not None:
            said += f"; {perfmem.words(hw.mem)} (perf mem)"
        res.append((h["share"] >= FOUND_SHARE and bool(C.grows(tot)) and bool(across) and line is not None, said))
    return res


def cause(source, exps, run, merged):
    """The Cause: found / not found / no evidence (run with why=1), and the evidence in words."""
    name = {"seed-000": "runner-empty", "seed-001": "cache-get", "seed-004": "channel"}.get(source)
    e = exps.get(name)
    if not e or not run:
        return Cause(NO_EVIDENCE, f"no {name} points with evidence" if name else "")
    res = {"seed-000": lambda: arc_refcount_cause(run, e, merged),
           "seed-001": lambda: server_lock_cause(run, e, merged),
           "seed-004": lambda: slot_handover_cause(run, e)}[source]()
    return Cause(cause_word(res), "; ".join(w for _, w in res) or f"no {name} point has why=1 evidence")


def judge(source, exps, pub, merged, run=None):
    """The Judged claim of a story, or None when no experiment of it is in the run; with the run folder,
    also whether the seed's cause was found (cause())."""
    f = {"seed-000": lambda: arc_gap_grows(exps, pub, merged), "seed-004": lambda: ccx_crossing_dearer(exps, merged),
         "seed-001": lambda: global_lock_knee(exps, pub, merged)}.get(source)
    out = f() if f else None
    return Judged(CLAIMS[source], out, cause(source, exps, run, merged)) if out else None
