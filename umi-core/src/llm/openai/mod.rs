//! The OpenAI-compatible client: one client for OpenAI, DeepSeek, Qwen (compatible
//! mode), GLM, OpenRouter, vLLM, the llama.cpp server and Ollama's `/v1`.
//!
//! `stream` posts with `"stream": true` (and `stream_options.include_usage`) and decodes
//! the SSE body; `complete` posts without streaming and parses the whole body. Errors
//! are mapped by status, body and headers (see [`crate::llm::wire::errors`]); timeouts
//! (to the headers, and between body chunks) run on the injected environment's clock.

mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use wire::{ChunkDecoder, MaxTokensField, finish_reason, parse_response, request_body};

use super::error::LlmError;
use super::event::EventStream;
use super::provider::LanguageModel;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::transport::{HttpRequest, HttpResponse, Transport};
use super::wire::exchange;
use super::wire::reader::{events, read_body};
use crate::constants::{HTTP_BODY_BYTES_MAX, HTTP_TIMEOUT_MS_DEFAULT};
use crate::env::Env;

/// How to reach one model of an OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL, up to and including the version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key (sent as a bearer token), if the server wants one.
    pub api_key: Option<String>,
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
        self.api_key = Some(key.into());
        self
    }
}

/// A client for one model of an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    config: OpenAiConfig,
    transport: Arc<dyn Transport>,
    env: Env,
}

impl OpenAiClient {
    /// A client speaking through `transport`, timing with `env`.
    pub fn new(config: OpenAiConfig, transport: Arc<dyn Transport>, env: Env) -> Self {
        Self {
            config,
            transport,
            env,
        }
    }

    /// The config.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn http_request(&self, request: &CompletionRequest, stream: bool) -> HttpRequest {
        let model = if request.model.is_empty() {
            &self.config.model_ref.model
        } else {
            &request.model
        };
        let body = request_body(
            request,
            model,
            self.config.max_tokens_field,
            stream,
            self.config.stream_usage,
        );
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if stream {
            headers.push(("accept".to_owned(), "text/event-stream".to_owned()));
        }
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        headers.extend(self.config.extra_headers.iter().cloned());
        HttpRequest {
            method: "POST",
            url: format!(
                "{}/chat/completions",
                self.config.base_url.trim_end_matches('/')
            ),
            headers,
            body: body.to_string().into_bytes(),
        }
    }

    /// Sends and returns the response if its status is 2xx, the mapped error otherwise.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, LlmError> {
        let (timeout, idle) = (self.config.timeout, self.config.idle_timeout);
        exchange::send(self.transport.as_ref(), &self.env, request, timeout, idle)
            .await
            .map_err(|refused| refused.error)
    }
}

#[async_trait]
impl LanguageModel for OpenAiClient {
    fn model_ref(&self) -> &ModelRef {
        &self.config.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        request.validate()?;
        let response = self.send(self.http_request(request, true)).await?;
        let is_json = response
            .header("content-type")
            .is_some_and(|t| t.contains("application/json"));
        if is_json {
            // A server that ignored `stream: true`: read the whole answer and replay it.
            let body = read_body(
                response.body,
                &self.env,
                self.config.idle_timeout,
                HTTP_BODY_BYTES_MAX,
            )
            .await?;
            let parsed = parse_response(
                &String::from_utf8_lossy(&body),
                &self.config.model_ref.model,
            )?;
            return Ok(super::event_replay::replay(parsed));
        }
        events(
            response.body,
            ChunkDecoder::new(),
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
        let text = String::from_utf8(body).map_err(|e| LlmError::InvalidResponse {
            reason: "the response is not UTF-8".into(),
            snippet: String::from_utf8_lossy(e.as_bytes())
                .chars()
                .take(100)
                .collect(),
        })?;
        parse_response(&text, &self.config.model_ref.model)
    }
}
