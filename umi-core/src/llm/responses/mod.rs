//! OpenAI's Responses API (`POST /v1/responses`): the format OpenAI's newer agent code
//! speaks instead of chat completions.
//!
//! The conversation goes out as `input` items (messages, `function_call` and
//! `function_call_output`), system prompts as `instructions`, tools flat
//! (`{"type": "function", name, parameters, strict}`), the output limit as
//! `max_output_tokens`, a schema as `text.format`. State kept by the server
//! (`previous_response_id`, `store`) is left to the caller: each request carries the
//! whole conversation. The API takes no stop sequences, so this client applies the
//! request's own ([`crate::llm::wire::stop_filter`]).
//!
//! Streams are named SSE events with a `sequence_number` from 0; see [`EventDecoder`] for what
//! each becomes. The format plugs into [`crate::llm::client::WireClient`] through
//! [`ClientFormat`], implemented by [`ResponsesConfig`].

#[cfg(test)]
mod tests;
mod wire;

use std::fmt;
use std::time::Duration;

pub use wire::{EventDecoder, parse_response, request_body};

use super::client::{ClientFormat, Timeouts, WireClient};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::{ApiKey, Redactor, redact_headers, redact_url};
use super::stop::apply_stop;
use super::transport::HttpRequest;
use super::wire::stop_filter::StopFilter;
use crate::constants::HTTP_TIMEOUT_MS_DEFAULT;
use crate::llm::response::FinishReason;

/// How to reach one model through the Responses API. `Debug` redacts the key, the
/// credentials in the URL and secret headers.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// Base URL, up to and including the version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key (sent as a bearer token).
    pub api_key: Option<ApiKey>,
    /// The model and its limits.
    pub model_ref: ModelRef,
    /// Time to the response's headers.
    pub timeout: Duration,
    /// Time allowed between body chunks.
    pub idle_timeout: Duration,
    /// Ask reasoning models for a summary of their reasoning (`reasoning.summary`:
    /// `auto`, `concise` or `detailed`), streamed as reasoning.
    pub reasoning_summary: Option<String>,
    /// Extra headers (`OpenAI-Organization`, `OpenAI-Project`).
    pub extra_headers: Vec<(String, String)>,
}

impl ResponsesConfig {
    /// A config for `model_ref` at `base_url`, with the default timeouts.
    pub fn new(base_url: impl Into<String>, model_ref: ModelRef) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model_ref,
            timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            idle_timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            reasoning_summary: None,
            extra_headers: Vec::new(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }
}

impl fmt::Debug for ResponsesConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponsesConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("model_ref", &self.model_ref)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("reasoning_summary", &self.reasoning_summary)
            .field("extra_headers", &redact_headers(&self.extra_headers))
            .finish()
    }
}

/// A client for one model through the Responses API.
pub type ResponsesClient = WireClient<ResponsesConfig>;

/// The stream decoder of one request: the Responses events, cut at its stop sequences.
pub type ResponsesDecoder = StopFilter<EventDecoder>;

impl ClientFormat for ResponsesConfig {
    type Decoder = ResponsesDecoder;

    fn format_name(&self) -> &'static str {
        "openai_responses"
    }

    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    fn timeouts(&self) -> Timeouts {
        Timeouts {
            request: self.timeout,
            idle: self.idle_timeout,
        }
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let model = if request.model.is_empty() {
            &self.model_ref.model
        } else {
            &request.model
        };
        let body = request_body(request, model, self.reasoning_summary.as_deref(), stream);
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = &self.api_key {
            headers.push((
                "authorization".to_owned(),
                format!("Bearer {}", key.expose()),
            ));
        }
        headers.extend(self.extra_headers.iter().cloned());
        Ok(HttpRequest {
            method: "POST",
            url: format!("{}/responses", self.base_url.trim_end_matches('/')),
            headers,
            body: crate::canonical_json::to_vec(&body),
        })
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn redactor(&self) -> Redactor {
        Redactor::new()
            .with_key(self.api_key.as_ref())
            .with_url(&self.base_url)
            .with_headers(&self.extra_headers)
    }

    fn stream_decoder(&self) -> ResponsesDecoder {
        StopFilter::new(EventDecoder::new(), &[])
    }

    fn stream_decoder_for(&self, request: &CompletionRequest) -> ResponsesDecoder {
        StopFilter::new(EventDecoder::new(), &request.stop)
    }

    fn parse_response_for(
        &self,
        request: &CompletionRequest,
        body: &str,
    ) -> Result<CompletionResponse, LlmError> {
        let mut response = parse_response(body, &self.model_ref.model)?;
        let (kept, stopped) = apply_stop(&response.text, &request.stop);
        if stopped {
            response.text = kept.to_owned();
            response.tool_calls.clear();
            response.finish_reason = FinishReason::Stop;
        }
        Ok(response)
    }
}
