"""The Universal Scalability Law fitted to a scaling curve: X(N) = λN / (1 + σ(N−1) + κN(N−1)).

  fit(threads, values, lower=False) -> Fit | NoFit
  words(fit) -> str        one sentence: the shape and where the curve stops growing
  lines(fit) -> list[str]  what `./lab usl` prints: sigma, kappa, lambda, peak, the words, the method

Every repeat is an observation (thread counts may repeat). Least squares over all of them
(scipy.optimize.least_squares, bounds 0 ≤ σ ≤ 1, κ ≥ 0, λ > 0; σ ≤ 1 because σ is a serial fraction).
Since the squared error of the repeats of one thread count is their spread around their mean plus n·(mean −
model)², the fit weighs each thread count's mean by its number of repeats: the same estimate, at the cost
of one residual per thread count, whatever the number of rows.

95% intervals, and which method gave them (Fit.method says it):
  - bootstrap over repeats, when every thread count has at least MIN_REPEATS repeats: the repeats are
    resampled with replacement within each thread count (the design stays as measured), the model refitted,
    and the 2.5th and 97.5th percentiles taken; seeded (SEED) so the same data give the same interval, with
    resamples(n) resamples (500, fewer above 20,000 rows so the work stays bounded, never fewer than 200);
    the refits run all at once (_solve_many, NumPy; SciPy for any that does not converge): ~30 ms a curve;
  - otherwise (published curves often have one value per thread count) the fit's covariance:
    s²(JᵀJ)⁻¹ with s² the residual variance on n−3 degrees of freedom and Student's t; the peak's
    interval by the delta method.

Shape, from the intervals: a coefficient is ≈ 0 when its 95% interval reaches 0 (its lower end is at most
ZERO, the solver's zero). κ not ≈ 0: `coherency-bound` (a peak, then decline); κ ≈ 0 and σ not ≈ 0:
`contention-bound` (a plateau near λ/σ, 1/σ× one thread); both ≈ 0: `linear`. The peak N* = √((1−σ)/κ)
exists only when κ is not ≈ 0 (else None).

Fewer than MIN_COUNTS distinct thread counts fit no curve with three coefficients honestly: NoFit, with the
reason and the efficiency at each step X(N)/(N·X(1)) (medians of the repeats; relative to the smallest
thread count when 1 was not measured).

For a lower-is-better metric (the wall time of a fixed amount of work) pass lower=True: the model is fitted
to 1/value, and the words give the peak's wall time.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np

from lab.core.stats import t975

MIN_COUNTS = 4          # distinct thread counts below which there is no fit
MIN_REPEATS = 3         # repeats per thread count for the bootstrap; fewer: the covariance
SEED = 43               # the bootstrap's seed (issue 43): same data, same interval
MAX_RESAMPLES, MIN_RESAMPLES, RESAMPLE_WORK = 500, 200, 10_000_000
ZERO = 1e-12            # a coefficient at or below this is the bound itself
LEVEL = 0.95            # of every interval (stats.t975 is the t of a 95% interval)


@dataclass(frozen=True)
class Fit:
    """A fitted curve. Intervals are (low, high) at 95%; peak_n/peak_x are None when κ ≈ 0."""
    sigma: float
    sigma_ci: tuple
    kappa: float
    kappa_ci: tuple
    lambda_: float
    lambda_ci: tuple
    peak_n: float | None        # N* = √((1−σ)/κ)
    peak_n_ci: tuple | None
    peak_x: float | None        # the model's throughput at N* (1/value units when lower)
    peak_x_ci: tuple | None
    shape: str                  # linear | contention-bound | coherency-bound
    method: str                 # how the intervals were made, in words
    observations: int
    counts: int                 # distinct thread counts
    measured: tuple = (1.0, 1.0)  # the smallest and largest thread count measured
    lower: bool = False         # fitted to 1/value (wall time)


@dataclass(frozen=True)
class NoFit:
    """No curve: why, and the efficiency at each measured step as (threads, efficiency)."""
    reason: str
    efficiency: tuple
    lower: bool = False


def model(n, sigma, kappa, lam):
    """The USL's throughput at n threads."""
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def peak(sigma, kappa):
    """N* = √((1−σ)/κ), or None when κ is the bound 0."""
    return math.sqrt(max(1 - sigma, 0.0) / kappa) if kappa > ZERO else None


def resamples(n):
    """How many bootstrap resamples for n observations: bounded work (n × resamples)."""
    return int(min(MAX_RESAMPLES, max(MIN_RESAMPLES, RESAMPLE_WORK // max(n, 1))))


def _groups(threads, values):
    """{thread count: array of its values}, sorted by thread count."""
    out = {}
    for n, v in zip(threads, values):
        out.setdefault(float(n), []).append(float(v))
    return {n: np.array(out[n]) for n in sorted(out)}


def _solve(ns, means, weights, start, tol=1e-14):
    """Weighted least squares of the USL on per-count means: (σ, κ, λ) in the scaled units of `means`."""
    from scipy import optimize  # imported when a curve is fitted, not at every program start
    w = np.sqrt(weights)

    def residuals(p):
        return w * (model(ns, *p) - means)

    def jacobian(p):
        s, k, lam = p
        d = 1 + s * (ns - 1) + k * ns * (ns - 1)
        x = lam * ns / d
        return w[:, None] * np.column_stack([-x * (ns - 1) / d, -x * ns * (ns - 1) / d, ns / d])

    best = None
    for p0 in start:
        r = optimize.least_squares(residuals, p0, jac=jacobian, bounds=([0, 0, 1e-12], [1, np.inf, np.inf]),
                                   x_scale="jac", ftol=tol, xtol=tol, gtol=tol, max_nfev=2000)
        if best is None or r.cost < best.cost:
            best = r
    return best.x, jacobian(best.x)


def _starts(ns, means):
    """A few starting points: the local minimum nearest one start need not be the best."""
    lam0 = max(means[0] / ns[0], 2e-12)     # inside the solver's bound λ ≥ 1e-12 (a start outside it is refused)
    return [np.array([s, k, lam0]) for s in (0.0, 0.05, 0.5) for k in (0.0, 1e-4, 1e-2)]


def efficiency(threads, values, lower=False):
    """((N, efficiency), …): (X(N)/N) / (X(N0)/N0) on the medians of the repeats, N0 the smallest thread
    count (1 where it was measured, which makes it X(N)/(N·X(1)))."""
    g = _groups(threads, [1 / v for v in values] if lower else values)
    ns = list(g)
    x = {n: float(np.median(g[n])) for n in ns}
    n0 = ns[0]
    return tuple((n, x[n] * n0 / (n * x[n0])) for n in ns)


def _check(threads, values):
    if len(threads) != len(values):
        raise ValueError(f"{len(threads)} thread counts but {len(values)} values")
    for n, v in zip(threads, values):
        if not (math.isfinite(n) and math.isfinite(v) and n > 0 and v > 0):
            raise ValueError(f"threads {n!r}, value {v!r}: both must be finite and positive")


def fit(threads, values, lower=False):
    """Fit the USL to every observation (threads[i], values[i]); Fit, or NoFit under MIN_COUNTS counts.
    Once per curve per process: a model build (report, compare, scale's words) asks again for the same
    data, and the answer (frozen, seeded) is the same."""
    return _fit(tuple(float(n) for n in threads), tuple(float(v) for v in values), bool(lower))


MAX_SPAN = 1e12        # largest ÷ smallest value: beyond it the data hold no curve a solver can fit


def unfit(threads, values):
    """Why these observations admit no fit (a zero or negative wall time, values twelve orders of
    magnitude apart), or "" when they do: a received curve gets "no fit" with the reason, never a traceback."""
    try:
        _check(threads, values)
    except ValueError as e:
        return str(e)
    lo, hi = min(values), max(values)
    if hi / lo > MAX_SPAN:
        return f"the values span {lo:.3g} to {hi:.3g}, more than {MAX_SPAN:.0e} apart: not one curve"
    return ""


@functools.lru_cache(maxsize=256)
def _fit(threads, values, lower):
    if len(threads) != len(values):
        raise ValueError(f"{len(threads)} thread counts but {len(values)} values")
    why = unfit(threads, values)
    if why:
        return NoFit(why, (), lower)
    g = _groups(threads, [1 / v for v in values] if lower else values)
    if len(g) < MIN_COUNTS:
        return NoFit(f"{len(g)} distinct thread count{'s' if len(g) != 1 else ''}, {MIN_COUNTS} needed "
                     "to fit σ, κ and λ", efficiency(threads, values, lower), lower)
    ns = np.array(list(g))
    reps = [g[n] for n in ns]
    counts = np.array([len(r) for r in reps], dtype=float)
    means = np.array([r.mean() for r in reps])
    scale = float(means.max())          # solve near 1: λ, σ and κ then have comparable step sizes
    p, jac = _solve(ns, means / scale, counts, _starts(ns, means / scale))
    nobs = int(counts.sum())
    if counts.min() >= MIN_REPEATS:
        ci, method = _bootstrap(ns, [r / scale for r in reps], counts, p)
    else:
        ci, method = _covariance(ns, [r / scale for r in reps], counts, p, jac, nobs)
    sigma, kappa, lam = _bound(p[0]), _bound(p[1]), float(p[2]) * scale
    # σ and κ cannot leave [0, 1] and [0, ∞): a symmetric interval is cut at those bounds
    s_ci = (_bound(max(ci["sigma"][0], 0.0)), min(ci["sigma"][1], 1.0))
    k_ci = (_bound(max(ci["kappa"][0], 0.0)), ci["kappa"][1])
    kappa_zero, sigma_zero = k_ci[0] <= ZERO, s_ci[0] <= ZERO
    shape = "coherency-bound" if not kappa_zero else "linear" if sigma_zero else "contention-bound"
    n_star = None if kappa_zero else peak(sigma, kappa)
    return Fit(sigma=sigma, sigma_ci=s_ci, kappa=kappa, kappa_ci=k_ci, lambda_=lam,
               lambda_ci=tuple(float(v) * scale for v in ci["lambda"]),
               peak_n=n_star, peak_n_ci=None if n_star is None else ci["peak_n"],
               peak_x=None if n_star is None else float(model(n_star, *p)) * scale,
               peak_x_ci=None if n_star is None else tuple(v * scale for v in ci["peak_x"]),
               shape=shape, method=method, observations=nobs, counts=len(ns),
               measured=(float(ns[0]), float(ns[-1])), lower=lower)


def _bound(x):
    """A coefficient, with the solver's approach to the bound 0 (1e-27, say) written as the bound itself."""
    return 0.0 if abs(x) <= ZERO else float(x)


def _peak_point(p):
    """(N*, X(N*)) of parameters p, (inf, λ/σ) when κ is 0 (the plateau is approached, never reached)."""
    n_star = peak(p[0], p[1])
    if n_star is None:
        return math.inf, (p[2] / p[0] if p[0] > ZERO else math.inf)
    return n_star, float(model(n_star, *p))


def _bootstrap(ns, reps, counts, p):
    """Percentile intervals over resamples of the repeats within each thread count."""
    rng = np.random.default_rng(SEED)
    b = resamples(int(counts.sum()))
    means = np.array([[r[rng.integers(0, len(r), len(r))].mean() for r in reps] for _i in range(b)])
    q = _solve_many(ns, means, counts, p)
    draws = np.array([(*row, *_peak_point(row)) for row in q])
    # inverted_cdf takes sample values (no interpolation), so a share of infinite peaks stays infinite
    lo, hi = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0, method="inverted_cdf")
    ci = {k: (float(lo[j]), float(hi[j])) for j, k in enumerate(("sigma", "kappa", "lambda", "peak_n", "peak_x"))}
    return ci, f"bootstrap over repeats within each thread count ({b} resamples, seed {SEED})"


def _solve_many(ns, means, weights, p0, iters=200, tol=1e-10):
    """The bootstrap's refits, every resample (a row of `means`) at once, from the full data's fit p0:
    Levenberg–Marquardt in NumPy with the bounds as an active set (a coefficient at its bound whose
    gradient points outward stays there). One SciPy call per resample cost ~2 ms of overhead, ~1 s per
    curve. A row that has not converged within `iters` steps is refitted by _solve (SciPy), so no interval
    rests on this shortcut having failed quietly."""
    lo, hi = np.array([0.0, 0.0, 1e-12]), np.array([1.0, np.inf, np.inf])
    w = np.sqrt(weights)

    def residuals(q):
        s, k, lam = q[:, :1], q[:, 1:2], q[:, 2:]
        return w * (lam * ns / (1 + s * (ns - 1) + k * ns * (ns - 1)) - means)

    def jacobian(q):
        s, k, lam = q[:, :1], q[:, 1:2], q[:, 2:]
        d = 1 + s * (ns - 1) + k * ns * (ns - 1)
        x = lam * ns / d
        return w[None, :, None] * np.stack([-x * (ns - 1) / d, -x * ns * (ns - 1) / d, ns / d], axis=2)

    q = np.tile(np.asarray(p0, dtype=float), (len(means), 1))
    r = residuals(q)
    cost = (r ** 2).sum(axis=1)
    damping = np.full(len(means), 1e-3)
    done = np.zeros(len(means), dtype=bool)
    eye = np.eye(3)
    for _ in range(iters):
        jac = jacobian(q)
        g = np.einsum("bni,bn->bi", jac, r)
        a = np.einsum("bni,bnj->bij", jac, jac)
        free = ~(((q <= lo) & (g > 0)) | ((q >= hi) & (g < 0)))
        m = a + damping[:, None, None] * eye * (np.diagonal(a, axis1=1, axis2=2)[:, :, None] + 1e-300)
        m = m * free[:, :, None] * free[:, None, :] + eye * ~free[:, :, None]
        step = np.linalg.solve(m, -(g * free)[..., None])[..., 0]
        trial = np.clip(q + step, lo, hi)
        rt = residuals(trial)
        ct = (rt ** 2).sum(axis=1)
        take = (ct <= cost) & ~done
        small = (cost - ct <= tol * cost) | (np.abs(trial - q) <= tol * (tol + np.abs(q))).all(axis=1)
        q[take], r[take], cost[take] = trial[take], rt[take], ct[take]
        done |= take & small
        damping = np.where(take, np.maximum(damping / 10, 1e-12), damping * 10)
        if (done | (damping > 1e12)).all():     # converged, or no step lowers the cost any more
            break
    for i in np.flatnonzero(~done):
        q[i], _ = _solve(ns, means[i], weights, [p0], tol=1e-8)
    return q


def _covariance(ns, reps, counts, p, jac, nobs):
    """t intervals from s²(JᵀJ)⁻¹ on n−3 degrees of freedom; the peak's by the delta method."""
    ssr = sum(float(((r - model(n, *p)) ** 2).sum()) for n, r in zip(ns, reps))
    df = nobs - 3
    if df < 1:
        nan = (math.nan, math.nan)
        return {k: nan for k in ("sigma", "kappa", "lambda", "peak_n", "peak_x")}, "none (3 observations)"
    cov = (ssr / df) * np.linalg.pinv(jac.T @ jac)
    t = t975(df)

    def interval(value, grad):
        half = t * math.sqrt(max(float(grad @ cov @ grad), 0.0))
        return (value - half, value + half)

    ci = {k: interval(float(p[j]), np.eye(3)[j]) for j, k in enumerate(("sigma", "kappa", "lambda"))}
    if peak(p[0], p[1]) is not None:
        for j, k in enumerate(("peak_n", "peak_x")):
            ci[k] = interval(_peak_point(p)[j], _gradient(lambda q, j=j: _peak_point(q)[j], p))
    plural = "s" if df > 1 else ""
    return ci, f"the fit's covariance (Student's t, {df} degree{plural} of freedom; the peak's by the delta method)"


def _gradient(f, p):
    """Central differences of f at p, each step relative to its coefficient's size."""
    grad = np.zeros(3)
    for j in range(3):
        h = 1e-6 * max(abs(p[j]), 1e-9)
        up, down = p.copy(), p.copy()
        up[j] += h
        down[j] = max(down[j] - h, 0.0)
        grad[j] = (f(up) - f(down)) / (up[j] - down[j])
    return grad


# --- words -------------------------------------------------------------------------------------------
def num(x):
    """Three significant digits; whole numbers from 1000 up; ∞ for infinity."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) <= ZERO:
        return "0"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:#.3g}".rstrip(".")


def with_ci(value, ci):
    return f"{num(value)} (95% CI {num(ci[0])}–{num(ci[1])})"


def _peak_value(f, x):
    """The peak's throughput, or its wall time for a lower-is-better metric."""
    return f"wall {num(1 / x)}" if f.lower else f"throughput {num(x)}"


def words(f):
    """One sentence for a person: the shape, its coefficients, where the curve stops growing."""
    if isinstance(f, NoFit) and not f.efficiency:
        return f"no fit: {f.reason}"
    if isinstance(f, NoFit):
        at = ", ".join(f"{n:g}" for n, _ in f.efficiency)
        return (f"no fit: {f.reason}; efficiency X(N)/(N·X(1)) at {at} threads: "
                + ", ".join(f"{e:.2f}" for _, e in f.efficiency))
    if f.shape == "linear":
        return (f"linear: σ {with_ci(f.sigma, f.sigma_ci)} and κ {with_ci(f.kappa, f.kappa_ci)} both reach 0; "
                "throughput grows with threads as far as these data can tell, no limit seen")
    if f.shape == "contention-bound":
        return (f"contention-bound: σ {with_ci(f.sigma, f.sigma_ci)}, κ ≈ 0; throughput levels off near "
                f"1/σ ≈ {num(1 / f.sigma)}× one thread (a serial part or a lock)")
    lo, hi = f.measured
    where = ("beyond" if f.peak_n > hi else "below" if f.peak_n < lo else "within") + f" the measured {lo:g}–{hi:g}"
    return (f"coherency-bound: peak at N* {with_ci(f.peak_n, f.peak_n_ci)}, {where}, "
            f"{_peak_value(f, f.peak_x)}, declining beyond it; κ {with_ci(f.kappa, f.kappa_ci)}, "
            f"σ {with_ci(f.sigma, f.sigma_ci)} (shared data bouncing between caches)")


def lines(f):
    """What `./lab usl` prints: one coefficient a line with its interval, the peak, the words, the method."""
    if isinstance(f, NoFit):
        return [words(f)]
    out = [f"sigma {with_ci(f.sigma, f.sigma_ci)}", f"kappa {with_ci(f.kappa, f.kappa_ci)}",
           f"lambda {with_ci(f.lambda_, f.lambda_ci)}"]
    if f.peak_n is None:
        out.append("peak none: κ ≈ 0, the curve has no maximum")
    else:
        out.append(f"peak N* {with_ci(f.peak_n, f.peak_n_ci)}, {_peak_value(f, f.peak_x)}"
                   + ("" if f.lower else f" (95% CI {num(f.peak_x_ci[0])}–{num(f.peak_x_ci[1])})"))
    out.append(words(f))
    out.append(f"fit: {f.observations} observations at {f.counts} thread counts"
               f"{' of 1/value' if f.lower else ''}; 95% intervals from {f.method}")
    return out
