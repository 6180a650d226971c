//! Embeddings: the [`Embedder`] trait every embedding model implements, its request and
//! response types, and HTTP clients for OpenAI's `POST /embeddings`, Ollama's
//! `POST /api/embed` and Gemini's `:embedContent` / `:batchEmbedContents`.
//!
//! Memory systems and RAG agents call an embeddings endpoint as often as a chat one, and
//! fail on it in their own ways: a 429, a server that answers with fewer vectors than it
//! was sent texts, a vector one number short. The clients here go through the same
//! [`Transport`], timeouts, error classifier (`wire::errors`) and redaction as the chat
//! clients ([`crate::llm::client`]), and check every answer before handing it back
//! ([`check_vectors`]): one vector per input, in input order, all of one length (the
//! length asked for, when one was), every number finite. Whatever is wrong is a typed
//! [`LlmError::InvalidResponse`] naming the field (`data[2].embedding: 511 dimensions,
//! expected 512`), never a vector of the wrong shape passed on to a vector store.

mod gemini;
mod ollama;
mod openai;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

pub use gemini::{GEMINI_BATCH_REQUESTS_MAX, GeminiEmbedConfig};
pub use ollama::OllamaEmbedConfig;
pub use openai::{EncodingFormat, OpenAiEmbedConfig, decode_base64_f32, encode_base64_f32};

use super::connection::Connection;
use super::error::{LlmError, snippet};
use super::secrets::Redactor;
use super::transport::{HttpRequest, Transport};
use super::wire::exchange;
use super::wire::reader::read_body;
use crate::constants::{EMBED_DIMENSIONS_MAX, EMBED_INPUTS_MAX, HTTP_BODY_BYTES_MAX};
use crate::env::Env;

/// Texts to embed with one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingRequest {
    /// The model id (empty: the client's own).
    pub model: String,
    /// The texts, one vector each (at most [`EMBED_INPUTS_MAX`]).
    pub inputs: Vec<String>,
    /// The vector length asked for (`None`: the model's own).
    pub dimensions: Option<u32>,
}

impl EmbeddingRequest {
    /// A request embedding `inputs` with `model`, at the model's own dimensions.
    pub fn new(model: impl Into<String>, inputs: Vec<String>) -> Self {
        Self {
            model: model.into(),
            inputs,
            dimensions: None,
        }
    }

    /// Asks for vectors of `dimensions` numbers.
    pub fn with_dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Refuses a request no server can answer: no inputs, more than
    /// [`EMBED_INPUTS_MAX`], or dimensions of 0 or over [`EMBED_DIMENSIONS_MAX`].
    pub fn validate(&self) -> Result<(), LlmError> {
        let reason = if self.inputs.is_empty() {
            "an embeddings request has no inputs".to_owned()
        } else if self.inputs.len() > EMBED_INPUTS_MAX {
            format!(
                "inputs: {} texts, over the limit of {EMBED_INPUTS_MAX}",
                self.inputs.len()
            )
        } else if let Some(d) = self.dimensions
            && !(1..=EMBED_DIMENSIONS_MAX).contains(&d)
        {
            format!("dimensions: {d}, outside 1..={EMBED_DIMENSIONS_MAX}")
        } else {
            return Ok(());
        };
        Err(LlmError::InvalidPrompt { reason })
    }
}

/// The vectors of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// The model that answered, as the server names it.
    pub model: String,
    /// Input tokens, as the server counted them (0 when it did not say).
    pub input_tokens: u32,
}

/// A model that turns texts into vectors: the real clients, and umi-dst's simulated one.
///
/// # Contract
///
/// Checked by `umi_dst::embed::conformance::check_embedder`.
///
/// 1. `Ok` holds exactly one vector per input, in input order.
/// 2. Every vector has the length asked for (`dimensions`), or, when none was, the same
///    length as the others; every number is finite.
/// 3. The same text, model and dimensions give the same vector.
/// 4. Failures are typed [`LlmError`]s, and never carry the client's secrets.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model this embedder asks for when a request names none.
    fn model(&self) -> &str;

    /// Embeds `request`'s inputs (see the contract).
    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, LlmError>;
}

#[async_trait]
impl<T: Embedder + ?Sized> Embedder for Arc<T> {
    fn model(&self) -> &str {
        (**self).model()
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, LlmError> {
        (**self).embed(request).await
    }
}

/// One embeddings wire format, as a client speaks it (OpenAI's, Ollama's, Gemini's).
pub trait EmbedFormat: Send + Sync + fmt::Debug + 'static {
    /// The server, the key and the timeouts.
    fn connection(&self) -> &Connection;

    /// The model asked for when a request names none.
    fn default_model(&self) -> &str;

    /// The HTTP request for `request` (validated), asking for `model`.
    fn http_request(&self, request: &EmbeddingRequest, model: &str) -> HttpRequest;

    /// The vectors in a 2xx body, as the server sent them (checked afterwards by
    /// [`check_vectors`]).
    fn parse_response(&self, body: &str, inputs: usize) -> Result<Embeddings, LlmError>;

    /// The name of vector `index` in this format's body (`data[2].embedding`), for a
    /// request of `inputs` texts.
    fn vector_field(&self, index: usize, inputs: usize) -> String;

    /// The most texts one request may carry (a larger one is refused unsent).
    fn inputs_max(&self) -> usize {
        EMBED_INPUTS_MAX
    }
}

/// A client for one embedding model in the wire format `F`.
#[derive(Debug, Clone)]
pub struct EmbedClient<F> {
    format: F,
    transport: Arc<dyn Transport>,
    env: Env,
    redactor: Arc<Redactor>,
}

/// OpenAI's `POST /embeddings`.
pub type OpenAiEmbedder = EmbedClient<OpenAiEmbedConfig>;

/// Ollama's `POST /api/embed`.
pub type OllamaEmbedder = EmbedClient<OllamaEmbedConfig>;

/// Gemini's `:embedContent` and `:batchEmbedContents`.
pub type GeminiEmbedder = EmbedClient<GeminiEmbedConfig>;

impl<F: EmbedFormat> EmbedClient<F> {
    /// A client speaking `format` through `transport`, timing with `env`.
    pub fn new(format: F, transport: Arc<dyn Transport>, env: Env) -> Self {
        let redactor = Arc::new(format.connection().redactor());
        Self {
            format,
            transport,
            env,
            redactor,
        }
    }

    /// The format's config.
    pub fn config(&self) -> &F {
        &self.format
    }

    async fn embed_unredacted(&self, request: &EmbeddingRequest) -> Result<Embeddings, LlmError> {
        request.validate()?;
        let inputs_max = self.format.inputs_max();
        if request.inputs.len() > inputs_max {
            return Err(LlmError::InvalidPrompt {
                reason: format!(
                    "inputs: {} texts, over this API's limit of {inputs_max}",
                    request.inputs.len()
                ),
            });
        }
        let model = if request.model.is_empty() {
            self.format.default_model()
        } else {
            &request.model
        };
        let http = self.format.http_request(request, model);
        let timeouts = self.format.connection().timeouts();
        let response = exchange::send(
            self.transport.as_ref(),
            &self.env,
            http,
            timeouts.request,
            timeouts.idle,
        )
        .await
        .map_err(|refused| refused.error)?;
        let bytes = read_body(response.body, &self.env, timeouts.idle, HTTP_BODY_BYTES_MAX).await?;
        let text = String::from_utf8(bytes).map_err(|error| LlmError::InvalidResponse {
            reason: "the response body is not UTF-8".into(),
            snippet: snippet(&String::from_utf8_lossy(error.as_bytes())),
        })?;
        let mut embeddings = self.format.parse_response(&text, request.inputs.len())?;
        if embeddings.model.is_empty() {
            // An answer that names no model (Google's) is from the model asked.
            embeddings.model = model.strip_prefix("models/").unwrap_or(model).to_owned();
        }
        check_vectors(
            &embeddings.vectors,
            request.inputs.len(),
            request.dimensions,
            |i| self.format.vector_field(i, request.inputs.len()),
        )?;
        Ok(embeddings)
    }
}

#[async_trait]
impl<F: EmbedFormat> Embedder for EmbedClient<F> {
    fn model(&self) -> &str {
        self.format.default_model()
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, LlmError> {
        self.embed_unredacted(request)
            .await
            .map_err(|error| self.redactor.redact_error(error))
    }
}

fn invalid(reason: String) -> LlmError {
    LlmError::InvalidResponse {
        reason,
        snippet: String::new(),
    }
}

/// The numbers of a JSON array of numbers at `field` (`embeddings[2]`,
/// `embedding.values`), each as `f32`; an error naming the field or the element that is
/// not one.
fn number_array(value: &serde_json::Value, field: &str) -> Result<Vec<f32>, LlmError> {
    let Some(numbers) = value.as_array() else {
        return Err(invalid(format!("{field}: not an array")));
    };
    numbers
        .iter()
        .enumerate()
        .map(|(i, n)| {
            n.as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| invalid(format!("{field}[{i}]: {n} is not a number")))
        })
        .collect()
}

/// Checks vectors against the request: `inputs` of them, each of `dimensions` numbers
/// when asked (else all of the first one's length, which is not 0, nor over
/// [`EMBED_DIMENSIONS_MAX`]), every number finite. `field` names vector `i` in errors.
pub fn check_vectors(
    vectors: &[Vec<f32>],
    inputs: usize,
    dimensions: Option<u32>,
    field: impl Fn(usize) -> String,
) -> Result<(), LlmError> {
    if vectors.len() != inputs {
        return Err(invalid(format!(
            "{} embeddings for {inputs} inputs",
            vectors.len()
        )));
    }
    let Some(first) = vectors.first() else {
        return Ok(());
    };
    let expected = dimensions.map_or(first.len(), |d| d as usize);
    if expected == 0 || expected > EMBED_DIMENSIONS_MAX as usize {
        return Err(invalid(format!(
            "{}: {expected} dimensions, outside 1..={EMBED_DIMENSIONS_MAX}",
            field(0)
        )));
    }
    for (index, vector) in vectors.iter().enumerate() {
        if vector.len() != expected {
            return Err(invalid(format!(
                "{}: {} dimensions, expected {expected}",
                field(index),
                vector.len()
            )));
        }
        if let Some(at) = vector.iter().position(|x| !x.is_finite()) {
            return Err(invalid(format!(
                "{}[{at}]: {} is not a finite number",
                field(index),
                vector[at]
            )));
        }
    }
    Ok(())
}
