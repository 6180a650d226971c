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

pub use wire::{ChunkDecoder, MaxTokensField, finish_reason, parse_response, request_body};

use super::client::{ClientFormat, ClientFormatExt, WireClient, json_content_type};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::transport::HttpRequest;
use super::wire::exchange::Refused;

/// How to reach one model of an OpenAI-compatible server. `Debug` redacts the key, the
/// credentials in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The server, up to and including the version (`https://api.openai.com/v1`), the
    /// key (sent as a bearer token) if it wants one, the timeouts and extra headers
    /// (OpenRouter's `HTTP-Referer`, organisation ids).
    pub connection: Connection,
    /// The model and its limits (`model_ref.model` is the id sent to the server).
    pub model_ref: ModelRef,
    /// Which field carries `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// Ask for usage in the stream (`stream_options.include_usage`).
    pub stream_usage: bool,
}

impl OpenAiConfig {
    /// A config for `model_ref` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef) -> Self {
        Self {
            connection: connection.into(),
            model_ref,
            max_tokens_field: MaxTokensField::MaxTokens,
            stream_usage: true,
        }
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

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let model = self.model_for(request);
        let body = request_body(
            request,
            model,
            self.max_tokens_field,
            stream,
            self.stream_usage,
        );
        // A stream asks for an SSE body.
        let accept: &[(&str, &str)] = if stream {
            &[("accept", "text/event-stream")]
        } else {
            &[]
        };
        Ok(self
            .connection
            .post_json("/chat/completions", accept, KeyHeader::Bearer, &body))
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> ChunkDecoder {
        ChunkDecoder::new()
    }

    /// Its only secrets are the connection's.
    fn redactor(&self) -> Redactor {
        self.connection.redactor()
    }

    /// Its API does all a request asks: the one decoder.
    fn stream_decoder_for(&self, _request: &CompletionRequest) -> ChunkDecoder {
        self.stream_decoder()
    }

    /// Its API does all a request asks: the one parser.
    fn parse_response_for(
        &self,
        _request: &CompletionRequest,
        body: &str,
    ) -> Result<CompletionResponse, LlmError> {
        self.parse_response(body)
    }

    /// A server that ignored `stream: true` answers `application/json` (vLLM, llama.cpp); the stream is `text/event-stream`.
    fn is_whole_body(&self, content_type: Option<&str>) -> bool {
        json_content_type(content_type)
    }

    /// The shared classifier reads its envelopes (OpenAI's and every compatible server's).
    fn refusal(&self, refused: Refused) -> LlmError {
        refused.error
    }
}
