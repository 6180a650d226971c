//! One HTTP client for every wire format: the seam a format plugs into.
//!
//! A wire format is one module implementing [`ClientFormat`]: how a request becomes
//! HTTP, how a whole body becomes a response, and which [`WireDecoder`] reads a streamed
//! one. Everything around that is the same for every format and lives here once: request
//! validation, the exchange under the request timeout, error mapping by the shared
//! classifier (`wire::errors`), the bounded body read under the idle timeout, UTF-8
//! checking, the server that answers a streaming request with one JSON body, and the
//! redaction of the client's secrets (its [`ClientFormat::redactor`]) from every error
//! it returns or streams, so a server that echoes the key cannot leak it. Adding
//! a format is that module plus one line in [`crate::llm::registry`]
//! (docs/adr/0009-one-seam-per-wire-format.md).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;

use super::connection::Connection;
use super::connection::Timeouts;
use super::error::{LlmError, snippet};
use super::event::EventStream;
use super::provider::LanguageModel;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::transport::{HttpRequest, Transport};
use super::wire::exchange::{self, Refused};
use super::wire::reader::{WireDecoder, events, read_body};
use crate::constants::HTTP_BODY_BYTES_MAX;
use crate::env::Env;

/// One wire format, as a client speaks it. Implemented by each format's config type
/// (`OpenAiConfig`, `OllamaConfig`), which knows the server, the model and the options.
///
/// No method has a default: a new format states each, so the compiler names every fact
/// it must give (docs/adr/0009-one-seam-per-wire-format.md, "What a format gives").
/// What every format does alike (its timeouts, the model a request is sent with) is
/// [`ClientFormatExt`]'s, for every format at once.
pub trait ClientFormat: Send + Sync + fmt::Debug + 'static {
    /// The streamed body's decoder.
    type Decoder: WireDecoder;

    /// The format's name in errors and traces (`openai`, `ollama`).
    fn format_name(&self) -> &'static str;

    /// The model this client asks for, and its limits.
    fn model_ref(&self) -> &ModelRef;

    /// Where the client sends its requests: the server, the key, the timeouts.
    fn connection(&self) -> &Connection;

    /// The HTTP request for `request` (already validated), streamed or not: the path,
    /// the format's own headers, the key in its header ([`Connection::post_json`]), the
    /// body. An `Err` is a request this format cannot send (it never reaches the
    /// network). Source: the provider's API reference and its official SDK.
    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError>;

    /// A whole (non-streamed) response body, as UTF-8 text.
    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError>;

    /// A decoder for a streamed body.
    fn stream_decoder(&self) -> Self::Decoder;

    /// The redactor of this config's secrets, through which every error the client
    /// hands back passes: its key, the credentials in its URL and its secret headers
    /// (the connection's [`Connection::redactor`], which is what a format whose only
    /// secrets are the connection's returns), plus any secret of the format's own.
    fn redactor(&self) -> Redactor;

    /// A decoder for the streamed answer to `request`: [`ClientFormat::stream_decoder`]'s
    /// for a format whose API does all the request asks, or one that applies the part
    /// its API lacks (the Responses API's stop sequences).
    fn stream_decoder_for(&self, request: &CompletionRequest) -> Self::Decoder;

    /// The whole answer to `request` in `body` ([`ClientFormat::parse_response`]'s, or
    /// with what the API lacks applied, as [`ClientFormat::stream_decoder_for`]).
    fn parse_response_for(
        &self,
        request: &CompletionRequest,
        body: &str,
    ) -> Result<CompletionResponse, LlmError>;

    /// The error a refused request (a non-2xx answer, or none) is: `refused.error`, the
    /// shared classifier's reading of its status, headers and body (`wire::errors`),
    /// for a format whose envelope that classifier reads; or the format's own reading,
    /// for one whose error kind it cannot see (a kind carried in a header). Source: the
    /// provider's error reference and captured error responses.
    fn refusal(&self, refused: Refused) -> LlmError;

    /// Whether a 2xx answer to a streaming request is one whole JSON body (a server that
    /// ignored `stream: true`), by its content type ([`json_content_type`] for a format
    /// whose stream is not JSON; `false` where a whole body and the stream read alike,
    /// as Ollama's NDJSON). Source: the server's code (what it answers a stream request
    /// it cannot stream).
    fn is_whole_body(&self, content_type: Option<&str>) -> bool;
}

/// What every [`ClientFormat`] does alike, once for all of them.
pub trait ClientFormatExt: ClientFormat {
    /// The client's timeouts: the connection's.
    fn timeouts(&self) -> Timeouts {
        self.connection().timeouts()
    }

    /// The model id `request` is sent with: its own, or this config's when it names none.
    fn model_for<'a>(&'a self, request: &'a CompletionRequest) -> &'a str {
        if request.model.is_empty() {
            &self.model_ref().model
        } else {
            &request.model
        }
    }
}

impl<F: ClientFormat + ?Sized> ClientFormatExt for F {}

/// Whether `content_type` is JSON: a whole body where a stream was asked for, for the
/// formats whose streams are SSE ([`ClientFormat::is_whole_body`]).
pub fn json_content_type(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| t.contains("application/json"))
}

/// A client for one model, in the wire format `F`.
#[derive(Debug, Clone)]
pub struct WireClient<F> {
    format: F,
    transport: Arc<dyn Transport>,
    env: Env,
    redactor: Arc<Redactor>,
}

impl<F: ClientFormat> WireClient<F> {
    /// A client speaking `format` through `transport`, timing with `env`.
    pub fn new(format: F, transport: Arc<dyn Transport>, env: Env) -> Self {
        let redactor = Arc::new(format.redactor());
        Self {
            format,
            transport,
            env,
            redactor,
        }
    }

    /// The format's config.
    pub fn config(&self) -> &F {
        &self.format
    }

    async fn send(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<super::transport::HttpResponse, LlmError> {
        request.validate()?;
        let http = self.format.http_request(request, stream)?;
        let Timeouts { request, idle } = self.format.timeouts();
        exchange::send(self.transport.as_ref(), &self.env, http, request, idle)
            .await
            .map_err(|refused| self.format.refusal(refused))
    }

    async fn whole_body(&self, body: super::transport::BodyStream) -> Result<String, LlmError> {
        let idle = self.format.timeouts().idle;
        let bytes = read_body(body, &self.env, idle, HTTP_BODY_BYTES_MAX).await?;
        String::from_utf8(bytes).map_err(|error| LlmError::InvalidResponse {
            reason: "the response body is not UTF-8".into(),
            snippet: snippet(&String::from_utf8_lossy(error.as_bytes())),
        })
    }
}

#[async_trait]
impl<F: ClientFormat> LanguageModel for WireClient<F> {
    fn model_ref(&self) -> &ModelRef {
        self.format.model_ref()
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        let events = self
            .stream_unredacted(request)
            .await
            .map_err(|error| self.redactor.redact_error(error))?;
        let redactor = self.redactor.clone();
        Ok(events
            .map(move |item| item.map_err(|error| redactor.redact_error(error)))
            .boxed())
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        self.complete_unredacted(request)
            .await
            .map_err(|error| self.redactor.redact_error(error))
    }
}

impl<F: ClientFormat> WireClient<F> {
    async fn stream_unredacted(
        &self,
        request: &CompletionRequest,
    ) -> Result<EventStream, LlmError> {
        let response = self.send(request, true).await?;
        if self.format.is_whole_body(response.header("content-type")) {
            let text = self.whole_body(response.body).await?;
            let parsed = self.format.parse_response_for(request, &text)?;
            return Ok(super::event_replay::replay(parsed));
        }
        let idle = self.format.timeouts().idle;
        events(
            response.body,
            self.format.stream_decoder_for(request),
            self.env.clone(),
            idle,
        )
        .await
    }

    async fn complete_unredacted(
        &self,
        request: &CompletionRequest,
    ) -> Result<CompletionResponse, LlmError> {
        let response = self.send(request, false).await?;
        let text = self.whole_body(response.body).await?;
        self.format.parse_response_for(request, &text)
    }
}
