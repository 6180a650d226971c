//! The server side of Amazon Bedrock's Converse API (`bedrock-runtime.{region}.
//! amazonaws.com`): paths that carry the model (`/model/{modelId}/converse` and
//! `/converse-stream`), SigV4-signed requests checked for shape and read as Converse
//! reads them ([`request`]), `ConverseResponse` bodies whole, streams as
//! `application/vnd.amazon.eventstream` binary messages ([`eventstream`], [`stream`]),
//! and errors as `{"message"}` with the exception in `x-amzn-errortype`, or an exception
//! message inside a stream ([`errors`]). Every fact about Bedrock lives in this module.
//!
//! Sources (the profile table's `BEDROCK-*` rows): BEDROCK-API, the Bedrock Runtime API
//! reference (`API_runtime_Converse`, `API_runtime_ConverseStream` and the types they
//! name); AWS docs "Create a signed AWS API request" (SigV4) and smithy.io "Amazon Event
//! Stream Specification"; botocore `tests/unit/test_eventstream.py` (encoded messages);
//! captures of Bedrock's errors quoted in issue threads (beside each, [`errors`]).
//!
//! A response's `x-amzn-requestid` is a UUID, its tool use ids `tooluse_` and 22
//! characters of URL-safe base64 (BEDROCK-API's examples, `tooluse_kZJMlvQmRJ6eAyJE5GIl7Q`),
//! and `metrics.latencyMs` the server's own count, drawn per response.

mod errors;
mod eventstream;
mod request;
mod stream;
mod surface;
#[cfg(test)]
mod tests;

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{CompletionResponse, FinishReason, LlmError, TokenUsage};

use super::format::{Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder};
use super::ids;
use super::json::{Json, Spacing};
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm};
use crate::rng::DeterministicRng;

/// Every mark the format can hit with the requests Umi's client sends.
pub(crate) const BEDROCK_MARKS: [&str; 3] = [
    "wire.shape.bedrock.tool_use",
    "wire.shape.bedrock.exception",
    "wire.shape.bedrock.stream_exception",
];

/// The Converse operation paths, below the endpoint: `/model/` and the two methods.
const MODEL_PREFIX: &str = "/model/";
const CONVERSE: &str = "/converse";
const CONVERSE_STREAM: &str = "/converse-stream";

/// The server's shortest and longest `latencyMs` (the model's own time; a few hundred
/// ms to seconds in BEDROCK-API's and the user guide's examples).
const LATENCY_MS_MIN: u64 = 200;
const LATENCY_MS_MAX: u64 = 4_000;

/// Tool use ids one response hands out at most (more calls reuse the last draw's shape).
const TOOL_USE_IDS_MAX: usize = 128;

/// Bedrock's Converse API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BedrockFormat;

impl ServerFormat for BedrockFormat {
    fn path(&self) -> &'static str {
        "/model/{modelId}/converse"
    }

    fn route(&self, path: &str, _query: Option<&str>) -> Option<Route> {
        route(path)
    }

    fn reads_query(&self) -> bool {
        false
    }

    /// A request with no URL (`dst serve` hashing a conversation read off the wire, which
    /// ignores the model and whether it streams) is read with neither.
    fn parse(&self, http: &HttpRequest, _profile: Profile) -> Result<Parsed, RequestError> {
        if http.url.is_empty() {
            return request::parse(http, "", false);
        }
        let route = route_of_url(&http.url).ok_or_else(|| RequestError {
            param: None,
            message: "The provided model identifier is invalid.".into(),
        })?;
        let model = route.model.unwrap_or_default();
        request::parse(http, &model, route.stream == Some(true))
    }

    fn responder(
        &self,
        _profile: Profile,
        _server: DeterministicRng,
        mut response: DeterministicRng,
        _created_s: u64,
        _model: &str,
    ) -> Box<dyn Responder> {
        let request_id = ids::uuid(&mut response);
        let latency_ms = response.range_inclusive(LATENCY_MS_MIN, LATENCY_MS_MAX);
        Box::new(BedrockResponder {
            answer: Answer {
                request_id,
                latency_ms,
                rng: response,
                call_ids: Vec::new(),
            },
            exception: None,
            marks: Vec::new(),
        })
    }
}

/// What `path` says: the model (percent-decoded) and whether it streams.
pub(crate) fn route(path: &str) -> Option<Route> {
    let rest = path.strip_prefix(MODEL_PREFIX)?;
    let (model, stream) = match rest.strip_suffix(CONVERSE_STREAM) {
        Some(model) => (model, true),
        None => (rest.strip_suffix(CONVERSE)?, false),
    };
    if model.is_empty() || model.contains('/') {
        return None;
    }
    Some(Route {
        model: Some(request::percent_decoded(model)),
        stream: Some(stream),
        ..Route::default()
    })
}

/// The route of a full URL whose path has a Converse operation at its end.
fn route_of_url(url: &str) -> Option<Route> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    let path = path.split('?').next().unwrap_or_default();
    let at = path.rfind(MODEL_PREFIX)?;
    route(&path[at..])
}

/// A finish as Converse names it (BEDROCK-API `StopReason`).
pub(crate) fn stop_name(finish: &FinishReason) -> String {
    match finish {
        FinishReason::Stop => "end_turn".into(),
        FinishReason::ToolCalls => "tool_use".into(),
        FinishReason::Length => "max_tokens".into(),
        FinishReason::ContentFilter => "content_filtered".into(),
        FinishReason::Other(raw) => raw.clone(),
        _ => "end_turn".into(),
    }
}

/// What one response's bytes share: its request id, its latency, its tool use ids.
pub(crate) struct Answer {
    request_id: String,
    latency_ms: u64,
    rng: DeterministicRng,
    call_ids: Vec<String>,
}

impl Answer {
    /// The id of the model's call number `call` (`tooluse_…`, drawn once per call).
    pub(crate) fn call_id(&mut self, call: u32, _given: Option<&str>) -> String {
        const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let call = usize::try_from(call)
            .unwrap_or(usize::MAX)
            .min(TOOL_USE_IDS_MAX);
        while self.call_ids.len() <= call {
            let id = format!("tooluse_{}", ids::chars(&mut self.rng, URL_SAFE, 22));
            self.call_ids.push(id);
        }
        self.call_ids[call].clone()
    }

    /// BEDROCK-API `TokenUsage`.
    pub(crate) fn usage(&self, usage: TokenUsage) -> Json {
        let total = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let mut out = Json::object(vec![
            ("inputTokens", usage.prompt_tokens.into()),
            ("outputTokens", usage.completion_tokens.into()),
            ("totalTokens", total.into()),
        ]);
        if let Some(read) = usage.cached_prompt_tokens.filter(|n| *n > 0) {
            out.push("cacheReadInputTokens", read);
        }
        if let Some(written) = usage.cache_write_tokens.filter(|n| *n > 0) {
            out.push("cacheWriteInputTokens", written);
        }
        out
    }

    /// BEDROCK-API `ConverseMetrics` / `ConverseStreamMetrics`.
    pub(crate) fn metrics(&self) -> Json {
        Json::object(vec![("latencyMs", self.latency_ms.into())])
    }
}

struct BedrockResponder {
    answer: Answer,
    /// The exception a refusal named, for `x-amzn-errortype`.
    exception: Option<&'static str>,
    marks: Vec<&'static str>,
}

impl BedrockResponder {
    /// A whole `ConverseResponse` (BEDROCK-API "Response Syntax", its key order).
    fn body(&mut self, response: &CompletionResponse) -> Json {
        let mut content = Vec::new();
        if !response.text.is_empty() {
            content.push(Json::object(vec![("text", response.text.clone().into())]));
        }
        for (position, call) in response.tool_calls.iter().enumerate() {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            let tool_use = Json::object(vec![
                (
                    "toolUseId",
                    self.answer.call_id(position, Some(&call.id)).into(),
                ),
                ("name", call.name.clone().into()),
                ("input", call.arguments.clone().into()),
            ]);
            content.push(Json::object(vec![("toolUse", tool_use)]));
            self.marks.push("wire.shape.bedrock.tool_use");
        }
        let message = Json::object(vec![
            ("role", "assistant".into()),
            ("content", Json::Array(content)),
        ]);
        let usage = response.usage.unwrap_or_default();
        Json::object(vec![
            ("output", Json::object(vec![("message", message)])),
            ("stopReason", stop_name(&response.finish_reason).into()),
            ("usage", self.answer.usage(usage)),
            ("metrics", self.answer.metrics()),
        ])
    }
}

impl Responder for BedrockResponder {
    fn refusal(&mut self, error: &LlmError, param: Option<&str>) -> (u16, Vec<u8>) {
        let (status, exception, message) = errors::kind_of(error, param);
        self.exception = Some(exception);
        self.marks.push("wire.shape.bedrock.exception");
        let body = Json::object(vec![("message", message.into())]);
        (status, body.to_bytes(Spacing::Compact))
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        self.body(response).to_bytes(Spacing::Compact)
    }

    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder> {
        let this = *self;
        Box::new(stream::BedrockStream::new(this.answer, parsed, this.marks))
    }

    fn content_type(&self, stream: bool) -> &'static str {
        if stream {
            umi_core::llm::bedrock::EVENT_STREAM_CONTENT_TYPE
        } else {
            "application/json"
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        // Bedrock's 429 carries no Retry-After (BEDROCK-API lists none; botocore's
        // retry handler backs off on its own).
        None
    }

    fn header_set(&self) -> HeaderSet {
        HeaderSet::Bare
    }

    fn own_headers(&mut self, _status: u16, _server_now_ms: u64) -> Vec<(String, String)> {
        let mut headers = vec![(
            "x-amzn-requestid".to_owned(),
            self.answer.request_id.clone(),
        )];
        if let Some(exception) = self.exception {
            headers.push(("x-amzn-errortype".to_owned(), errors::error_type(exception)));
        }
        headers
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// The request changes nothing in its answer's shapes.
    fn parsed(&mut self, _parsed: &Parsed) {}

    /// A refused `converse-stream` gets its HTTP error before any event (BEDROCK-API
    /// `ConverseStream`, "Errors"); only failures after the 200 are in-stream exceptions.
    fn refuses_in_stream(&self) -> bool {
        false
    }

    /// `ThrottlingException`'s body is a message only; it names no wait.
    fn wait_in_body(&self) -> bool {
        false
    }

    /// The model in the path is read by the request's parser; the route says nothing
    /// more that a refusal needs.
    fn routed(&mut self, _route: &Route) {}

    /// Both its operations ask the model.
    fn own_answer(&mut self, _parsed: &Parsed) -> Option<Vec<u8>> {
        None
    }
}
