//! Evolution detection (`memory.detect_evolution`): how a new fact relates to known ones.
//! The request, reading its input back, and the strict parser of the answer,
//! `{"type", "reason", "confidence", "related_id"}`.

use serde::{Deserialize, Serialize};

use super::answer::{check_confidence, parse_object, shape_error};
use super::input::{input_block, with_input_block};
use super::{ParseError, TASK_DETECT_EVOLUTION};
use crate::constants::{EVOLUTION_CANDIDATES_MAX, EVOLUTION_REASON_BYTES_MAX};
use crate::llm::{CompletionRequest, Message};
use crate::storage::{EntityType, EvolutionType};

/// An evolution-detection answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionDetection {
    /// The relation found.
    #[serde(rename = "type")]
    pub evolution_type: EvolutionType,
    /// Why, in a sentence.
    pub reason: String,
    /// The model's confidence, in [0, 1].
    pub confidence: f64,
    /// The id of the existing entity it relates to (`None` for type `none`).
    pub related_id: Option<String>,
}

/// A new entity, as the evolution prompt shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionSubject {
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// Its content.
    pub content: String,
}

/// An existing entity the new one may relate to, as the evolution prompt shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionCandidate {
    /// Its id; the answer names it in `related_id`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// Its content.
    pub content: String,
}

const EVOLUTION_SYSTEM: &str = "You detect the evolution of knowledge in a memory. \
Given a new entity and existing entities, detect how the new one relates to them: \
\"update\" (it replaces an existing fact), \"extend\" (it adds to one), \"derive\" (it follows \
from one), \"contradict\" (it conflicts with one) or \"none\". Answer with one JSON object and \
nothing else: {\"type\": string, \"reason\": string, \"confidence\": number between 0 and 1, \
\"related_id\": the id of the existing entity, or null when type is \"none\"}.";

/// The request that detects how `subject` relates to `candidates` (at most
/// `EVOLUTION_CANDIDATES_MAX` of them are shown).
pub fn evolution_request(
    subject: &EvolutionSubject,
    candidates: &[EvolutionCandidate],
) -> CompletionRequest {
    let shown = &candidates[..candidates.len().min(EVOLUTION_CANDIDATES_MAX)];
    let data = serde_json::json!({ "new_entity": subject, "existing_entities": shown });
    let user = with_input_block(
        "Detect the evolution between the new entity and the existing ones.",
        &data,
    );
    CompletionRequest::new(vec![Message::system(EVOLUTION_SYSTEM), Message::user(user)])
        .with_task(TASK_DETECT_EVOLUTION)
        .with_json_output()
        .with_temperature(0.0)
}

/// The subject and candidates an evolution request is about.
pub fn evolution_input(
    request: &CompletionRequest,
) -> Option<(EvolutionSubject, Vec<EvolutionCandidate>)> {
    let block = input_block(request)?;
    let subject = serde_json::from_value(block.get("new_entity")?.clone()).ok()?;
    let candidates = serde_json::from_value(block.get("existing_entities")?.clone()).ok()?;
    Some((subject, candidates))
}

/// Parses an evolution answer; `related_id` must name one of `candidates` unless the
/// type is `none`.
pub fn parse_evolution(
    answer: &str,
    candidates: &[EvolutionCandidate],
) -> Result<EvolutionDetection, ParseError> {
    let task = TASK_DETECT_EVOLUTION;
    let detection: EvolutionDetection = parse_object(task, answer)?;
    check_confidence(task, answer, "evolution", detection.confidence)?;
    if detection.reason.len() > EVOLUTION_REASON_BYTES_MAX {
        return Err(shape_error(
            task,
            answer,
            format!("reason is over {EVOLUTION_REASON_BYTES_MAX} bytes"),
        ));
    }
    match (&detection.evolution_type, &detection.related_id) {
        (EvolutionType::None, None) => {}
        (EvolutionType::None, Some(id)) => {
            return Err(shape_error(
                task,
                answer,
                format!("type none with related_id {id:?}"),
            ));
        }
        (kind, None) => {
            return Err(shape_error(
                task,
                answer,
                format!("type {} without related_id", kind.name()),
            ));
        }
        (_, Some(id)) if !candidates.iter().any(|c| &c.id == id) => {
            return Err(shape_error(
                task,
                answer,
                format!("related_id {id:?} is not one of the existing entities shown"),
            ));
        }
        _ => {}
    }
    Ok(detection)
}
