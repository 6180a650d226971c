//! Entity extraction (`memory.extract_entities`): the entities and relations of a text.
//! The request, reading its input back, and the strict parser of the answer,
//! `{"entities": [..], "relations": [..]}`.

use serde::{Deserialize, Serialize};

use super::answer::{check_confidence, parse_object, shape_error};
use super::input::{input_block_text, with_input_block};
use super::{ParseError, TASK_EXTRACT_ENTITIES};
use crate::constants::{
    ENTITY_CONTENT_BYTES_MAX, ENTITY_NAME_BYTES_MAX, EXTRACTION_ENTITIES_MAX,
    EXTRACTION_RELATIONS_MAX,
};
use crate::llm::{CompletionRequest, Message};

use crate::storage::EntityType;

/// One entity an extraction found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedEntity {
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// What the text says about it.
    pub content: String,
    /// The model's confidence, in [0, 1].
    pub confidence: f64,
}

/// A relation between two extracted entities, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedRelation {
    /// The name of the entity it starts from.
    pub source: String,
    /// The name of the entity it points to.
    pub target: String,
    /// What the relation is (`works_at`).
    pub kind: String,
}

/// An extraction answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// The entities, at least one.
    pub entities: Vec<ExtractedEntity>,
    /// Relations between them.
    #[serde(default)]
    pub relations: Vec<ExtractedRelation>,
}

const EXTRACTION_SYSTEM: &str = "You extract entities from text for a long-term memory. \
Extract every person, organization, project, topic, place and event the text mentions, \
and the relations between them. Answer with one JSON object and nothing else: \
{\"entities\": [{\"name\": string, \"type\": \"person\"|\"organization\"|\"project\"|\"topic\"|\"place\"|\"event\"|\"note\", \
\"content\": string, \"confidence\": number between 0 and 1}], \
\"relations\": [{\"source\": entity name, \"target\": entity name, \"kind\": string}]}. \
If the text names no entity, return one entity of type \"note\" holding the text.";

/// The request that extracts the entities of `text`.
pub fn extraction_request(text: &str) -> CompletionRequest {
    let user = with_input_block(
        "Extract the entities from the text below.",
        &serde_json::json!({ "text": text }),
    );
    CompletionRequest::new(vec![
        Message::system(EXTRACTION_SYSTEM),
        Message::user(user),
    ])
    .with_task(TASK_EXTRACT_ENTITIES)
    .with_json_output()
    .with_temperature(0.0)
}

/// The text an extraction request is about.
pub fn extraction_input(request: &CompletionRequest) -> Option<String> {
    #[derive(Deserialize)]
    struct Input {
        text: String,
    }
    serde_json::from_str::<Input>(input_block_text(request)?)
        .ok()
        .map(|input| input.text)
}

/// Parses an extraction answer.
pub fn parse_extraction(answer: &str) -> Result<Extraction, ParseError> {
    let task = TASK_EXTRACT_ENTITIES;
    let extraction: Extraction = parse_object(task, answer)?;
    let count = extraction.entities.len();
    if count == 0 || count > EXTRACTION_ENTITIES_MAX {
        return Err(shape_error(
            task,
            answer,
            format!("{count} entities; expected 1 to {EXTRACTION_ENTITIES_MAX}"),
        ));
    }
    for (index, entity) in extraction.entities.iter().enumerate() {
        let name = entity.name.trim();
        if name.is_empty() || entity.name.len() > ENTITY_NAME_BYTES_MAX {
            return Err(shape_error(
                task,
                answer,
                format!(
                    "entity {index} name {:?} is empty or over {ENTITY_NAME_BYTES_MAX} bytes",
                    entity.name
                ),
            ));
        }
        if entity.content.len() > ENTITY_CONTENT_BYTES_MAX {
            return Err(shape_error(
                task,
                answer,
                format!("entity {index} content is over {ENTITY_CONTENT_BYTES_MAX} bytes"),
            ));
        }
        check_confidence(task, answer, &format!("entity {index}"), entity.confidence)?;
    }
    if extraction.relations.len() > EXTRACTION_RELATIONS_MAX {
        return Err(shape_error(
            task,
            answer,
            format!(
                "{} relations; at most {EXTRACTION_RELATIONS_MAX}",
                extraction.relations.len()
            ),
        ));
    }
    for relation in &extraction.relations {
        for end in [&relation.source, &relation.target] {
            if !extraction.entities.iter().any(|e| &e.name == end) {
                return Err(shape_error(
                    task,
                    answer,
                    format!("relation names {end:?}, which is not an extracted entity"),
                ));
            }
        }
    }
    Ok(extraction)
}
