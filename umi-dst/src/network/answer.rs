//! The answer of a simulated server to a request it admitted: the model's answer, whole
//! or streamed; a refusal when the model refused (in the HTTP status, or, for a server
//! that does so, inside a 200 stream); a 200 whose body does not parse when the model's
//! answer could not be (`llm.invalid_response`, [`super::unparseable`]); then the
//! headers, the body split into reads, and the body faults.

use futures::StreamExt;
use umi_core::llm::transport::HttpResponse;
use umi_core::llm::{CompletionResponse, FinishReason, LlmError};

use super::capture::Exchange;
use super::format::{Parsed, Responder};
use super::{Served, SimNetwork, reads, stream_body, whole_body};
use crate::rng::DeterministicRng;
use crate::rng::streams::request;

impl SimNetwork {
    /// The response to `parsed`, admitted by `served`'s server; `exchange` (when captured)
    /// learns the Retry-After a refusal meant.
    pub(super) async fn answer(
        &self,
        served: &Served,
        parsed: &Parsed,
        mut responder: Box<dyn Responder>,
        mut rng: DeterministicRng,
        exchange: Option<&mut Exchange>,
    ) -> HttpResponse {
        if let Some(body) = responder.own_answer(parsed) {
            // Answered by the server itself (Gemini's token count): no model, no stream.
            return self.server_answer(served, responder.as_mut(), body, &rng);
        }
        let model = &served.endpoint.model;
        let answer = if parsed.stream {
            model.stream(&parsed.request).await.map(Ok)
        } else {
            model.complete(&parsed.request).await.map(Err)
        };
        let answer = match answer {
            Err(LlmError::InvalidResponse { snippet, .. }) if !parsed.stream => {
                return self.unparseable(served, responder, &snippet, &rng);
            }
            Err(error) if parsed.stream && responder.refuses_in_stream() => {
                // This server sends a streamed request's refusal inside a 200 stream.
                Ok(futures::stream::iter([Err(error)]).boxed())
            }
            Err(error) => {
                let (response, meant) = self.refusal(served, responder, &error, None, &mut rng);
                if let Some(exchange) = exchange {
                    exchange.retry_after_meant_ms = meant;
                }
                return response;
            }
            Ok(answer) => answer,
        };
        let mut header_rng = rng.substream(request::HEADERS);
        let reads_rng = rng.substream(request::READS);
        let headers = self.response_headers(
            served,
            responder.as_mut(),
            200,
            parsed.stream,
            &mut header_rng,
        );
        let body = match answer {
            Err(whole) => {
                let body = responder.whole(&whole);
                self.cover_all(responder.marks());
                whole_body(body)
            }
            Ok(events) => {
                let encoder = responder.into_stream(parsed);
                let (env, pacing) = (self.env.clone(), rng.substream(request::STREAM_BODY));
                stream_body::body(events, encoder, self.clock.clone(), env, pacing)
            }
        };
        let body = reads::split(body, reads_rng, &self.env);
        HttpResponse {
            status: 200,
            headers,
            body: self.body_faults(body),
        }
    }

    /// A 200 whose whole body is the format's own for `snippet`, cut mid-JSON.
    fn unparseable(
        &self,
        served: &Served,
        mut responder: Box<dyn Responder>,
        snippet: &str,
        rng: &DeterministicRng,
    ) -> HttpResponse {
        let whole = CompletionResponse {
            text: snippet.to_owned(),
            tool_calls: Vec::new(),
            reasoning: None,
            finish_reason: FinishReason::Stop,
            usage: None,
            model: served.endpoint.model.model_ref().model.clone(),
        };
        let body = responder.whole(&whole);
        let body = super::unparseable::cut_document(&body, &mut rng.stream(request::UNPARSEABLE));
        umi_core::env::Environment::cover(self.env.as_ref(), "wire.unparseable_body");
        self.server_answer(served, responder.as_mut(), body, rng)
    }

    /// A 200 the server writes without the model (`body`), with its headers.
    fn server_answer(
        &self,
        served: &Served,
        responder: &mut dyn Responder,
        body: Vec<u8>,
        rng: &DeterministicRng,
    ) -> HttpResponse {
        let mut header_rng = rng.substream(request::HEADERS);
        let headers = self.response_headers(served, responder, 200, false, &mut header_rng);
        self.cover_all(responder.marks());
        let body = reads::split(whole_body(body), rng.substream(request::READS), &self.env);
        HttpResponse {
            status: 200,
            headers,
            body: self.body_faults(body),
        }
    }
}
