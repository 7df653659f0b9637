"""The USL fit (scripts/lab/why/usl.py) and `./lab usl`: published data sets give their published coefficients,
the shape words follow the intervals, no fit under 4 thread counts, and the program's format and refusals.

Sources of the published numbers: tests/fixtures/usl/README.md."""
import csv
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from lab.why import usl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "usl")
PROG = ("-m", "lab.cli.usl")


def load(name):
    with open(os.path.join(FIX, name)) as f:
        rows = list(csv.DictReader(f))
    return [float(r["threads"]) for r in rows], [float(r["throughput"]) for r in rows]


def run(*args):
    return subprocess.run([sys.executable, *PROG, *args], capture_output=True, text=True, timeout=120)


def repeated(ns, sigma, kappa, lam=1000.0, repeats=5, noise=0.02, seed=7):
    """Observations of a known USL curve with multiplicative noise: every thread count `repeats` times."""
    rng = np.random.default_rng(seed)
    th, x = [], []
    for n in ns:
        for _ in range(repeats):
            th.append(n)
            x.append(float(usl.model(n, sigma, kappa, lam)) * (1 + noise * rng.standard_normal()))
    return th, x


def test_specsdm91_gives_the_r_packages_coefficients_standard_errors_and_peak():
    f = usl.fit(*load("specsdm91.csv"))
    assert f.shape == "coherency-bound"
    # summary.Rout.save: alpha 2.773e-02, beta 1.044e-04, gamma 9.000e+01 (4 significant digits)
    assert f"{f.sigma:.3e}" == "2.773e-02" and f"{f.kappa:.3e}" == "1.044e-04" and f"{f.lambda_:.3e}" == "9.000e+01"
    # peak-scalability.Rout.save: signif(peak, 2) = 97; the README's "throughput 1884 at load 96.52"
    assert round(f.peak_n, 2) == 96.52 and round(f.peak_x) == 1884
    assert float(f"{f.peak_n:.2g}") == 97
    assert f.lambda_ / f.sigma == pytest.approx(3245.589, rel=1e-4)     # limit-scalability.Rout.save
    # No repeats: intervals from the covariance, whose standard errors are R's (9.122e-03, 1.988e-05, 1.421e+01)
    assert "covariance" in f.method and "4 degrees of freedom" in f.method
    t = 2.7764451051977987                      # Student's t, 97.5%, 4 degrees of freedom
    for value, ci, se in ((f.sigma, f.sigma_ci, 9.122e-03), (f.kappa, f.kappa_ci, 1.988e-05),
                          (f.lambda_, f.lambda_ci, 1.421e+01)):
        assert (ci[1] - ci[0]) / 2 / t == pytest.approx(se, rel=1e-3)
        assert ci[0] < value < ci[1]
    assert f.peak_n_ci[0] < f.peak_n < f.peak_n_ci[1] and f.peak_x_ci[0] < f.peak_x < f.peak_x_ci[1]


def test_raytracer_gives_the_published_contention_bound_fit():
    f = usl.fit(*load("raytracer.csv"))
    # confint.Rout.save: coef alpha 0.0578, beta 0.0000, gamma 21.8488
    assert round(f.sigma, 4) == 0.0578 and round(f.kappa, 4) == 0.0 and round(f.lambda_, 4) == 21.8488
    assert f.shape == "contention-bound" and f.peak_n is None and f.peak_x is None
    assert f.kappa_ci[0] == 0.0 and f.sigma_ci[0] > 0
    said = usl.words(f)
    assert said.startswith("contention-bound: σ 0.0578 (95% CI ") and "1/σ ≈ 17.3× one thread" in said


def test_the_r_packages_own_coefficient_test():
    f = usl.fit(*load("coef-test.csv"))
    # coef.Rout.save: signif(alpha, 3) = 0.02, signif(beta, 3) = 0.02, gamma 1.00; so N* = sqrt(0.98/0.02) = 7
    assert float(f"{f.sigma:.3g}") == 0.02 and float(f"{f.kappa:.3g}") == 0.02 and float(f"{f.lambda_:.3g}") == 1.0
    assert f.peak_n == pytest.approx(7.0, abs=0.005) and f.shape == "coherency-bound"


def test_repeats_give_bootstrap_intervals_that_hold_the_true_curve_and_the_right_shapes():
    ns = [1, 2, 4, 8, 16, 32]
    coh = usl.fit(*repeated(ns, 0.02, 0.002))
    assert coh.shape == "coherency-bound" and "bootstrap" in coh.method and "seed 43" in coh.method
    assert coh.observations == 30 and coh.counts == 6
    true_peak = math.sqrt(0.98 / 0.002)
    assert coh.kappa_ci[0] < 0.002 < coh.kappa_ci[1] and coh.peak_n_ci[0] < true_peak < coh.peak_n_ci[1]
    assert coh.sigma_ci[0] < 0.02 < coh.sigma_ci[1]
    assert usl.fit(*repeated(ns, 0.02, 0.002)) == coh          # seeded: the same data, the same intervals
    cont = usl.fit(*repeated(ns, 0.05, 0.0))
    assert cont.shape == "contention-bound" and cont.sigma_ci[0] > 0 and cont.kappa_ci[0] == 0
    assert cont.sigma_ci[0] < 0.05 < cont.sigma_ci[1] and cont.peak_n is None


def test_a_linear_curve_is_called_linear():
    f = usl.fit(*repeated([1, 2, 4, 8, 16], 0.0, 0.0, noise=0.01))
    assert f.shape == "linear" and f.peak_n is None
    assert f.sigma_ci[0] == 0 and f.kappa_ci[0] == 0
    assert usl.words(f).startswith("linear: σ ")
    assert f.lambda_ == pytest.approx(1000, rel=0.02)


def test_a_lower_is_better_metric_is_fitted_as_its_reciprocal():
    th, x = repeated([1, 2, 4, 8, 16, 32], 0.02, 0.002)
    up = usl.fit(th, x)
    down = usl.fit(th, [1 / v for v in x], lower=True)
    assert down.lower and down.sigma == pytest.approx(up.sigma) and down.kappa == pytest.approx(up.kappa)
    assert "wall " in usl.words(down) and "throughput" not in usl.words(down)


def test_under_four_thread_counts_there_is_no_fit_but_the_efficiency_of_each_step():
    f = usl.fit([1, 1, 2, 2, 4, 4], [10, 10.4, 19, 19, 30, 31])
    assert isinstance(f, usl.NoFit) and "3 distinct thread counts, 4 needed" in f.reason
    eff = dict(f.efficiency)
    # medians: X(1) = 10.2, X(2) = 19, X(4) = 30.5 → 1, 19/20.4, 30.5/40.8
    assert eff[1.0] == 1.0 and eff[2.0] == pytest.approx(19 / 20.4) and eff[4.0] == pytest.approx(30.5 / 40.8)
    assert usl.lines(f) == [usl.words(f)] and usl.words(f).startswith("no fit: 3 distinct")
    assert "at 1, 2, 4 threads: 1.00, 0.93, 0.75" in usl.words(f)
    # without a 1-thread point the smallest thread count is the reference
    assert dict(usl.fit([2, 4], [20, 36]).efficiency)[4.0] == pytest.approx(0.9)


def test_the_program_prints_one_coefficient_a_line_then_the_words():
    p = run(os.path.join(FIX, "specsdm91.csv"))
    assert p.returncode == 0 and p.stderr == ""
    out = p.stdout.splitlines()
    assert out[0] == "sigma 0.0277 (95% CI 0.00240–0.0531)"
    assert out[1] == "kappa 0.000104 (95% CI 4.92e-05–0.000160)"
    assert out[2] == "lambda 90.0 (95% CI 50.5–129)"
    assert out[3] == "peak N* 96.5 (95% CI 71.6–121), throughput 1884 (95% CI 1741–2027)"
    assert out[4].startswith("coherency-bound: peak at N* 96.5 (95% CI 71.6–121), within the measured 1–216, "
                             "throughput 1884, declining beyond it; κ 0.000104")
    assert out[5].startswith("fit: 7 observations at 7 thread counts; 95% intervals from the fit's covariance")
    p = run(os.path.join(FIX, "raytracer.csv"))
    assert p.stdout.splitlines()[3] == "peak none: κ ≈ 0, the curve has no maximum"


def test_the_program_reads_repeats_either_column_order_and_lower_is_better(tmp_path):
    th, x = repeated([1, 2, 4, 8], 0.1, 0.0, repeats=3)
    f = tmp_path / "wall.csv"
    f.write_text("wall_s,threads\n" + "".join(f"{1 / v},{n:g}\n" for n, v in zip(th, x)))
    p = run(str(f), "metric=lower")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1].startswith("fit: 12 observations at 4 thread counts of 1/value")
    few = tmp_path / "few.csv"
    few.write_text("threads,throughput\n1,10\n2,19\n")
    p = run(str(few))
    assert p.returncode == 0 and p.stdout.startswith("no fit: 2 distinct thread counts")


@pytest.mark.parametrize("body, line, why", [
    ("threads,throughput\n1,10\n2,x\n", 3, "throughput 'x' is not a number"),
    ("threads,throughput\n1,10\n2,-3\n", 3, "throughput -3 is not positive"),
    ("threads,throughput\n1,10\n\n0,3\n", 4, "threads 0 is not positive"),
    ("threads,throughput\n1,inf\n", 2, "throughput inf is not finite"),
    ("threads,throughput\n1,1e300\n", 2, "throughput 1e300 is beyond"),
    ("threads,throughput\n1,10,2\n", 2, "3 cells, 2 expected"),
    ("thread,throughput\n1,10\n", 1, "the header must name two columns"),
    ("threads,threads\n1,10\n", 1, "the header must name two columns"),
    ("1,10\n2,20\n", 1, "the header must name two columns"),
    ("threads,throughput\n", 1, "no rows after the header"),
    ("", 1, "empty"),
    ("threads,throughput\n1," + "9" * 2000 + "\n", 2, "line longer than 1024 bytes"),
])
def test_bad_input_is_one_line_naming_file_and_line_and_exit_2(tmp_path, capsys, body, line, why):
    # the program's main in this process (test_bad_bytes_usage_and_missing_files_exit_2 runs it end to end)
    from lab.cli import usl as program  # scripts/lab/cli/usl.py
    f = tmp_path / "bad.csv"
    f.write_text(body)
    assert program.main([str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and f"{f}:{line}: " in err and why in err, err


def test_bad_bytes_usage_and_missing_files_exit_2(tmp_path):
    f = tmp_path / "bytes.csv"
    f.write_bytes(b"threads,throughput\n1,10\n2,\xff\n")
    p = run(str(f))
    assert p.returncode == 2 and f"{f}:3: not UTF-8 text" in p.stderr
    p = run(str(tmp_path / "none.csv"))
    assert p.returncode == 2 and "cannot read" in p.stderr
    assert run(os.path.join(FIX, "raytracer.csv"), "metric=up").returncode == 2
    assert run().returncode == 2 and run("a.csv", "b.csv").returncode == 2


def test_the_row_bound_is_enforced(tmp_path, monkeypatch):
    from lab.cli import usl as program  # scripts/lab/cli/usl.py, the program's reader
    monkeypatch.setattr(program, "MAX_ROWS", 3)
    f = tmp_path / "many.csv"
    f.write_text("threads,throughput\n1,1\n2,2\n3,3\n4,4\n")
    with pytest.raises(program.InputError, match=rf"{f}:5: more than 3 rows"):
        program.read(str(f))


def test_bootstrap_work_is_bounded():
    assert usl.resamples(30) == usl.MAX_RESAMPLES == 500
    assert usl.resamples(1_000_000) == usl.MIN_RESAMPLES
    assert usl.resamples(40_000) == 250


def test_the_bootstraps_batched_refits_reach_scipys_least_squares():
    # the bootstrap refits every resample at once (usl._solve_many); each must be as good a fit as
    # SciPy's least_squares from the same start, on a peaked, a plateau and a noisy curve
    for args in (repeated([1, 2, 4, 8, 16, 32], 0.02, 0.002), repeated([1, 2, 4, 8], 0.05, 0.0),
                 repeated([1, 2, 4, 8], 0.3, 0.05, repeats=3, noise=0.1)):
        g = usl._groups(*args)
        ns = np.array(list(g))
        reps = [g[n] / 1000 for n in ns]
        counts = np.array([len(r) for r in reps], dtype=float)
        p, _ = usl._solve(ns, np.array([r.mean() for r in reps]), counts, [np.array([0.0, 0.0, 1.0])])
        rng = np.random.default_rng(1)
        means = np.array([[r[rng.integers(0, len(r), len(r))].mean() for r in reps] for _ in range(40)])
        batched = usl._solve_many(ns, means, counts, p)
        for q, m in zip(batched, means):
            ref, _ = usl._solve(ns, m, counts, [p], tol=1e-12)
            cost = [float((counts * (usl.model(ns, *x) - m) ** 2).sum()) for x in (q, ref)]
            assert cost[0] <= cost[1] * (1 + 1e-9) + 1e-15
            assert 0 <= q[0] <= 1 and q[1] >= 0 and q[2] > 0
