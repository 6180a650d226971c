//! Swarm testing: the seed decides which of the fault rules are on, and how often each
//! fires.
//!
//! One uniform mix of every fault at a fixed rate hides rare interactions: a rate limit
//! storm never coincides with a disk that is full, because each is diluted by all the
//! others. Swarm testing (Groce et al., 2012) instead draws, per seed, a subset of the
//! rules (each on with probability 1/2) and scales each one's probability by a factor
//! between 1/16 and 16. Across many seeds every combination gets its turn at a rate high
//! enough to matter.
//!
//! Swarm mode works on the config's own rules: a scenario's filters, warm-ups, caps and
//! ordinals are kept, so a nightly swarm sweep injects faults only where the scenario's
//! profile says they belong. (Swarm once re-created the profile's kinds as unscoped rules
//! and so fired faults outside it.)
//!
//! The scale is 2^(q/4) for a whole number q of quarter octaves in
//! `-SWARM_SCALE_QUARTER_OCTAVES_MAX..=SWARM_SCALE_QUARTER_OCTAVES_MAX`: a power of two
//! (exact) times one of four constants, so the probability a seed draws has the same bits
//! on every platform (no `powf`, whose result the standard library says may differ).
//!
//! What was drawn is part of the run's settings: it goes into the trace first thing and
//! into every failure report.

use std::fmt;

use serde::Serialize;

use super::{FaultConfig, FaultKind};
use crate::constants::SWARM_SCALE_QUARTER_OCTAVES_MAX;
use crate::rng::DeterministicRng;

/// 2^(k/4) for k in 0..4, to the nearest f64 (the literals are the correctly rounded
/// values; the tests pin them against their squares).
const QUARTER_OCTAVES: [f64; 4] = [
    1.0,
    1.189_207_115_002_721,
    std::f64::consts::SQRT_2,
    1.681_792_830_507_429,
];

/// What the seed drew for one rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SwarmDraw {
    /// The rule's index in the config's fault rules.
    pub rule: usize,
    /// The rule's kind.
    pub kind: FaultKind,
    /// Whether the rule is on for this seed.
    pub enabled: bool,
    /// The scale, in quarter octaves (the probability is multiplied by 2^(q/4)).
    pub scale_quarter_octaves: i32,
    /// The rule's per-operation probability after scaling (capped at 1).
    pub probability: f64,
}

impl fmt::Display for SwarmDraw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.enabled {
            write!(f, "{}:{}={:.4}", self.rule, self.kind, self.probability)
        } else {
            write!(f, "{}:{}=off", self.rule, self.kind)
        }
    }
}

/// 2^(quarter_octaves/4), exactly reproducible: a power of two times a constant.
pub fn scale(quarter_octaves: i32) -> f64 {
    assert!(
        quarter_octaves.abs() <= SWARM_SCALE_QUARTER_OCTAVES_MAX,
        "swarm scale {quarter_octaves} outside ±{SWARM_SCALE_QUARTER_OCTAVES_MAX}"
    );
    let octaves = quarter_octaves.div_euclid(4);
    let quarter = QUARTER_OCTAVES[quarter_octaves.rem_euclid(4) as usize];
    // 2^octaves from its exponent bits: exact for every octave in range.
    let biased = u64::try_from(1023 + octaves).expect("octaves lie within ±4");
    quarter * f64::from_bits(biased << 52)
}

/// Draws the swarm settings for `rules` from `rng` (the environment's `swarm` fork).
/// Every rule consumes the same two draws whether it ends up on or off.
pub fn draw(rng: &mut DeterministicRng, rules: &[FaultConfig]) -> Vec<SwarmDraw> {
    let span = 2 * SWARM_SCALE_QUARTER_OCTAVES_MAX as u64 + 1;
    rules
        .iter()
        .enumerate()
        .map(|(rule, config)| {
            let enabled = rng.bool_with(0.5);
            let scale_quarter_octaves = rng.below(span) as i32 - SWARM_SCALE_QUARTER_OCTAVES_MAX;
            let probability = (config.probability() * scale(scale_quarter_octaves)).min(1.0);
            SwarmDraw {
                rule,
                kind: config.kind(),
                enabled: enabled && config.enabled(),
                scale_quarter_octaves,
                probability,
            }
        })
        .collect()
}

/// The rules as the draws set them: the same rules, in the same order (so injection
/// ids keep their meaning), switched on or off and with the drawn probability.
pub fn apply(rules: Vec<FaultConfig>, draws: &[SwarmDraw]) -> Vec<FaultConfig> {
    assert_eq!(rules.len(), draws.len(), "one swarm draw per rule");
    rules
        .into_iter()
        .zip(draws)
        .map(|(config, draw)| {
            assert_eq!(
                config.kind(),
                draw.kind,
                "draw {} is for this rule",
                draw.rule
            );
            config
                .with_probability(draw.probability)
                .expect("a scaled probability is capped at 1 and never negative")
                .with_enabled(draw.enabled)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::OperationFilter;

    fn rules() -> Vec<FaultConfig> {
        FaultKind::ALL
            .iter()
            .map(|&kind| FaultConfig::chance(kind, 0.05))
            .collect()
    }

    #[test]
    fn scales_are_exact_powers_of_the_fourth_root_of_two() {
        assert_eq!(scale(0), 1.0);
        assert_eq!(scale(4), 2.0);
        assert_eq!(scale(-16), 1.0 / 16.0);
        assert_eq!(scale(16), 16.0);
        assert_eq!(scale(-3), 1.189_207_115_002_721 / 2.0);
        // Pinned bits: a platform that computed these differently would fail here.
        assert_eq!(scale(1).to_bits(), 0x3ff3_06fe_0a31_b715);
        assert_eq!(scale(3).to_bits(), 0x3ffa_e89f_995a_d3ad);
        // Each constant squared is the next one, to within one rounding.
        for (k, quarter) in QUARTER_OCTAVES.iter().enumerate().take(3) {
            let squared = quarter * quarter;
            assert!((squared - scale(2 * k as i32)).abs() < 1e-15, "{k}");
        }
        let mut previous = 0.0;
        for q in -16..=16 {
            assert!(scale(q) > previous, "monotonic at {q}");
            previous = scale(q);
        }
    }

    #[test]
    fn draws_are_seeded_bounded_and_keep_each_rule() {
        let rules = rules();
        let first = draw(&mut DeterministicRng::new(1), &rules);
        assert_eq!(first, draw(&mut DeterministicRng::new(1), &rules));
        assert_ne!(first, draw(&mut DeterministicRng::new(2), &rules));
        for d in &first {
            assert!((0.05 / 16.0..=0.05 * 16.0).contains(&d.probability), "{d}");
        }
        let applied = apply(rules.clone(), &first);
        assert_eq!(applied.len(), rules.len());
        for ((config, original), d) in applied.iter().zip(&rules).zip(&first) {
            assert_eq!(config.kind(), original.kind());
            assert_eq!(config.enabled(), d.enabled);
            assert_eq!(config.probability(), d.probability);
        }
    }

    #[test]
    fn filters_caps_and_ordinals_survive_swarm() {
        let scoped = FaultConfig::chance(FaultKind::StorageReadFail, 0.5)
            .with_filter(OperationFilter::parse("storage.search"))
            .unwrap()
            .with_max_injections(2)
            .with_after_operations(3);
        for seed in 0..50 {
            let draws = draw(
                &mut DeterministicRng::new(seed),
                std::slice::from_ref(&scoped),
            );
            let applied = &apply(vec![scoped.clone()], &draws)[0];
            assert_eq!(applied.filter(), scoped.filter());
            assert_eq!(applied.max_injections(), Some(2));
            assert_eq!(applied.after_operations(), 3);
            assert!(
                applied.probability() <= 1.0,
                "capped: {}",
                applied.probability()
            );
        }
    }

    #[test]
    fn a_rule_switched_off_by_its_config_stays_off() {
        let off = vec![FaultConfig::always(FaultKind::LlmTimeout).with_enabled(false)];
        for seed in 0..20 {
            let draws = draw(&mut DeterministicRng::new(seed), &off);
            assert!(!draws[0].enabled, "seed {seed}");
        }
    }

    #[test]
    fn across_seeds_every_rule_is_sometimes_on_and_sometimes_off() {
        let rules = rules();
        let mut on = vec![0u32; rules.len()];
        for seed in 0..200 {
            for (slot, d) in on
                .iter_mut()
                .zip(draw(&mut DeterministicRng::new(seed), &rules))
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
