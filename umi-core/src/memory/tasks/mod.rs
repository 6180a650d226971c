//! The memory's three LLM tasks, one file each, with their task tags: the prompt a task
//! sends, how to read its input back, and a strict parser for the answer.
//!
//! | task tag | asks for | answer shape |
//! | --- | --- | --- |
//! | `memory.extract_entities` | the entities in a text | `{"entities": [..], "relations": [..]}` |
//! | `memory.rewrite_query` | search variants of a question | a bare JSON array of strings |
//! | `memory.detect_evolution` | how a new fact relates to known ones | `{"type", "reason", "confidence", "related_id"}` |
//!
//! Every request carries its task tag, which simulated models route on. The prompt texts
//! also contain the words a keyword router looks for ("extract" and "entities", "rewrite"
//! and "query", "detect" and "evolution"), each only its own: a router that routes on
//! words must still see each task (a test pins it).
//!
//! The data a prompt is about goes in a fenced JSON block at its end ([`input_block`]),
//! so text with quotes or code fences in it cannot confuse the model or a simulator, and
//! [`extraction_input`] and friends can read it back exactly.
//!
//! The parsers are strict about shape, types, ranges and limits; the only leniency is a
//! surrounding markdown code fence, which real models add whatever they are told. A
//! failure is a [`ParseError`] naming the task, what was wrong and the start of the text.

mod answer;
mod evolution;
mod extraction;
mod input;
mod rewrite;

pub use evolution::{
    EvolutionCandidate, EvolutionDetection, EvolutionSubject, evolution_input, evolution_request,
    parse_evolution,
};
pub use extraction::{
    ExtractedEntity, ExtractedRelation, Extraction, extraction_input, extraction_request,
    parse_extraction,
};
pub use input::input_block;
pub use rewrite::{parse_rewrite, rewrite_input, rewrite_request};

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

#[cfg(test)]
mod tests;
