//! Google's Gemini API (`models.generateContent`, `models.streamGenerateContent`):
//! Gemini models through their own REST API rather than an OpenAI-compatible shim, so
//! the finish reasons, safety blocks, cached and thinking token counts and Google's
//! error envelope (with its `RetryInfo` wait) reach the caller as they were sent.
//!
//! Requests go to `{base}/v1beta/models/{model}:generateContent`, or
//! `:streamGenerateContent?alt=sse` for a stream (googleapis/python-genai
//! `google/genai/models.py` at 66807187), with the key in `x-goog-api-key`. The base URL
//! is the API root without a version (`https://generativelanguage.googleapis.com`); one
//! that already ends in `/v1beta` or `/v1` is used as it is. A model may be given as
//! `gemini-2.5-flash` or `models/gemini-2.5-flash`.
//!
//! What the format cannot say, and what the client does instead:
//!
//! - Function calls usually carry no id. A call without one gets a deterministic id,
//!   `gemini-call-{n}` (`n` its position among the answer's calls), because the neutral
//!   [`crate::llm::ToolCall`] needs one to tie a result to its call. Such ids
//!   are never sent back (the API matches a response to its call by name); an id the
//!   API did send is.
//! - A function response names its function, not a call id: a tool result's name is
//!   the name of the call it answers, found by id among the assistant turns before it.
//! - Gemini 3 wants the thought signature of a step's first function call back with it,
//!   which the neutral history does not keep: that part is sent with the signature
//!   Google documents for calls it did not produce (`skip_thought_signature_validator`,
//!   ai.google.dev/gemini-api/docs/thought-signatures).
//! - `parallel_tool_calls` has no counterpart and is not sent; neither is any
//!   `thinkingConfig` (the neutral request has no reasoning setting).
//!
//! The format plugs into [`crate::llm::client::WireClient`] through [`ClientFormat`],
//! implemented by [`GeminiConfig`].

mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use stream::GeminiDecoder;
pub use wire::{SYNTHETIC_CALL_ID_PREFIX, finish_reason, parse_response, request_body};

use super::client::{ClientFormat, ClientFormatExt, WireClient, json_content_type};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::Redactor;
use super::transport::HttpRequest;
use super::wire::exchange::Refused;

/// The API version the paths name.
pub const GEMINI_API_VERSION: &str = "v1beta";

/// How to reach one Gemini model. `Debug` redacts the key, the credentials in the URL
/// (a `?key=` included) and secret headers (see [`Connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// The server (`https://generativelanguage.googleapis.com`, without the version),
    /// the key (sent as `x-goog-api-key`), the timeouts and extra headers.
    pub connection: Connection,
    /// The model and its limits (`model_ref.model`, `gemini-2.5-flash`, is the id in
    /// the path).
    pub model_ref: ModelRef,
}

impl GeminiConfig {
    /// A config for `model_ref` through `connection` (a base URL will do).
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef) -> Self {
        Self {
            connection: connection.into(),
            model_ref,
        }
    }

    /// The path below the base URL for `model`, streamed or not.
    pub fn path(&self, model: &str, stream: bool) -> String {
        let method = if stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        method_path(&self.connection.base_url, model, method)
    }
}

/// The path below `base_url` of `model`'s `method` (`/v1beta/models/m:embedContent`):
/// the API version added unless the base URL ends in one.
pub(crate) fn method_path(base_url: &str, model: &str, method: &str) -> String {
    let root = base_url.split('?').next().unwrap_or("");
    let base = root.trim_end_matches('/');
    let version = if base.ends_with("/v1beta") || base.ends_with("/v1") {
        String::new()
    } else {
        format!("/{GEMINI_API_VERSION}")
    };
    format!("{version}/models/{}:{method}", model_path_segment(model))
}

/// `model` as one path segment: without a leading `models/`, every byte but RFC 3986's
/// unreserved characters percent-encoded (a `/` or `:` in an id cannot change the
/// method called).
fn model_path_segment(model: &str) -> String {
    let id = model.strip_prefix("models/").unwrap_or(model);
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The URL of `path` below `base`, a query in `base` (`?key=...`, the API's other way
/// to take a key) moved after the path.
pub(crate) fn query_after_path(base: &str, path: &str) -> String {
    let (root, query) = match base.split_once('?') {
        Some((root, query)) => (root, Some(query)),
        None => (base, None),
    };
    let mut url = format!("{}{path}", root.trim_end_matches('/'));
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        url.push(if path.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    url
}

/// A client for one Gemini model.
pub type GeminiClient = WireClient<GeminiConfig>;

impl ClientFormat for GeminiConfig {
    type Decoder = GeminiDecoder;

    fn format_name(&self) -> &'static str {
        "gemini"
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
        let body = request_body(request)?;
        let path = self.path(self.model_for(request), stream);
        let mut http = self
            .connection
            .post_json(&path, &[], KeyHeader::XGoogApiKey, &body);
        http.url = query_after_path(&self.connection.base_url, &path);
        Ok(http)
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> GeminiDecoder {
        GeminiDecoder::new()
    }

    /// Its only secrets are the connection's.
    fn redactor(&self) -> Redactor {
        self.connection.redactor()
    }

    /// Its API does all a request asks: the one decoder.
    fn stream_decoder_for(&self, _request: &CompletionRequest) -> GeminiDecoder {
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

    /// A JSON body where a stream was asked for is a whole answer.
    fn is_whole_body(&self, content_type: Option<&str>) -> bool {
        json_content_type(content_type)
    }

    /// The shared classifier reads Google's envelope (`status`, `details`).
    fn refusal(&self, refused: Refused) -> LlmError {
        refused.error
    }
}
