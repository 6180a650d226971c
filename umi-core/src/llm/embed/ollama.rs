//! Ollama's native `POST {root}/api/embed`.
//!
//! The request is `{"model", "input": [texts], "dimensions"?}`; the answer
//! `{"model", "embeddings": [[numbers]], "total_duration", "load_duration",
//! "prompt_eval_count"}` (ollama/ollama `api/types.go`, `EmbedRequest` and
//! `EmbedResponse`; docs/api.md, "Generate Embeddings"). The server truncates an input
//! past the model's context unless `truncate` is false, and ignores `dimensions` larger
//! than the model's own (`server/routes.go`, `EmbedHandler`): a vector of another length
//! than asked is caught by [`super::check_vectors`].

use serde_json::{Value, json};

use super::{EmbedFormat, EmbeddingRequest, Embeddings, invalid, number_array};
use crate::llm::connection::{Connection, KeyHeader};
use crate::llm::error::{LlmError, snippet};
use crate::llm::transport::HttpRequest;

/// How to reach one embedding model of an Ollama server. `Debug` redacts the key, the
/// credentials in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OllamaEmbedConfig {
    /// The server's root (`http://localhost:11434`).
    pub connection: Connection,
    /// The model asked for when a request names none (`nomic-embed-text`).
    pub model: String,
}

impl OllamaEmbedConfig {
    /// A config for `model` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model: impl Into<String>) -> Self {
        Self {
            connection: connection.into(),
            model: model.into(),
        }
    }
}

impl EmbedFormat for OllamaEmbedConfig {
    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn http_request(&self, request: &EmbeddingRequest, model: &str) -> HttpRequest {
        let mut body = json!({"model": model, "input": request.inputs});
        if let Some(dimensions) = request.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        self.connection
            .post_json("/api/embed", &[], KeyHeader::Bearer, &body)
    }

    fn parse_response(&self, body: &str, inputs: usize) -> Result<Embeddings, LlmError> {
        let value: Value =
            serde_json::from_str(body).map_err(|error| LlmError::InvalidResponse {
                reason: format!("the body is not JSON ({error})"),
                snippet: snippet(body),
            })?;
        let listed = value
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or_else(|| LlmError::InvalidResponse {
                reason: "embeddings: missing, or not an array".into(),
                snippet: snippet(body),
            })?;
        if listed.len() > inputs {
            return Err(invalid(format!(
                "embeddings: {} vectors for {inputs} inputs",
                listed.len()
            )));
        }
        let vectors = listed
            .iter()
            .enumerate()
            .map(|(index, vector)| numbers(vector, index))
            .collect::<Result<Vec<_>, _>>()?;
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&self.model);
        let input_tokens = value
            .get("prompt_eval_count")
            .and_then(Value::as_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        Ok(Embeddings {
            vectors,
            model: model.to_owned(),
            input_tokens,
        })
    }

    fn vector_field(&self, index: usize, _inputs: usize) -> String {
        format!("embeddings[{index}]")
    }
}

fn numbers(vector: &Value, index: usize) -> Result<Vec<f32>, LlmError> {
    number_array(vector, &format!("embeddings[{index}]"))
}
