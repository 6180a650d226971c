//! The memory's three LLM prompts, their task tags, and strict parsers for the answers.
//!
//! | task tag | asks for | answer shape |
//! | --- | --- | --- |
//! | `memory.extract_entities` | the entities in a text | `{"entities": [..], "relations": [..]}` |
//! | `memory.rewrite_query` | search variants of a question | a bare JSON array of strings |
//! | `memory.detect_evolution` | how a new fact relates to known ones | `{"type", "reason", "confidence", "related_id"}` |
//!
//! Every request carries its task tag, which simulated models route on. The prompt texts
//! also contain the words a keyword router looks for ("extract" and "entities", "rewrite"
//! and "query", "detect" and "evolution"): the original simulator routed on words the real
//! evolution prompt did not contain, and nothing noticed for months.
//!
//! The data a prompt is about goes in a fenced JSON block at its end (`input_block`), so
//! text with quotes or code fences in it cannot confuse the model or a simulator, and
//! [`extraction_input`] and friends can read it back exactly.
//!
//! The parsers are strict about shape, types, ranges and limits; the only leniency is a
//! surrounding markdown code fence, which real models add whatever they are told. A
//! failure is a [`ParseError`] naming the task, what was wrong and the start of the text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::constants::{
    ENTITY_CONTENT_BYTES_MAX, ENTITY_NAME_BYTES_MAX, EVOLUTION_CANDIDATES_MAX,
    EVOLUTION_REASON_BYTES_MAX, EXTRACTION_ENTITIES_MAX, EXTRACTION_RELATIONS_MAX,
    MEMORY_QUERY_BYTES_MAX, QUERY_VARIANTS_MAX,
};
use crate::llm::{CompletionRequest, Message, snippet};

/// Task tag of entity extraction.
pub const TASK_EXTRACT_ENTITIES: &str = "memory.extract_entities";
/// Task tag of query rewriting.
pub const TASK_REWRITE_QUERY: &str = "memory.rewrite_query";
/// Task tag of evolution detection.
pub const TASK_DETECT_EVOLUTION: &str = "memory.detect_evolution";

/// What a parser refused, with the task, the reason and the start of the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{task}: {reason} (answer began {snippet:?})")]
pub struct ParseError {
    /// The task tag.
    pub task: &'static str,
    /// What was wrong.
    pub reason: String,
    /// The start of the answer.
    pub snippet: String,
}

/// The kind of thing an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    /// A person.
    Person,
    /// A company, team or institution.
    Organization,
    /// A project or product.
    Project,
    /// A subject or concept.
    Topic,
    /// A location.
    Place,
    /// Something that happened or will.
    Event,
    /// Raw text kept as it is (also what extraction failures store).
    Note,
}

impl EntityType {
    /// Every type, in declaration order.
    pub const ALL: [EntityType; 7] = [
        Self::Person,
        Self::Organization,
        Self::Project,
        Self::Topic,
        Self::Place,
        Self::Event,
        Self::Note,
    ];

    /// The type's name (`organization`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Organization => "organization",
            Self::Project => "project",
            Self::Topic => "topic",
            Self::Place => "place",
            Self::Event => "event",
            Self::Note => "note",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

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

/// How a new fact relates to something already remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvolutionType {
    /// The new fact replaces the old one.
    Update,
    /// The new fact adds to the old one.
    Extend,
    /// The new fact follows from the old one.
    Derive,
    /// The new fact contradicts the old one.
    Contradict,
    /// No relation.
    None,
}

impl EvolutionType {
    /// Every type.
    pub const ALL: [EvolutionType; 5] = [
        Self::Update,
        Self::Extend,
        Self::Derive,
        Self::Contradict,
        Self::None,
    ];

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Update => "update",
            Self::Extend => "extend",
            Self::Derive => "derive",
            Self::Contradict => "contradict",
            Self::None => "none",
        }
    }
}

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

// ---- Prompts -------------------------------------------------------------------------------

const EXTRACTION_SYSTEM: &str = "You extract entities from text for a long-term memory. \
Extract every person, organization, project, topic, place and event the text mentions, \
and the relations between them. Answer with one JSON object and nothing else: \
{\"entities\": [{\"name\": string, \"type\": \"person\"|\"organization\"|\"project\"|\"topic\"|\"place\"|\"event\"|\"note\", \
\"content\": string, \"confidence\": number between 0 and 1}], \
\"relations\": [{\"source\": entity name, \"target\": entity name, \"kind\": string}]}. \
If the text names no entity, return one entity of type \"note\" holding the text.";

const REWRITE_SYSTEM: &str = "You rewrite a search query for a memory search. \
Rewrite the user's query into between 1 and 5 short search queries that would find the \
memories it asks about: keep names, drop filler words, add a synonym where it helps. \
Answer with a JSON array of strings and nothing else, e.g. [\"Alice employer\", \"where Alice works\"].";

const EVOLUTION_SYSTEM: &str = "You detect the evolution of knowledge in a memory. \
Given a new entity and existing entities, detect how the new one relates to them: \
\"update\" (it replaces an existing fact), \"extend\" (it adds to one), \"derive\" (it follows \
from one), \"contradict\" (it conflicts with one) or \"none\". Answer with one JSON object and \
nothing else: {\"type\": string, \"reason\": string, \"confidence\": number between 0 and 1, \
\"related_id\": the id of the existing entity, or null when type is \"none\"}.";

const INPUT_FENCE_OPEN: &str = "Input:\n```json\n";
const INPUT_FENCE_CLOSE: &str = "\n```";

/// `lead`, then `data` as compact JSON (keys sorted: the prompt is part of the request a
/// simulated model hashes) in a fenced block.
fn with_input_block(lead: &str, data: &Value) -> String {
    let data = crate::canonical_json::Canonical(data);
    format!("{lead}\n\n{INPUT_FENCE_OPEN}{data}{INPUT_FENCE_CLOSE}")
}

/// The JSON block of a prompt built by this module, if `request` carries one.
pub fn input_block(request: &CompletionRequest) -> Option<Value> {
    serde_json::from_str(input_block_text(request)?).ok()
}

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

/// The raw JSON of a prompt's input block.
fn input_block_text(request: &CompletionRequest) -> Option<&str> {
    let text = request.last_user_text()?;
    let start = text.rfind(INPUT_FENCE_OPEN)? + INPUT_FENCE_OPEN.len();
    let end = start + text[start..].find(INPUT_FENCE_CLOSE)?;
    Some(&text[start..end])
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

/// The request that rewrites `query` into search variants.
pub fn rewrite_request(query: &str) -> CompletionRequest {
    let user = with_input_block(
        "Rewrite this query for the memory search.",
        &serde_json::json!({ "query": query }),
    );
    CompletionRequest::new(vec![Message::system(REWRITE_SYSTEM), Message::user(user)])
        .with_task(TASK_REWRITE_QUERY)
        .with_temperature(0.0)
}

/// The query a rewrite request is about.
pub fn rewrite_input(request: &CompletionRequest) -> Option<String> {
    input_block(request)?
        .get("query")?
        .as_str()
        .map(str::to_owned)
}

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

// ---- Parsers -------------------------------------------------------------------------------

/// The answer without surrounding whitespace and markdown code fence.
fn unfenced(answer: &str) -> &str {
    let trimmed = answer.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('{') && !info.contains('[') => inner.trim(),
        _ => body.trim(),
    }
}

fn parse_json(task: &'static str, answer: &str) -> Result<Value, ParseError> {
    serde_json::from_str(unfenced(answer)).map_err(|error| ParseError {
        task,
        reason: format!("not JSON: {error}"),
        snippet: snippet(answer),
    })
}

fn shape_error(task: &'static str, answer: &str, reason: String) -> ParseError {
    ParseError {
        task,
        reason,
        snippet: snippet(answer),
    }
}

fn check_confidence(
    task: &'static str,
    answer: &str,
    what: &str,
    confidence: f64,
) -> Result<(), ParseError> {
    if (0.0..=1.0).contains(&confidence) {
        Ok(())
    } else {
        Err(shape_error(
            task,
            answer,
            format!("{what} confidence {confidence} is outside [0, 1]"),
        ))
    }
}

/// Parses an extraction answer.
pub fn parse_extraction(answer: &str) -> Result<Extraction, ParseError> {
    let task = TASK_EXTRACT_ENTITIES;
    let value = parse_json(task, answer)?;
    if !value.is_object() {
        return Err(shape_error(task, answer, "expected a JSON object".into()));
    }
    let extraction: Extraction = serde_json::from_value(value)
        .map_err(|error| shape_error(task, answer, format!("wrong shape: {error}")))?;
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

/// Parses a rewrite answer: a bare JSON array of 1 to `QUERY_VARIANTS_MAX` non-empty
/// strings.
pub fn parse_rewrite(answer: &str) -> Result<Vec<String>, ParseError> {
    let task = TASK_REWRITE_QUERY;
    let value = parse_json(task, answer)?;
    let Value::Array(items) = value else {
        return Err(shape_error(
            task,
            answer,
            "expected a JSON array of strings".into(),
        ));
    };
    if items.is_empty() || items.len() > QUERY_VARIANTS_MAX {
        return Err(shape_error(
            task,
            answer,
            format!(
                "{} variants; expected 1 to {QUERY_VARIANTS_MAX}",
                items.len()
            ),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(text) if !text.trim().is_empty() && text.len() <= MEMORY_QUERY_BYTES_MAX => Ok(text),
            other => Err(shape_error(task, answer, format!("variant {index} is {other}, not a non-empty string of at most {MEMORY_QUERY_BYTES_MAX} bytes"))),
        })
        .collect()
}

/// Parses an evolution answer; `related_id` must name one of `candidates` unless the
/// type is `none`.
pub fn parse_evolution(
    answer: &str,
    candidates: &[EvolutionCandidate],
) -> Result<EvolutionDetection, ParseError> {
    let task = TASK_DETECT_EVOLUTION;
    let value = parse_json(task, answer)?;
    if !value.is_object() {
        return Err(shape_error(task, answer, "expected a JSON object".into()));
    }
    let detection: EvolutionDetection = serde_json::from_value(value)
        .map_err(|error| shape_error(task, answer, format!("wrong shape: {error}")))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn keywords_route(request: &CompletionRequest, words: [&str; 2]) -> bool {
        let text = request.prompt_text().to_lowercase();
        words.iter().all(|w| text.contains(w))
    }

    /// The drift the field notes describe, pinned: every prompt carries the words a
    /// keyword router looks for, and only its own.
    #[test]
    fn prompts_carry_their_routing_keywords() {
        let extraction = extraction_request("Alice joined Acme.");
        let rewrite = rewrite_request("where does Alice work?");
        let subject = EvolutionSubject {
            name: "Alice".into(),
            entity_type: EntityType::Person,
            content: "at Acme".into(),
        };
        let evolution = evolution_request(&subject, &[]);
        assert!(keywords_route(&extraction, ["extract", "entit"]));
        assert!(keywords_route(&rewrite, ["rewrite", "query"]));
        assert!(keywords_route(&evolution, ["detect", "evolution"]));
        assert!(!keywords_route(&extraction, ["detect", "evolution"]));
        assert_eq!(extraction.task.as_deref(), Some(TASK_EXTRACT_ENTITIES));
        assert_eq!(rewrite.task.as_deref(), Some(TASK_REWRITE_QUERY));
        assert_eq!(evolution.task.as_deref(), Some(TASK_DETECT_EVOLUTION));
    }

    /// The prompt is part of what a simulated model hashes: its JSON block keeps the
    /// default build's sorted key order even where serde_json's `preserve_order` is on
    /// (a struct turned into a `Value` there keeps its field order).
    #[test]
    fn input_blocks_have_their_keys_sorted() {
        let subject = EvolutionSubject {
            name: "Alice".into(),
            entity_type: EntityType::Person,
            content: "at Acme".into(),
        };
        let candidate = EvolutionCandidate {
            id: "e-1".into(),
            name: "Alice".into(),
            entity_type: EntityType::Person,
            content: "at Initech".into(),
        };
        let request = evolution_request(&subject, &[candidate]);
        let block = input_block_text(&request).unwrap();
        assert_eq!(
            block,
            r#"{"existing_entities":[{"content":"at Initech","id":"e-1","name":"Alice","type":"person"}],"new_entity":{"content":"at Acme","name":"Alice","type":"person"}}"#
        );
    }

    #[test]
    fn inputs_round_trip_through_the_prompt() {
        let awkward = "She said \"hi\"\n```json\n{}\n``` and left.";
        assert_eq!(
            extraction_input(&extraction_request(awkward)).as_deref(),
            Some(awkward)
        );
        assert_eq!(
            rewrite_input(&rewrite_request(awkward)).as_deref(),
            Some(awkward)
        );
        let subject = EvolutionSubject {
            name: "A".into(),
            entity_type: EntityType::Topic,
            content: awkward.into(),
        };
        let candidates = vec![EvolutionCandidate {
            id: "e1".into(),
            name: "B".into(),
            entity_type: EntityType::Note,
            content: "x".into(),
        }];
        assert_eq!(
            evolution_input(&evolution_request(&subject, &candidates)),
            Some((subject, candidates))
        );
    }

    #[test]
    fn extraction_parser_accepts_the_documented_shape_and_fences() {
        let answer = "```json\n{\"entities\": [{\"name\": \"Alice\", \"type\": \"person\", \"content\": \"works at Acme\", \"confidence\": 0.9},\
            {\"name\": \"Acme\", \"type\": \"organization\", \"content\": \"a company\", \"confidence\": 0.8}],\
            \"relations\": [{\"source\": \"Alice\", \"target\": \"Acme\", \"kind\": \"works_at\"}]}\n```";
        let extraction = parse_extraction(answer).unwrap();
        assert_eq!(extraction.entities[1].entity_type, EntityType::Organization);
        assert_eq!(extraction.relations[0].kind, "works_at");
    }

    #[test]
    fn extraction_parser_is_strict() {
        for (answer, expected) in [
            ("not json", "not JSON"),
            ("[]", "expected a JSON object"),
            ("{\"entities\": []}", "0 entities"),
            (
                "{\"entities\": [{\"name\": \"A\", \"type\": \"alien\", \"content\": \"\", \"confidence\": 0.5}]}",
                "wrong shape",
            ),
            (
                "{\"entities\": [{\"name\": \"A\", \"type\": \"person\", \"content\": \"\", \"confidence\": 1.5}]}",
                "outside [0, 1]",
            ),
            (
                "{\"entities\": [{\"name\": \" \", \"type\": \"person\", \"content\": \"\", \"confidence\": 0.5}]}",
                "is empty",
            ),
            (
                "{\"entities\": [{\"name\": \"A\", \"type\": \"person\", \"content\": \"\", \"confidence\": 0.5}], \"relations\": [{\"source\": \"A\", \"target\": \"B\", \"kind\": \"k\"}]}",
                "\"B\"",
            ),
        ] {
            let error = parse_extraction(answer).unwrap_err();
            assert!(error.to_string().contains(expected), "{answer}: {error}");
            assert_eq!(error.task, TASK_EXTRACT_ENTITIES);
        }
    }

    /// The other half of the drift: the rewrite parser wants a bare array, and refuses
    /// the object the old simulator produced.
    #[test]
    fn rewrite_parser_wants_a_bare_array() {
        assert_eq!(parse_rewrite("[\"a b\", \"c\"]").unwrap(), vec!["a b", "c"]);
        assert!(
            parse_rewrite("{\"queries\": [\"a\"]}")
                .unwrap_err()
                .reason
                .contains("array")
        );
        assert!(parse_rewrite("[]").is_err());
        assert!(parse_rewrite("[\"\"]").is_err());
        assert!(parse_rewrite("[1]").is_err());
        assert!(parse_rewrite("[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]").is_err());
    }

    #[test]
    fn evolution_parser_checks_the_related_id() {
        let candidates = vec![EvolutionCandidate {
            id: "e7".into(),
            name: "Acme".into(),
            entity_type: EntityType::Organization,
            content: String::new(),
        }];
        let ok = parse_evolution("{\"type\": \"update\", \"reason\": \"moved\", \"confidence\": 0.7, \"related_id\": \"e7\"}", &candidates).unwrap();
        assert_eq!(ok.evolution_type, EvolutionType::Update);
        let none = parse_evolution(
            "{\"type\": \"none\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": null}",
            &candidates,
        )
        .unwrap();
        assert_eq!(none.related_id, None);
        assert!(parse_evolution("{\"type\": \"extend\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": \"e8\"}", &candidates).unwrap_err().reason.contains("\"e8\""));
        assert!(parse_evolution("{\"type\": \"extend\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": null}", &candidates).is_err());
        assert!(parse_evolution("{\"type\": \"none\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": \"e7\"}", &candidates).is_err());
    }
}
