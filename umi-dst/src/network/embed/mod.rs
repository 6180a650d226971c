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

use std::time::Duration;

use serde_json::{Value, json};
use umi_core::llm::LlmError;
use umi_core::llm::embed::encode_base64_f32;
use umi_core::llm::transport::{HttpRequest, HttpResponse};

use super::format::Route;
use super::profile::Profile;
use super::{Served, SimNetwork, headers, server_format, whole_body};
use crate::embed::{EmbedModel, embed_model, embed_text};
use crate::fault::FaultKind;
use crate::fault::point::{self, unreachable_kind};
use crate::rng::DeterministicRng;
use crate::trace::TraceKind;
pub(crate) use gemini::GeminiEmbeddings;
pub(crate) use request::{Ask, Refuse};

/// Simulated time an embeddings request takes at least, in ms.
pub const EMBED_LATENCY_MS_MIN: u64 = 15;
/// The most the latency is drawn above [`EMBED_LATENCY_MS_MIN`], in ms.
pub const EMBED_LATENCY_JITTER_MS_MAX: u64 = 30;
/// Tokens embedded per ms of simulated time.
pub const EMBED_TOKENS_PER_MS: u64 = 2_000;

/// Every coverage mark the embeddings endpoints can hit.
pub const EMBED_MARKS: [&str; 8] = [
    "wire.shape.embed.openai.float",
    "wire.shape.embed.openai.base64",
    "wire.shape.embed.ollama",
    "wire.shape.embed.gemini.single",
    "wire.shape.embed.gemini.batch",
    "embed.fault.wrong_dimensions",
    "embed.fault.truncated",
    "embed.fault.missing",
];

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

/// The embeddings path under a base URL of `profile`'s server, if it serves one: its
/// format's, when the provider has an embeddings API ([`Profile::serves_embeddings`]).
pub fn embed_path(profile: Profile) -> Option<&'static str> {
    embed_wire(profile).map(|wire| wire.path())
}

/// The embeddings endpoint of `profile`'s server, if it has one.
fn embed_wire(profile: Profile) -> Option<&'static dyn EmbedWire> {
    if !profile.serves_embeddings() {
        return None;
    }
    profile.format().surface().embeddings()
}

/// Whether `rest` (a path below a server's root) is the embeddings path of a server of
/// `format` whose API is under `api_root` (`/v1`): `dst serve`'s routing.
pub fn serves(profile: Profile, api_root: &str, rest: &str) -> bool {
    embed_wire(profile).is_some_and(|wire| {
        rest.strip_prefix(api_root)
            .is_some_and(|below| wire.routes(below))
    })
}

/// Whether `path` (a recorded request's path, without its query) ends in `profile`'s
/// embeddings path, whatever the base URL's own path before it.
pub fn ends_in_embeddings(profile: Profile, path: &str) -> bool {
    embed_wire(profile).is_some_and(|wire| {
        path.char_indices()
            .filter(|(_, c)| *c == '/')
            .any(|(at, _)| wire.routes(&path[at..]))
    })
}

impl SimNetwork {
    /// The answer to `request` if it is for `served`'s embeddings path (`None`: it is
    /// not, and the format's own path handling goes on).
    pub(super) async fn embeddings(
        &self,
        served: &Served,
        request: &HttpRequest,
        rng: &DeterministicRng,
    ) -> Option<HttpResponse> {
        let wire = embed_wire(served.endpoint.profile)?;
        let path = request.url[served.endpoint.base_url.len()..]
            .split('?')
            .next()
            .unwrap_or("");
        if !wire.routes(path) {
            return None;
        }
        Some(
            self.embed_answer(served, request, path, wire, rng.fork("embed"))
                .await,
        )
    }

    async fn embed_answer(
        &self,
        served: &Served,
        request: &HttpRequest,
        path: &str,
        wire: &'static dyn EmbedWire,
        mut rng: DeterministicRng,
    ) -> HttpResponse {
        match self.embed_admit(served, request, path, wire) {
            Ok((ask, model)) => self.embed_vectors(served, &ask, model, wire, rng).await,
            Err(refuse) => {
                let asked = wire.asked_model(path, &request.body);
                self.embed_refusal(served, &asked, &refuse, &mut rng)
            }
        }
    }

    /// The request read and checked as the server does, with its model.
    fn embed_admit(
        &self,
        served: &Served,
        request: &HttpRequest,
        path: &str,
        wire: &'static dyn EmbedWire,
    ) -> Result<(Ask, &'static EmbedModel), Refuse> {
        if let Some(error) = served
            .endpoint
            .api_key
            .as_deref()
            .and_then(|key| headers::key_refusal(request, key))
        {
            return Err(Refuse { error, param: None });
        }
        let mut ask = wire.parse(path, &request.body)?;
        let model = embed_model(&ask.model).ok_or_else(|| Refuse {
            error: LlmError::ModelNotFound {
                status: Some(404),
                message: ask.model.clone(),
            },
            param: None,
        })?;
        wire.check(&mut ask, model)?;
        self.trace.emit(TraceKind::NetEmbed {
            model: ask.model.clone(),
            inputs: ask.inputs.len(),
            dimensions: ask.dimensions.unwrap_or(model.dimensions),
        });
        Ok((ask, model))
    }

    /// `refuse` in the format's envelope, for a request asking for `model`.
    fn embed_refusal(
        &self,
        served: &Served,
        model: &str,
        refuse: &Refuse,
        rng: &mut DeterministicRng,
    ) -> HttpResponse {
        let created_s = self.server_now_ms(served) / 1_000;
        let mut responder = server_format(served.endpoint.profile.format()).responder(
            served.endpoint.profile,
            served.server.clone(),
            rng.substream(1),
            created_s,
            model,
        );
        // Gemini names the method in its 404 (`... not supported for embedContent`).
        responder.routed(&Route {
            embed: true,
            ..Route::default()
        });
        self.refusal(served, responder, &refuse.error, refuse.param, rng)
            .0
    }

    async fn embed_vectors(
        &self,
        served: &Served,
        ask: &Ask,
        model: &'static EmbedModel,
        wire: &'static dyn EmbedWire,
        mut rng: DeterministicRng,
    ) -> HttpResponse {
        let fault = self.faults.decide(&point::LLM_EMBED);
        let refused = match fault {
            Some(FaultKind::LlmRateLimit) => Some(LlmError::RateLimit {
                retry_after_ms: Some(rng.range_inclusive(
                    crate::llm::FAULT_RETRY_AFTER_MS_MIN,
                    crate::llm::FAULT_RETRY_AFTER_MS_MAX,
                )),
            }),
            Some(FaultKind::LlmServiceUnavailable) => Some(LlmError::ServiceUnavailable {
                status: Some(503),
                message: "The server is overloaded (simulated).".into(),
            }),
            Some(FaultKind::LlmTimeout) => {
                // The server never answers; only the client's own timeout ends this.
                std::future::pending::<()>().await;
                unreachable!("a pending future never completes")
            }
            _ => None,
        };
        if let Some(error) = refused {
            let refuse = Refuse { error, param: None };
            return self.embed_refusal(served, &ask.model, &refuse, &mut rng);
        }
        let dimensions = ask.dimensions.unwrap_or(model.dimensions);
        let mut vectors: Vec<Vec<f32>> = ask
            .inputs
            .iter()
            .map(|text| embed_text(model.name, text, dimensions))
            .collect();
        if let Some(kind) = fault
            && !vectors.is_empty()
        {
            self.corrupt(kind, &mut vectors, dimensions, &mut rng);
        }
        let tokens: u64 = ask
            .inputs
            .iter()
            .map(|t| u64::from(umi_core::llm::tokens::estimate_text_tokens(t)))
            .sum();
        let latency_ms = EMBED_LATENCY_MS_MIN
            + rng.range_inclusive(0, EMBED_LATENCY_JITTER_MS_MAX)
            + tokens / EMBED_TOKENS_PER_MS;
        self.clock.sleep(Duration::from_millis(latency_ms)).await;
        let (body, mark) = wire.body(ask, &vectors, tokens, latency_ms);
        umi_core::env::Environment::cover(self.env.as_ref(), mark);
        self.embed_success(served, &body, &mut rng)
    }

    fn embed_success(
        &self,
        served: &Served,
        body: &Value,
        rng: &mut DeterministicRng,
    ) -> HttpResponse {
        let created_s = self.server_now_ms(served) / 1_000;
        let mut responder = server_format(served.endpoint.profile.format()).responder(
            served.endpoint.profile,
            served.server.clone(),
            rng.substream(1),
            created_s,
            "",
        );
        let response_headers = self.response_headers(served, responder.as_mut(), 200, false, rng);
        let bytes = umi_core::canonical_json::to_vec(body);
        HttpResponse {
            status: 200,
            headers: response_headers,
            body: self.body_faults(whole_body(bytes)),
        }
    }

    /// Breaks the answer as `kind` says (see the module docs).
    fn corrupt(
        &self,
        kind: FaultKind,
        vectors: &mut Vec<Vec<f32>>,
        dimensions: u32,
        rng: &mut DeterministicRng,
    ) {
        let victim = rng.index(vectors.len().max(1));
        let mark = match kind {
            FaultKind::LlmEmbeddingWrongDimensions => {
                if let Some(vector) = vectors.get_mut(victim) {
                    if vector.len() > 1 && rng.bool_with(0.5) {
                        vector.pop();
                    } else {
                        vector.push(0.0);
                    }
                }
                "embed.fault.wrong_dimensions"
            }
            FaultKind::LlmEmbeddingTruncated => {
                let keep = rng.below(u64::from(dimensions).max(1)) as usize;
                if let Some(vector) = vectors.get_mut(victim) {
                    vector.truncate(keep.min(vector.len().saturating_sub(1)));
                }
                "embed.fault.truncated"
            }
            FaultKind::LlmEmbeddingMissing => {
                let keep = rng.below(vectors.len() as u64) as usize;
                vectors.truncate(keep);
                "embed.fault.missing"
            }
            other => unreachable_kind(&point::LLM_EMBED, other),
        };
        self.trace.emit(TraceKind::NetEmbedFault {
            fault: kind.name(),
            vector: victim,
        });
        umi_core::env::Environment::cover(self.env.as_ref(), mark);
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
