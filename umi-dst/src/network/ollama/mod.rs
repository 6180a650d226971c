//! The server side of Ollama's native `/api/chat`: requests parsed as Ollama does, NDJSON
//! streams and whole answers, `{"error": "..."}` errors, in the shapes of the versions
//! still in use (sources: ollama/ollama `server/routes.go`, `api/types.go` @fb307609,
//! v0.11.11 @92b96d54, v0.12.0 @9f3a37fd).
//!
//! - Lines: `model, created_at, message{role, content, thinking?, tool_calls?}, done`,
//!   and the last with `done_reason` and the counts and durations (types.go L520-564).
//! - Tool calls whole, `arguments` always an object (types.go L221-303); the call `id`
//!   since v0.12.10, `function.index` always since v0.12.6 (omitted when 0 before), and
//!   neither in older versions. Arguments the model wrote that do not parse come back as
//!   text (the generic parser) or as an error line (the built-in parsers, e.g.
//!   `failed to parse JSON: ...`), never as a string (routes.go L2882-2894).
//! - Errors `{"error": "..."}`; model not found is a 404 worded `model 'x' not found`
//!   (v0.12+) or `model "x" not found, try pulling it first` (up to v0.11.11); a full
//!   queue is a 503; an error after the 200 is one error line, and the stream ends.

mod request;
mod surface;

use serde_json::{Value, json};
use umi_core::llm::{CompletionResponse, FinishReason, LlmError, StreamEvent, TokenUsage};

use umi_core::llm::transport::HttpRequest;

use super::format::{
    Flow, Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder, one_path,
};
use super::json::{Json, Spacing};
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm};
use crate::network::stamps::rfc3339;
use crate::rng::DeterministicRng;

/// Ollama's `/api/chat`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OllamaFormat;

/// Which Ollama the server is, for what changed between versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// v0.12.10 and later: call ids, `index` always, `model 'x' not found`.
    Current,
    /// v0.12.0 to v0.12.5: no ids, `index` omitted when 0.
    Middle,
    /// v0.11.x: no ids, no index, `model "x" not found, try pulling it first`.
    Old,
}

impl Version {
    fn mark(self) -> &'static str {
        match self {
            Self::Current => "wire.shape.ollama.current",
            Self::Middle => "wire.shape.ollama.middle",
            Self::Old => "wire.shape.ollama.old",
        }
    }
}

/// Every mark the native format can hit.
pub const OLLAMA_MARKS: [&str; 5] = [
    "wire.shape.ollama.current",
    "wire.shape.ollama.middle",
    "wire.shape.ollama.old",
    "wire.shape.ollama.bad_arguments_as_text",
    "wire.shape.ollama.bad_arguments_as_error",
];

impl ServerFormat for OllamaFormat {
    fn path(&self) -> &'static str {
        "/api/chat"
    }

    fn route(&self, path: &str, _query: Option<&str>) -> Option<Route> {
        one_path(self.path(), path)
    }

    fn reads_query(&self) -> bool {
        false
    }

    fn parse(&self, request: &HttpRequest, _profile: Profile) -> Result<Parsed, RequestError> {
        request::parse(&request.body)
    }

    fn responder(
        &self,
        _profile: Profile,
        mut server: DeterministicRng,
        _response: DeterministicRng,
        created_s: u64,
        model: &str,
    ) -> Box<dyn Responder> {
        let version = [Version::Current, Version::Middle, Version::Old][server.index(3)];
        let generic_parser = server.bool_with(0.5);
        Box::new(OllamaResponder {
            version,
            generic_parser,
            model: model.to_owned(),
            created_at: rfc3339(created_s * 1_000),
            marks: vec![version.mark()],
        })
    }
}

/// Parses an `/api/chat` body as Ollama does (Go's `encoding/json`: unknown fields
/// dropped; a wrong type is a 400 naming the Go field).
struct OllamaResponder {
    version: Version,
    /// Whether the model's tool calls go through Ollama's generic parser (unparsed text
    /// comes back as content) or a built-in one (an error line).
    generic_parser: bool,
    model: String,
    /// When the response was created, as every line's `created_at` writes it (formatted
    /// once, not per line).
    created_at: String,
    marks: Vec<&'static str>,
}

fn done_reason(finish: &FinishReason) -> Option<String> {
    match finish {
        FinishReason::Length => Some("length".into()),
        FinishReason::Other(raw) => Some(raw.clone()),
        FinishReason::Missing => None,
        _ => Some("stop".into()),
    }
}

impl OllamaResponder {
    fn line(&self, message: Json, done: bool) -> Json {
        Json::object(vec![
            ("model", self.model.clone().into()),
            ("created_at", self.created_at.clone().into()),
            ("message", message),
            ("done", done.into()),
        ])
    }

    fn call(&self, index: usize, id: &str, name: &str, arguments: Value) -> Json {
        let mut function = Json::object(Vec::new());
        match self.version {
            Version::Current => function.push("index", index as u64),
            Version::Middle if index > 0 => function.push("index", index as u64),
            Version::Middle | Version::Old => {}
        }
        function.push("name", name);
        function.push("arguments", arguments);
        let mut call = Json::object(Vec::new());
        if self.version == Version::Current {
            call.push("id", id);
        }
        call.push("function", function);
        call
    }

    fn done_line(&self, finish: &FinishReason, usage: Option<TokenUsage>) -> Json {
        let mut line = self.line(
            Json::object(vec![("role", "assistant".into()), ("content", "".into())]),
            true,
        );
        if let Some(reason) = done_reason(finish) {
            line.push("done_reason", reason);
        }
        // Durations in ns at a fixed simulated speed, so they replay.
        let usage = usage.unwrap_or_default();
        let prompt_ns = u64::from(usage.prompt_tokens) * 2_000_000;
        let eval_ns = u64::from(usage.completion_tokens) * 20_000_000;
        line.push("total_duration", prompt_ns + eval_ns + 1_000_000);
        line.push("load_duration", 1_000_000u64);
        line.push("prompt_eval_count", usage.prompt_tokens);
        line.push("prompt_eval_duration", prompt_ns);
        line.push("eval_count", usage.completion_tokens);
        line.push("eval_duration", eval_ns);
        line
    }

    fn error_text(&self, error: &LlmError) -> (u16, String) {
        match error {
            LlmError::ModelNotFound { message, .. } => (
                404,
                if self.version == Version::Old {
                    format!("model \"{message}\" not found, try pulling it first")
                } else {
                    format!("model '{message}' not found")
                },
            ),
            LlmError::ContextOverflow { .. } => {
                (400, "the input length exceeds the context length".into())
            }
            LlmError::RateLimit { .. }
            | LlmError::ServiceUnavailable {
                status: Some(503) | None,
                ..
            } => (
                503,
                "server busy, please try again.  maximum pending requests exceeded".into(),
            ),
            LlmError::Auth { .. } => (401, "unauthorized".into()),
            LlmError::BadRequest { message, .. } => (400, message.clone()),
            LlmError::InvalidPrompt { reason } => (400, reason.clone()),
            other => (
                500,
                format!("an error was encountered while running the model: {other}"),
            ),
        }
    }
}

impl Responder for OllamaResponder {
    fn refusal(&mut self, error: &LlmError, _param: Option<&str>) -> (u16, Vec<u8>) {
        let (status, text) = self.error_text(error);
        (
            status,
            Json::from(json!({"error": text})).to_bytes(Spacing::Compact),
        )
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        let mut message = Json::object(vec![
            ("role", "assistant".into()),
            ("content", response.text.clone().into()),
        ]);
        if let Some(thinking) = response.reasoning.as_ref().filter(|t| !t.is_empty()) {
            message.push("thinking", thinking.clone());
        }
        if !response.tool_calls.is_empty() {
            let calls = response
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| self.call(i, &c.id, &c.name, c.arguments.clone()))
                .collect();
            message.push("tool_calls", Json::Array(calls));
        }
        let mut line = self.done_line(&response.finish_reason, response.usage);
        if let Json::Object(fields) = &mut line
            && let Some(slot) = fields.iter_mut().find(|(k, _)| *k == "message")
        {
            slot.1 = message;
        }
        line.to_bytes(Spacing::Compact)
    }

    fn into_stream(self: Box<Self>, _parsed: &Parsed) -> Box<dyn StreamEncoder> {
        let bad_as_text = self.generic_parser;
        Box::new(OllamaStream {
            responder: *self,
            calls: Vec::new(),
            usage: None,
            bad_as_text,
        })
    }

    fn content_type(&self, stream: bool) -> &'static str {
        if stream {
            "application/x-ndjson"
        } else {
            "application/json; charset=utf-8"
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        None
    }

    fn header_set(&self) -> HeaderSet {
        HeaderSet::Bare
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// The request changes nothing in its answer's shapes.
    fn parsed(&mut self, _parsed: &Parsed) {}

    /// It sends no headers of its own beyond its header set.
    fn own_headers(&mut self, _status: u16, _server_now_ms: u64) -> Vec<(String, String)> {
        Vec::new()
    }

    /// A refused request gets its HTTP error, streamed or not (OLLAMA `server/routes.go`).
    fn refuses_in_stream(&self) -> bool {
        false
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

/// A tool call gathered until it is whole (Ollama never streams one in pieces).
#[derive(Debug, Default)]
struct Gathered {
    id: String,
    name: String,
    arguments: String,
}

struct OllamaStream {
    responder: OllamaResponder,
    calls: Vec<(u32, Gathered)>,
    usage: Option<TokenUsage>,
    /// What this server does with arguments the model wrote that do not parse.
    bad_as_text: bool,
}

fn ndjson(out: &mut Vec<u8>, line: &Json) {
    line.write_to(out, Spacing::Compact);
    out.push(b'\n');
}

impl OllamaStream {
    /// A fragment of call `index`: Ollama sends each call whole, so fragments are
    /// gathered until the end.
    fn gather(&mut self, index: u32, id: Option<&str>, name: Option<&str>, fragment: Option<&str>) {
        let position = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(position) => position,
            None => {
                self.calls.push((index, Gathered::default()));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position].1;
        if let Some(id) = id {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = name {
            name.clone_into(&mut call.name);
        }
        call.arguments.push_str(fragment.unwrap_or(""));
    }

    /// The end: the gathered calls in one line (arguments that do not parse as an object
    /// come back as text or as an error line, as this server's parser does), then the
    /// done line.
    fn done(
        &mut self,
        finish_reason: &FinishReason,
        usage: Option<TokenUsage>,
        out: &mut Vec<u8>,
    ) -> Flow {
        let mut finish = finish_reason.clone();
        let mut calls = Vec::new();
        for (position, (_, call)) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(arguments) if arguments.is_object() => {
                    calls.push(
                        self.responder
                            .call(position, &call.id, &call.name, arguments),
                    );
                }
                _ if self.bad_as_text => {
                    // The generic parser hands back what it could not parse.
                    self.responder
                        .marks
                        .push("wire.shape.ollama.bad_arguments_as_text");
                    let message = Json::object(vec![
                        ("role", "assistant".into()),
                        ("content", call.arguments.clone().into()),
                    ]);
                    ndjson(out, &self.responder.line(message, false));
                    finish = FinishReason::Stop;
                }
                Err(error) => {
                    // A built-in parser fails the stream (qwen3.go L345).
                    self.responder
                        .marks
                        .push("wire.shape.ollama.bad_arguments_as_error");
                    let text = format!("failed to parse JSON: {error}");
                    ndjson(out, &Json::from(json!({"error": text})));
                    return Flow::Close;
                }
                Ok(_) => {
                    self.responder
                        .marks
                        .push("wire.shape.ollama.bad_arguments_as_error");
                    let text = "failed to parse JSON: arguments are not an object";
                    ndjson(out, &Json::from(json!({"error": text})));
                    return Flow::Close;
                }
            }
        }
        let responder = &self.responder;
        if !calls.is_empty() {
            let message = Json::object(vec![
                ("role", "assistant".into()),
                ("content", "".into()),
                ("tool_calls", Json::Array(calls)),
            ]);
            ndjson(out, &responder.line(message, false));
        }
        ndjson(out, &responder.done_line(&finish, usage));
        Flow::End
    }
}

impl StreamEncoder for OllamaStream {
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        match event {
            StreamEvent::TextDelta { text } => {
                let responder = &self.responder;
                let message = Json::object(vec![
                    ("role", "assistant".into()),
                    ("content", text.clone().into()),
                ]);
                ndjson(out, &responder.line(message, false));
            }
            StreamEvent::ReasoningDelta { text } => {
                let responder = &self.responder;
                let message = Json::object(vec![
                    ("role", "assistant".into()),
                    ("content", "".into()),
                    ("thinking", text.clone().into()),
                ]);
                ndjson(out, &responder.line(message, false));
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => self.gather(
                *index,
                id.as_deref(),
                name.as_deref(),
                arguments_fragment.as_deref(),
            ),
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => return self.done(finish_reason, usage.or(self.usage), out),
        }
        Flow::Continue
    }

    fn error(&mut self, error: &LlmError, out: &mut Vec<u8>) -> Flow {
        let (_, text) = self.responder.error_text(error);
        ndjson(out, &Json::from(json!({"error": text})));
        Flow::Close
    }

    fn keep_alive(&self) -> Option<super::shapes::KeepAlive> {
        None
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.responder.marks)
    }

    /// Its first line answers the model's first event (OLLAMA `server/routes.go`).
    fn preamble(&mut self, _out: &mut Vec<u8>) {}

    /// NDJSON lines end in `\n` (Go's `json.Encoder`).
    fn line_end(&self) -> &'static str {
        "\n"
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        crate::network::unparseable::cut_frame(frame, rng)
    }
}
