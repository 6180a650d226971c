//! The Ollama native client: `/api/chat`, newline-delimited JSON streaming, tool calls,
//! `done_reason`, and `prompt_eval_count` / `eval_count` as usage.
//!
//! Ollama sends a tool call whole, in one chunk, with its arguments as a JSON object
//! (and, in older versions, without an id: the collector names it `call_<index>`). A
//! `done_reason` of `stop` after tool calls is reported as `tool_calls`; other reasons
//! are mapped or kept raw. Errors come as `{"error": "..."}`, in an HTTP error body or as
//! an NDJSON line, and go through the shared classifier. The format plugs into
//! [`crate::llm::client::WireClient`] through [`ClientFormat`], implemented by
//! [`OllamaConfig`].

#[cfg(test)]
mod tests;
mod wire;

use std::fmt;
use std::time::Duration;

pub use wire::{NdjsonDecoder, done_reason, parse_response, request_body};

use super::client::{ClientFormat, Timeouts, WireClient};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::{ApiKey, Redactor, redact_url};
use super::transport::HttpRequest;
use crate::constants::HTTP_TIMEOUT_MS_DEFAULT;

/// How to reach one model of an Ollama server. `Debug` redacts the key and the
/// credentials in the URL.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OllamaConfig {
    /// The server (`http://localhost:11434`).
    pub base_url: String,
    /// The API key, sent as a bearer token, for a server that wants one (ollama.com, or
    /// a local server behind an authenticating proxy); a local server takes none.
    pub api_key: Option<ApiKey>,
    /// The model and its limits.
    pub model_ref: ModelRef,
    /// Time to the response's headers (a cold model load can take a while).
    pub timeout: Duration,
    /// Time allowed between body chunks.
    pub idle_timeout: Duration,
}

impl OllamaConfig {
    /// A config for `model_ref` at `base_url`, with the default timeouts.
    pub fn new(base_url: impl Into<String>, model_ref: ModelRef) -> Self {
        let timeout = Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT);
        Self {
            base_url: base_url.into(),
            api_key: None,
            model_ref,
            timeout,
            idle_timeout: timeout,
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }
}

impl fmt::Debug for OllamaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OllamaConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("model_ref", &self.model_ref)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// A client for one model of an Ollama server.
pub type OllamaClient = WireClient<OllamaConfig>;

impl ClientFormat for OllamaConfig {
    type Decoder = NdjsonDecoder;

    fn format_name(&self) -> &'static str {
        "ollama"
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
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = &self.api_key {
            headers.push((
                "authorization".to_owned(),
                format!("Bearer {}", key.expose()),
            ));
        }
        Ok(HttpRequest {
            method: "POST",
            url: format!("{}/api/chat", self.base_url.trim_end_matches('/')),
            headers,
            body: crate::canonical_json::to_vec(&request_body(request, model, stream)),
        })
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn redactor(&self) -> Redactor {
        Redactor::new()
            .with_key(self.api_key.as_ref())
            .with_url(&self.base_url)
    }

    fn stream_decoder(&self) -> NdjsonDecoder {
        NdjsonDecoder::new()
    }

    fn is_whole_body(&self, _content_type: Option<&str>) -> bool {
        // A whole answer and a stream's lines are both JSON objects; the decoder reads
        // either (a whole answer is one line with `"done": true`).
        false
    }
}
