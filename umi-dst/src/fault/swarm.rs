//! Swarm testing: the seed decides which fault kinds are on, and how often they fire.
//!
//! One uniform mix of every fault at a low rate hides rare interactions: a rate limit
//! storm never coincides with a disk that is full, because each is diluted by all the
//! others. Swarm testing (Groce et al., 2012) instead draws, per seed, a subset of the
//! kinds (each on with probability 1/2) and a probability for each, log-uniform between
//! `SWARM_PROBABILITY_MIN` and `SWARM_PROBABILITY_MAX` (computed with
//! `umi_core::portable_math`, so a seed draws the same bits on every platform). Across many seeds every
//! combination gets its turn at a rate high enough to matter.
//!
//! What was drawn is part of the run's settings: it goes into the trace first thing and
//! into every failure report.

use std::fmt;

use serde::Serialize;
use umi_core::portable_math::pow_fraction;

use super::{FaultConfig, FaultKind};
use crate::constants::{SWARM_PROBABILITY_MAX, SWARM_PROBABILITY_MIN};
use crate::rng::DeterministicRng;

/// What the seed drew for one fault kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SwarmDraw {
    /// The kind.
    pub kind: FaultKind,
    /// Whether it is on for this seed.
    pub enabled: bool,
    /// Its per-operation probability when on.
    pub probability: f64,
}

impl fmt::Display for SwarmDraw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.enabled {
            write!(f, "{}={:.4}", self.kind, self.probability)
        } else {
            write!(f, "{}=off", self.kind)
        }
    }
}

/// Draws the swarm settings for `kinds` from `rng` (the environment's `swarm` fork).
/// Every kind consumes the same number of draws whether it ends up on or off.
pub fn draw(rng: &mut DeterministicRng, kinds: &[FaultKind]) -> Vec<SwarmDraw> {
    let ratio = SWARM_PROBABILITY_MAX / SWARM_PROBABILITY_MIN;
    kinds
        .iter()
        .map(|&kind| {
            let enabled = rng.bool_with(0.5);
            // Clamped: the product of roots may round a few ulp past the top.
            let probability = (SWARM_PROBABILITY_MIN * pow_fraction(ratio, rng.unit_f64()))
                .min(SWARM_PROBABILITY_MAX);
            debug_assert!((SWARM_PROBABILITY_MIN..=SWARM_PROBABILITY_MAX).contains(&probability));
            SwarmDraw {
                kind,
                enabled,
                probability,
            }
        })
        .collect()
}

/// The fault configs the draws switch on.
pub fn configs(draws: &[SwarmDraw]) -> Vec<FaultConfig> {
    draws
        .iter()
        .filter(|draw| draw.enabled)
        .map(|draw| {
            FaultConfig::new(draw.kind, draw.probability).expect(
                "swarm probabilities lie within [SWARM_PROBABILITY_MIN, SWARM_PROBABILITY_MAX]",
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_and_bounded() {
        let kinds = FaultKind::ALL;
        let first = draw(&mut DeterministicRng::new(1), kinds);
        assert_eq!(first, draw(&mut DeterministicRng::new(1), kinds));
        assert_ne!(first, draw(&mut DeterministicRng::new(2), kinds));
        for d in &first {
            assert!((SWARM_PROBABILITY_MIN..=SWARM_PROBABILITY_MAX).contains(&d.probability));
        }
        assert_eq!(
            configs(&first).len(),
            first.iter().filter(|d| d.enabled).count()
        );
    }

    /// Exact bits: a platform whose float functions differ would draw other values and
    /// fail here (the probabilities once came from the platform's `powf`).
    #[test]
    fn draws_have_pinned_bits() {
        let draws = draw(&mut DeterministicRng::new(7), FaultKind::ALL);
        let bits: Vec<u64> = draws
            .iter()
            .take(4)
            .map(|d| d.probability.to_bits())
            .collect();
        assert_eq!(
            bits,
            [
                4_583_471_829_759_077_256,
                4_598_265_918_330_658_813,
                4_580_229_386_335_291_189,
                4_571_455_537_258_393_521
            ],
            "{draws:?}"
        );
    }

    #[test]
    fn across_seeds_every_kind_is_sometimes_on_and_sometimes_off() {
        let kinds = FaultKind::ALL;
        let mut on = vec![0u32; kinds.len()];
        for seed in 0..200 {
            for (slot, d) in on
                .iter_mut()
                .zip(draw(&mut DeterministicRng::new(seed), kinds))
            {
                *slot += u32::from(d.enabled);
            }
        }
        // Binomial(200, 1/2): mean 100, sd about 7; 60..140 is over five sd.
        assert!(
            on.iter().all(|&count| (60..=140).contains(&count)),
            "{on:?}"
        );
    }
}
