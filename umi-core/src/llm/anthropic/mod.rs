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

mod head;
#[cfg(test)]
mod tests;
mod wire;

pub use wire::{EventDecoder, parse_response, request_body, stop_reason};

use super::client::{ClientFormat, ClientFormatExt, WireClient, json_content_type};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::transport::HttpRequest;
use super::wire::exchange::Refused;

/// The API version header this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach one Claude model. `Debug` redacts the key, the credentials in the URL
/// and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The server (`https://api.anthropic.com`, without the version path), the key
    /// (sent as `x-api-key`), the timeouts and extra headers (`anthropic-beta`).
    pub connection: Connection,
    /// The model and its limits.
    pub model_ref: ModelRef,
    /// `max_tokens` for requests that set none (the API requires one); `None`: such a
    /// request is refused.
    pub default_max_tokens: Option<u32>,
}

impl AnthropicConfig {
    /// A config for `model_ref` through `connection` (a base URL will do), with
    /// `max_tokens` defaulting to the model's own limit.
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef) -> Self {
        let default_max_tokens = Some(model_ref.max_output_tokens);
        Self {
            connection: connection.into(),
            model_ref,
            default_max_tokens,
        }
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

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let max_tokens = request
            .max_tokens
            .or(self.default_max_tokens)
            .ok_or_else(|| LlmError::InvalidPrompt {
                reason: "max_tokens is required by the Anthropic Messages API: set it on the request, or default_max_tokens in AnthropicConfig".into(),
            })?;
        let body = request_body(request, self.model_for(request), max_tokens, stream);
        Ok(self.connection.post_json(
            "/v1/messages",
            &[("anthropic-version", ANTHROPIC_VERSION)],
            KeyHeader::XApiKey,
            &body,
        ))
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> EventDecoder {
        EventDecoder::new()
    }

    /// Its only secrets are the connection's.
    fn redactor(&self) -> Redactor {
        self.connection.redactor()
    }

    /// Its API does all a request asks: the one decoder.
    fn stream_decoder_for(&self, _request: &CompletionRequest) -> EventDecoder {
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

    /// A JSON body where SSE was asked for is a whole answer (the stream is `text/event-stream`).
    fn is_whole_body(&self, content_type: Option<&str>) -> bool {
        json_content_type(content_type)
    }

    /// The shared classifier reads its `{"type": "error", "error": {...}}`.
    fn refusal(&self, refused: Refused) -> LlmError {
        refused.error
    }
}
