//! The server side of OpenAI's Responses API (`POST /v1/responses`): requests parsed as
//! the API does ([`request`]), response objects that echo the request ([`object`]),
//! named-event streams ([`stream`]), errors in OpenAI's envelope.
//!
//! Sources, by short name:
//!
//! | name | what |
//! | --- | --- |
//! | GM | ENTERPILOT/GoModel `tests/contract/testdata/openai/responses_stream.txt`, `responses.json` (@06f79eb1): raw bytes from api.openai.com, 2026-02 |
//! | V-RSN | vercel/ai `packages/openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.chunks.txt` (@55cd1a40), live, 2025-12 |
//! | V-ERR | vercel/ai `.../__fixtures__/openai-error.1.chunks.txt` (@23f132b4): a quota error streamed live, 2025-11 |
//! | SWA | SwiftedMind/SwiftAgent `OpenAIStreamingErrorHandling.swift` (@455848aa): raw SSE of an error stream, 2025-10 |
//! | PY | pydantic/pydantic-ai `tests/models/cassettes/test_openai_responses/*.yaml`: live sessions, requests and echoes |
//! | DYAD | dyad-sh/dyad #1672: `context_length_exceeded` inside a 200 stream |
//! | CODEX | openai/codex `codex-rs/codex-api/src/sse/responses.rs` (@0a7fb0d7): `response.failed` with `rate_limit_exceeded` and `context_length_exceeded` |
//! | SPEC | openai/openai-openapi `openapi.yaml` (@f85dbe22) |
//!
//! Shared by every era: `event: <type>` and one `data:` line per event, `type` equal to
//! the event name, `sequence_number` from 0 on every event, no `[DONE]`; `response.created`
//! and `response.in_progress` as the stream opens; items added, their parts and deltas,
//! then done, one item at a time; `obfuscation` on deltas; a failure after the 200 as an
//! `error` event whose fields nest under `error` (V-ERR, SWA, DYAD; SPEC's flat form has
//! no capture), then `response.failed`. A streamed request's refusals come inside the
//! stream the same way (SWA, V-ERR, DYAD, CODEX); a request the server cannot read is
//! an HTTP error even when streaming (PY `test_openai_responses_model_http_error.yaml`).

mod object;
mod request;
mod stream;
mod surface;

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{CompletionResponse, FinishReason, LlmError};

use self::object::{Echo, Ids, Response, Status};
use super::format::{
    Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder, one_path,
};
use super::json::{Json, Spacing};
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm};
use crate::rng::DeterministicRng;

/// Every mark the format can hit.
pub const RESPONSES_MARKS: [&str; 5] = [
    "wire.shape.responses.y2025",
    "wire.shape.responses.y2026",
    "wire.shape.responses.error_in_stream",
    "wire.shape.responses.incomplete",
    "wire.shape.responses.reasoning_summary",
];

/// Which era of the API the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// V-RSN, V-ERR, SWA, PY (2025): `type, sequence_number` first, then the spec's
    /// order; response objects without `completed_at` or the penalties.
    Y2025,
    /// GM (2026): `type` first, every other key of an event sorted; `completed_at`,
    /// `frequency_penalty`, `presence_penalty`, and `billing` on whole bodies.
    Y2026,
}

impl Layout {
    fn mark(self) -> &'static str {
        match self {
            Self::Y2025 => "wire.shape.responses.y2025",
            Self::Y2026 => "wire.shape.responses.y2026",
        }
    }
}

/// The Responses API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ResponsesFormat;

impl ServerFormat for ResponsesFormat {
    fn path(&self) -> &'static str {
        "/responses"
    }

    fn route(&self, path: &str, _query: Option<&str>) -> Option<Route> {
        one_path(self.path(), path)
    }

    fn reads_query(&self) -> bool {
        false
    }

    fn parse(&self, http: &HttpRequest, _profile: Profile) -> Result<Parsed, RequestError> {
        request::parse(&http.body)
    }

    fn responder(
        &self,
        _profile: Profile,
        mut server: DeterministicRng,
        mut response: DeterministicRng,
        created_s: u64,
        model: &str,
    ) -> Box<dyn Responder> {
        let layout = if server.bool_with(0.5) {
            Layout::Y2025
        } else {
            Layout::Y2026
        };
        let ids = Ids::new(&mut response, created_s);
        let id = ids.next("resp", &mut response);
        Box::new(ResponsesResponder {
            era: Era {
                layout,
                model: model.to_owned(),
                created_s,
                ids,
                id,
                echo: Echo::default(),
            },
            errors: (
                server,
                response.stream(crate::rng::streams::request::ERRORS),
            ),
            response,
            marks: vec![layout.mark()],
        })
    }
}

/// What one response's bytes share.
#[derive(Debug, Clone)]
pub(crate) struct Era {
    pub(crate) layout: Layout,
    pub(crate) model: String,
    pub(crate) created_s: u64,
    pub(crate) ids: Ids,
    pub(crate) id: String,
    pub(crate) echo: Echo,
}

impl Era {
    pub(crate) fn response(
        &self,
        status: Status,
        output: Vec<Json>,
        usage: Option<&umi_core::llm::TokenUsage>,
        whole: bool,
    ) -> Json {
        Response {
            layout: self.layout,
            id: &self.id,
            model: &self.model,
            created_s: self.created_s,
            echo: &self.echo,
            status,
            output,
            usage,
            whole,
        }
        .to_json()
    }
}

/// How a finished answer stands: `incomplete` for a cut (`max_output_tokens`) or a
/// filtered one (`content_filter`, SPEC's `incomplete_details.reason`), else completed.
pub(crate) fn status_of(finish: &FinishReason) -> Status {
    match finish {
        FinishReason::Length => Status::Incomplete("max_output_tokens"),
        FinishReason::ContentFilter => Status::Incomplete("content_filter"),
        _ => Status::Completed,
    }
}

/// The `code` OpenAI gives a request it refuses, from the words the parser used.
fn code_for(message: &str) -> Option<&'static str> {
    if message.starts_with("Unknown parameter") {
        Some("unknown_parameter")
    } else if message.starts_with("Missing required parameter") {
        Some("missing_required_parameter")
    } else if message.contains("integer below minimum value") {
        Some("integer_below_min_value")
    } else if message.starts_with("Invalid schema for response_format") {
        Some("invalid_json_schema")
    } else if message.starts_with("Previous response with id") {
        Some("previous_response_not_found")
    } else {
        None
    }
}

/// An error's object as OpenAI writes it (`{message, type, param, code}`), with its
/// status. A context overflow has the Responses API's own words (DYAD, CODEX).
pub(crate) fn error_object(
    errors: &(DeterministicRng, DeterministicRng),
    era: &Era,
    error: &LlmError,
    param: Option<&str>,
) -> (u16, Json) {
    if let LlmError::ContextOverflow { .. } = error {
        let object = Json::object(vec![
            ("message", "Your input exceeds the context window of this model. Please adjust your input and try again.".into()),
            ("type", "invalid_request_error".into()),
            ("param", "input".into()),
            ("code", "context_length_exceeded".into()),
        ]);
        return (400, object);
    }
    let (server, response) = errors.clone();
    let (status, body) =
        super::chat::openai_error(server, response, era.created_s, &era.model, error, param);
    let mut object = match body {
        Json::Object(mut fields) => fields
            .iter_mut()
            .find(|(key, _)| *key == "error")
            .map_or(Json::null(), |(_, value)| {
                std::mem::replace(value, Json::null())
            }),
        other @ Json::Value(_)
        | other @ Json::Null
        | other @ Json::Bool(_)
        | other @ Json::U64(_)
        | other @ Json::Str(_)
        | other @ Json::Array(_) => other,
    };
    if let (LlmError::BadRequest { message, .. }, Json::Object(fields)) = (error, &mut object)
        && let Some(code) = code_for(message)
        && let Some(slot) = fields.iter_mut().find(|(key, _)| *key == "code")
    {
        slot.1 = code.into();
    }
    (status, object)
}

struct ResponsesResponder {
    era: Era,
    /// The streams the OpenAI error texts draw from.
    errors: (DeterministicRng, DeterministicRng),
    response: DeterministicRng,
    marks: Vec<&'static str>,
}

impl Responder for ResponsesResponder {
    fn refusal(&mut self, error: &LlmError, param: Option<&str>) -> (u16, Vec<u8>) {
        let (status, object) = error_object(&self.errors, &self.era, error, param);
        let body = Json::object(vec![("error", object)]);
        (status, body.to_bytes(Spacing::Indented4))
    }

    fn parsed(&mut self, parsed: &Parsed) {
        self.era.echo = Echo::of(parsed);
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        let rng = &mut self.response;
        let mut output = Vec::new();
        let status = status_of(&response.finish_reason);
        if let Some(reasoning) = response.reasoning.as_deref().filter(|r| !r.is_empty()) {
            let summary = self.era.echo_summary().then_some(reasoning);
            output.push(object::reasoning_item(
                &self.era.ids.next("rs", rng),
                summary,
            ));
        }
        if !response.text.is_empty() {
            let item_status = match status {
                Status::Incomplete(_) => "incomplete",
                Status::InProgress | Status::Completed | Status::Failed(_) => "completed",
            };
            let id = self.era.ids.next("msg", rng);
            output.push(object::message_item(&id, item_status, Some(&response.text)));
        }
        for call in &response.tool_calls {
            let id = self.era.ids.next("fc", rng);
            output.push(object::call_item(
                &id,
                "completed",
                &umi_core::canonical_json::to_string(&call.arguments),
                &call.id,
                &call.name,
            ));
        }
        if matches!(status, Status::Incomplete(_)) {
            self.marks.push("wire.shape.responses.incomplete");
        }
        self.era
            .response(status, output, response.usage.as_ref(), true)
            .to_bytes(Spacing::Compact)
    }

    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder> {
        let mut this = *self;
        this.era.echo = Echo::of(parsed);
        Box::new(stream::ResponsesStream::new(
            this.era,
            this.errors,
            this.response,
            this.marks,
        ))
    }

    fn content_type(&self, stream: bool) -> &'static str {
        if stream {
            "text/event-stream; charset=utf-8"
        } else {
            "application/json"
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        Some(RetryAfterForm::Seconds)
    }

    fn header_set(&self) -> HeaderSet {
        HeaderSet::OpenAi
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    fn refuses_in_stream(&self) -> bool {
        true
    }

    /// It sends no headers of its own beyond its header set.
    fn own_headers(&mut self, _status: u16, _server_now_ms: u64) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Its 429 says nothing of the wait in its body.
    fn wait_in_body(&self) -> bool {
        false
    }

    /// It owns one path, which says nothing.
    fn routed(&mut self, _route: &Route) {}

    /// Its one operation always asks the model.
    fn own_answer(&mut self, _parsed: &Parsed) -> Option<Vec<u8>> {
        None
    }
}

impl Era {
    /// Whether the request asked for a reasoning summary.
    pub(crate) fn echo_summary(&self) -> bool {
        self.echo.summary
    }
}

#[cfg(test)]
mod tests;
