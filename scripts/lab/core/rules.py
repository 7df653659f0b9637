"""Verdicts a report gives a published effect: yes / no / inconclusive, always with the reason.

A verdict compares a word (near-linear, higher, …) published with the word measured here. The measured
word comes from medians; it is trusted only when the 95% confidence interval of every median involved
gives the same word at both ends, every point has at least MIN_REPEATS repeats and none is suspect.
Otherwise the verdict is "inconclusive" and the reason names which of these failed."""
import re
from dataclasses import dataclass

from lab.core.stats import Summary, summary

MIN_REPEATS = 3
FLAT_BELOW = 1.15        # growth factor under which a rate is "flat or falling"
LINEAR_EFFICIENCY = 0.75  # share of ideal growth from which it is "near-linear"
EQUAL_WITHIN = 0.03      # a ratio within ±3% of 1 is "about equal"


def growth_word(factor, span):
    """How a rate grows by `factor` over a thread ratio `span`."""
    if factor < FLAT_BELOW:
        return "flat or falling"
    return "near-linear" if factor / span >= LINEAR_EFFICIENCY else "sublinear"


def direction(ratio):
    return "higher" if ratio > 1 + EQUAL_WITHIN else "lower" if ratio < 1 - EQUAL_WITHIN else "about equal"


def doubt_of(points):
    """Why the points cannot carry a verdict (few repeats, suspect), or "": said once, not a wall of
    per-point reasons ("2 of 2 points suspect: 5 repeats, steal up to 31%, foreign up to 50%"); each
    point's own reasons are in its experiment's suspect list."""
    few = [(label, s) for label, s in points if s.n < MIN_REPEATS]
    bad = [(label, s.suspect) for label, s in points if s.suspect]
    why = [f"{label}: n={s.n} < {MIN_REPEATS} repeats" for label, s in few] if len(few) <= 2 else \
        [f"{len(few)} of {len(points)} points have fewer than {MIN_REPEATS} repeats"]
    if len(bad) == 1 and len(REPEAT.findall(bad[0][1])) <= 1:
        why.append(f"{bad[0][0]}: suspect ({bad[0][1]})")
    elif bad:
        who = bad[0][0] if len(bad) == 1 else f"{len(bad)} of {len(points)} points"
        why.append(f"{who} suspect: {in_brief('; '.join(text for _label, text in bad))}")
    return "; ".join(why)


REPEAT = re.compile(r"(?:^|; )r(\d+): ")
# a guard reason is `KIND VALUE UNIT …` ("steal 31% > 10%", "neighbour 80% on CPU 1 > 20%",
# "involuntary switches forced by other processes 900/s > 500/s")
REASON = re.compile(r"^([a-z][a-z ]*?) (\d+(?:\.\d+)?)(%|/s)")
SHOWN = 3           # distinct reasons of another shape, at most


def in_brief(text):
    """Suspect reasons of many repeats in a few words: how many repeats, and per kind its worst value."""
    repeats = len(REPEAT.findall(text))
    worst, other = {}, []
    for part in REPEAT.sub("; ", text).split("; "):
        part = part.strip()
        m = REASON.match(part)
        if m:
            kind, value, unit = m.group(1), float(m.group(2)), m.group(3)
            worst[(kind, unit)] = max(worst.get((kind, unit), value), value)
        elif part and part not in other:
            other.append(part)
    words = [f"{repeats} repeats"] if repeats > 1 else []
    words += [f"{kind} up to {value:g}{unit}" for (kind, unit), value in sorted(worst.items(), key=lambda kv: -kv[1])]
    words += other[:SHOWN] + ([f"{len(other) - SHOWN} other reasons"] if len(other) > SHOWN else [])
    return ", ".join(words)


def merged(pts):
    """Summary over the repeats of several points (e.g. one series over CPU sets), suspect carried."""
    xs = [x.value for p in pts for x in p.repeats]
    return summary(xs, "; ".join(p.summary.suspect for p in pts if p.summary.suspect))


def ci_bounds(s):
    """A summary's 95% CI as (low, high); its median twice where no CI could be taken."""
    lo, hi = s.ci_lo, s.ci_hi
    return (lo, hi) if lo == lo else (s.median, s.median)


def quotient_range(num, den):
    """Lowest and highest num/den inside both CIs (den's CI must stay above zero)."""
    nlo, nhi = ci_bounds(num)
    dlo, dhi = ci_bounds(den)
    if dlo <= 0:
        return float("-inf"), float("inf")
    return nlo / dhi, nhi / dlo


def judge(published_word, measured_word, word_of, num, den, labels):
    """Common rule: (verdict, why). word_of maps a quotient to its word; num/den are summaries."""
    doubt = doubt_of(list(zip(labels, (num, den))))
    if doubt:
        return "inconclusive", doubt
    if ci_bounds(den)[0] <= 0:
        return "inconclusive", f"{labels[1]}: 95% CI ±{den.ci_pct:.0f}% reaches zero"
    lo, hi = quotient_range(num, den)
    wlo, whi = word_of(lo), word_of(hi)
    if wlo != whi:
        return "inconclusive", f"95% CI ×{lo:.2f}–×{hi:.2f} spans {wlo} and {whi}"
    return ("yes" if measured_word == published_word else "no"), f"95% CI ×{lo:.2f}–×{hi:.2f}"


def shape_verdict(published_word, lo_summary, hi_summary, span, labels=("low", "high")):
    measured = lo_summary.median and hi_summary.median / lo_summary.median
    word = growth_word(measured, span)
    return (word, *judge(published_word, word, lambda q: growth_word(q, span), hi_summary, lo_summary,
                         labels[::-1]))


def ratio_verdict(published_word, other, base, labels=("variant", "base")):
    ratio = other.median / base.median if base.median else float("nan")
    word = direction(ratio)
    return (ratio, word, *judge(published_word, word, direction, other, base, labels))


# --- equivalence against a published value ----------------------------------------------------------
TOLERANCE = 0.25          # the default band: a measured quantity within ±25% of the published one


def band(published, tolerance=TOLERANCE):
    """The band around a published value inside which a measured one reproduces it: ×(1 ± tolerance)."""
    return published * (1 - tolerance), published * (1 + tolerance)


def equivalence(ci_lo, ci_hi, lo, hi):
    """An equivalence test: (verdict, why). The measured 95% interval [ci_lo, ci_hi] inside the band
    [lo, hi] → "yes" (reproduces); wholly outside → "no"; across an edge, or undefined → "inconclusive"."""
    if ci_lo != ci_lo or ci_hi != ci_hi:
        return "inconclusive", "no 95% interval (fewer than 3 values)"
    where = f"95% CI {ci_lo:.3g}–{ci_hi:.3g}, band {lo:.3g}–{hi:.3g}"
    if lo <= ci_lo and ci_hi <= hi:
        return "yes", f"{where}: inside"
    if ci_hi < lo or ci_lo > hi:
        return "no", f"{where}: outside"
    return "inconclusive", f"{where}: straddles an edge"


def claim_above(ci_lo, ci_hi, threshold):
    """A one-sided claim ("A beats B": a ratio above threshold): yes when the whole 95% interval is
    above it, no when the whole interval is at or below it, else inconclusive."""
    if ci_lo != ci_lo or ci_hi != ci_hi:
        return "inconclusive", "no 95% interval (fewer than 3 values)"
    where = f"95% CI ×{ci_lo:.2f}–×{ci_hi:.2f} vs ×{threshold:.2f}"
    if ci_lo > threshold:
        return "yes", f"{where}: above"
    if ci_hi <= threshold:
        return "no", f"{where}: not above"
    return "inconclusive", f"{where}: straddles it"


# --- the knee: where a curve stops scaling (report/scaling.py words it, the why compares there) ----------
THRESHOLD = LINEAR_EFFICIENCY
EQUAL = EQUAL_WITHIN


def doubt(points):
    """Why these points cannot carry a word, short: this module's rule (n < 3, a suspect repeat)."""
    why = []
    for label, s in dict(points).items():
        if s.n < MIN_REPEATS:
            why.append(f"{label}: n={s.n} < {MIN_REPEATS}")
        if s.suspect:
            reps = re.findall(r"(?:^|; )r\d+: ([^;]*)", s.suspect)
            why.append(f"{label}: {len(reps)} of {s.n} repeats suspect ({reps[0] if reps else s.suspect})")
    return "; ".join(why)


def pct(x):
    return f"{x * 100:.0f}%"


def ratio(a, b, better):
    """(median ratio, lo, hi): how many times faster summary a is than summary b."""
    num, den = (a, b) if better == "higher" else (b, a)
    med = num.median / den.median if den.median else float("nan")
    lo, hi = quotient_range(num, den)
    return med, lo, hi


@dataclass(frozen=True)
class Speedup:
    """One thread count of one placement's curve against its fewest threads (base): the speedup and the
    efficiency (speedup / ideal) with their 95% ranges, and why the row cannot carry a word ("" when it can)."""
    placement: str
    threads: int
    base: int
    summary: Summary            # the point's, at `threads`
    speedup: float
    lo: float
    hi: float
    ideal: float
    eff: float
    eff_lo: float
    eff_hi: float
    doubt: str


def speedups(series, better):
    """series {placement: {threads: summary}} → {placement: [Speedup]}."""
    out = {}
    for placement, by_t in series.items():
        ts = sorted(by_t)
        b = ts[0]
        rows = []
        for t in ts:
            s, base = by_t[t], by_t[b]
            sp, lo, hi = ratio(s, base, better)
            ideal = t / b
            rows.append(Speedup(placement, t, b, s, sp, lo, hi, ideal, sp / ideal, lo / ideal, hi / ideal,
                                doubt([(f"{placement} t{b}", base), (f"{placement} t{t}", s)])))
        out[placement] = rows
    return out


def efficiency_word(r):
    if r.doubt:
        return "inconclusive", r.doubt
    rng = f"efficiency {pct(r.eff)}, 95% CI {pct(r.eff_lo)}–{pct(r.eff_hi)}"
    if r.eff_hi < THRESHOLD:
        return "below", rng
    if r.eff_lo >= THRESHOLD:
        return "above", rng
    return "inconclusive", f"{rng} straddles {pct(THRESHOLD)}"


def knee(rows):
    """(base threads, knee threads, why, stops) of one placement's speedup rows (reporting.speedups):
    the first count whose efficiency is below the lab's threshold over its whole 95% range (scaling's
    rule, reused; `stops` True: "How it scales" then says scaling stops), else the largest count measured."""
    base = rows[0].threads
    for r in rows[1:]:
        word, rng = efficiency_word(r)
        if word == "below":
            return base, r.threads, (f"the first thread count whose efficiency is below "
                                        f"{pct(THRESHOLD)} over its whole 95% range ({rng})"), True
    return base, rows[-1].threads, "the largest thread count measured (efficiency never fell below " \
                                      f"{pct(THRESHOLD)} for sure)", False


def knees(series, better):
    """{placement: (base, knee, why, stops)} for series {placement: {threads: summary}} as scaling takes it."""
    return {p: knee(rows) for p, rows in speedups(series, better).items() if len(rows) >= 2}
