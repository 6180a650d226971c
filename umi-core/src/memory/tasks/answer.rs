//! What the three parsers share: the one leniency (a surrounding markdown code fence,
//! which real models add whatever they are told), JSON parsing and shape errors that name
//! the task and quote the start of the answer, and the confidence range check.

use serde_json::Value;

use super::ParseError;
use crate::llm::snippet;

/// The answer without surrounding whitespace and markdown code fence.
pub(super) fn unfenced(answer: &str) -> &str {
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

pub(super) fn parse_json(task: &'static str, answer: &str) -> Result<Value, ParseError> {
    serde_json::from_str(unfenced(answer)).map_err(|error| ParseError {
        task,
        reason: format!("not JSON: {error}"),
        snippet: snippet(answer),
    })
}

pub(super) fn shape_error(task: &'static str, answer: &str, reason: String) -> ParseError {
    ParseError {
        task,
        reason,
        snippet: snippet(answer),
    }
}

pub(super) fn check_confidence(
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

/// An answer that must be one JSON object of type `T`: its shape errors name the task.
pub(super) fn parse_object<T: serde::de::DeserializeOwned>(
    task: &'static str,
    answer: &str,
) -> Result<T, ParseError> {
    let value = parse_json(task, answer)?;
    if !value.is_object() {
        return Err(shape_error(task, answer, "expected a JSON object".into()));
    }
    serde_json::from_value(value)
        .map_err(|error| shape_error(task, answer, format!("wrong shape: {error}")))
}
