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

pub use wire::{NdjsonDecoder, done_reason, parse_response, request_body};

use super::client::{ClientFormat, ClientFormatExt, WireClient};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::transport::HttpRequest;
use super::wire::exchange::Refused;

/// How to reach one model of an Ollama server. `Debug` redacts the key, the credentials
/// in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OllamaConfig {
    /// The server (`http://localhost:11434`); the key, sent as a bearer token, for a
    /// server that wants one (ollama.com, or a local server behind an authenticating
    /// proxy; a local server takes none); the timeouts (a cold model load can take a
    /// while) and extra headers.
    pub connection: Connection,
    /// The model and its limits.
    pub model_ref: ModelRef,
}

impl OllamaConfig {
    /// A config for `model_ref` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef) -> Self {
        Self {
            connection: connection.into(),
            model_ref,
        }
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

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let body = request_body(request, self.model_for(request), stream);
        Ok(self
            .connection
            .post_json("/api/chat", &[], KeyHeader::Bearer, &body))
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> NdjsonDecoder {
        NdjsonDecoder::new()
    }

    fn is_whole_body(&self, _content_type: Option<&str>) -> bool {
        // A whole answer and a stream's lines are both JSON objects; the decoder reads
        // either (a whole answer is one line with `"done": true`).
        false
    }

    /// Its only secrets are the connection's.
    fn redactor(&self) -> Redactor {
        self.connection.redactor()
    }

    /// Its API does all a request asks: the one decoder.
    fn stream_decoder_for(&self, _request: &CompletionRequest) -> NdjsonDecoder {
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

    /// The shared classifier reads its `{"error": "..."}`.
    fn refusal(&self, refused: Refused) -> LlmError {
        refused.error
    }
}
