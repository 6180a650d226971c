//! Mapping raw 64-bit draws onto ranges, probabilities and floats.
//!
//! These functions are the only place a random `u64` becomes something shaped. They are
//! ours rather than `rand`'s on purpose: a seed recorded in `seeds/` must replay the same
//! run after a dependency upgrade, and `rand` is free to change how `random_range` maps
//! bits between releases. Both the production environment and the simulation's
//! `DeterministicRng` go through these, so the two agree on every mapping.

/// A uniformly distributed integer in `0..bound` (`bound > 0`), without modulo bias.
///
/// Lemire's multiply-and-reject method: one draw in the common case, a redraw with
/// probability below `bound / 2^64`.
pub fn below(bound: u64, mut next_u64: impl FnMut() -> u64) -> u64 {
    assert!(bound > 0, "below: bound must be positive");
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u128::from(next_u64()) * u128::from(bound);
        let low = product as u64;
        if low >= threshold {
            let value = (product >> 64) as u64;
            debug_assert!(value < bound);
            return value;
        }
    }
}

/// A uniformly distributed integer in `low..=high` (`low <= high`).
pub fn in_range(low: u64, high: u64, mut next_u64: impl FnMut() -> u64) -> u64 {
    assert!(low <= high, "in_range: low {low} > high {high}");
    let span = high - low;
    if span == u64::MAX {
        return next_u64();
    }
    low + below(span + 1, next_u64)
}

/// A float in `[0, 1)` from the top 53 bits of one draw (every value equally likely).
pub fn unit_f64(draw: u64) -> f64 {
    const MANTISSA_BITS: u32 = 53;
    let value = (draw >> (64 - MANTISSA_BITS)) as f64 / (1u64 << MANTISSA_BITS) as f64;
    debug_assert!((0.0..1.0).contains(&value));
    value
}

/// `true` with probability `probability` (clamped to `[0, 1]`); always exactly one draw,
/// so the stream advances the same way whatever the outcome or the probability.
pub fn chance(probability: f64, draw: u64) -> bool {
    debug_assert!(!probability.is_nan(), "chance: probability is NaN");
    unit_f64(draw) < probability
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(start: u64, step: u64) -> impl FnMut() -> u64 {
        let mut state = start;
        move || {
            state = state.wrapping_add(step);
            state
        }
    }

    #[test]
    fn below_stays_below_bound() {
        let mut next = counter(7, 0x9E37_79B9_7F4A_7C15);
        for bound in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..1000 {
                assert!(below(bound, &mut next) < bound);
            }
        }
    }

    #[test]
    fn in_range_covers_both_ends() {
        let mut next = counter(1, 0x9E37_79B9_7F4A_7C15);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let value = in_range(10, 13, &mut next);
            seen[(value - 10) as usize] = true;
        }
        assert_eq!(seen, [true; 4], "every value of a small range is reachable");
        assert_eq!(in_range(5, 5, &mut next), 5);
        let _ = in_range(0, u64::MAX, &mut next);
    }

    #[test]
    fn unit_f64_bounds() {
        assert_eq!(unit_f64(0), 0.0);
        assert!(unit_f64(u64::MAX) < 1.0);
        assert!(unit_f64(u64::MAX) > 0.999_999);
    }

    #[test]
    fn chance_extremes() {
        assert!(!chance(0.0, 0));
        assert!(!chance(0.0, u64::MAX));
        assert!(chance(1.0, u64::MAX));
        assert!(chance(0.5, 0));
        assert!(!chance(0.5, u64::MAX));
    }
}
