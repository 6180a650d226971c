//! The seam a wire format plugs into on the server side: request parsing as the server
//! does it, and a [`Responder`] that writes one response (refusals in the provider's
//! envelope, whole answers, streams) in the shapes drawn from its profile. SimNetwork
//! (and anything else that serves a simulated model) is written once against this; a
//! new format is one module implementing [`ServerFormat`] and one line in
//! [`super::registry`] (docs/adr/0009-one-seam-per-wire-format.md).

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{CompletionRequest, CompletionResponse, LlmError, StreamEvent};

use super::profile::Profile;
use super::shapes::{HeaderSet, KeepAlive, RetryAfterForm};
use crate::rng::DeterministicRng;

/// A request as the server read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The provider-neutral request.
    pub request: CompletionRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Whether the client asked for usage in the stream.
    pub include_usage: bool,
    /// Whether the client asked to see the model's reasoning (Anthropic's `thinking`;
    /// the other formats show whatever reasoning the model streams).
    pub reasoning_requested: bool,
}

/// What a request's path (and query) says, for the format that owns it: every format
/// owns its one path (`/chat/completions`) and reads nothing from it; Gemini's paths
/// carry the model and the method (`/v1beta/models/{model}:streamGenerateContent`) and
/// its query the stream's framing (`?alt=sse`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// The model the path names (`None`: the body names it).
    pub model: Option<String>,
    /// Whether the path asks for a stream (`None`: the body says).
    pub stream: Option<bool>,
    /// Whether the query asks for SSE framing (`alt=sse`) rather than the format's own.
    pub sse: bool,
    /// Whether the path asks only for a token count (Gemini's `:countTokens`), which the
    /// server answers without the model.
    pub count_tokens: bool,
    /// Whether the path asks for embeddings (Gemini's `:batchEmbedContents`), whose
    /// refusals name that method.
    pub embed: bool,
}

/// A request the server refuses (HTTP 400 in the provider's envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// The field at fault, as a JSON path (`messages[2].content`), when there is one.
    pub param: Option<String>,
    /// What is wrong, in the provider's words.
    pub message: String,
}

/// What a stream encoder says after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// More may follow.
    Continue,
    /// The body is complete (after the end marker).
    End,
    /// The server closes the connection now, without its end marker.
    Close,
    /// The connection breaks (the client's read fails).
    Reset,
}

/// Writes one streamed body. No method has a default: a new format's encoder states
/// each (docs/adr/0009-one-seam-per-wire-format.md, "What a format gives").
pub(crate) trait StreamEncoder: Send {
    /// The bytes the server sends as soon as the stream opens, before the model's first
    /// event (Anthropic's `message_start`, the Responses API's `response.created`); a
    /// format whose first bytes answer the model's first event writes nothing. Source:
    /// a recorded stream of the provider (its SDK's fixtures).
    fn preamble(&mut self, out: &mut Vec<u8>);
    /// The bytes for `event`.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow;
    /// The bytes for an error after the 200.
    fn error(&mut self, error: &LlmError, out: &mut Vec<u8>) -> Flow;
    /// The comment the server sends while it waits, if it sends one.
    fn keep_alive(&self) -> Option<KeepAlive>;
    /// The shape marks used since the last call.
    fn marks(&mut self) -> Vec<&'static str>;
    /// The line end of the framing (`\n`, or `\r\n` for sse-starlette servers and
    /// Google's), which the comments [`StreamEncoder::keep_alive`] names end with.
    /// Source: the server's framing code or a byte-exact capture.
    fn line_end(&self) -> &'static str;
    /// `frame` (the bytes [`StreamEncoder::event`] wrote for one text event) with that
    /// event's JSON cut at a seeded byte while its framing stays whole, so the client's
    /// per-event JSON decode fails, not its framing (`None`: the frame has no JSON). A
    /// text framing cuts its last line's JSON and keeps its terminator
    /// ([`super::unparseable::cut_frame`]); a binary one writes a whole frame (lengths
    /// and checksums right) around a cut payload.
    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>>;
}

/// Writes one response of a format, in shapes drawn for it. No method has a default:
/// a new format's responder states each, so the compiler names every fact
/// (docs/adr/0009-one-seam-per-wire-format.md, "What a format gives").
pub(crate) trait Responder: Send {
    /// Status and body for a refusal: the model's error, or a request the server
    /// refused (`param` names the field). Source: the provider's documented error
    /// envelope and its captures.
    fn refusal(&mut self, error: &LlmError, param: Option<&str>) -> (u16, Vec<u8>);
    /// Told the request as the server read it, before any answer is written. A format
    /// that echoes the request in its answer (the Responses API's `response` object)
    /// keeps what it needs; the others ignore it.
    fn parsed(&mut self, parsed: &Parsed);
    /// The body of a whole answer.
    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8>;
    /// The encoder of a streamed answer to `parsed`.
    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder>;
    /// The content type of a whole answer, an error, or a stream.
    fn content_type(&self, stream: bool) -> &'static str;
    /// The Retry-After form of a 429 (`None`: this server never sends one).
    fn retry_after(&self) -> Option<RetryAfterForm>;
    /// The headers the server adds.
    fn header_set(&self) -> HeaderSet;
    /// The shape marks of what was written so far.
    fn marks(&mut self) -> Vec<&'static str>;
    /// Headers only this format's server sends, beyond [`Responder::header_set`]'s
    /// (Anthropic's `request-id`, which its error bodies repeat; Google's
    /// `server: scaffolding on HTTPServer2`); empty when it sends none. Source: a captured
    /// response's headers.
    fn own_headers(&mut self, status: u16, server_now_ms: u64) -> Vec<(String, String)>;
    /// Whether this server sends a streamed request's refusal inside a 200 stream (TGI
    /// 2.0's validation errors, the Responses API's `response.failed`), rather than as
    /// an HTTP error. Source: the server's code or a capture.
    fn refuses_in_stream(&self) -> bool;
    /// Whether a 429's body says how long to wait (Gemini's `google.rpc.RetryInfo`), so
    /// a client that reads it waits what the server meant even with no Retry-After.
    /// Source: the provider's error reference.
    fn wait_in_body(&self) -> bool;
    /// Told what the request's path says, before any refusal is written (Gemini wraps a
    /// JSON-array stream's refusal in an array); a format whose path says nothing (it
    /// owns one path) ignores it.
    fn routed(&mut self, route: &Route);
    /// The body of an answer the server writes without the model (Gemini's
    /// `:countTokens`), if this request gets one; `None` for every request of a format
    /// whose every operation asks the model.
    fn own_answer(&mut self, parsed: &Parsed) -> Option<Vec<u8>>;
}

/// The route of a format that owns the one path `own`.
pub(crate) fn one_path(own: &str, path: &str) -> Option<Route> {
    (path == own).then(Route::default)
}

/// One wire format, as a server speaks it.
pub(crate) trait ServerFormat: super::surface::Surface + Send + Sync {
    /// The path of its main operation under its API root, as people write it
    /// (`/chat/completions`; Gemini's `/v1beta/models/{model}:generateContent`). Which
    /// paths a server serves is [`ServerFormat::route`]'s to say.
    fn path(&self) -> &'static str;
    /// What `path` (under the endpoint's base URL) and `query` say, when this format's
    /// server serves that path (`None`: a 404). Most formats own their one path.
    fn route(&self, path: &str, query: Option<&str>) -> Option<Route>;
    /// Whether the query string carries meaning (a key, the framing), so a server in
    /// front must pass it on (`dst serve`).
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    fn reads_query(&self) -> bool;
    /// Parses a request (its body, and the headers a server requires) as `profile`'s
    /// server does.
    fn parse(&self, request: &HttpRequest, profile: Profile) -> Result<Parsed, RequestError>;
    /// A responder for one response of `profile`. What a server version fixes (its
    /// layout, framing, envelopes) is drawn from `server`, the same stream for every
    /// response of one endpoint; what varies per response (ids, padding) from `response`.
    fn responder(
        &self,
        profile: Profile,
        server: DeterministicRng,
        response: DeterministicRng,
        created_s: u64,
        model: &str,
    ) -> Box<dyn Responder>;
}
