//! Evolution detection: a type weighted from the seed, a reason, a confidence, and the
//! id of an existing entity named in the prompt (one with the new entity's name when
//! there is one).

use umi_core::llm::CompletionRequest;
use umi_core::memory::tasks::{EvolutionDetection, evolution_input};
use umi_core::storage::EvolutionType;

use super::confidence;
use crate::llm::route::Generated;
use crate::rng::DeterministicRng;

/// Weights of update, extend, derive, contradict and none.
const TYPE_WEIGHTS: [(EvolutionType, u64); 5] = [
    (EvolutionType::Update, 25),
    (EvolutionType::Extend, 25),
    (EvolutionType::Derive, 10),
    (EvolutionType::Contradict, 10),
    (EvolutionType::None, 30),
];

/// The evolution answer for `request`.
pub(crate) fn generate(request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
    let (subject, candidates) = match evolution_input(request) {
        Some((subject, candidates)) => (Some(subject), candidates),
        None => (None, Vec::new()),
    };
    let weights: Vec<u64> = TYPE_WEIGHTS.iter().map(|(_, w)| *w).collect();
    let mut evolution_type =
        TYPE_WEIGHTS[rng.weighted_index(&weights).expect("weights are positive")].0;
    let related = if candidates.is_empty() {
        None
    } else {
        let same_name: Vec<_> = candidates
            .iter()
            .filter(|c| Some(&c.name) == subject.as_ref().map(|s| &s.name))
            .collect();
        let pool: Vec<_> = if same_name.is_empty() {
            candidates.iter().collect()
        } else {
            same_name
        };
        rng.choose(&pool).map(|c| (*c).clone())
    };
    let Some(related) = related.filter(|_| evolution_type != EvolutionType::None) else {
        evolution_type = EvolutionType::None;
        let answer = EvolutionDetection {
            evolution_type,
            reason: "The new information is unrelated to what is known.".into(),
            confidence: confidence(rng, 0.5, 0.9),
            related_id: None,
        };
        return Generated::json(serde_json::to_string(&answer).expect("serializes"));
    };
    let name = subject.map(|s| s.name).unwrap_or_default();
    let reason = match evolution_type {
        EvolutionType::Update => format!("{name} replaces what was known about {}.", related.name),
        EvolutionType::Extend => format!("{name} adds detail to {}.", related.name),
        EvolutionType::Derive => format!("{name} follows from {}.", related.name),
        EvolutionType::Contradict => format!("{name} conflicts with {}.", related.name),
        EvolutionType::None => unreachable!("handled above"),
    };
    let answer = EvolutionDetection {
        evolution_type,
        reason,
        confidence: confidence(rng, 0.5, 0.95),
        related_id: Some(related.id),
    };
    Generated::json(serde_json::to_string(&answer).expect("serializes"))
}
