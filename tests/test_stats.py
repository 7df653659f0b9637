"""The statistics behind every report: percentiles and Welch's t-test against known values."""
import math
import os

import pytest

from lab.core.stats import median, percentile, summary, welch
from lab.core.tidy import fill


def test_percentiles_interpolate_between_ranks():
    xs = [15, 20, 35, 40, 50]
    assert median(xs) == 35
    assert percentile(xs, 0) == 15 and percentile(xs, 100) == 50
    assert percentile(xs, 40) == pytest.approx(29.0)
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summary_spread():
    s = summary([90, 100, 110])
    assert (s.median, s.min, s.max, s.n) == (100, 90, 110, 3)
    assert s.spread_pct == pytest.approx(20.0)


def test_welch_matches_textbook_values():
    # Equal variances, n = 5 each: t = -5, df = 8, two-sided p = 0.001052.
    t, df, p = welch([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert t == pytest.approx(-5.0) and df == pytest.approx(8.0)
    assert p == pytest.approx(0.0010528, rel=1e-3)
    # Unequal variances: t and the Welch–Satterthwaite df by hand.
    t, df, p = welch([1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0])
    se2 = 1.0 / 3 + (20.0 / 3) / 4
    assert t == pytest.approx((2 - 5) / math.sqrt(se2))
    assert df == pytest.approx(se2 ** 2 / ((1.0 / 3) ** 2 / 2 + ((20.0 / 3) / 4) ** 2 / 3))


@pytest.mark.parametrize("t", [0.3, 1.0, 2.5, 7.0])
def test_t_distribution_tails_match_closed_forms(t):
    from lab.core.stats import betainc
    # Two-sided p of Student's t: df = 1 (Cauchy) and df = 2 have closed forms.
    assert betainc(0.5, 0.5, 1 / (1 + t * t)) == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-9)
    assert betainc(1.0, 0.5, 2 / (2 + t * t)) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9)


def test_welch_edge_cases():
    assert math.isnan(welch([1], [2, 3])[2])


def test_tidy_fill_keeps_instrument_columns_and_rejects_bad_values():
    point = {"experiment": "e", "variant": "v", "cpus": "0,1"}
    out = fill(point, 'cpus,metric,value,unit\n"2,3",one_way_ns,41.5,ns\n')
    assert out[0]["cpus"] == "2,3" and out[0]["variant"] == "v" and out[0]["value"] == "41.5"
    for bad, why in [("metric,value,unit\nx,nan,s\n", "not finite"), ("metric,unit\nx,s\n", "lacks"),
                     ("metric,value,unit,color\nx,1,s,red\n", "outside the schema"), ("", "no CSV")]:
        with pytest.raises(ValueError, match=why):
            fill(point, bad)


def test_median_interval_is_distribution_free_from_six_values():
    from lab.core.stats import ci_method, median_ci, order_statistic_rank
    # P(Bin(n, 1/2) <= k-1) on each side: n=5 cannot reach 95% with the extremes (1 - 2/32 = 93.75%)
    assert order_statistic_rank(5) == (0, 0.0)
    assert order_statistic_rank(6) == (1, 1 - 2 / 64)
    assert order_statistic_rank(9) == (2, 1 - 2 * 10 / 512)
    xs = [5, 1, 9, 3, 7, 2, 8, 4, 6]
    assert median_ci(xs) == (2, 8)             # the 2nd lowest and 2nd highest of nine
    assert ci_method(9).startswith("order statistics (sorted values 2 and 8 of 9, coverage 96.1%")
    assert ci_method(4) == "normal approximation" and ci_method(2).startswith("none")


def test_median_rank_of_a_fleets_pairs_is_quick_and_agrees_with_the_exact_sum():
    """A 2x EPYC c2c matrix pools ~523,776 pair values: the rank comes from SciPy's binomial there (the
    exact sum is quadratic in n, minutes per call: issue 44, finding 16); both rules agree where they meet."""
    from lab.core import stats
    for n in (stats.EXACT_UP_TO + 1, 2501, 4000):
        exact = stats.order_statistic_rank.__wrapped__
        k, cov = stats._rank_from_quantile(n, 0.95)
        stats.EXACT_UP_TO, saved = 10 ** 9, stats.EXACT_UP_TO
        try:
            k_exact, cov_exact = exact(n)
        finally:
            stats.EXACT_UP_TO = saved
        assert k == k_exact and cov == pytest.approx(cov_exact, abs=1e-9)
    n = 1024 * 1023 // 2
    k, cov = stats.order_statistic_rank(n)
    assert 0.95 <= cov < 0.951 and stats._rank_from_quantile(n, 0.95) == (k, cov)
    # the sign test's normal limit: k is about n/2 - 1.96·sqrt(n)/2
    assert abs(k - (n / 2 - 1.959964 * math.sqrt(n) / 2)) < 3


def test_student_t_and_welch_come_from_scipy_with_the_tables_values():
    from lab.core.stats import t975
    # printed tables of Student's t, 97.5%: df 1, 2, 4, 10, 30; the normal's 1.960 far out
    for df, table in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (10 ** 6, 1.960)):
        assert round(t975(df), 3) == table


# What the hand-written t table and incomplete beta (scripts/lab/core/stats.py at b44201c, before SciPy) returned for
# these samples, printed by that code: SciPy gives the same (the t table had 3 decimals, hence 1e-4).
OLD_WELCH = [(([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]), (-5.0, 8.0, 0.0010528257933665386)),
             (([1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0]), (-2.1213203435596424, 4.075471698113207, 0.09991286431179147)),
             (([10.1, 10.3, 9.8, 10.0], [10.6, 10.9, 10.4]),
              (-3.2637668288410913, 3.8954344624447703, 0.03219266042595398)),
             (([5.0, 5.1, 4.9, 5.2, 5.0, 5.1], [5.0, 5.2, 5.1, 4.8, 5.0, 5.3]),
              (-0.19999999999999934, 8.178059248403637, 0.8463645410039327))]
OLD_MEDIAN_CI = [([10, 12, 11], (7.886343801635775, 14.113656198364225)),
                 ([100, 104, 98, 101], (95.5149430188276, 105.4850569811724)),
                 ([1.0, 1.5, 1.2, 1.1, 1.3], (0.9007078954218489, 1.499292104578151))]


def test_results_are_those_of_the_hand_written_code_before_scipy():
    from scipy import stats as sp

    from lab.core.stats import median_ci
    for (xs, ys), old in OLD_WELCH:
        assert welch(xs, ys) == pytest.approx(old, rel=1e-9)
        assert welch(xs, ys)[2] == pytest.approx(sp.ttest_ind(xs, ys, equal_var=False).pvalue, rel=1e-12)
    for xs, old in OLD_MEDIAN_CI:
        assert median_ci(xs) == pytest.approx(old, rel=1e-4)


def test_the_fleet_history_reader_needs_no_scipy(tmp_path):
    """history.pyz runs stats.py with a host's own python3, which may lack SciPy: SciPy is imported
    only by the functions that need it, so median() works without it."""
    import subprocess
    import sys
    scripts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
    (tmp_path / "scipy.py").write_text("raise ImportError('no SciPy on this host')\n")
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; from lab.core import stats; "
            "print(stats.median([3, 1, 2]), stats.percentile([1, 2, 3, 4], 25))")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path), scripts], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.split() == ["2.0", "1.75"], p.stderr
