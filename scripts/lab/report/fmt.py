"""Number formatting shared by the renderers: three significant digits and an SI prefix."""


def fmt(x):
    if x is None or x != x:          # NaN
        return "–"
    x = float(f"{x:.3g}")   # round first: 999999 is "1 M", not "1e+03 k"
    a = abs(x)
    for above, scale, prefix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if a >= above:
            return f"{x / scale:.3g} {prefix}"
    return f"{x:.0f}" if a >= 1000 else f"{x:.3g}"   # .3g would print 9.33e+03


def spread(s):
    """Relative spread, or why there is none (one sample, or a zero median)."""
    if s.n < 2:
        return "one sample"
    return "–" if s.spread_pct != s.spread_pct else f"{s.spread_pct:.1f}%"


def ci(s):
    """The median's 95% CI as ±% of it, or why there is none."""
    if s.n < 3:
        return f"n={s.n}: none"
    return "–" if s.ci_pct != s.ci_pct else f"±{s.ci_pct:.1f}%"
