//! Stream events into SSE chunks, in the shapes the drawn profile sends: the opener, text
//! and reasoning deltas in the provider's fields, tool calls streamed, whole or
//! re-chunked, the finish chunk, usage where the provider puts it, `[DONE]`, and errors
//! after the 200 in the provider's own way.

use crate::rng::DeterministicRng;
use std::collections::BTreeMap;

use serde_json::json;
use umi_core::llm::{LlmError, StreamEvent, TokenUsage};

use super::chunk::Chunk;
use super::draw::{Draw, UsageField};
use super::errors::error_body;
use super::stream_error::{InStream, in_stream};
use crate::network::chat_shapes::{
    FinishShape, Framing, Layout, Opener, ReasoningField, StreamErrorShape, ToolShape, UsageShape,
};
use crate::network::format::{Flow, StreamEncoder};
use crate::network::json::{Json, Spacing};
use crate::network::shapes::{KeepAlive, ShapeMark};

/// A tool call held back until it is whole (GLM, Ollama's /v1, OpenRouter re-chunking).
#[derive(Debug, Default)]
struct HeldCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// The SSE encoder of one chat-completions response.
#[derive(Debug)]
pub(crate) struct ChatStream {
    draw: Draw,
    include_usage: bool,
    started: bool,
    first_text_sent: bool,
    reasoning_seen: bool,
    held: BTreeMap<u32, HeldCall>,
    /// The index whose header was sent last (re-chunking flushes on a new index).
    open_index: Option<u32>,
    dashscope_tail: Option<u32>,
    usage: Option<TokenUsage>,
    marks: Vec<&'static str>,
}

/// Writes one `data:` event in `framing`, the payload written by `write` into `out`
/// in place (no buffer of its own).
fn frame_with(out: &mut Vec<u8>, framing: Framing, write: impl FnOnce(&mut Vec<u8>)) {
    let (prefix, end): (&[u8], &[u8]) = match framing {
        Framing::Standard => (b"data: ", b"\n\n"),
        Framing::Crlf => (b"data: ", b"\r\n\r\n"),
        Framing::NoSpaceNoDone => (b"data:", b"\n\n"),
    };
    out.extend_from_slice(prefix);
    let start = out.len();
    write(out);
    // What the encoder hands the decoder: one event per frame. A line break in the payload
    // would end its `data:` line early (the decoder asserts it gets whole lines).
    let payload = &out[start..];
    debug_assert!(
        !umi_core::llm::wire::lines::has_line_break(payload),
        "the chat encoder framed a payload with a line break in it: {:?}",
        String::from_utf8_lossy(payload)
    );
    out.extend_from_slice(end);
}

/// Writes one `data:` event in `framing` carrying `payload`.
#[cfg(test)]
fn frame(out: &mut Vec<u8>, framing: Framing, payload: &[u8]) {
    frame_with(out, framing, |out| out.extend_from_slice(payload));
}

/// The JSON spacing of a framing's server (sse-starlette servers use `json.dumps`).
fn spacing(framing: Framing) -> Spacing {
    match framing {
        Framing::Crlf => Spacing::Python,
        Framing::Standard | Framing::NoSpaceNoDone => Spacing::Compact,
    }
}

/// Writes `chunk` as one `data:` event of its response's framing.
fn sse(out: &mut Vec<u8>, chunk: &Chunk<'_>) {
    let framing = chunk.framing();
    frame_with(out, framing, |out| {
        crate::network::json::write_with(chunk, out, spacing(framing));
    });
}

impl ChatStream {
    fn done(&self, out: &mut Vec<u8>) {
        match self.draw.framing {
            Framing::Standard => out.extend_from_slice(b"data: [DONE]\n\n"),
            Framing::Crlf => out.extend_from_slice(b"data: [DONE]\r\n\r\n"),
            Framing::NoSpaceNoDone => {}
        }
    }

    pub(crate) fn new(draw: Draw, include_usage: bool) -> Self {
        let marks = draw.stream_marks().to_vec();
        Self {
            draw,
            include_usage,
            started: false,
            first_text_sent: false,
            reasoning_seen: false,
            held: BTreeMap::new(),
            open_index: None,
            dashscope_tail: None,
            usage: None,
            marks,
        }
    }

    fn ordinary_usage(&self) -> UsageField {
        match self.draw.usage {
            UsageShape::SeparateWhenAsked {
                null_on_chunks: true,
            }
            | UsageShape::OnFinishWhenAsked {
                null_on_chunks: true,
            } if self.include_usage => UsageField::Null,
            UsageShape::NullsThenOnFinish => UsageField::Null,
            UsageShape::SeparateWhenAsked { .. }
            | UsageShape::OnFinishWhenAsked { .. }
            | UsageShape::TrailingChoice
            | UsageShape::TrailingBare
            | UsageShape::RepeatedFinish
            | UsageShape::AlwaysOnFinish
            | UsageShape::Never => UsageField::Absent,
        }
    }

    fn emit(&mut self, out: &mut Vec<u8>, delta: Json) {
        let usage = self.ordinary_usage();
        let chunk = self.draw.chunk(Some((delta, None)), usage);
        sse(out, &chunk);
    }

    fn role_now(&mut self) -> bool {
        match self.draw.opener {
            Opener::RoleEveryChunk => true,
            Opener::RoleOnFirst => !std::mem::replace(&mut self.first_text_sent, true),
            Opener::RoleContentRefusal
            | Opener::RoleContentEmpty
            | Opener::RoleContentNull
            | Opener::RoleOnly
            | Opener::ContentThenRole => false,
        }
    }

    /// The opener, before the first emitted event.
    fn start(&mut self, first: &StreamEvent, out: &mut Vec<u8>) {
        self.started = true;
        if self.draw.layout == Layout::Azure {
            let framing = self.draw.framing;
            let chunk = self.draw.azure_prompt_filter_chunk();
            frame_with(out, framing, |out| chunk.write_to(out, spacing(framing)));
        }
        let reasoning_first = matches!(first, StreamEvent::ReasoningDelta { .. });
        let tools_first = matches!(first, StreamEvent::ToolCallDelta { .. });
        let role = ("role", Json::from("assistant"));
        let delta = match self.draw.opener {
            Opener::RoleContentRefusal if tools_first => {
                // A parallel-call answer opens with role and null content, no refusal
                // (PY-SNAP f82268f2….bin).
                Json::object(vec![role, ("content", Json::null())])
            }
            Opener::RoleContentRefusal => Json::object(vec![
                role,
                ("content", "".into()),
                ("refusal", Json::null()),
            ]),
            Opener::RoleContentEmpty
                if reasoning_first
                    && self.draw.reasoning == ReasoningField::ReasoningContentPaired =>
            {
                Json::object(vec![
                    role,
                    ("content", Json::null()),
                    ("reasoning_content", "".into()),
                ])
            }
            Opener::RoleContentEmpty => Json::object(vec![role, ("content", "".into())]),
            Opener::RoleContentNull => Json::object(vec![role, ("content", Json::null())]),
            Opener::RoleOnly => Json::object(vec![role]),
            Opener::RoleEveryChunk | Opener::RoleOnFirst | Opener::ContentThenRole => return,
        };
        self.emit(out, delta);
    }

    fn text(&mut self, text: &str, out: &mut Vec<u8>) {
        let mut delta = Json::object(Vec::new());
        if self.role_now() {
            delta.push("role", "assistant");
        }
        delta.push("content", text);
        if self.draw.opener == Opener::ContentThenRole
            && !std::mem::replace(&mut self.first_text_sent, true)
        {
            delta.push("role", "assistant");
        }
        if self.reasoning_seen && self.draw.reasoning == ReasoningField::ReasoningContentPaired {
            delta.push("reasoning_content", Json::null());
        }
        self.emit(out, delta);
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<u8>) {
        self.reasoning_seen = true;
        let role = matches!(self.draw.opener, Opener::RoleEveryChunk);
        let text_json = || Json::from(text);
        let delta = match self.draw.reasoning {
            ReasoningField::None => return,
            // GLM: `{"role":"assistant","reasoning_content":"1"}` (FANTASY).
            ReasoningField::ReasoningContent if role => Json::object(vec![
                ("role", "assistant".into()),
                ("reasoning_content", text_json()),
            ]),
            ReasoningField::ReasoningContent => {
                Json::object(vec![("reasoning_content", text_json())])
            }
            ReasoningField::ReasoningContentPaired => Json::object(vec![
                ("content", Json::null()),
                ("reasoning_content", text_json()),
            ]),
            ReasoningField::Reasoning | ReasoningField::Separate => {
                Json::object(vec![("reasoning", text_json())])
            }
            ReasoningField::Both => Json::object(vec![
                ("reasoning_content", text_json()),
                ("reasoning", text_json()),
            ]),
            // OpenRouter: `content, role, reasoning, reasoning_details` (FANTASY).
            ReasoningField::OpenRouter => Json::object(vec![
                ("content", "".into()),
                ("role", "assistant".into()),
                ("reasoning", text_json()),
                (
                    "reasoning_details",
                    Json::Array(vec![Json::object(vec![
                        ("type", "reasoning.text".into()),
                        ("text", text_json()),
                        ("format", "unknown".into()),
                        ("index", 0u32.into()),
                    ])]),
                ),
            ]),
        };
        let mark = self.draw.reasoning.mark();
        self.marks.push(mark);
        self.emit(out, delta);
    }

    fn tool_header(&self, index: u32, id: &str, name: &str, arguments: Option<&str>) -> Json {
        let mut function = Json::object(vec![("name", name.into())]);
        if let Some(arguments) = arguments {
            function.push("arguments", arguments);
        }
        match self.draw.layout {
            // vLLM: `id, type, index, function` (DeltaToolCall field order).
            Layout::Vllm => Json::object(vec![
                ("id", id.into()),
                ("type", "function".into()),
                ("index", index.into()),
                ("function", function),
            ]),
            // GLM: `id, index, type, function` (FANTASY tool_streaming.yaml).
            Layout::Glm | Layout::GlmNoObject | Layout::OllamaV1 => Json::object(vec![
                ("id", id.into()),
                ("index", index.into()),
                ("type", "function".into()),
                ("function", function),
            ]),
            Layout::OpenAi2024
            | Layout::OpenAiTiered
            | Layout::OpenAiTieredNoLogprobs
            | Layout::Azure
            | Layout::DeepSeek
            | Layout::DashScope
            | Layout::OpenRouter
            | Layout::LlamaCpp
            | Layout::Tgi
            | Layout::Xinference => Json::object(vec![
                ("index", index.into()),
                ("id", id.into()),
                ("type", "function".into()),
                ("function", function),
            ]),
        }
    }

    fn tool_fragment(&self, index: u32, fragment: &str) -> Json {
        let function = Json::object(vec![("arguments", fragment.into())]);
        if self.draw.tool == ToolShape::EmptyIdContinuation {
            return Json::object(vec![
                ("index", index.into()),
                ("id", "".into()),
                ("type", "function".into()),
                ("function", function),
            ]);
        }
        Json::object(vec![("index", index.into()), ("function", function)])
    }

    fn tool_delta(&mut self, out: &mut Vec<u8>, entries: Vec<Json>) {
        let mut delta = Json::object(Vec::new());
        if matches!(self.draw.opener, Opener::RoleEveryChunk)
            && self.draw.layout == Layout::OpenRouter
        {
            delta.push("content", Json::null());
            delta.push("role", "assistant");
        }
        delta.push("tool_calls", Json::Array(entries));
        self.emit(out, delta);
    }

    fn tool(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        let StreamEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments_fragment,
        } = event
        else {
            return;
        };
        let index = *index;
        let fragment = arguments_fragment.as_deref().unwrap_or("");
        let mark = self.draw.tool.mark();
        if !self.marks.contains(&mark) {
            self.marks.push(mark);
        }
        match self.draw.tool {
            ToolShape::Whole | ToolShape::Rechunked => {
                if self.draw.tool == ToolShape::Rechunked
                    && let Some(open) = self.open_index
                    && open != index
                {
                    self.flush_held(out);
                }
                self.open_index = Some(index);
                let held = self.held.entry(index).or_default();
                if id.is_some() {
                    held.id.clone_from(id);
                }
                if name.is_some() {
                    held.name.clone_from(name);
                }
                held.arguments.push_str(fragment);
            }
            ToolShape::Streamed
            | ToolShape::StreamedBareHeader
            | ToolShape::EmptyIdContinuation
            | ToolShape::DuplicateIndex => {
                if let (Some(id), Some(name)) = (id, name) {
                    // This arm's shapes: two send the header without `arguments`.
                    let bare = [ToolShape::StreamedBareHeader, ToolShape::DuplicateIndex];
                    let arguments = (!bare.contains(&self.draw.tool)).then_some("");
                    let header = self.tool_header(index, id, name, arguments);
                    self.tool_delta(out, vec![header]);
                    self.dashscope_tail = Some(index);
                }
                if fragment.is_empty() {
                    return;
                }
                if self.draw.tool == ToolShape::DuplicateIndex && fragment.chars().count() > 1 {
                    // Two entries for the same index in one delta (openai-python #3201).
                    let split = fragment
                        .char_indices()
                        .nth(fragment.chars().count() / 2)
                        .map_or(fragment.len(), |(i, _)| i);
                    let entries = vec![
                        self.tool_fragment(index, &fragment[..split]),
                        self.tool_fragment(index, &fragment[split..]),
                    ];
                    self.tool_delta(out, entries);
                } else {
                    let entry = self.tool_fragment(index, fragment);
                    self.tool_delta(out, vec![entry]);
                }
            }
        }
    }

    /// Sends the held calls: whole (one chunk each), or re-chunked (a header, then all
    /// the arguments).
    fn flush_held(&mut self, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        for (index, call) in held {
            let id = call.id.unwrap_or_default();
            let name = call.name.unwrap_or_default();
            if self.draw.tool == ToolShape::Whole {
                let header = self.tool_header(index, &id, &name, Some(&call.arguments));
                self.tool_delta(out, vec![header]);
            } else {
                let header = self.tool_header(index, &id, &name, Some(""));
                self.tool_delta(out, vec![header]);
                let entry = self.tool_fragment(index, &call.arguments);
                self.tool_delta(out, vec![entry]);
            }
        }
        self.open_index = None;
    }

    fn finish_delta(&self) -> Json {
        match self.draw.finish {
            FinishShape::EmptyDelta => Json::object(Vec::new()),
            FinishShape::EmptyContent => {
                let mut delta = Json::object(vec![("content", "".into())]);
                if self.reasoning_seen
                    && self.draw.reasoning == ReasoningField::ReasoningContentPaired
                {
                    delta.push("reasoning_content", Json::null());
                }
                delta
            }
            FinishShape::RoleEmptyContent => {
                Json::object(vec![("role", "assistant".into()), ("content", "".into())])
            }
            FinishShape::EosText => Json::object(vec![
                ("role", "assistant".into()),
                ("content", "</s>".into()),
            ]),
        }
    }

    fn end(
        &mut self,
        reason: &umi_core::llm::FinishReason,
        usage: Option<TokenUsage>,
        out: &mut Vec<u8>,
    ) {
        self.flush_held(out);
        self.dashscope_tail_fragment(out);
        let usage = usage.or(self.usage);
        let name = self.draw.finish_name(reason);
        let usage_json = usage.map(|u| self.draw.usage_json(&u));
        let finish_usage = match (self.draw.usage, &usage_json) {
            (UsageShape::OnFinishWhenAsked { .. }, Some(value)) if self.include_usage => {
                UsageField::Value(value.clone())
            }
            (UsageShape::AlwaysOnFinish | UsageShape::NullsThenOnFinish, Some(value)) => {
                UsageField::Value(value.clone())
            }
            _ => self.ordinary_usage(),
        };
        let delta = self.finish_delta();
        let timed = self.draw.usage == UsageShape::AlwaysOnFinish;
        let mut finish_chunk = self
            .draw
            .chunk(Some((delta, Some(name.clone()))), finish_usage);
        if timed {
            finish_chunk = finish_chunk.with_after("timings", timings(usage));
        }
        sse(out, &finish_chunk);
        if let Some(value) = usage_json {
            self.usage_after_finish(value, usage, name, out);
        }
        self.done(out);
    }

    /// DashScope's extra empty fragment before the finish, for its empty-id
    /// continuation shape.
    fn dashscope_tail_fragment(&mut self, out: &mut Vec<u8>) {
        if let Some(index) = self
            .dashscope_tail
            .filter(|_| self.draw.tool == ToolShape::EmptyIdContinuation)
        {
            // DashScope's extra empty fragment, in a choice with neither `finish_reason`
            // nor `logprobs` (VERCEL alibaba-tool-call.chunks.txt).
            let entry = Json::object(vec![
                ("function", Json::object(vec![("arguments", "".into())])),
                ("index", index.into()),
                ("id", "".into()),
                ("type", "function".into()),
            ]);
            let choice = Json::object(vec![
                (
                    "delta",
                    Json::object(vec![("tool_calls", Json::Array(vec![entry]))]),
                ),
                ("index", 0u32.into()),
            ]);
            let usage = self.ordinary_usage();
            let chunk = self.draw.chunk_raw(choice, usage);
            sse(out, &chunk);
        }
    }

    /// OpenRouter's error chunk: `error` at the top level before `choices`, the choice
    /// finished with `"error"`, then `[DONE]`.
    fn error_chunk(&mut self, error: Json, out: &mut Vec<u8>) -> Flow {
        let delta = Json::object(vec![("content", "".into())]);
        let chunk = self
            .draw
            .chunk(Some((delta, Some("error".to_owned()))), UsageField::Absent)
            .with_before_choices("error", error);
        sse(out, &chunk);
        self.done(out);
        Flow::End
    }

    /// Ollama's /v1: one empty chunk without a model, then the connection closes.
    fn stray_chunk(&mut self, out: &mut Vec<u8>) -> Flow {
        let model = std::mem::take(&mut self.draw.model);
        let delta = Json::object(vec![("content", "".into())]);
        sse(
            out,
            &self.draw.chunk(Some((delta, None)), UsageField::Absent),
        );
        self.draw.model = model;
        Flow::Close
    }

    /// An SSE field (`data: ` or `error: `) carrying `value`, then the end of the stream
    /// as this server writes it.
    fn field_then_done(
        &mut self,
        out: &mut Vec<u8>,
        field: &[u8],
        value: &Json,
        spacing: Spacing,
    ) -> Flow {
        out.extend_from_slice(field);
        value.write_to(out, spacing);
        out.extend_from_slice(b"\n\n");
        self.done(out);
        Flow::End
    }

    /// Where this server puts the usage after the finish chunk (`value`; `usage` for
    /// llama.cpp's timings): its own chunk, a trailing choice, a bare chunk, or the finish
    /// chunk repeated (`name`).
    fn usage_after_finish(
        &mut self,
        value: Json,
        usage: Option<TokenUsage>,
        name: String,
        out: &mut Vec<u8>,
    ) {
        let mark = self.draw.usage.mark();
        self.marks.push(mark);
        match self.draw.usage {
            UsageShape::SeparateWhenAsked { .. } | UsageShape::NullsThenOnFinish
                if self.include_usage =>
            {
                let timed = self.draw.layout == Layout::LlamaCpp;
                let mut chunk = self.draw.chunk(None, UsageField::Value(value));
                if timed {
                    chunk = chunk.with_after("timings", timings(usage));
                }
                sse(out, &chunk);
            }
            UsageShape::TrailingChoice => {
                let delta =
                    Json::object(vec![("role", "assistant".into()), ("content", "".into())]);
                let chunk = self
                    .draw
                    .chunk(Some((delta, None)), UsageField::Value(value));
                sse(out, &chunk);
            }
            UsageShape::TrailingBare => {
                let chunk = self.draw.chunk(None, UsageField::Value(value));
                sse(out, &chunk);
            }
            UsageShape::RepeatedFinish => {
                let delta = self.finish_delta();
                let chunk = self
                    .draw
                    .chunk(Some((delta, Some(name))), UsageField::Value(value));
                sse(out, &chunk);
            }
            UsageShape::SeparateWhenAsked { .. }
            | UsageShape::OnFinishWhenAsked { .. }
            | UsageShape::AlwaysOnFinish
            | UsageShape::NullsThenOnFinish
            | UsageShape::Never => {}
        }
    }
}

/// llama.cpp's `timings` (its own clock; derived here from the token counts at a fixed
/// simulated speed, so they replay).
fn timings(usage: Option<TokenUsage>) -> Json {
    let usage = usage.unwrap_or_default();
    let prompt_ms = f64::from(usage.prompt_tokens) * 2.5;
    let predicted_ms = f64::from(usage.completion_tokens) * 15.0;
    json!({
        "prompt_n": usage.prompt_tokens,
        "prompt_ms": prompt_ms,
        "predicted_n": usage.completion_tokens,
        "predicted_ms": predicted_ms,
    })
    .into()
}

impl StreamEncoder for ChatStream {
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        if matches!(event, StreamEvent::ReasoningDelta { .. })
            && self.draw.reasoning == ReasoningField::None
        {
            return Flow::Continue; // this provider hides reasoning
        }
        if !self.started && !matches!(event, StreamEvent::Usage { .. }) {
            self.start(event, out);
        }
        match event {
            StreamEvent::TextDelta { text } => self.text(text, out),
            StreamEvent::ReasoningDelta { text } => self.reasoning(text, out),
            StreamEvent::ToolCallDelta { .. } => self.tool(event, out),
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                self.end(finish_reason, *usage, out);
                return Flow::End;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, error: &LlmError, out: &mut Vec<u8>) -> Flow {
        let mark = self.draw.stream_error.mark();
        self.marks.push(mark);
        if self.draw.stream_error == StreamErrorShape::Reset {
            return Flow::Reset;
        }
        let (_, body) = error_body(&mut self.draw, error);
        match in_stream(self.draw.stream_error, &body) {
            InStream::Data {
                payload,
                spacing,
                then_done: true,
            } => self.field_then_done(out, b"data: ", &payload, spacing),
            InStream::Data {
                payload,
                spacing,
                then_done: false,
            } => {
                frame_with(out, self.draw.framing, |out| payload.write_to(out, spacing));
                Flow::Close
            }
            InStream::ErrorField(payload) => {
                self.field_then_done(out, b"error: ", &payload, Spacing::Compact)
            }
            InStream::ErrorChunk(error) => self.error_chunk(error, out),
            InStream::StrayChunk => self.stray_chunk(out),
            InStream::Reset => Flow::Reset,
        }
    }

    fn keep_alive(&self) -> Option<KeepAlive> {
        self.draw.shapes.keep_alive
    }

    fn line_end(&self) -> &'static str {
        match self.draw.framing {
            Framing::Crlf => "\r\n",
            Framing::Standard | Framing::NoSpaceNoDone => "\n",
        }
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        crate::network::unparseable::cut_frame(frame, rng)
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// Its first chunk answers the model's first event (PY-SNAP).
    fn preamble(&mut self, _out: &mut Vec<u8>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder's side of the framing seam: a planted payload with a blank line in it
    /// (JSON as this encoder writes it never has one) trips the assertion.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the chat encoder framed a payload with a line break in it")]
    fn a_payload_with_a_line_break_trips_the_seam_assertion() {
        frame(&mut Vec::new(), Framing::Standard, b"{\"a\":\n\n1}");
    }

    #[test]
    fn a_frame_is_one_event_in_each_framing() {
        for (framing, expected) in [
            (Framing::Standard, "data: {}\n\n"),
            (Framing::Crlf, "data: {}\r\n\r\n"),
            (Framing::NoSpaceNoDone, "data:{}\n\n"),
        ] {
            let mut out = Vec::new();
            frame(&mut out, framing, b"{}");
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }
}
