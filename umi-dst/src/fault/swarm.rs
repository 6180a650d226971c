//! Swarm testing: the seed decides which fault kinds are on, and how often they fire.
//!
//! One uniform mix of every fault at a low rate hides rare interactions: a rate limit
//! storm never coincides with a disk that is full, because each is diluted by all the
//! others. Swarm testing (Groce et al., 2012) instead draws, per seed, a subset of the
//! kinds (each on with probability 1/2) and a probability for each, log-uniform between
//! `SWARM_PROBABILITY_MIN` and `SWARM_PROBABILITY_MAX`. Across many seeds every
//! combination gets its turn at a rate high enough to matter.
//!
//! What was drawn is part of the run's settings: it goes into the trace first thing and
//! into every failure report.

use std::fmt;

use serde::Serialize;

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
            let probability = SWARM_PROBABILITY_MIN * ratio.powf(rng.unit_f64());
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
