//! The Ollama native client: `/api/chat`, newline-delimited JSON streaming, tool calls,
//! `done_reason`, and `prompt_eval_count` / `eval_count` as usage.
//!
//! Ollama sends a tool call whole, in one chunk, without an id; the collector names it
//! `call_<index>`. A `done_reason` of `stop` after tool calls is reported as `tool_calls`.
//! Errors come as `{"error": "..."}`, in an HTTP error body or as an NDJSON line.

mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use wire::{NdjsonDecoder, ollama_error, parse_response, request_body};

use super::error::LlmError;
use super::event::EventStream;
use super::provider::LanguageModel;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::transport::{HttpRequest, HttpResponse, Transport};
use super::wire::exchange::{self, Refused};
use super::wire::reader::{events, read_body};
use crate::constants::{HTTP_BODY_BYTES_MAX, HTTP_TIMEOUT_MS_DEFAULT};
use crate::env::Env;

/// How to reach one model of an Ollama server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaConfig {
    /// The server (`http://localhost:11434`).
    pub base_url: String,
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
            model_ref,
            timeout,
            idle_timeout: timeout,
        }
    }
}

/// A client for one model of an Ollama server.
#[derive(Debug, Clone)]
pub struct OllamaClient {
    config: OllamaConfig,
    transport: Arc<dyn Transport>,
    env: Env,
}

impl OllamaClient {
    /// A client speaking through `transport`, timing with `env`.
    pub fn new(config: OllamaConfig, transport: Arc<dyn Transport>, env: Env) -> Self {
        Self {
            config,
            transport,
            env,
        }
    }

    fn http_request(&self, request: &CompletionRequest, stream: bool) -> HttpRequest {
        let model = if request.model.is_empty() {
            &self.config.model_ref.model
        } else {
            &request.model
        };
        HttpRequest {
            method: "POST",
            url: format!("{}/api/chat", self.config.base_url.trim_end_matches('/')),
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: request_body(request, model, stream)
                .to_string()
                .into_bytes(),
        }
    }

    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, LlmError> {
        let (timeout, idle) = (self.config.timeout, self.config.idle_timeout);
        exchange::send(self.transport.as_ref(), &self.env, request, timeout, idle)
            .await
            .map_err(|Refused { error, body }| {
                // Ollama's error bodies are `{"error": "text"}`: read the text for what
                // it says.
                let text = serde_json::from_str::<serde_json::Value>(&body).ok();
                match (&error, text) {
                    (LlmError::BadRequest { .. }, Some(value)) => value
                        .get("error")
                        .and_then(|e| e.as_str())
                        .map_or(error.clone(), |text| match ollama_error(text) {
                            LlmError::InvalidResponse { .. } => error.clone(),
                            specific => specific,
                        }),
                    _ => error,
                }
            })
    }
}

#[async_trait]
impl LanguageModel for OllamaClient {
    fn model_ref(&self) -> &ModelRef {
        &self.config.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        request.validate()?;
        let response = self.send(self.http_request(request, true)).await?;
        events(
            response.body,
            NdjsonDecoder::new(),
            self.env.clone(),
            self.config.idle_timeout,
        )
        .await
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        request.validate()?;
        let response = self.send(self.http_request(request, false)).await?;
        let body = read_body(
            response.body,
            &self.env,
            self.config.idle_timeout,
            HTTP_BODY_BYTES_MAX,
        )
        .await?;
        parse_response(
            &String::from_utf8_lossy(&body),
            &self.config.model_ref.model,
        )
    }
}
