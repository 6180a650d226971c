//! The tests `dst compare` makes, in plain `f64` from std (report-side code: no seeded
//! path reads any of this):
//!
//! - [`two_proportions`]: the two-sided two-proportion z-test with pooled variance, or
//!   Fisher's exact test ([`fisher_exact`], from log-factorials) when any expected
//!   count of the 2×2 table is below 5, where the normal approximation is poor.
//! - [`mcnemar_exact`]: McNemar's test for paired outcomes (the same seeds run before
//!   and after), exact (a binomial test on the discordant seeds).
//! - [`kolmogorov_smirnov`]: the two-sample Kolmogorov–Smirnov test over two bucketed
//!   distributions, with the asymptotic p-value [`kolmogorov_q`].
//!
//! The normal tail comes from [`erfc`]: the Chebyshev fit of Numerical Recipes
//! (Press et al., *Numerical Recipes in C*, 2nd ed., §6.2, `erfcc`), whose *fractional*
//! error is below 1.2 × 10⁻⁷ everywhere, so small p-values are as accurate as large ones
//! (Abramowitz–Stegun 7.1.26 bounds the absolute error only, 1.5 × 10⁻⁷, which is
//! useless far in the tail).
//!
//! `exp` and `ln` are std's, whose last bits the std docs call platform-dependent: the
//! house rule (clippy.toml) keeps them out of seeded paths, and this is not one. A
//! p-value's last bits may differ between machines; no run, seed or trace depends on it.
#![allow(
    clippy::disallowed_methods,
    reason = "report-side statistics, never in a simulation: exp and ln's last bits do not matter"
)]

use serde::{Deserialize, Serialize};

use crate::distribution::Distribution;

/// Which test gave a p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestUsed {
    /// McNemar's exact test on the seeds that failed in one report only.
    #[serde(rename = "mcnemar")]
    McNemar,
    /// Fisher's exact test on the 2×2 table of passes and failures.
    Fisher,
    /// The two-proportion z-test with pooled variance.
    ZTest,
    /// The two-sample Kolmogorov–Smirnov test over the bucketed distributions.
    KolmogorovSmirnov,
}

impl TestUsed {
    /// A short name for tables.
    pub const fn short_name(self) -> &'static str {
        match self {
            Self::McNemar => "mcnemar",
            Self::Fisher => "fisher",
            Self::ZTest => "z-test",
            Self::KolmogorovSmirnov => "ks",
        }
    }
}

/// An expected count below this makes the z-test's normal approximation poor: Fisher's
/// exact test is used instead.
pub const EXPECTED_COUNT_MIN: f64 = 5.0;

/// Below this `n`, `ln n!` is summed exactly; above, Stirling's series (error below
/// 10⁻¹⁵ relative there).
const LN_FACTORIAL_SUMMED_BELOW: u64 = 256;

/// Terms of the Kolmogorov series summed at most (it converges in a handful for any
/// λ where it is used).
const KOLMOGOROV_TERMS_MAX: u32 = 100;

/// Below this λ the Kolmogorov series converges too slowly to sum, and Q(λ) is 1 to
/// within 10⁻⁸ anyway.
const KOLMOGOROV_LAMBDA_MIN: f64 = 0.2;

/// The complementary error function, erfc(x) = 1 − erf(x), with fractional error below
/// 1.2 × 10⁻⁷ for every x (Numerical Recipes' `erfcc`, a Chebyshev fit).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let answer = t * poly.exp();
    if x >= 0.0 { answer } else { 2.0 - answer }
}

/// The standard normal CDF Φ(z).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The two-sided p-value of a standard normal statistic `z`: P(|Z| ≥ |z|).
pub fn two_sided_normal_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// ln(n!), summed exactly for small `n`, by Stirling's series above.
pub fn ln_factorial(n: u64) -> f64 {
    if n < LN_FACTORIAL_SUMMED_BELOW {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    let x3 = x * x * x;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x3)
        + 1.0 / (1260.0 * x3 * x * x)
}

/// ln C(n, k).
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// The two-sided two-proportion z-test with pooled variance: `successes_a` of
/// `trials_a` against `successes_b` of `trials_b`. Returns (z, p); z is positive when
/// b's proportion is the higher. Equal proportions with no variance (all pass or all
/// fail on both sides) give (0, 1).
pub fn z_test(successes_a: u64, trials_a: u64, successes_b: u64, trials_b: u64) -> (f64, f64) {
    if trials_a == 0 || trials_b == 0 {
        return (0.0, 1.0);
    }
    let (n_a, n_b) = (trials_a as f64, trials_b as f64);
    let (p_a, p_b) = (successes_a as f64 / n_a, successes_b as f64 / n_b);
    let pooled = (successes_a + successes_b) as f64 / (n_a + n_b);
    let standard_error = (pooled * (1.0 - pooled) * (1.0 / n_a + 1.0 / n_b)).sqrt();
    if standard_error <= 0.0 {
        return (0.0, 1.0);
    }
    let z = (p_b - p_a) / standard_error;
    (z, two_sided_normal_p(z))
}

/// The smallest expected count of the 2×2 table (rows: a and b; columns: successes
/// and failures) under the null hypothesis of equal proportions.
pub fn smallest_expected_count(
    successes_a: u64,
    trials_a: u64,
    successes_b: u64,
    trials_b: u64,
) -> f64 {
    let total = (trials_a + trials_b) as f64;
    if total == 0.0 {
        return 0.0;
    }
    let successes = (successes_a + successes_b) as f64;
    let failures = total - successes;
    let smaller_row = trials_a.min(trials_b) as f64;
    smaller_row * successes.min(failures) / total
}

/// Fisher's exact test, two-sided: the probability, under fixed margins, of every table
/// at most as likely as the one observed (`successes_a` of `trials_a` against
/// `successes_b` of `trials_b`). Hypergeometric probabilities from log-factorials.
pub fn fisher_exact(successes_a: u64, trials_a: u64, successes_b: u64, trials_b: u64) -> f64 {
    let total = trials_a + trials_b;
    let successes = successes_a + successes_b;
    if total == 0 {
        return 1.0;
    }
    let ln_denominator = ln_choose(total, trials_a);
    let ln_probability = |x: u64| {
        ln_choose(successes, x) + ln_choose(total - successes, trials_a - x) - ln_denominator
    };
    let observed = ln_probability(successes_a);
    // Tables as likely as the observed one up to rounding count as "at most as likely".
    let tolerance = 1e-7;
    let low = (trials_a + successes).saturating_sub(total);
    let high = trials_a.min(successes);
    let p: f64 = (low..=high)
        .map(ln_probability)
        .filter(|ln_p| *ln_p <= observed + tolerance)
        .map(f64::exp)
        .sum();
    p.min(1.0)
}

/// The two-proportion comparison `dst compare` makes without paired outcomes: the
/// z-test, or Fisher's exact test when any expected count is below
/// [`EXPECTED_COUNT_MIN`]. Returns (p, the test used).
pub fn two_proportions(
    successes_a: u64,
    trials_a: u64,
    successes_b: u64,
    trials_b: u64,
) -> (f64, TestUsed) {
    if smallest_expected_count(successes_a, trials_a, successes_b, trials_b) < EXPECTED_COUNT_MIN {
        let p = fisher_exact(successes_a, trials_a, successes_b, trials_b);
        return (p, TestUsed::Fisher);
    }
    (
        z_test(successes_a, trials_a, successes_b, trials_b).1,
        TestUsed::ZTest,
    )
}

/// McNemar's exact test, two-sided: of the seeds whose outcome differs between the two
/// runs, `only_a` failed only in a and `only_b` only in b; under the null each is a fair
/// coin, so p = min(1, 2 P(Binomial(n, ½) ≤ min(only_a, only_b))).
pub fn mcnemar_exact(only_a: u64, only_b: u64) -> f64 {
    let discordant = only_a + only_b;
    if discordant == 0 {
        return 1.0;
    }
    let ln_half_n = discordant as f64 * std::f64::consts::LN_2;
    let tail: f64 = (0..=only_a.min(only_b))
        .map(|i| (ln_choose(discordant, i) - ln_half_n).exp())
        .sum();
    (2.0 * tail).min(1.0)
}

/// The Kolmogorov distribution's tail, Q(λ) = 2 Σ_{j≥1} (−1)^{j−1} e^{−2j²λ²}: the
/// asymptotic probability that the KS statistic scaled by √n exceeds λ.
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < KOLMOGOROV_LAMBDA_MIN {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=KOLMOGOROV_TERMS_MAX {
        let j = f64::from(j);
        let term = sign * 2.0 * (-2.0 * j * j * lambda * lambda).exp();
        sum += term;
        if term.abs() <= 1e-12 * sum.abs() || term.abs() < 1e-300 {
            break;
        }
        sign = -sign;
    }
    sum.clamp(0.0, 1.0)
}

/// The outcome of a two-sample Kolmogorov–Smirnov test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KsOutcome {
    /// D: the largest distance between the two empirical CDFs, over the bucket
    /// boundaries (a lower bound of the unbucketed D).
    pub d: f64,
    /// The asymptotic p-value Q(λ), λ = (√nₑ + 0.12 + 0.11/√nₑ) D, nₑ = n₁n₂/(n₁+n₂).
    pub p_value: f64,
}

/// The two-sample KS test over two bucketed distributions: D is the largest
/// |F₁ − F₂| at the upper end of any bucket either holds. Values inside a bucket cannot
/// be told apart, so D is a lower bound of the exact statistic and the p-value is
/// conservative (a real difference may be missed; none is invented). `None` when
/// either is empty.
pub fn kolmogorov_smirnov(a: &Distribution, b: &Distribution) -> Option<KsOutcome> {
    let (n_a, n_b) = (
        a.buckets.values().sum::<u64>(),
        b.buckets.values().sum::<u64>(),
    );
    if n_a == 0 || n_b == 0 {
        return None;
    }
    let boundaries: std::collections::BTreeSet<u64> =
        a.buckets.keys().chain(b.buckets.keys()).copied().collect();
    let (mut seen_a, mut seen_b, mut d) = (0u64, 0u64, 0.0f64);
    for boundary in boundaries {
        seen_a += a.buckets.get(&boundary).copied().unwrap_or(0);
        seen_b += b.buckets.get(&boundary).copied().unwrap_or(0);
        let gap = (seen_a as f64 / n_a as f64 - seen_b as f64 / n_b as f64).abs();
        d = d.max(gap);
    }
    let effective_n = (n_a as f64 * n_b as f64) / (n_a + n_b) as f64;
    let root = effective_n.sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * d;
    Some(KsOutcome {
        d,
        p_value: if d == 0.0 { 1.0 } else { kolmogorov_q(lambda) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, relative: f64) -> bool {
        (actual - expected).abs() <= relative * expected.abs().max(1e-300)
    }

    #[test]
    fn erfc_and_the_normal_cdf_against_known_values() {
        // (x, erfc(x)) from the exact function.
        for (x, expected) in [
            (0.0, 1.0),
            (0.1, 0.887_537_083_981_715_2),
            (1.0, 0.157_299_207_050_285_13),
            (3.0, 2.209_049_699_858_544e-5),
            (-1.0, 1.842_700_792_949_715),
        ] {
            assert!(close(erfc(x), expected, 1.2e-7), "erfc({x}) = {}", erfc(x));
        }
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-7));
        assert!(close(normal_cdf(0.0), 0.5, 1e-7));
    }

    #[test]
    fn the_z_test_of_90_of_100_against_70_of_100() {
        let (z, p) = z_test(90, 100, 70, 100);
        assert!(close(z, -3.535_533_905_932_738, 1e-9), "{z}");
        // erfc(3.5355/√2) = 0.00040695.
        assert!(close(p, 0.000_406_952_017_444_958_9, 1e-6), "{p}");
        assert_eq!(z_test(10, 10, 10, 10), (0.0, 1.0));
        assert_eq!(two_proportions(90, 100, 70, 100).1, TestUsed::ZTest);
    }

    #[test]
    fn fisher_exact_against_known_tables() {
        // The classic [[1, 9], [11, 3]] (rows: groups; columns: success, failure).
        assert!(close(
            fisher_exact(1, 10, 11, 14),
            0.002_759_456_185_220_083,
            1e-9
        ));
        // The lady tasting tea, [[3, 1], [1, 3]].
        assert!(close(
            fisher_exact(3, 4, 1, 4),
            0.485_714_285_714_285_7,
            1e-9
        ));
        assert!(close(
            fisher_exact(10, 10, 5, 10),
            0.032_507_739_938_080_496,
            1e-9
        ));
        assert!(close(fisher_exact(5, 5, 5, 5), 1.0, 1e-12));
        assert_eq!(two_proportions(10, 10, 5, 10).1, TestUsed::Fisher);
    }

    #[test]
    fn ln_factorial_is_continuous_where_stirling_takes_over() {
        let summed: f64 = (2..=300u64).map(|i| (i as f64).ln()).sum();
        assert!(close(ln_factorial(300), summed, 1e-13));
        assert!(close(
            ln_factorial(255) + 256f64.ln(),
            ln_factorial(256),
            1e-13
        ));
        assert_eq!(ln_factorial(0), 0.0);
    }

    #[test]
    fn mcnemar_exact_against_the_binomial() {
        assert!(close(mcnemar_exact(10, 2), 0.038_574_218_75, 1e-9));
        assert!(close(mcnemar_exact(0, 8), 0.007_812_5, 1e-9));
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
    }

    #[test]
    fn the_kolmogorov_tail_against_known_values() {
        assert!(close(kolmogorov_q(1.0), 0.269_999_671_677_354_56, 1e-9));
        assert!(close(kolmogorov_q(1.36), 0.049_485_876_755_377_876, 1e-9));
        assert!(close(kolmogorov_q(0.5), 0.963_945_243_664_875_1, 1e-9));
        assert_eq!(kolmogorov_q(0.01), 1.0);
    }

    fn distribution(values: impl Iterator<Item = u64>) -> Distribution {
        let mut d = Distribution::default();
        for value in values {
            d.record(value);
        }
        d
    }

    #[test]
    fn ks_of_identical_shifted_and_empty_distributions() {
        let a = distribution(0..1_000);
        let same = kolmogorov_smirnov(&a, &a.clone()).unwrap();
        assert_eq!((same.d, same.p_value), (0.0, 1.0));
        let shifted = kolmogorov_smirnov(&a, &distribution(300..1_300)).unwrap();
        assert!((shifted.d - 0.3).abs() < 0.02, "{shifted:?}");
        assert!(shifted.p_value < 1e-30, "{shifted:?}");
        let slightly = kolmogorov_smirnov(&a, &distribution(5..1_005)).unwrap();
        assert!(slightly.p_value > 0.5, "{slightly:?}");
        assert_eq!(kolmogorov_smirnov(&a, &Distribution::default()), None);
    }
}
