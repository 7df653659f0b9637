"""Statistics the reports share: medians and spread over repeats, and Welch's t-test.

Student's t and the incomplete beta function are SciPy's (the lab installs its pinned SciPy on both
paths). SciPy is imported inside the functions that need it, not at the top: the fleet's history
reader (scripts/lab/fleet/code.py, HISTORY_MODULES) carries this file to hosts that may have only
python3, and it uses median() alone.
"""
import dataclasses
import functools
import math
from collections import defaultdict
from dataclasses import dataclass


def percentile(xs, q):
    """Linear interpolation between closest ranks (q in 0..100), as numpy's default."""
    s = sorted(xs)
    if not s:
        raise ValueError("percentile of nothing")
    k = (len(s) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(xs):
    return percentile(xs, 50)


def t975(df):
    """The 97.5% quantile of Student's t with df degrees of freedom (a two-sided 95% interval's t)."""
    from scipy import stats
    return float(stats.t.ppf(0.975, df))


EXACT_UP_TO = 2000      # sums of exact binomial terms below this; SciPy's binomial above (a fleet's pairs)


@functools.lru_cache(maxsize=256)
def order_statistic_rank(n, level=0.95):
    """(k, coverage): the largest k for which [x_(k), x_(n-k+1)] covers the median with at least `level`
    (the sign test's interval; no assumption about the distribution), or (0, 0.0) when n is too small
    (n < 6 for 95%). Exact sums up to EXACT_UP_TO values (no SciPy needed: the fleet's history reader);
    above, the binomial's quantile from SciPy: a fleet's c2c matrix pools ~500,000 pair values, where
    the exact sum is quadratic in n (issue 44)."""
    if n > EXACT_UP_TO:
        return _rank_from_quantile(n, level)
    best = (0, 0.0)
    tail = 0.0                      # P(Binomial(n, 1/2) <= k - 1)
    for k in range(1, n // 2 + 1):
        tail += math.comb(n, k - 1) / 2 ** n
        coverage = 1 - 2 * tail
        if coverage < level:
            break
        best = (k, coverage)
    return best


def _rank_from_quantile(n, level):
    """order_statistic_rank for large n: k - 1 is at most the binomial's (1 - level)/2 quantile, so the
    answer is that quantile or one above it; each candidate's coverage is checked with the CDF."""
    from scipy.stats import binom
    q = int(binom.ppf((1 - level) / 2, n, 0.5))
    for k in (q + 1, q, q - 1):
        coverage = 1 - 2 * float(binom.cdf(k - 1, n, 0.5))
        if 1 <= k <= n // 2 and coverage >= level:
            return k, coverage
    return 0, 0.0


def ci_method(n):
    """Which interval median_ci gives for n values, in words."""
    k, coverage = order_statistic_rank(n)
    if k:
        return f"order statistics (sorted values {k} and {n - k + 1} of {n}, coverage {coverage * 100:.1f}%)"
    return "normal approximation" if n >= 3 else "none (n < 3)"


def median_ci(xs):
    """95% confidence interval of the median, (lo, hi); (nan, nan) below 3 values.

    From 6 values on it is distribution-free: the k-th lowest and k-th highest values (sign test), whose
    coverage is exact whatever the distribution. Below that an order-statistic interval cannot reach 95%,
    so for 3 to 5 values it is a normal approximation: the median's standard error sqrt(pi/2)·s/sqrt(n),
    widened by Student's t; wide when the values disagree, which is what the engine's stopping rule needs.
    ci_method() says which one a point got; docs/design.md says why."""
    n = len(xs)
    if n < 3:
        return float("nan"), float("nan")
    k, _coverage = order_statistic_rank(n)
    if k:
        s = sorted(xs)
        return s[k - 1], s[n - k]
    mean = sum(xs) / n
    s = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t975(n - 1) * math.sqrt(math.pi / 2) * s / math.sqrt(n)
    m = median(xs)
    return m - half, m + half


def ci_pct(xs):
    """Half-width of the median's 95% CI as % of the median (nan when undefined)."""
    lo, hi = median_ci(xs)
    m = median(xs) if xs else float("nan")
    if lo != lo or not m:
        return float("nan")
    # the larger side: an order-statistic interval need not be symmetric around the median
    return max(hi - m, m - lo) / abs(m) * 100


@dataclass(frozen=True)
class Summary:
    """A point's repeats in numbers (or several points' pooled): what every report, chart, verdict and
    export reads. NaN where undefined (an interval below 3 values); `suspect` is the suspect repeats in
    words ("r2: foreign 31% > 10%"), "" when none."""
    median: float
    min: float
    max: float
    spread_pct: float       # (max - min) / median, in %
    n: int
    ci_lo: float            # the median's 95% CI (median_ci)
    ci_hi: float
    ci_pct: float           # its larger half-width, in % of the median
    ci_method: str
    suspect: str = ""

    def marked(self, suspect):
        """The same numbers with these suspect repeats (a frozen summary is not edited in place)."""
        return dataclasses.replace(self, suspect=suspect)


def summary(xs, suspect=""):
    """median, min, max, relative spread (max-min)/median in %, n, and the median's 95% CI: a Summary."""
    m = median(xs)
    spread = (max(xs) - min(xs)) / abs(m) * 100 if m else float("nan")
    lo, hi = median_ci(xs)
    return Summary(median=m, min=min(xs), max=max(xs), spread_pct=spread, n=len(xs), ci_lo=lo, ci_hi=hi,
                   ci_pct=ci_pct(xs), ci_method=ci_method(len(xs)), suspect=suspect)


def group(rows, keys):
    """{tuple(row[k] for k in keys): [float values]}: the repeats of each point."""
    out = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(float(r["value"]))
    return out


# --- Welch's t-test --------------------------------------------------------------------------------
def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    from scipy import special
    return float(special.betainc(a, b, min(max(x, 0.0), 1.0)))


def welch(xs, ys):
    """Two-sided Welch's t-test: (t, degrees of freedom, p). p is NaN when either side has < 2 values
    or both have no variance."""
    nx, ny = len(xs), len(ys)
    if nx < 2 or ny < 2:
        return float("nan"), float("nan"), float("nan")
    mx, my = sum(xs) / nx, sum(ys) / ny
    vx = sum((x - mx) ** 2 for x in xs) / (nx - 1)
    vy = sum((y - my) ** 2 for y in ys) / (ny - 1)
    se2 = vx / nx + vy / ny
    if se2 == 0:
        return float("nan"), float("nan"), (1.0 if mx == my else 0.0)
    t = (mx - my) / math.sqrt(se2)
    df = se2 ** 2 / ((vx / nx) ** 2 / (nx - 1) + (vy / ny) ** 2 / (ny - 1))
    from scipy import stats
    return t, df, float(2 * stats.t.sf(abs(t), df))
