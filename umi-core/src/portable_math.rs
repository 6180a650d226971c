//! Float functions with the same bits on every platform, for seeded paths.
//!
//! The standard library documents `ln`, `exp`, `powf`, `powi` and the other transcendental
//! functions as platform-dependent: they call the platform's libm (or an LLVM intrinsic),
//! whose last bits differ between x86 and ARM, glibc and musl, even Rust releases. A
//! seeded decision that uses one (a BM25 score that orders search results, a swarm
//! probability compared with a draw) can replay differently on another machine.
//!
//! The functions here use only IEEE 754 basic operations (`+`, `-`, `*`, `/`, `sqrt`),
//! which IEEE 754 and Rust's documentation require to be correctly rounded, plus exact
//! bit manipulation. Rust never contracts `a * b + c` into a fused multiply-add on its
//! own, so every platform computes every intermediate result bit for bit the same; the
//! tests pin exact bit patterns, so a difference anywhere fails them.

/// Terms of the `atanh` series `ln` sums: with the mantissa reduced to
/// `[sqrt(1/2), sqrt(2)]`, `s² <= 0.0295`, and the 12th term is below 2^-60 of the first.
const LN_SERIES_TERMS: u32 = 12;

/// Fraction bits `pow_fraction` resolves: every `unit_f64` draw is a multiple of 2^-53.
const POW_FRACTION_BITS: u32 = 53;

/// Binary exponent bias and mantissa width of an `f64`.
const F64_EXPONENT_BIAS: i64 = 1023;
const F64_MANTISSA_BITS: u32 = 52;

/// The natural logarithm of `x`, within a few ulp of the exact value, the same bits on
/// every platform. `NaN` for a negative or `NaN` argument, `-inf` for zero, `+inf` for
/// `+inf`.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    // A subnormal is scaled into the normal range first (exactly: a power of two).
    let (x, scaled_by) = if x < f64::MIN_POSITIVE {
        (x * (1u64 << 54) as f64, -54)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let biased = ((bits >> F64_MANTISSA_BITS) & 0x7ff) as i64;
    let mantissa_bits = bits & ((1u64 << F64_MANTISSA_BITS) - 1);
    // x = mantissa × 2^exponent with mantissa in [1, 2), then in [sqrt(1/2), sqrt(2)].
    let mantissa =
        f64::from_bits(mantissa_bits | ((F64_EXPONENT_BIAS as u64) << F64_MANTISSA_BITS));
    let mut exponent = biased - F64_EXPONENT_BIAS + scaled_by;
    let mantissa = if mantissa > std::f64::consts::SQRT_2 {
        exponent += 1;
        mantissa / 2.0
    } else {
        mantissa
    };
    // ln(m) = 2 atanh(s), s = (m - 1) / (m + 1) = 2 (s + s³/3 + s⁵/5 + ...).
    let s = (mantissa - 1.0) / (mantissa + 1.0);
    let s2 = s * s;
    let mut series = 0.0;
    for term in (0..LN_SERIES_TERMS).rev() {
        series = series * s2 + 1.0 / f64::from(2 * term + 1);
    }
    2.0 * s * series + exponent as f64 * std::f64::consts::LN_2
}

/// `base` raised to `fraction` (in `[0, 1)`), for `base >= 1`, the same bits on every
/// platform: the product of `base^(2^-k)` (repeated square roots, each correctly rounded)
/// over the set bits of `fraction`'s first `POW_FRACTION_BITS` binary digits. Values of
/// `fraction` outside `[0, 1)` are clamped into it.
pub fn pow_fraction(base: f64, fraction: f64) -> f64 {
    let scale = (1u64 << POW_FRACTION_BITS) as f64;
    // Exact for every multiple of 2^-53 (every `unit_f64` draw); truncates finer bits.
    let digits = (fraction.clamp(0.0, 1.0) * scale) as u64;
    let digits = digits.min((1u64 << POW_FRACTION_BITS) - 1);
    let mut root = base;
    let mut product = 1.0;
    for bit in (0..POW_FRACTION_BITS).rev() {
        root = root.sqrt();
        if digits & (1u64 << bit) != 0 {
            product *= root;
        }
    }
    product
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_has_pinned_bits() {
        // Pinned: a platform or algorithm change that moves one bit fails here.
        let pinned: [(f64, u64); 8] = [
            (1.0, 0x0000_0000_0000_0000),
            (2.0, 0x3fe6_2e42_fefa_39ef),
            (10.0, 0x4002_6bb1_bbb5_5515),
            (0.5, 0xbfe6_2e42_fefa_39ef),
            (1.5, 0x3fd9_f323_ecbf_984c),
            (1e-300, 0xc085_9634_47f8_7fb5),
            (1e300, 0x4085_9634_47f8_7fb5),
            (5e-324, 0xc087_4385_446d_71c3),
        ];
        for (x, bits) in pinned {
            assert_eq!(ln(x).to_bits(), bits, "ln({x:e}) = {:e}", ln(x));
        }
    }

    #[test]
    fn ln_edges() {
        assert!(ln(-1.0).is_nan());
        assert!(ln(f64::NAN).is_nan());
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
    }

    /// The platform's `ln` is only a reference here: agreement within 4 ulp.
    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the platform's ln as a test reference"
    )]
    fn ln_is_within_a_few_ulp_of_the_platforms() {
        let mut x = 1e-12;
        while x < 1e12 {
            let ours = ln(x);
            let reference = x.ln();
            let ulp = f64::from_bits(reference.abs().to_bits() + 1) - reference.abs();
            assert!(
                (ours - reference).abs() <= 4.0 * ulp,
                "ln({x:e}): {ours} vs {reference}"
            );
            x *= 1.37;
        }
    }

    #[test]
    fn pow_fraction_has_pinned_bits() {
        let pinned: [(f64, f64, u64); 5] = [
            (100.0, 0.0, 0x3ff0_0000_0000_0000),
            (100.0, 0.5, 0x4024_0000_0000_0000),
            (100.0, 0.25, 0x4009_4c58_3ada_5b53),
            (100.0, 0.123_456_789, 0x3ffc_4040_6891_8aa1),
            (16.0, 0.75, 0x4020_0000_0000_0000),
        ];
        for (base, fraction, bits) in pinned {
            let value = pow_fraction(base, fraction);
            assert_eq!(value.to_bits(), bits, "{base}^{fraction} = {value:e}");
        }
    }

    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the platform's powf as a test reference"
    )]
    fn pow_fraction_is_close_to_the_platforms() {
        for step in 0..1000u32 {
            let fraction = f64::from(step) / 1000.0;
            let ours = pow_fraction(1000.0, fraction);
            let reference = 1000f64.powf(fraction);
            assert!(
                (ours / reference - 1.0).abs() < 1e-14,
                "{fraction}: {ours} vs {reference}"
            );
        }
    }
}
