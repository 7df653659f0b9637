"""How a command scales, in words: the one place for the formulas report.md, report.html and the
speedup chart share.

For a placement P and thread count n, with b the smallest thread count measured for P (normally 1):
- speed ratio of point A over point B: A/B for a metric where higher is better (ops/s), B/A where lower is
  (seconds); its 95% range takes both medians' CIs at their worst ends (rules.quotient_range);
- speedup(P, n) = speed ratio of (P, n) over (P, b); ideal = n / b; efficiency = speedup / ideal;
- "scaling stops at m threads": the first n whose efficiency is below THRESHOLD over its whole 95% range,
  every smaller n having been at or above it over its whole range; m is the count before n;
  "scales to every PU here" when every n is at or above THRESHOLD and the largest is the host's PU count;
- the best placement at n: the highest speed; the others whose CI overlaps its CI are named as ties;
- pinning P against unpinned at n: speed ratio of (P, n) over (unpinned, n): *helps* above 1 + EQUAL,
  *hurts* below 1 − EQUAL, *makes no difference* within ±EQUAL, over the whole 95% range; else
  *inconclusive*;
- crossing a package / NUMA node / L3 at n: two placements at the same n, one of which spans more
  domains of that level (and no outer level): cost = 1 − speed ratio (far over near).
Any point with fewer than 3 repeats or a suspect repeat makes the words that rest on it inconclusive
(core/rules.py, the rule for every verdict of the lab).
"""
import dataclasses
import re

from lab.core import rules as V
from lab.core.rules import (  # noqa: F401 (the rule's names, used here and by scaling's readers)
    EQUAL,
    THRESHOLD,
    doubt,
    efficiency_word,
    pct,
    ratio,
    speedups,
)
from lab.core.run import Scaling
from lab.core.runfolder import RunFolder
from lab.engine import journal as jr
from lab.engine.spec import better_of, curve_metric

LEVELS = (("package", "a package"), ("numa", "a NUMA node"), ("l3", "an L3"))


def threads_word(n):
    return f"{n} thread" + ("" if n == 1 else "s")


def stops(placement, rows, pus):
    """(word, sentence): where scaling stops for one placement."""
    if len(rows) < 2:
        return "one thread count", f"{placement}: only {threads_word(rows[0].threads)} measured: no scaling to judge."
    unknown = None
    for prev, r in zip(rows, rows[1:]):
        word, why = efficiency_word(r)
        at = f"at {threads_word(r.threads)} the speedup is ×{r.speedup:.2f} (95% CI ×{r.lo:.2f}–×{r.hi:.2f})"
        if word == "below":
            if unknown:
                return "inconclusive", (f"{placement}: scaling stops at or before {threads_word(prev.threads)}: "
                                        f"{at}, {why} < {pct(THRESHOLD)}; inconclusive at "
                                        f"{threads_word(unknown[0])} ({unknown[1]}).")
            return "stops", (f"{placement}: **scaling stops at {threads_word(prev.threads)}**: {at}, "
                             f"{why} < {pct(THRESHOLD)}.")
        if word == "inconclusive" and not unknown:
            unknown = (r.threads, why)
    if unknown:
        return "inconclusive", (f"{placement}: cannot tell where scaling stops: at {threads_word(unknown[0])} "
                                f"{unknown[1]}.")
    last = rows[-1]
    tail = (f"at {threads_word(last.threads)} ×{last.speedup:.2f} (95% CI ×{last.lo:.2f}–×{last.hi:.2f}), "
            f"efficiency ≥ {pct(THRESHOLD)} at every count")
    if last.threads >= pus:
        return "scales", f"{placement}: **scales to every PU here** ({pus}): {tail}."
    return "scales", (f"{placement}: scales to {threads_word(last.threads)}, the most measured"
                      f" (the host has {pus} PUs): {tail}.")


def overlaps(a, b):
    alo, ahi = V.ci_bounds(a)
    blo, bhi = V.ci_bounds(b)
    return alo <= bhi and blo <= ahi


def best(series, better):
    """[(threads, best placement, [placements within its CI])] per thread count measured by ≥ 2 placements."""
    out = []
    for t in sorted({t for by_t in series.values() for t in by_t}):
        here = {p: by_t[t] for p, by_t in series.items() if t in by_t}
        if len(here) < 2:
            continue
        key = (lambda p: here[p].median) if better == "higher" else (lambda p: -here[p].median)
        top = max(here, key=key)
        ties = sorted(p for p in here if p != top and overlaps(here[p], here[top]))
        out.append((t, top, ties, bool(doubt([(p, s) for p, s in here.items()]))))
    return out


def compare_word(a, b, better, labels):
    """(word, med, lo, hi, why) for 'a against b': helps / hurts / makes no difference / inconclusive."""
    med, lo, hi = ratio(a, b, better)
    why = doubt(list(zip(labels, (a, b))))
    if why:
        return "inconclusive", med, lo, hi, why
    rng = f"×{med:.2f} the speed, 95% CI ×{lo:.2f}–×{hi:.2f}"
    if lo > 1 + EQUAL:
        return "helps", med, lo, hi, rng
    if hi < 1 - EQUAL:
        return "hurts", med, lo, hi, rng
    if lo >= 1 - EQUAL and hi <= 1 + EQUAL:
        return "makes no difference", med, lo, hi, rng + f" within ±{pct(EQUAL)}"
    return "inconclusive", med, lo, hi, rng + f" straddles ±{pct(EQUAL)}"


def pinning(series, better):
    """[{placement, threads, word, ratio, lo, hi, why}] of every pinned placement against unpinned."""
    base = series.get("unpinned")
    if not base:
        return []
    out = []
    for p, by_t in sorted(series.items()):
        if p == "unpinned":
            continue
        for t in sorted(set(by_t) & set(base)):
            word, med, lo, hi, why = compare_word(by_t[t], base[t], better, (f"{p} t{t}", f"unpinned t{t}"))
            out.append({"placement": p, "threads": t, "word": word, "ratio": med, "lo": lo, "hi": hi, "why": why})
    return out


def pinning_sentences(rows):
    out = []
    for p in dict.fromkeys(r["placement"] for r in rows):
        mine = [r for r in rows if r["placement"] == p]
        parts = []
        for word in ("hurts", "helps", "makes no difference", "inconclusive"):
            at = [r for r in mine if r["word"] == word]
            if at:
                where = ", ".join(f"{threads_word(r['threads'])} ({r['why']})" for r in at)
                parts.append((f"**{word}**" if word != "inconclusive" else "is inconclusive") + f" at {where}")
        out.append(f"pinning ({p}) against unpinned " + "; ".join(parts) + ".")
    return out


def spans(topo, cpus):
    """{level: number of domains} the CPU list spans."""
    pus = [topo.by_os[c] for c in cpus if c in topo.by_os]
    return {"package": len({p.package for p in pus}), "numa": len({n for p in pus for n in p.nodes}) or 1,
            "l3": len({p.l3 for p in pus})}


def crossing(sp):
    """The outermost level a CPU list crosses (index into LEVELS), or len(LEVELS) when none."""
    return next((i for i, (lv, _w) in enumerate(LEVELS) if sp[lv] > 1), len(LEVELS))


def crossings(series, cpus, topo, better):
    """[sentence] on what crossing each level costs, or why it cannot be said here."""
    if topo is None:
        return ["the run has no topology (env/lstopo.xml): crossings are not judged."]
    shape = topo.shape()
    if shape["packages"] <= 1 and shape["numa_nodes"] <= 1 and shape["l3_domains"] <= 1:
        return ["this host has one package, one NUMA node and one L3: there is no crossing to measure here."]
    out = []
    for t in sorted({t for by_t in series.values() for t in by_t}):
        here = {p: crossing(spans(topo, cpus[(p, t)])) for p, by_t in series.items()
                if t in by_t and p != "unpinned" and (p, t) in cpus}
        done = set()
        for far, lf in sorted(here.items(), key=lambda kv: kv[1]):
            for near, ln in here.items():
                if lf < len(LEVELS) and ln > lf and lf not in done:
                    done.add(lf)
                    word, med, lo, hi, why = compare_word(series[far][t], series[near][t], better,
                                                          (f"{far} t{t}", f"{near} t{t}"))
                    what = {"hurts": f"costs **{pct(1 - med)}**", "helps": f"gains **{pct(med - 1)}**",
                            "makes no difference": "costs nothing measurable",
                            "inconclusive": "has an inconclusive cost"}[word]
                    out.append(f"crossing {LEVELS[lf][1]} {what} at {threads_word(t)} ({far} against {near}: {why}).")
    return out or ["no two placements measured here differ in a package, NUMA node or L3 crossing at the same "
                   "thread count."]


def curves(points, metric, pool=None):
    """{variant: {placement: {threads: point}}} of one metric at numeric thread counts, the variants in the
    order they first appear: every scaling curve of an experiment, the one place that groups them.
    pool(points) makes one entry of the points at the same (variant, placement, threads) (claims.py merges
    runs); by default the last of them (a model has one)."""
    out = {}
    for p in points:
        if p.metric == metric and str(p.threads).isdigit():
            out.setdefault(p.variant, {}).setdefault(p.placement, {}).setdefault(int(p.threads), []).append(p)
    pool = pool or (lambda ps: ps[-1])
    return {v: {pl: {t: pool(ps) for t, ps in by_t.items()} for pl, by_t in by_p.items()} for v, by_p in out.items()}


def summaries(by_p):
    """{placement: {threads: summary}} of one variant's curves (what speedups() and why.verdict take)."""
    return {pl: {t: p.summary for t, p in by_t.items()} for pl, by_t in by_p.items()}


def analyse(points, metric, better, topo, pus):
    """The scaling section of one experiment (its first variant's curves): rows and sentences.
    points: the model's points."""
    variant = next((p.variant for p in points if p.metric == metric), None)
    by_p = curves(points, metric).get(variant)
    if not by_p:
        return None
    series = summaries(by_p)
    cpus = {(pl, t): [int(c) for c in p.cpus.split(",") if c.isdigit()]
            for pl, by_t in by_p.items() for t, p in by_t.items()}
    unit = next(p.unit for by_t in by_p.values() for p in by_t.values())     # one metric, one unit
    sp = speedups(series, better)
    words = [stops(p, rows, pus) for p, rows in sorted(sp.items())]
    pin = pinning(series, better)
    sentences = [s for _w, s in words]
    sentences += ["best placement " + "; ".join(
        f"at {threads_word(t)}: " + (f"{top} by its median (inconclusive: a point here is suspect or has "
                                     f"fewer than {V.MIN_REPEATS} repeats)" if doubtful else
                                     f"{top} by its median, {', '.join(ties)} within its 95% CI (no clear best)"
                                     if ties else f"**{top}**")
        for t, top, ties, doubtful in best(series, better)) + "."] if best(series, better) else []
    sentences += pinning_sentences(pin)
    sentences += crossings(series, cpus, topo, better)
    return Scaling(metric, unit, better, THRESHOLD, tuple(r for p in sorted(sp) for r in sp[p]),
                   dict(zip(sorted(sp), (w for w, _s in words))), tuple(pin), tuple(sentences))


# --- reading a run -----------------------------------------------------------------------------------
def section(run, e):
    """The scaling words of an experiment with a `speedup METRIC` chart, or, when it ran with why=1, of its
    first `scaling METRIC` chart (the stories' specs draw curves, not speedups: their "why" needs the
    curve's knee); else None. run: its folder's path."""
    rf = RunFolder(run)
    metric = curve_metric(e.charts, rf.has_evidence(e.name))
    if metric is None:
        return None
    unit = next((p.unit for p in e.points if p.metric == metric), "")
    topo = rf.topology()
    pus = len(topo.pus) if topo else max((int(p.threads) for p in e.points if str(p.threads).isdigit()),
                                         default=1)
    better = better_of(rf.spec_path(e.name), metric, unit)
    out = analyse(e.points, metric, better, topo, pus)
    if not out:
        return None
    return dataclasses.replace(out, sentences=out.sentences + tuple(unmeasured_sentences(out.rows, e.skipped))
                               + tuple(perf_stat_sentence(rf)))


def unmeasured_sentences(rows, skipped):
    """Per placement, the thread counts the plan left unmeasured (plan=adaptive, a budget: the journal's
    skipped points) beside those measured: the words above rest only on the measured ones."""
    left = {}
    for s in skipped:
        m = re.match(r"(\S+) threads=(\d+): (adaptive|budget):", s)
        if m:
            left.setdefault(m.group(1), set()).add(int(m.group(2)))
    out = []
    for pl, ts in sorted(left.items()):
        measured = sorted({r.threads for r in rows if r.placement == pl})
        out.append(f"{pl}: measured at {', '.join(map(str, measured)) or 'no'} threads; skipped (the adaptive plan or "
                   f"the budget; the skipped points say why): {', '.join(map(str, sorted(ts)))}.")
    return out


def perf_stat_sentence(rf):
    """What perf=stat could count on this host, from the sweep's journal (lab/engine/perfstat.py)."""
    try:
        events = jr.read(rf.journal_path)
    except (OSError, jr.JournalError):
        return []
    ev = next((e for e in events if e["event"] == "perf_stat"), None)
    if not ev:
        return []
    return [f"perf stat counted {', '.join(ev.get('counted') or []) or 'nothing'} (rows perf_*)"
            + (f"; this host could not count {', '.join(ev['missing'])} (a VM without a virtual PMU, or "
               "kernel.perf_event_paranoid)" if ev.get("missing") else "") + "."]
