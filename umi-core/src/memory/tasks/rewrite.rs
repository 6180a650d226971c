//! Query rewriting (`memory.rewrite_query`): search variants of a question. The request,
//! reading its input back, and the strict parser of the answer, a bare JSON array of
//! strings.

use serde_json::Value;

use super::answer::{parse_json, shape_error};
use super::input::{input_block, with_input_block};
use super::{ParseError, TASK_REWRITE_QUERY};
use crate::constants::{MEMORY_QUERY_BYTES_MAX, QUERY_VARIANTS_MAX};
use crate::llm::{CompletionRequest, Message};

const REWRITE_SYSTEM: &str = "You rewrite a search query for a memory search. \
Rewrite the user's query into between 1 and 5 short search queries that would find the \
memories it asks about: keep names, drop filler words, add a synonym where it helps. \
Answer with a JSON array of strings and nothing else, e.g. [\"Alice employer\", \"where Alice works\"].";

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
