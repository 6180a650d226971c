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

mod head;
#[cfg(test)]
mod tests;
mod wire;

pub use wire::{EventDecoder, parse_response, request_body};

use super::client::{ClientFormat, ClientFormatExt, WireClient, json_content_type};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::stop::apply_stop;
use super::transport::HttpRequest;
use super::wire::exchange::Refused;
use super::wire::stop_filter::StopFilter;
use crate::llm::response::FinishReason;

/// How to reach one model through the Responses API. `Debug` redacts the key, the
/// credentials in the URL and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// The server, up to and including the version (`https://api.openai.com/v1`), the key
    /// (sent as a bearer token), the timeouts and extra headers (`OpenAI-Organization`,
    /// `OpenAI-Project`).
    pub connection: Connection,
    /// The model and its limits.
    pub model_ref: ModelRef,
    /// Ask reasoning models for a summary of their reasoning (`reasoning.summary`:
    /// `auto`, `concise` or `detailed`), streamed as reasoning.
    pub reasoning_summary: Option<String>,
}

impl ResponsesConfig {
    /// A config for `model_ref` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef) -> Self {
        Self {
            connection: connection.into(),
            model_ref,
            reasoning_summary: None,
        }
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

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let summary = self.reasoning_summary.as_deref();
        let body = request_body(request, self.model_for(request), summary, stream);
        Ok(self
            .connection
            .post_json("/responses", &[], KeyHeader::Bearer, &body))
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
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

    /// Its only secrets are the connection's.
    fn redactor(&self) -> Redactor {
        self.connection.redactor()
    }

    /// A JSON body where SSE was asked for is a whole answer (the stream is `text/event-stream`).
    fn is_whole_body(&self, content_type: Option<&str>) -> bool {
        json_content_type(content_type)
    }

    /// The shared classifier reads OpenAI's envelope, which it shares.
    fn refusal(&self, refused: Refused) -> LlmError {
        refused.error
    }
}
