//! The simulated servers' embeddings endpoints, served: SimNetwork's answer to a request
//! for an endpoint's embeddings path (refusals in the format's own envelope, the
//! `llm.embed` faults, the latency), using the provider's [`super::embed::EmbedWire`]
//! for what the body says. The wires (what each provider reads and writes) are in
//! [`super::embed`], below the formats; this is above them, beside the registry.

use std::time::Duration;

use serde_json::Value;
use umi_core::llm::LlmError;
use umi_core::llm::transport::{HttpRequest, HttpResponse};

use super::embed::{
    Ask, EMBED_LATENCY_JITTER_MS_MAX, EMBED_LATENCY_MS_MIN, EMBED_TOKENS_PER_MS, EmbedWire, Refuse,
};
use super::format::{Responder, Route};
use super::registry::{embed_wire, server_format};
use super::{Served, SimNetwork, headers, whole_body};
use crate::embed::{EmbedModel, embed_model, embed_text};
use crate::fault::FaultKind;
use crate::fault::LlmKind;
use crate::fault::point::{self, unreachable_kind};
use crate::rng::DeterministicRng;
use crate::rng::streams::request;
use crate::trace::NetEvent;

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
            self.embed_answer(served, request, path, wire, rng.stream(request::EMBED))
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
        if let Some(error) = served.endpoint.api_key.as_deref().and_then(|key| {
            headers::key_refusal(served.endpoint.profile.format().surface(), request, key)
        }) {
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
        self.trace.emit(NetEvent::Embed {
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
        let mut responder = self.embed_responder(served, model, rng);
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
        let refused = match fault.and_then(FaultKind::llm) {
            Some(LlmKind::RateLimit) => Some(LlmError::RateLimit {
                retry_after_ms: Some(rng.range_inclusive(
                    crate::llm::FAULT_RETRY_AFTER_MS_MIN,
                    crate::llm::FAULT_RETRY_AFTER_MS_MAX,
                )),
            }),
            Some(LlmKind::ServiceUnavailable) => Some(LlmError::ServiceUnavailable {
                status: Some(503),
                message: "The server is overloaded (simulated).".into(),
            }),
            Some(LlmKind::Timeout) => {
                // The server never answers; only the client's own timeout ends this.
                std::future::pending::<()>().await;
                unreachable!("a pending future never completes")
            }
            // No fault, or one that breaks the answer (`corrupt`, below), or (listed so
            // that a new kind is decided here) one not drawn at `llm.embed`.
            None
            | Some(
                LlmKind::EmbeddingWrongDimensions
                | LlmKind::EmbeddingTruncated
                | LlmKind::EmbeddingMissing
                | LlmKind::ContextOverflow
                | LlmKind::InvalidResponse
                | LlmKind::StreamCut
                | LlmKind::ContentFilter
                | LlmKind::ModelNotFound
                | LlmKind::WrongContent,
            ) => None,
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

    /// The format's responder for one embeddings answer to `model` ("" for a success,
    /// whose body the embeddings wire writes), its per-response stream the request's
    /// substream 1.
    fn embed_responder(
        &self,
        served: &Served,
        model: &str,
        rng: &mut DeterministicRng,
    ) -> Box<dyn Responder> {
        let created_s = self.server_now_ms(served) / 1_000;
        server_format(served.endpoint.profile.format()).responder(
            served.endpoint.profile,
            served.server.clone(),
            rng.substream(request::EMBED_RESPONDER),
            created_s,
            model,
        )
    }

    fn embed_success(
        &self,
        served: &Served,
        body: &Value,
        rng: &mut DeterministicRng,
    ) -> HttpResponse {
        let mut responder = self.embed_responder(served, "", rng);
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
        let mark = match kind.llm() {
            Some(LlmKind::EmbeddingWrongDimensions) => {
                if let Some(vector) = vectors.get_mut(victim) {
                    if vector.len() > 1 && rng.bool_with(0.5) {
                        vector.pop();
                    } else {
                        vector.push(0.0);
                    }
                }
                "embed.fault.wrong_dimensions"
            }
            Some(LlmKind::EmbeddingTruncated) => {
                let keep = rng.below(u64::from(dimensions).max(1)) as usize;
                if let Some(vector) = vectors.get_mut(victim) {
                    vector.truncate(keep.min(vector.len().saturating_sub(1)));
                }
                "embed.fault.truncated"
            }
            Some(LlmKind::EmbeddingMissing) => {
                let keep = rng.below(vectors.len() as u64) as usize;
                vectors.truncate(keep);
                "embed.fault.missing"
            }
            // Refusals are answered before an answer exists to break; the call kinds
            // and other domains' are not drawn at `llm.embed`.
            Some(
                LlmKind::Timeout
                | LlmKind::RateLimit
                | LlmKind::ServiceUnavailable
                | LlmKind::ContextOverflow
                | LlmKind::InvalidResponse
                | LlmKind::StreamCut
                | LlmKind::ContentFilter
                | LlmKind::ModelNotFound
                | LlmKind::WrongContent,
            )
            | None => unreachable_kind(&point::LLM_EMBED, kind),
        };
        self.trace.emit(NetEvent::EmbedFault {
            fault: kind.name(),
            vector: victim,
        });
        umi_core::env::Environment::cover(self.env.as_ref(), mark);
    }
}
