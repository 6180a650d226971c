//! OpenAI's `POST {base}/embeddings`, as OpenAI, Azure OpenAI, vLLM, Ollama's `/v1` and
//! most OpenAI-compatible servers serve it.
//!
//! The request is `{"model", "input": [texts], "encoding_format", "dimensions"?}`; the
//! answer `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
//! "model", "usage": {"prompt_tokens", "total_tokens"}}` (OpenAI API reference,
//! "Create embeddings"; openai/openai-openapi `CreateEmbeddingResponse`). An embedding is
//! an array of numbers, or with `"encoding_format": "base64"` the base64 of its
//! little-endian `f32` bytes. openai-python asks for base64 unless told otherwise, and
//! decodes with `np.frombuffer(base64.b64decode(data), dtype="float32")`
//! (openai/openai-python `src/openai/resources/embeddings.py`; `lib/_parsing/_embeddings.py`
//! in openai 3.54): this client does the
//! same by default ([`EncodingFormat::Base64`]), and reads either form in any answer.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::{EmbedFormat, EmbeddingRequest, Embeddings, invalid};
use crate::llm::connection::{Connection, KeyHeader};
use crate::llm::error::{LlmError, snippet};
use crate::llm::transport::HttpRequest;

/// How the client asks for its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodingFormat {
    /// `"base64"`: little-endian `f32` bytes, base64 (openai-python's default).
    #[default]
    Base64,
    /// `"float"`: a JSON array of numbers.
    Float,
}

impl EncodingFormat {
    /// The value of `encoding_format`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Base64 => "base64",
            Self::Float => "float",
        }
    }
}

/// How to reach one embedding model of an OpenAI-compatible server. `Debug` redacts the
/// key, the credentials in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenAiEmbedConfig {
    /// The server, up to and including the version (`https://api.openai.com/v1`).
    pub connection: Connection,
    /// The model asked for when a request names none (`text-embedding-3-small`).
    pub model: String,
    /// How the numbers are asked for.
    pub encoding: EncodingFormat,
}

impl OpenAiEmbedConfig {
    /// A config for `model` through `connection` (a base URL will do), asking for base64.
    pub fn new(connection: impl Into<Connection>, model: impl Into<String>) -> Self {
        Self {
            connection: connection.into(),
            model: model.into(),
            encoding: EncodingFormat::Base64,
        }
    }

    /// Asks for the numbers as `encoding` says.
    pub fn with_encoding(mut self, encoding: EncodingFormat) -> Self {
        self.encoding = encoding;
        self
    }
}

/// The base64 of `vector`'s little-endian `f32` bytes (what OpenAI sends for
/// `"encoding_format": "base64"`).
pub fn encode_base64_f32(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    STANDARD.encode(bytes)
}

/// The `f32`s in `text`, the base64 of their little-endian bytes; `Err` says what is
/// wrong (not base64, or not a whole number of 4-byte floats).
pub fn decode_base64_f32(text: &str) -> Result<Vec<f32>, String> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|error| format!("not base64 ({error})"))?;
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "{} bytes of base64, not a whole number of 4-byte floats",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl EmbedFormat for OpenAiEmbedConfig {
    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn http_request(&self, request: &EmbeddingRequest, model: &str) -> HttpRequest {
        let mut body = json!({
            "model": model,
            "input": request.inputs,
            "encoding_format": self.encoding.name(),
        });
        if let Some(dimensions) = request.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        self.connection
            .post_json("/embeddings", &[], KeyHeader::Bearer, &body)
    }

    fn parse_response(&self, body: &str, inputs: usize) -> Result<Embeddings, LlmError> {
        let value: Value =
            serde_json::from_str(body).map_err(|error| LlmError::InvalidResponse {
                reason: format!("the body is not JSON ({error})"),
                snippet: snippet(body),
            })?;
        let data = value.get("data").and_then(Value::as_array).ok_or_else(|| {
            LlmError::InvalidResponse {
                reason: "data: missing, or not an array".into(),
                snippet: snippet(body),
            }
        })?;
        if data.len() > inputs {
            return Err(invalid(format!(
                "data: {} embeddings for {inputs} inputs",
                data.len()
            )));
        }
        let vectors = in_index_order(data)?;
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&self.model);
        let input_tokens = value
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        Ok(Embeddings {
            vectors,
            model: model.to_owned(),
            input_tokens,
        })
    }

    fn vector_field(&self, index: usize, _inputs: usize) -> String {
        format!("data[{index}].embedding")
    }
}

/// The vectors of `data`, placed by their `index` (their position when they have none).
fn in_index_order(data: &[Value]) -> Result<Vec<Vec<f32>>, LlmError> {
    let mut placed: Vec<Option<Vec<f32>>> = vec![None; data.len()];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None => position,
            Some(index) => index
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < data.len())
                .ok_or_else(|| {
                    invalid(format!(
                        "data[{position}].index: {index}, outside 0..{}",
                        data.len()
                    ))
                })?,
        };
        let vector = vector_of(item.get("embedding"), position)?;
        if placed[index].replace(vector).is_some() {
            return Err(invalid(format!(
                "data[{position}].index: {index} appears twice"
            )));
        }
    }
    Ok(placed.into_iter().flatten().collect())
}

fn vector_of(embedding: Option<&Value>, position: usize) -> Result<Vec<f32>, LlmError> {
    let field = format!("data[{position}].embedding");
    match embedding {
        Some(Value::String(text)) => {
            decode_base64_f32(text).map_err(|reason| invalid(format!("{field}: {reason}")))
        }
        Some(Value::Array(numbers)) => numbers
            .iter()
            .enumerate()
            .map(|(i, n)| {
                n.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| invalid(format!("{field}[{i}]: {n} is not a number")))
            })
            .collect(),
        Some(other) => Err(invalid(format!(
            "{field}: {}, neither an array nor base64",
            snippet(&other.to_string())
        ))),
        None => Err(invalid(format!("{field}: missing"))),
    }
}
