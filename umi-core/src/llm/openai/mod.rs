//! The OpenAI chat-completions format: one client for OpenAI, Azure OpenAI, DeepSeek,
//! Qwen (DashScope compatible mode), GLM, OpenRouter, vLLM, the llama.cpp server and
//! Ollama's `/v1`.
//!
//! `stream` posts with `"stream": true` (and `stream_options.include_usage`) and decodes
//! the SSE body; `complete` posts without streaming and parses the whole body. Errors
//! are mapped by the shared classifier (see [`crate::llm::wire::errors`]); timeouts
//! (to the headers, and between body chunks) run on the injected environment's clock.
//! The format plugs into [`crate::llm::client::WireClient`] through
//! [`ClientFormat`], implemented by [`OpenAiConfig`].

#[cfg(test)]
mod tests;
mod wire;

use std::fmt;
use std::time::Duration;

pub use wire::{ChunkDecoder, MaxTokensField, finish_reason, parse_response, request_body};

use super::client::{ClientFormat, Timeouts, WireClient};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::{ApiKey, Redactor, redact_headers, redact_url};
use super::transport::HttpRequest;
use crate::constants::HTTP_TIMEOUT_MS_DEFAULT;

/// How to reach one model of an OpenAI-compatible server. `Debug` redacts the key, the
/// credentials in the URL and secret headers.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// Base URL, up to and including the version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key (sent as a bearer token), if the server wants one.
    pub api_key: Option<ApiKey>,
    /// The model and its limits (`model_ref.model` is the id sent to the server).
    pub model_ref: ModelRef,
    /// Time to the response's headers.
    pub timeout: Duration,
    /// Time allowed between body chunks.
    pub idle_timeout: Duration,
    /// Which field carries `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// Ask for usage in the stream (`stream_options.include_usage`).
    pub stream_usage: bool,
    /// Extra headers (OpenRouter's `HTTP-Referer`, organisation ids).
    pub extra_headers: Vec<(String, String)>,
}

impl OpenAiConfig {
    /// A config for `model_ref` at `base_url`, with the default timeouts.
    pub fn new(base_url: impl Into<String>, model_ref: ModelRef) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model_ref,
            timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            idle_timeout: Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT),
            max_tokens_field: MaxTokensField::MaxTokens,
            stream_usage: true,
            extra_headers: Vec::new(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("model_ref", &self.model_ref)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("stream_usage", &self.stream_usage)
            .field("extra_headers", &redact_headers(&self.extra_headers))
            .finish()
    }
}

/// A client for one model of an OpenAI-compatible server.
pub type OpenAiClient = WireClient<OpenAiConfig>;

impl ClientFormat for OpenAiConfig {
    type Decoder = ChunkDecoder;

    fn format_name(&self) -> &'static str {
        "openai"
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
        let body = request_body(
            request,
            model,
            self.max_tokens_field,
            stream,
            self.stream_usage,
        );
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if stream {
            headers.push(("accept".to_owned(), "text/event-stream".to_owned()));
        }
        if let Some(key) = &self.api_key {
            headers.push((
                "authorization".to_owned(),
                format!("Bearer {}", key.expose()),
            ));
        }
        headers.extend(self.extra_headers.iter().cloned());
        Ok(HttpRequest {
            method: "POST",
            url: format!("{}/chat/completions", self.base_url.trim_end_matches('/')),
            headers,
            body: crate::canonical_json::to_vec(&body),
        })
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> ChunkDecoder {
        ChunkDecoder::new()
    }

    fn redactor(&self) -> Redactor {
        Redactor::new()
            .with_key(self.api_key.as_ref())
            .with_url(&self.base_url)
            .with_headers(&self.extra_headers)
    }
}
