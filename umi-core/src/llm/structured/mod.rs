//! Structured outputs: an answer that must be JSON valid under a schema, read into the
//! caller's type with an error that names where it went wrong.
//!
//! A request asks for one with [`crate::llm::CompletionRequest::with_output_schema`];
//! each client sends the schema the way its API takes it (OpenAI's `response_format`
//! `json_schema`, Ollama's `format`). Models still get it wrong: a field missing, a wrong
//! type, a value out of range, a document cut short. [`parse`] checks the answer against
//! the schema and reads it into `T`, and a [`StructuredError`] says which (the JSON path
//! that failed), so validate-and-repair code knows what to ask the model to fix.
//!
//! ```
//! use serde::Deserialize;
//! use serde_json::json;
//! use umi_core::llm::structured::{StructuredError, parse};
//!
//! #[derive(Debug, Deserialize)]
//! struct Weather { city: String, days: u8 }
//!
//! let schema = json!({"type": "object", "properties": {"city": {"type": "string"},
//!     "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]});
//! let weather: Weather = parse(r#"{"city": "Oslo", "days": 3}"#, &schema).unwrap();
//! assert_eq!((weather.city.as_str(), weather.days), ("Oslo", 3));
//! let error = parse::<Weather>(r#"{"city": "Oslo", "days": 9}"#, &schema).unwrap_err();
//! assert!(matches!(error, StructuredError::Schema { ref path, .. } if path == "$.days"));
//! ```

pub mod keywords;
pub mod strict;
mod validate;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use validate::{SchemaViolation, validate, validate_within};

use crate::llm::error::snippet;

/// A structured answer that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The answer is not JSON (a truncated document, prose around it).
    #[error("the answer is not JSON at line {line}, column {column}: {reason} (got {snippet:?})")]
    NotJson {
        /// The line of the first error (1-based).
        line: usize,
        /// Its column (1-based).
        column: usize,
        /// The parser's complaint.
        reason: String,
        /// The start of the answer.
        snippet: String,
    },
    /// The JSON breaks the schema.
    #[error("the answer breaks its schema at {path}: {reason}")]
    Schema {
        /// The path that failed (`$.items[2].name`).
        path: String,
        /// What is wrong there.
        reason: String,
    },
    /// The JSON is valid under the schema but does not fit the caller's type.
    #[error("the answer does not fit the type at {path}: {reason}")]
    Type {
        /// The path that failed.
        path: String,
        /// What serde said.
        reason: String,
    },
}

/// Reads `text` (a model's answer) as JSON valid under `schema`, into `T`.
pub fn parse<T: DeserializeOwned>(text: &str, schema: &Value) -> Result<T, StructuredError> {
    let value: Value = serde_json::from_str(text).map_err(|error| StructuredError::NotJson {
        line: error.line(),
        column: error.column(),
        reason: error.to_string(),
        snippet: snippet(text),
    })?;
    validate(schema, &value).map_err(|violation| StructuredError::Schema {
        path: violation.path,
        reason: violation.reason,
    })?;
    serde_path_to_error::deserialize(value).map_err(|error| StructuredError::Type {
        path: json_path(&error.path().to_string()),
        reason: error.inner().to_string(),
    })
}

/// serde_path_to_error's `a.b[2]` (or `.` for the root) as `$.a.b[2]`.
fn json_path(path: &str) -> String {
    match path {
        "." | "" => "$".to_owned(),
        path if path.starts_with('[') => format!("${path}"),
        path => format!("$.{path}"),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Plan {
        steps: Vec<Step>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Step {
        title: String,
        minutes: u8,
    }

    #[test]
    fn every_failure_names_its_place() {
        let schema = json!({"type": "object", "properties": {"steps": {"type": "array",
            "items": {"type": "object", "properties": {"title": {"type": "string"},
            "minutes": {"type": "integer", "minimum": 0}}, "required": ["title", "minutes"]}}},
            "required": ["steps"]});
        let truncated = parse::<Plan>(r#"{"steps": [{"title": "a", "min"#, &schema).unwrap_err();
        assert!(
            matches!(truncated, StructuredError::NotJson { line: 1, .. }),
            "{truncated}"
        );
        let missing = parse::<Plan>(r#"{"steps": [{"title": "a"}]}"#, &schema).unwrap_err();
        assert_eq!(
            missing,
            StructuredError::Schema {
                path: "$.steps[0].minutes".into(),
                reason: "is required but missing".into()
            }
        );
        // Valid under the schema, but 300 does not fit a u8.
        let too_big =
            parse::<Plan>(r#"{"steps": [{"title": "a", "minutes": 300}]}"#, &schema).unwrap_err();
        assert!(
            matches!(&too_big, StructuredError::Type { path, .. } if path == "$.steps[0].minutes"),
            "{too_big}"
        );
    }
}
