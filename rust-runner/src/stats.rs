//! Statistics over per-sample measurements: means with error bars that account for autocorrelation,
//! and Welch's t-test for comparing two runs.

use serde::{Deserialize, Serialize};

/// Mean of a series with its standard error, corrected for autocorrelation between consecutive samples
/// (throughput samples of one run are not independent: a slow second is often followed by another).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Mean {
    pub n: usize,
    pub mean: f64,
    pub std_dev: f64,
    /// Effective number of independent samples after the autocorrelation correction.
    pub n_eff: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub std_err: f64,
}

/// JSON has no NaN: serde_json writes it as null, and this reads null back as NaN.
pub fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Mean {
    pub fn of(xs: &[f64]) -> Mean {
        let n = xs.len();
        if n == 0 {
            return Mean::default();
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Mean { n, mean, std_dev: 0.0, n_eff: 1.0, std_err: f64::NAN };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let n_eff = effective_sample_size(xs, mean);
        let std_dev = var.sqrt();
        Mean { n, mean, std_dev, n_eff, std_err: std_dev / n_eff.sqrt() }
    }

    /// Half-width of the ~95% confidence interval (t quantile for the effective sample count).
    pub fn ci95(&self) -> f64 {
        if self.n_eff <= 1.0 || !self.std_err.is_finite() {
            return f64::NAN;
        }
        t_quantile_975(self.n_eff - 1.0) * self.std_err
    }
}

/// n / (1 + 2 Σ ρ_k), summing autocorrelations while they stay positive (Geyer's initial positive
/// sequence, simplified). Never more than n, never less than 1.
fn effective_sample_size(xs: &[f64], mean: f64) -> f64 {
    let n = xs.len();
    let c0: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    if c0 == 0.0 {
        return n as f64;
    }
    let mut sum = 0.0;
    for k in 1..n / 2 {
        let ck: f64 = (0..n - k).map(|i| (xs[i] - mean) * (xs[i + k] - mean)).sum::<f64>() / n as f64;
        let rho = ck / c0;
        if rho <= 0.0 {
            break;
        }
        sum += rho;
    }
    (n as f64 / (1.0 + 2.0 * sum)).clamp(1.0, n as f64)
}

/// Result of Welch's unequal-variances t-test.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value: the chance of a difference at least this large if the means were equal.
    pub p: f64,
}

pub fn welch(a: &Mean, b: &Mean) -> Option<Welch> {
    if a.n_eff < 2.0 || b.n_eff < 2.0 {
        return None;
    }
    let (va, vb) = (a.std_err.powi(2), b.std_err.powi(2));
    let se = (va + vb).sqrt();
    if se == 0.0 || !se.is_finite() {
        return None;
    }
    let t = (a.mean - b.mean) / se;
    let df = (va + vb).powi(2) / (va.powi(2) / (a.n_eff - 1.0) + vb.powi(2) / (b.n_eff - 1.0));
    Some(Welch { t, df, p: student_t_two_sided_p(t, df) })
}

/// P(|T| > |t|) for Student's t with `df` degrees of freedom.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// 97.5% quantile of Student's t, by bisection on the CDF (good to ~1e-6, plenty for error bars).
pub fn t_quantile_975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1000.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if student_t_two_sided_p(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Regularized incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes style).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-12 {
            break;
        }
    }
    h
}

/// Lanczos approximation of ln Γ(x) for x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 6] = [
        76.18009172947146,
        -86.50532032941677,
        24.01409824083091,
        -1.231739572450155,
        0.1208650973866179e-2,
        -0.5395239384953e-5,
    ];
    let mut y = x;
    let tmp = x + 5.5;
    let tmp = tmp - (x + 0.5) * tmp.ln();
    let mut ser = 1.000000000190015;
    for g in G {
        y += 1.0;
        ser += g / y;
    }
    -tmp + (2.5066282746310005 * ser / x).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_independent_samples() {
        let xs = [10.0, 12.0, 9.0, 11.0, 10.0, 12.0, 9.0, 11.0];
        let m = Mean::of(&xs);
        assert!((m.mean - 10.5).abs() < 1e-12);
        assert_eq!(m.n, 8);
        assert!(m.n_eff <= 8.0 && m.n_eff >= 1.0);
        assert!(m.std_err > 0.0);
    }

    #[test]
    fn autocorrelated_samples_have_fewer_effective_samples() {
        // A slow drift: neighbours are alike, so the error bar must widen.
        let xs: Vec<f64> = (0..100).map(|i| (i as f64 / 10.0).sin() * 5.0 + 100.0).collect();
        let m = Mean::of(&xs);
        assert!(m.n_eff < 20.0, "n_eff = {}", m.n_eff);
        let naive = m.std_dev / (xs.len() as f64).sqrt();
        assert!(m.std_err > 2.0 * naive);
    }

    #[test]
    fn constant_series() {
        let m = Mean::of(&[5.0; 10]);
        assert_eq!(m.std_dev, 0.0);
        assert_eq!(m.std_err, 0.0);
    }

    #[test]
    fn t_distribution_values() {
        // Known: two-sided p for t = 2.228 with 10 df is 0.05.
        assert!((student_t_two_sided_p(2.228, 10.0) - 0.05).abs() < 1e-3);
        assert!((student_t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-9);
        assert!((t_quantile_975(10.0) - 2.228).abs() < 1e-3);
        assert!((t_quantile_975(1e6) - 1.96).abs() < 1e-2);
    }

    #[test]
    fn welch_detects_a_difference_and_not_noise() {
        let a = Mean::of(&[100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 101.0, 99.0]);
        let b = Mean::of(&[110.0, 111.0, 109.0, 110.5, 109.5, 110.0, 111.0, 109.0]);
        assert!(welch(&a, &b).unwrap().p < 1e-6);
        let c = Mean::of(&[100.2, 100.8, 99.1, 100.4, 99.6, 100.1, 100.9, 99.2]);
        assert!(welch(&a, &c).unwrap().p > 0.5);
    }
}
