//! The simulated servers' embeddings endpoints: `POST {base}/embeddings` under an
//! OpenAI-format base URL, `POST {root}/api/embed` under Ollama's,
//! `POST {root}/v1beta/models/{model}:embedContent` and `:batchEmbedContents` under
//! Gemini's (the `gemini` module), answering with [`crate::embed`]'s vectors in each provider's
//! exact shapes.
//!
//! | format | answer |
//! | --- | --- |
//! | OpenAI | `{"object": "list", "data": [{"object": "embedding", "index", "embedding": [...] or "<base64>"}], "model", "usage": {"prompt_tokens", "total_tokens"}}` (OpenAI API reference, "The embedding object" and "Create embeddings"; openai/openai-openapi `CreateEmbeddingResponse`) |
//! | Ollama | `{"model", "embeddings": [[...]], "total_duration", "load_duration", "prompt_eval_count"}`, durations in ns (ollama/ollama `api/types.go` `EmbedResponse`) |
//! | Gemini | `{"embedding": {"values": [...]}}` (`embedContent`), `{"embeddings": [{"values": [...]}]}` (`batchEmbedContents`) (Gemini API reference, `ContentEmbedding`) |
//!
//! Refusals (a wrong key, a bad body, an unknown model, the provider's input checks:
//! `request.rs`) are written by the format's own responder, in its error envelope. Then
//! the `llm.embed` faults, drawn from the request's own stream forked as `embed`:
//! `llm.rate_limit` (a 429 with the provider's Retry-After; Gemini's with its
//! `google.rpc.RetryInfo` in the body), `llm.service_unavailable`
//! (a 503), `llm.timeout` (no answer: the client's timeout must fire), and three answers
//! of the wrong shape that a client must catch: `llm.embedding_wrong_dimensions` (one
//! vector a number longer or shorter), `llm.embedding_truncated` (one vector cut
//! short) and `llm.embedding_missing` (fewer vectors than inputs). A one-input request
//! without `dimensions` has nothing to compare a vector's length with, so the first two
//! are seen only with `dimensions` or more than one input. The answer comes after a
//! latency in simulated time (a base, plus a drawn jitter, plus one ms per
//! [`EMBED_TOKENS_PER_MS`] tokens), and its body goes through the `network.body` faults.

mod gemini;
mod request;

use serde_json::{Value, json};
use umi_core::llm::embed::encode_base64_f32;

use crate::embed::EmbedModel;
pub(crate) use gemini::GeminiEmbeddings;
pub(crate) use request::{Ask, Refuse};

/// Simulated time an embeddings request takes at least, in ms.
pub(crate) const EMBED_LATENCY_MS_MIN: u64 = 15;
/// The most the latency is drawn above [`EMBED_LATENCY_MS_MIN`], in ms.
pub(crate) const EMBED_LATENCY_JITTER_MS_MAX: u64 = 30;
/// Tokens embedded per ms of simulated time.
pub(crate) const EMBED_TOKENS_PER_MS: u64 = 2_000;

/// One provider's embeddings endpoint, as its server reads and answers it. A wire
/// format that serves embeddings names its own through
/// [`crate::network::surface::Surface::embeddings`]; none is chosen by matching on the
/// format.
pub(crate) trait EmbedWire: Send + Sync {
    /// The path under a base URL of the format, as people write it (`/embeddings`;
    /// Gemini's `/v1beta/models/{model}:batchEmbedContents`).
    fn path(&self) -> &'static str;
    /// Whether the server answers `path` (under a base URL) here: most formats own
    /// their one path; Gemini's carry the model and the method.
    fn routes(&self, path: &str) -> bool {
        path == self.path()
    }
    /// The request at `path` as the server reads it.
    fn parse(&self, path: &str, body: &[u8]) -> Result<Ask, Refuse>;
    /// The model a refused request asked for (its body's `model`; Gemini's path).
    fn asked_model(&self, _path: &str, body: &[u8]) -> String {
        serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default()
    }
    /// The server's checks of `ask` against `model` (Ollama's may amend it: its
    /// `truncate`).
    fn check(&self, ask: &mut Ask, model: &EmbedModel) -> Result<(), Refuse>;
    /// The body of an answer with `vectors`, and its shape's coverage mark.
    fn body(
        &self,
        ask: &Ask,
        vectors: &[Vec<f32>],
        tokens: u64,
        latency_ms: u64,
    ) -> (Value, &'static str);
}

/// OpenAI's `POST {base}/embeddings`, for every OpenAI-format server.
pub(crate) struct OpenAiEmbeddings;

impl EmbedWire for OpenAiEmbeddings {
    fn path(&self) -> &'static str {
        "/embeddings"
    }

    fn parse(&self, _path: &str, body: &[u8]) -> Result<Ask, Refuse> {
        request::parse_openai(body)
    }

    fn check(&self, ask: &mut Ask, model: &EmbedModel) -> Result<(), Refuse> {
        request::check_openai(ask, model)
    }

    fn body(&self, ask: &Ask, vectors: &[Vec<f32>], tokens: u64, _: u64) -> (Value, &'static str) {
        openai_body(ask, vectors, tokens)
    }
}

/// Ollama's `POST {root}/api/embed`.
pub(crate) struct OllamaEmbeddings;

impl EmbedWire for OllamaEmbeddings {
    fn path(&self) -> &'static str {
        "/api/embed"
    }

    fn parse(&self, _path: &str, body: &[u8]) -> Result<Ask, Refuse> {
        request::parse_ollama(body)
    }

    fn check(&self, ask: &mut Ask, model: &EmbedModel) -> Result<(), Refuse> {
        request::check_ollama(ask, model)
    }

    fn body(
        &self,
        ask: &Ask,
        vectors: &[Vec<f32>],
        tokens: u64,
        latency_ms: u64,
    ) -> (Value, &'static str) {
        ollama_body(ask, vectors, tokens, latency_ms)
    }
}

fn openai_body(ask: &Ask, vectors: &[Vec<f32>], tokens: u64) -> (Value, &'static str) {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| {
            let embedding = if ask.base64 {
                json!(encode_base64_f32(vector))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let body = json!({
        "object": "list",
        "data": data,
        "model": ask.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    });
    let mark = if ask.base64 {
        "wire.shape.embed.openai.base64"
    } else {
        "wire.shape.embed.openai.float"
    };
    (body, mark)
}

fn ollama_body(
    ask: &Ask,
    vectors: &[Vec<f32>],
    tokens: u64,
    latency_ms: u64,
) -> (Value, &'static str) {
    if ask.inputs.is_empty() {
        // No inputs: `api.EmbedResponse{Model, Embeddings: [][]float32{}}`, the counts
        // omitted (`omitempty`).
        return (
            json!({"model": ask.model, "embeddings": []}),
            "wire.shape.embed.ollama",
        );
    }
    let body = json!({
        "model": ask.model,
        "embeddings": vectors,
        "total_duration": latency_ms * 1_000_000,
        "load_duration": 1_000_000,
        "prompt_eval_count": tokens,
    });
    (body, "wire.shape.embed.ollama")
}
