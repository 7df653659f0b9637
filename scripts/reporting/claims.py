"""Each seed story's claim, stated once, and its verdict at the spans this host measured.

A story's row in the report says the claim, the published figure *of that claim* at the span measured
here (or the nearest the source published), what was measured, and yes / no / inconclusive / not
measurable here, with why. The detailed comparisons (every published figure beside its point, shapes,
ratios between variants) stay in each experiment's section; they no longer decide the story.

  seed-000  the per-thread ÷ shared-arc gap grows with threads (runner-empty, calls_per_s)
  seed-004  a same-CCX hop beats crossing a CCX (c2c/c2c-matrix relations, else channel ns_per_msg)
  seed-001  the global lock has a knee (a thread count past which GET/s falls) and its mutex share of
            CPU grows with threads (cache-get, perf=1 for the share)
"""
from engine.perfsummary import MUTEX
from reporting import verdict as V

GROWS_ABOVE = 1.10    # "grows": the whole 95% interval of the growth factor above ×1.10
CLAIMS = {
    "seed-000": "the per-thread ÷ shared-arc gap grows with threads",
    "seed-004": "a same-CCX hop beats crossing a CCX",
    "seed-001": "the global lock has a knee (more threads, fewer GET/s) and its mutex share grows with threads",
}


def _by_threads(pts, metric, variant):
    """{threads: [points]} of one variant's metric (over placements, as the published series has none)."""
    out = {}
    for p in pts:
        if p["metric"] == metric and p["variant"] == variant and str(p["threads"]).isdigit():
            out.setdefault(int(p["threads"]), []).append(p)
    return out


def _pub(pub, source, experiment, variant, metric, host=None):
    out = {}
    for r in pub:
        if (r["source"], r["experiment"], r["variant"], r["metric"]) == (source, experiment, variant, metric) \
                and r["threads"].isdigit() and (host is None or r["host"] == host):
            out[int(r["threads"])] = float(r["value"])
    return out


def seed000(exps, pub, merged):
    e = exps.get("runner-empty")
    if not e:
        return None
    pt, sa = _by_threads(e["points"], "calls_per_s", "per-thread"), _by_threads(e["points"], "calls_per_s", "shared-arc")
    common = sorted(set(pt) & set(sa))
    if len(common) < 2:
        return {"verdict": "not measurable here", "measured": "per-thread and shared-arc at two thread counts needed",
                "published": "", "why": f"measured both at {common or 'no'} thread count(s)"}
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
    if min(x["median"] for x in s.values()) <= 0:
        return {"verdict": "inconclusive", "measured": "a median of 0 calls/s", "published": published,
                "why": "a run measured nothing"}
    gap_lo = s[("per-thread", lo)]["median"] / s[("shared-arc", lo)]["median"]
    gap_hi = s[("per-thread", hi)]["median"] / s[("shared-arc", hi)]["median"]
    measured = (f"per-thread {lo}→{hi} threads ×{s[('per-thread', hi)]['median'] / s[('per-thread', lo)]['median']:.2f}, "
                f"shared-arc ×{s[('shared-arc', hi)]['median'] / s[('shared-arc', lo)]['median']:.2f}: gap ×{gap_lo:.2f} → "
                f"×{gap_hi:.2f}, grows ×{gap_hi / gap_lo:.2f}")
    doubt = V.doubt_of([(f"{v} {t} threads", x) for (v, t), x in s.items()])
    if doubt:
        return {"verdict": "inconclusive", "measured": measured, "published": published, "why": doubt}
    # growth of the gap at the worst ends of the four medians' 95% CIs
    hi_lo, hi_hi = V.quotient_range(s[("per-thread", hi)], s[("shared-arc", hi)])
    lo_lo, lo_hi = V.quotient_range(s[("per-thread", lo)], s[("shared-arc", lo)])
    glo, ghi = (hi_lo / lo_hi, hi_hi / lo_lo) if lo_lo > 0 and lo_hi > 0 else (float("-inf"), float("inf"))
    verdict, why = V.claim_above(glo, ghi, GROWS_ABOVE)
    return {"verdict": verdict, "measured": measured, "published": published, "why": why}


def seed004(exps, merged):
    rel = next((exps[n]["relations"] for n in ("c2c-matrix", "c2c") if n in exps and exps[n].get("relations")), None)
    claim = rel and rel.get("seed004")
    if claim and claim.get("ratio") is not None:
        return {"verdict": claim["verdict"], "published": f"×{claim['published']:.2f} ({claim['pub_where']})",
                "measured": f"cross-l3 ÷ same-l3 ×{claim['ratio']:.2f} (95% CI ×{claim['ci'][0]:.2f}–"
                            f"×{claim['ci'][1]:.2f}; {claim['spread']})", "why": claim["why"]}
    if claim:
        return {"verdict": "not measurable here", "published": f"×{claim['published']:.2f} ({claim['pub_where']})",
                "measured": "", "why": claim["why"]}
    e = exps.get("channel")
    if not e:
        return None
    same = [p for p in e["points"] if p["metric"] == "ns_per_msg" and p["placement"] == "same-l3" and p["variant"] == "unpadded"]
    cross = [p for p in e["points"] if p["metric"] == "ns_per_msg" and p["placement"] == "cross-l3" and p["variant"] == "unpadded"]
    if not same or not cross:
        return {"verdict": "not measurable here", "published": "", "measured": "",
                "why": "no same-l3 and cross-l3 pair measured (one L3 domain: no CCX to cross)"}
    ratio, _w, verdict, why = V.ratio_verdict("higher", merged(cross), merged(same), ("cross-l3", "same-l3"))
    return {"verdict": verdict, "published": "", "measured": f"channel unpadded cross-l3 ÷ same-l3 ×{ratio:.2f}",
            "why": why}


def seed001(exps, pub, merged):
    e = exps.get("cache-get")
    if not e:
        return None
    parts, verdicts = [], []
    tp = _by_threads(e["points"], "ops_per_s", "global")
    ts = sorted(tp)
    knee_pub = _pub(pub, "seed-001", "cache-get", "global", "best_thread_count")
    kp = next(iter(knee_pub.values()), None)
    if len(ts) >= 3:
        # a knee: the best thread count is not the last one, its GET/s above the last one's beyond both CIs
        best = max(ts, key=lambda t: merged(tp[t])["median"])
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
    ms = _by_threads(e["points"], MUTEX, "global")
    mt = sorted(ms)
    share_pub = _pub(pub, "seed-001", "cache-get", "global", MUTEX)
    published = ", ".join(f"{v:g}% at {t}" for t, v in sorted(share_pub.items())) + " threads (seed-001)" if share_pub else ""
    if len(mt) >= 2:
        lo, hi = merged(ms[mt[0]]), merged(ms[mt[-1]])
        doubt = V.doubt_of([(f"{mt[0]} threads", lo), (f"{mt[-1]} threads", hi)])
        if doubt:
            verdicts.append("inconclusive")
            parts.append(f"mutex share {lo['median']:.1f}% → {hi['median']:.1f}%: inconclusive ({doubt})")
        else:
            qlo, qhi = V.quotient_range(hi, lo)
            v, why = V.claim_above(qlo, qhi, GROWS_ABOVE)
            verdicts.append(v)
            parts.append(f"mutex share {mt[0]}→{mt[-1]} threads {lo['median']:.1f}% → {hi['median']:.1f}%: {v} ({why})")
    else:
        parts.append("mutex share: not measured (sweep with perf=1)")
    if not verdicts:
        word = "not measurable here"
    elif len(set(verdicts)) == 1:
        word = verdicts[0]
    else:
        word = "no" if "no" in verdicts else "inconclusive"
    return {"verdict": word, "published": f"best at {kp:g} threads on 2 × 8 cores; mutex {published}" if kp else published,
            "measured": "; ".join(parts), "why": "; ".join(parts)}


def judge(source, exps, pub, merged):
    """The claim's row for a story, or None when no experiment of it is in the run."""
    f = {"seed-000": lambda: seed000(exps, pub, merged), "seed-004": lambda: seed004(exps, merged),
         "seed-001": lambda: seed001(exps, pub, merged)}.get(source)
    out = f() if f else None
    if out:
        out["claim"] = CLAIMS[source]
    return out
