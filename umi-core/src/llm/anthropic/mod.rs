//! The Anthropic Messages format (`POST /v1/messages`): Claude through its own API.
//!
//! Requests carry `x-api-key` and `anthropic-version`; the system prompt goes apart from
//! the messages; tool results are `tool_result` blocks in a user turn (with `is_error`);
//! tools have an `input_schema`; `max_tokens` is required by the API, so a request
//! without one (and no default in the config) is refused before anything is sent.
//! Streams are named SSE events (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`); see [`EventDecoder`] for how each maps to stream events.
//! The format plugs into [`crate::llm::client::WireClient`] through [`ClientFormat`],
//! implemented by [`AnthropicConfig`].

#[cfg(test)]
mod tests;
mod wire;

use std::fmt;
use std::time::Duration;

pub use wire::{EventDecoder, parse_response, request_body, stop_reason};

use super::client::{ClientFormat, Timeouts, WireClient};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::{ApiKey, Redactor, redact_headers, redact_url};
use super::transport::HttpRequest;
use crate::constants::HTTP_TIMEOUT_MS_DEFAULT;

/// The API version header this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach one Claude model. `Debug` redacts the key, the credentials in the URL
/// and secret headers.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The API's base URL, without the version path (`https://api.anthropic.com`).
    pub base_url: String,
    /// The API key (sent as `x-api-key`).
    pub api_key: Option<ApiKey>,
    /// The model and its limits.
    pub model_ref: ModelRef,
    /// Time to the response's headers.
    pub timeout: Duration,
    /// Time allowed between body chunks.
    pub idle_timeout: Duration,
    /// `max_tokens` for requests that set none (the API requires one); `None`: such a
    /// request is refused.
    pub default_max_tokens: Option<u32>,
    /// Extra headers (`anthropic-beta`).
    pub extra_headers: Vec<(String, String)>,
}

impl AnthropicConfig {
    /// A config for `model_ref` at `base_url`, with the default timeouts and
    /// `max_tokens` defaulting to the model's own limit.
    pub fn new(base_url: impl Into<String>, model_ref: ModelRef) -> Self {
        let default_max_tokens = Some(model_ref.max_output_tokens);
        Self {
            base_url: base_url.into(),
            api_key: None,
            model_ref,
            timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            idle_timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            default_max_tokens,
            extra_headers: Vec::new(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("model_ref", &self.model_ref)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("default_max_tokens", &self.default_max_tokens)
            .field("extra_headers", &redact_headers(&self.extra_headers))
            .finish()
    }
}

/// A client for one Claude model.
pub type AnthropicClient = WireClient<AnthropicConfig>;

impl ClientFormat for AnthropicConfig {
    type Decoder = EventDecoder;

    fn format_name(&self) -> &'static str {
        "anthropic"
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
        let max_tokens = request
            .max_tokens
            .or(self.default_max_tokens)
            .ok_or_else(|| LlmError::InvalidPrompt {
                reason: "max_tokens is required by the Anthropic Messages API: set it on the request, or default_max_tokens in AnthropicConfig".into(),
            })?;
        let body = request_body(request, model, max_tokens, stream);
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key".to_owned(), key.expose().to_owned()));
        }
        headers.extend(self.extra_headers.iter().cloned());
        Ok(HttpRequest {
            method: "POST",
            url: format!("{}/v1/messages", self.base_url.trim_end_matches('/')),
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

    fn stream_decoder(&self) -> EventDecoder {
        EventDecoder::new()
    }
}
