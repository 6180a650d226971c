//! Google's Gemini API embeddings: `POST {base}/v1beta/models/{model}:embedContent` for
//! one text, `:batchEmbedContents` for several, the key in `x-goog-api-key`.
//!
//! `embedContent` takes `{"model": "models/{model}", "content": {"parts": [{"text"}]},
//! "taskType"?, "outputDimensionality"?}` and answers `{"embedding": {"values": [...]}}`;
//! `batchEmbedContents` takes `{"requests": [that, one per text]}` and answers
//! `{"embeddings": [{"values": [...]}]}`, in request order (Gemini API reference,
//! `models.embedContent` and `models.batchEmbedContents`; googleapis/python-genai
//! `google/genai/models.py` in google-genai 3.3.0, `_EmbedContentParametersPrivate_to_mldev`,
//! which sends every request's `model` as `models/{model}` and `outputDimensionality`
//! on each request). A batch holds at most [`GEMINI_BATCH_REQUESTS_MAX`] requests
//! (`* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch`,
//! quoted in langchain-ai/langchainjs #4491): a larger request is refused before it is
//! sent. The base URL is the API root, as for [`crate::llm::gemini`]'s client.

use serde_json::{Value, json};

use super::{EmbedFormat, EmbeddingRequest, Embeddings, invalid, number_array};
use crate::llm::connection::{Connection, KeyHeader};
use crate::llm::error::{LlmError, snippet};
use crate::llm::gemini::{method_path, query_after_path};
use crate::llm::transport::HttpRequest;

/// The most requests one `batchEmbedContents` call may carry.
pub const GEMINI_BATCH_REQUESTS_MAX: usize = 100;

/// How to reach one embedding model of the Gemini API. `Debug` redacts the key, the
/// credentials in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GeminiEmbedConfig {
    /// The API root (`https://generativelanguage.googleapis.com`).
    pub connection: Connection,
    /// The model asked for when a request names none (`gemini-embedding-001`); a
    /// leading `models/` is allowed.
    pub model: String,
    /// The `taskType` sent with every text (`RETRIEVAL_DOCUMENT`), if any.
    pub task_type: Option<String>,
}

impl GeminiEmbedConfig {
    /// A config for `model` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model: impl Into<String>) -> Self {
        Self {
            connection: connection.into(),
            model: model.into(),
            task_type: None,
        }
    }

    /// Sends `task_type` (`RETRIEVAL_QUERY`, `SEMANTIC_SIMILARITY`, ...) with every text.
    pub fn with_task_type(mut self, task_type: impl Into<String>) -> Self {
        self.task_type = Some(task_type.into());
        self
    }

    /// One `EmbedContentRequest` for `text`.
    fn one(&self, model: &str, text: &str, dimensions: Option<u32>) -> Value {
        let mut body = json!({
            "model": format!("models/{}", model.strip_prefix("models/").unwrap_or(model)),
            "content": {"parts": [{"text": text}]},
        });
        if let Some(task_type) = &self.task_type {
            body["taskType"] = json!(task_type);
        }
        if let Some(dimensions) = dimensions {
            body["outputDimensionality"] = json!(dimensions);
        }
        body
    }
}

impl EmbedFormat for GeminiEmbedConfig {
    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn inputs_max(&self) -> usize {
        GEMINI_BATCH_REQUESTS_MAX
    }

    fn http_request(&self, request: &EmbeddingRequest, model: &str) -> HttpRequest {
        let (method, body) = match request.inputs.as_slice() {
            [text] => ("embedContent", self.one(model, text, request.dimensions)),
            texts => {
                let requests: Vec<Value> = texts
                    .iter()
                    .map(|text| self.one(model, text, request.dimensions))
                    .collect();
                ("batchEmbedContents", json!({ "requests": requests }))
            }
        };
        let path = method_path(&self.connection.base_url, model, method);
        let mut http = self
            .connection
            .post_json(&path, &[], KeyHeader::XGoogApiKey, &body);
        http.url = query_after_path(&self.connection.base_url, &path);
        http
    }

    fn parse_response(&self, body: &str, inputs: usize) -> Result<Embeddings, LlmError> {
        let value: Value =
            serde_json::from_str(body).map_err(|error| LlmError::InvalidResponse {
                reason: format!("the body is not JSON ({error})"),
                snippet: snippet(body),
            })?;
        let vectors = if let Some(one) = value.get("embedding") {
            vec![values(one, "embedding")?]
        } else {
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
            listed
                .iter()
                .enumerate()
                .map(|(index, item)| values(item, &format!("embeddings[{index}]")))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(Embeddings {
            vectors,
            // Google's answers do not name the model: `EmbedClient` names the one asked.
            model: String::new(),
            // Neither answer counts tokens on the Gemini API.
            input_tokens: 0,
        })
    }

    fn vector_field(&self, index: usize, inputs: usize) -> String {
        if inputs == 1 {
            "embedding.values".to_owned()
        } else {
            format!("embeddings[{index}].values")
        }
    }
}

/// The numbers of `item.values`; `field` names `item`.
fn values(item: &Value, field: &str) -> Result<Vec<f32>, LlmError> {
    let Some(numbers) = item.get("values") else {
        return Err(invalid(format!("{field}.values: missing")));
    };
    number_array(numbers, &format!("{field}.values"))
}
