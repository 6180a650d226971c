//! The server side of Google's Gemini API (AI Studio, `generativelanguage.googleapis.com`):
//! paths that carry the model and the method (`/v1beta/models/{model}:generateContent`,
//! `:streamGenerateContent`, `:countTokens`), requests read as the API reads them
//! ([`request`]), `GenerateContentResponse` bodies whole or streamed as a JSON array or
//! as SSE with `?alt=sse` ([`stream`]), and errors in Google's `{"error": {code, message,
//! status, details}}` envelope ([`errors`]). Every fact about Gemini lives in this
//! module; shared code calls it through one-line arms (the key a request presents, the
//! model list, `dst serve`'s own refusals).
//!
//! Sources (rows `GEMINI-*` of [`super::profile`]'s table): GEMINI-REST for fields and
//! methods, GEMINI-TROUBLE for status names, GEMINI-VERCEL and GEMINI-CAPTURES for bytes
//! recorded from the live API, GEMINI-JSGENAI for the SSE framing.
//!
//! What every layout shares: one candidate at `index` 0 whose `content` has `role:
//! "model"`; a function call is a whole `functionCall {name, args}` part, never argument
//! fragments, several parts for parallel calls, and its finish is `STOP` (GEMINI-VERCEL
//! `google-tool-call.json`); whole bodies and errors are indented by two spaces and end
//! with a newline (GEMINI-CAPTURES continuedev/continue #8516; GEMINI-VERCEL
//! `issue-19758-prompt-block.json` @5b80b38a), SSE events are one line in Google's
//! `": "`-after-keys spacing, framed `data: …\r\n\r\n`. No error inside a 200 stream was
//! ever captured for this API: a failure after the 200 breaks the connection (ADR 0009).

mod errors;
mod request;
mod stream;
mod surface;

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{CompletionResponse, FinishReason, LlmError, TokenUsage};

use super::format::{Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder};
use super::ids;
use super::json::{Json, Spacing};
use super::profile::GEMINI_VERSIONS as VERSIONS;
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm};
use crate::rng::DeterministicRng;

/// Every mark the format can hit with the requests Umi's client sends.
pub const GEMINI_MARKS: [&str; 5] = [
    "wire.shape.gemini.y2024",
    "wire.shape.gemini.y2025",
    "wire.shape.gemini.function_call",
    "wire.shape.gemini.safety",
    "wire.shape.gemini.retry_info",
];

/// Which era of the API the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// gemini-1.5 (GEMINI-CAPTURES: SSE events of `gemini-1.5-flash-001` quoted in a
    /// gateway's tests): `safetyRatings` (four categories, `NEGLIGIBLE`) on every
    /// candidate, `index` 0, usage `{promptTokenCount, candidatesTokenCount,
    /// totalTokenCount}`, `modelVersion`, no `responseId`.
    Y2024,
    /// gemini-2.5 and later (GEMINI-VERCEL, 2025-2026): no `safetyRatings`,
    /// `promptTokensDetails` and `thoughtsTokenCount` in usage, `responseId`, and
    /// `finishMessage: "Model generated function call(s)."` beside a call.
    Y2025,
}

impl Layout {
    const ALL: [Layout; 2] = [Layout::Y2024, Layout::Y2025];

    fn mark(self) -> &'static str {
        match self {
            Self::Y2024 => "wire.shape.gemini.y2024",
            Self::Y2025 => "wire.shape.gemini.y2025",
        }
    }
}

/// What one response's bytes share: the server's era, the model it names, the
/// response's id, and how a stream is framed.
#[derive(Debug, Clone)]
pub(crate) struct Era {
    pub(crate) layout: Layout,
    pub(crate) model_version: String,
    pub(crate) response_id: String,
    pub(crate) route: Route,
    /// The 503's words: "overloaded" (2025, GEMINI-CAPTURES gemini-cli #5191) or "high
    /// demand" (2026, continuedev/continue #10639).
    pub(crate) high_demand: bool,
}

/// The Gemini API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GeminiFormat;

impl ServerFormat for GeminiFormat {
    fn path(&self) -> &'static str {
        "/v1beta/models/{model}:generateContent"
    }

    fn route(&self, path: &str, query: Option<&str>) -> Option<Route> {
        route(path, query)
    }

    fn reads_query(&self) -> bool {
        true
    }

    fn parse(&self, http: &HttpRequest, _profile: Profile) -> Result<Parsed, RequestError> {
        request::parse(http)
    }

    fn responder(
        &self,
        _profile: Profile,
        mut server: DeterministicRng,
        mut response: DeterministicRng,
        _created_s: u64,
        model: &str,
    ) -> Box<dyn Responder> {
        let layout = Layout::ALL[server.index(Layout::ALL.len())];
        let high_demand = server.bool_with(0.5);
        Box::new(GeminiResponder {
            era: Era {
                layout,
                model_version: model.to_owned(),
                response_id: response_id(&mut response),
                route: Route::default(),
                high_demand,
            },
            marks: vec![layout.mark()],
        })
    }
}

/// What `path` says: the model and the method under one of [`VERSIONS`]; `alt=sse` in
/// `query` asks a stream for SSE framing (GEMINI-REST).
pub(crate) fn route(path: &str, query: Option<&str>) -> Option<Route> {
    let rest = VERSIONS.iter().find_map(|v| path.strip_prefix(v))?;
    let (model, method) = rest.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    let mut route = Route {
        model: Some(model.to_owned()),
        stream: Some(false),
        ..Route::default()
    };
    match method {
        "generateContent" => {}
        "streamGenerateContent" => {
            route.stream = Some(true);
            route.sse = query_value(query, "alt") == Some("sse");
        }
        "countTokens" => route.count_tokens = true,
        _ => return None,
    }
    Some(route)
}

/// Where in `path` a Gemini method's path starts (below a base URL's own path or a
/// `dst serve` prefix), when its tail is one.
pub(crate) fn path_start(path: &str) -> Option<usize> {
    let at = VERSIONS.iter().find_map(|v| path.find(v))?;
    route(&path[at..], None).map(|_| at)
}

/// The route of a full URL whose path has a Gemini method anywhere.
pub(crate) fn route_of_url(url: &str) -> Option<Route> {
    let (path, query) = path_and_query(url);
    let at = path_start(path)?;
    route(&path[at..], query)
}

/// A URL's path and query (`https://h/p?q` is `("/p", Some("q"))`).
fn path_and_query(url: &str) -> (&str, Option<&str>) {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    match path.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path, None),
    }
}

/// The value of `name` in `query` (`a=1&alt=sse`), undecoded.
fn query_value<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The key a request presents in the query (`?key=`, GEMINI-REST; the SDKs send the
/// `x-goog-api-key` header instead; [`super::surface::Surface::presented_key`] reads both).
pub(crate) fn query_key(url: &str) -> Option<String> {
    query_value(path_and_query(url).1, "key").map(str::to_owned)
}

/// A response id: 23 characters of URL-safe base64 (GEMINI-VERCEL
/// `bH6LaZW8Fp_3nsEPqtaSwQ4`, `EXCPaojyHaDUjMcP656rqAk`).
fn response_id(rng: &mut DeterministicRng) -> String {
    const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    ids::chars(rng, URL_SAFE, 23)
}

/// A finish as Gemini names it (GEMINI-REST `FinishReason`): calls finish `STOP`.
pub(crate) fn finish_name(finish: &FinishReason) -> String {
    match finish {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP".into(),
        FinishReason::Length => "MAX_TOKENS".into(),
        FinishReason::ContentFilter => "SAFETY".into(),
        FinishReason::Missing => "FINISH_REASON_UNSPECIFIED".into(),
        FinishReason::Other(raw) => raw.clone(),
        _ => "OTHER".into(),
    }
}

/// The four ratings of a gemini-1.5 candidate (GEMINI-CAPTURES), all `NEGLIGIBLE`
/// unless `blocked`, when the dangerous-content one is `HIGH` and `blocked: true`
/// (GEMINI-REST `SafetyRating`).
pub(crate) fn safety_ratings(blocked: bool) -> Json {
    let categories = [
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
    ];
    Json::Array(
        categories
            .iter()
            .map(|category| {
                let hit = blocked && *category == "HARM_CATEGORY_DANGEROUS_CONTENT";
                let mut rating = Json::object(vec![
                    ("category", (*category).into()),
                    (
                        "probability",
                        if hit { "HIGH" } else { "NEGLIGIBLE" }.into(),
                    ),
                ]);
                if hit {
                    rating.push("blocked", true);
                }
                rating
            })
            .collect(),
    )
}

impl Era {
    /// `usageMetadata` for `usage` (`candidatesTokenCount` without the thoughts, which
    /// Gemini counts apart; GEMINI-VERCEL `google-reasoning.chunks.txt`).
    pub(crate) fn usage(&self, usage: TokenUsage) -> Json {
        let thoughts = usage.reasoning_tokens.unwrap_or(0);
        let candidates = usage.completion_tokens.saturating_sub(thoughts);
        let mut out = Json::object(vec![("promptTokenCount", usage.prompt_tokens.into())]);
        if usage.completion_tokens > 0 || self.layout == Layout::Y2024 {
            out.push("candidatesTokenCount", candidates);
        }
        let total = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        out.push("totalTokenCount", total);
        if let Some(cached) = usage.cached_prompt_tokens.filter(|c| *c > 0) {
            out.push("cachedContentTokenCount", cached);
        }
        if self.layout == Layout::Y2025 {
            let details = Json::object(vec![
                ("modality", "TEXT".into()),
                ("tokenCount", usage.prompt_tokens.into()),
            ]);
            out.push("promptTokensDetails", Json::Array(vec![details]));
            if thoughts > 0 {
                out.push("thoughtsTokenCount", thoughts);
            }
        }
        out
    }

    /// One candidate: `parts` (none: no `content`), the finish, and the layout's extras.
    pub(crate) fn candidate(&self, parts: Vec<Json>, finish: Option<&str>, calls: bool) -> Json {
        let mut candidate = Json::object(Vec::new());
        if !parts.is_empty() {
            let content = Json::object(vec![
                ("parts", Json::Array(parts)),
                ("role", "model".into()),
            ]);
            candidate.push("content", content);
        }
        if let Some(finish) = finish {
            candidate.push("finishReason", finish);
        }
        candidate.push("index", 0u32);
        match self.layout {
            Layout::Y2024 => {
                candidate.push("safetyRatings", safety_ratings(finish == Some("SAFETY")));
            }
            Layout::Y2025 if calls && finish.is_some() => {
                candidate.push("finishMessage", "Model generated function call(s).");
            }
            Layout::Y2025 => {}
        }
        candidate
    }

    /// A `GenerateContentResponse` around `candidate` (or a prompt block's
    /// `promptFeedback` when `None`, GEMINI-VERCEL `issue-19758-prompt-block.json`).
    pub(crate) fn response(&self, candidate: Option<Json>, usage: TokenUsage) -> Json {
        let mut body = Json::object(Vec::new());
        match candidate {
            Some(candidate) => body.push("candidates", Json::Array(vec![candidate])),
            None => {
                let reason = match self.layout {
                    Layout::Y2024 => "SAFETY",
                    Layout::Y2025 => "PROHIBITED_CONTENT",
                };
                body.push(
                    "promptFeedback",
                    Json::object(vec![("blockReason", reason.into())]),
                );
            }
        }
        body.push("usageMetadata", self.usage(usage));
        body.push("modelVersion", self.model_version.clone());
        if self.layout == Layout::Y2025 {
            body.push("responseId", self.response_id.clone());
        }
        body
    }
}

/// A function call part (`args` an object; `None` when the model's arguments are not
/// one, which Gemini reports as `MALFORMED_FUNCTION_CALL` instead of sending them).
pub(crate) fn call_part(name: &str, arguments: &serde_json::Value) -> Option<Json> {
    if !arguments.is_object() {
        return None;
    }
    let call = Json::object(vec![
        ("name", name.into()),
        ("args", arguments.clone().into()),
    ]);
    Some(Json::object(vec![("functionCall", call)]))
}

/// A body as Google's front end writes it whole: two-space indentation, a final newline.
pub(crate) fn whole_bytes(json: &Json) -> Vec<u8> {
    let mut bytes = json.to_bytes(Spacing::Indented2);
    bytes.push(b'\n');
    bytes
}

struct GeminiResponder {
    era: Era,
    marks: Vec<&'static str>,
}

impl Responder for GeminiResponder {
    fn routed(&mut self, route: &Route) {
        self.era.route = route.clone();
    }

    fn refusal(&mut self, error: &LlmError, _param: Option<&str>) -> (u16, Vec<u8>) {
        let (status, body) = errors::refusal(&self.era, error);
        if status == 429
            && matches!(
                error,
                LlmError::RateLimit {
                    retry_after_ms: Some(_)
                }
            )
        {
            self.marks.push("wire.shape.gemini.retry_info");
        }
        let bytes = if self.era.route.stream == Some(true) && !self.era.route.sse {
            // A JSON-array stream's refusal is an array of one error (continuedev/continue
            // #8516: `[{\n  "error": …\n}\n]`).
            let mut out = b"[".to_vec();
            out.extend(body.to_bytes(Spacing::Indented2));
            out.extend(b"\n]");
            out
        } else {
            whole_bytes(&body)
        };
        (status, bytes)
    }

    fn own_answer(&mut self, parsed: &Parsed) -> Option<Vec<u8>> {
        if !self.era.route.count_tokens {
            return None;
        }
        let tokens = crate::llm::memo::request_tokens(&parsed.request);
        // GEMINI-REST `CountTokensResponse`: `totalTokens`, then the details by modality.
        let details = Json::object(vec![
            ("modality", "TEXT".into()),
            ("tokenCount", tokens.into()),
        ]);
        let body = Json::object(vec![
            ("totalTokens", tokens.into()),
            ("promptTokensDetails", Json::Array(vec![details])),
        ]);
        Some(whole_bytes(&body))
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        let usage = response.usage.unwrap_or_default();
        let mut parts = Vec::new();
        if !response.text.is_empty() {
            parts.push(Json::object(vec![("text", response.text.clone().into())]));
        }
        let mut malformed = false;
        for call in &response.tool_calls {
            match call_part(&call.name, &call.arguments) {
                Some(part) => parts.push(part),
                None => malformed = true,
            }
        }
        let calls = !response.tool_calls.is_empty() && !malformed;
        let finish = if malformed {
            parts.retain(|part| part.get("functionCall").is_none());
            "MALFORMED_FUNCTION_CALL".to_owned()
        } else {
            finish_name(&response.finish_reason)
        };
        if calls {
            self.marks.push("wire.shape.gemini.function_call");
        }
        let candidate = if response.finish_reason == FinishReason::ContentFilter {
            self.marks.push("wire.shape.gemini.safety");
            (!parts.is_empty()).then(|| self.era.candidate(parts, Some(&finish), false))
        } else {
            Some(self.era.candidate(parts, Some(&finish), calls))
        };
        whole_bytes(&self.era.response(candidate, usage))
    }

    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder> {
        let this = *self;
        Box::new(stream::GeminiStream::new(this.era, parsed, this.marks))
    }

    fn content_type(&self, stream: bool) -> &'static str {
        // GEMINI-REST: SSE with `alt=sse`; JSON (a streamed array too) otherwise, with
        // the charset Google's front end names (GEMINI-CAPTURES headers).
        if stream && self.era.route.sse {
            "text/event-stream"
        } else {
            "application/json; charset=UTF-8"
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        // Gemini sends no Retry-After: the wait is the body's `RetryInfo` (dcdpr/jp #1061).
        None
    }

    fn wait_in_body(&self) -> bool {
        true
    }

    fn header_set(&self) -> HeaderSet {
        HeaderSet::Bare
    }

    fn own_headers(&mut self, _status: u16, _server_now_ms: u64) -> Vec<(String, String)> {
        errors::headers()
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// The request changes nothing in its answer's shapes.
    fn parsed(&mut self, _parsed: &Parsed) {}

    /// A refused request gets its HTTP error, streamed or not (GEMINI-TROUBLE).
    fn refuses_in_stream(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
