//! A Responses stream: the model's events as the API's items and their deltas.
//!
//! The stream opens with `response.created` and `response.in_progress` (GM) before the
//! model's first token. Reasoning, text and each tool call are output items, one open
//! at a time in the order the model produced them: added, their part added, deltas,
//! then `*.done` events carrying the whole value and the item done (GM for a message,
//! V-RSN for a call and a reasoning summary). `function_call_arguments.done` has no
//! `name` (V-RSN; async-openai #472). Reasoning asked for no summary is an item added
//! and done at once, with `summary: []` (PY-WS). The answer ends with
//! `response.completed`, or `response.incomplete` when it was cut or filtered; a
//! failure is an `error` event, then `response.failed`.

use umi_core::llm::{FinishReason, LlmError, StreamEvent, TokenUsage};

use super::object::{self, Status, call_item, event, message_item, reasoning_item, text_part};
use super::{Era, error_object, status_of};
use crate::network::format::{Flow, StreamEncoder};
use crate::network::json::{Json, Spacing};
use crate::network::shapes::KeepAlive;
use crate::rng::DeterministicRng;

/// The item being written.
#[derive(Debug)]
enum Open {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
    },
    Call {
        model_index: u32,
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

pub(crate) struct ResponsesStream {
    era: Era,
    errors: (DeterministicRng, DeterministicRng),
    rng: DeterministicRng,
    sequence: u64,
    /// Items done, for the final response object.
    output: Vec<Json>,
    open: Option<Open>,
    /// Whether hidden reasoning was already announced.
    reasoning_shown: bool,
    usage: Option<TokenUsage>,
    marks: Vec<&'static str>,
}

impl ResponsesStream {
    pub(crate) fn new(
        era: Era,
        errors: (DeterministicRng, DeterministicRng),
        rng: DeterministicRng,
        marks: Vec<&'static str>,
    ) -> Self {
        Self {
            era,
            errors,
            rng,
            sequence: 0,
            output: Vec::new(),
            open: None,
            reasoning_shown: false,
            usage: None,
            marks,
        }
    }

    fn write(&mut self, kind: &'static str, fields: Vec<(&'static str, Json)>, out: &mut Vec<u8>) {
        let data = event(self.era.layout, kind, self.sequence, fields);
        self.sequence += 1;
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\ndata: ");
        data.write_to(out, Spacing::Compact);
        out.extend_from_slice(b"\n\n");
    }

    fn output_index(&self) -> Json {
        (self.output.len() as u64).into()
    }

    fn item_added(&mut self, item: Json, out: &mut Vec<u8>) {
        let index = self.output_index();
        self.write(
            "response.output_item.added",
            vec![("output_index", index), ("item", item)],
            out,
        );
    }

    fn item_done(&mut self, item: Json, out: &mut Vec<u8>) {
        let index = self.output_index();
        self.write(
            "response.output_item.done",
            vec![("output_index", index), ("item", item.clone())],
            out,
        );
        self.output.push(item);
    }

    fn open_message(&mut self, out: &mut Vec<u8>) {
        if matches!(self.open, Some(Open::Message { .. })) {
            return;
        }
        self.close(None, out);
        let id = self.era.ids.next("msg", &mut self.rng);
        self.item_added(message_item(&id, "in_progress", None), out);
        let index = self.output_index();
        self.write(
            "response.content_part.added",
            vec![
                ("item_id", id.clone().into()),
                ("output_index", index),
                ("content_index", 0u32.into()),
                ("part", text_part("")),
            ],
            out,
        );
        self.open = Some(Open::Message {
            id,
            text: String::new(),
        });
    }

    fn delta_fields(
        &mut self,
        id: &str,
        delta: &str,
        extra: Vec<(&'static str, Json)>,
    ) -> Vec<(&'static str, Json)> {
        let obfuscation = object::obfuscation(delta, &mut self.rng);
        let mut fields = vec![
            ("item_id", id.into()),
            ("output_index", self.output_index()),
        ];
        fields.extend(extra);
        fields.push(("delta", delta.into()));
        fields
            .into_iter()
            .chain(std::iter::once(("obfuscation", obfuscation.into())))
            .collect()
    }

    /// Closes the open item; `incomplete` marks a message cut short.
    fn close(&mut self, status: Option<&Status>, out: &mut Vec<u8>) {
        let index = self.output_index();
        match self.open.take() {
            None => {}
            Some(Open::Message { id, text }) => {
                let item_status = match status {
                    Some(Status::Incomplete(_)) => "incomplete",
                    Some(Status::InProgress | Status::Completed | Status::Failed(_)) | None => {
                        "completed"
                    }
                };
                let at = |index: &Json| {
                    vec![
                        ("item_id", Json::from(id.as_str())),
                        ("output_index", index.clone()),
                        ("content_index", 0u32.into()),
                    ]
                };
                let mut done = at(&index);
                done.push(("text", text.as_str().into()));
                done.push(("logprobs", Json::Array(Vec::new())));
                self.write("response.output_text.done", done, out);
                let mut part = at(&index);
                part.push(("part", text_part(&text)));
                self.write("response.content_part.done", part, out);
                self.item_done(message_item(&id, item_status, Some(&text)), out);
            }
            Some(Open::Reasoning { id, text }) => {
                let at = |index: &Json| {
                    vec![
                        ("item_id", Json::from(id.as_str())),
                        ("output_index", index.clone()),
                        ("summary_index", 0u32.into()),
                    ]
                };
                let mut done = at(&index);
                done.push(("text", text.as_str().into()));
                self.write("response.reasoning_summary_text.done", done, out);
                let mut part = at(&index);
                part.push((
                    "part",
                    Json::object(vec![
                        ("type", "summary_text".into()),
                        ("text", text.as_str().into()),
                    ]),
                ));
                self.write("response.reasoning_summary_part.done", part, out);
                self.item_done(reasoning_item(&id, Some(&text)), out);
            }
            Some(Open::Call {
                id,
                call_id,
                name,
                arguments,
                ..
            }) => {
                let fields = vec![
                    ("item_id", Json::from(id.as_str())),
                    ("output_index", index),
                    ("arguments", arguments.as_str().into()),
                ];
                self.write("response.function_call_arguments.done", fields, out);
                self.item_done(
                    call_item(&id, "completed", &arguments, &call_id, &name),
                    out,
                );
            }
        }
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<u8>) {
        if !self.era.echo_summary() {
            // No summary asked for: the item alone, added and done (PY-WS).
            if !self.reasoning_shown {
                self.reasoning_shown = true;
                self.close(None, out);
                let id = self.era.ids.next("rs", &mut self.rng);
                self.item_added(reasoning_item(&id, None), out);
                self.item_done(reasoning_item(&id, None), out);
            }
            return;
        }
        if !matches!(self.open, Some(Open::Reasoning { .. })) {
            self.close(None, out);
            self.marks.push("wire.shape.responses.reasoning_summary");
            let id = self.era.ids.next("rs", &mut self.rng);
            self.item_added(reasoning_item(&id, None), out);
            let part = Json::object(vec![("type", "summary_text".into()), ("text", "".into())]);
            let index = self.output_index();
            self.write(
                "response.reasoning_summary_part.added",
                vec![
                    ("item_id", id.clone().into()),
                    ("output_index", index),
                    ("summary_index", 0u32.into()),
                    ("part", part),
                ],
                out,
            );
            self.open = Some(Open::Reasoning {
                id,
                text: String::new(),
            });
        }
        let Some(Open::Reasoning { id, text: so_far }) = &mut self.open else {
            unreachable!("a reasoning item was just opened");
        };
        so_far.push_str(text);
        let id = id.clone();
        let fields = self.delta_fields(&id, text, vec![("summary_index", 0u32.into())]);
        self.write("response.reasoning_summary_text.delta", fields, out);
    }

    fn call(
        &mut self,
        model_index: u32,
        call_id: Option<&str>,
        name: Option<&str>,
        fragment: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        let is_open = matches!(&self.open, Some(Open::Call { model_index: open, .. }) if *open == model_index);
        if !is_open {
            self.close(None, out);
            let id = self.era.ids.next("fc", &mut self.rng);
            let (call_id, name) = (
                call_id.unwrap_or_default().to_owned(),
                name.unwrap_or_default().to_owned(),
            );
            self.item_added(call_item(&id, "in_progress", "", &call_id, &name), out);
            self.open = Some(Open::Call {
                model_index,
                id,
                call_id,
                name,
                arguments: String::new(),
            });
        }
        let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
            return;
        };
        let Some(Open::Call { id, arguments, .. }) = &mut self.open else {
            unreachable!("a call item was just opened");
        };
        arguments.push_str(fragment);
        let id = id.clone();
        let fields = self.delta_fields(&id, fragment, Vec::new());
        self.write("response.function_call_arguments.delta", fields, out);
    }

    fn finish(&mut self, finish: &FinishReason, usage: Option<TokenUsage>, out: &mut Vec<u8>) {
        let status = status_of(finish);
        self.close(Some(&status), out);
        let usage = usage.or(self.usage);
        let kind = match status {
            Status::Incomplete(_) => {
                self.marks.push("wire.shape.responses.incomplete");
                "response.incomplete"
            }
            Status::InProgress | Status::Completed | Status::Failed(_) => "response.completed",
        };
        let response = self.era.response(
            status,
            std::mem::take(&mut self.output),
            usage.as_ref(),
            false,
        );
        self.write(kind, vec![("response", response)], out);
    }
}

impl StreamEncoder for ResponsesStream {
    fn preamble(&mut self, out: &mut Vec<u8>) {
        for kind in ["response.created", "response.in_progress"] {
            let response = self
                .era
                .response(Status::InProgress, Vec::new(), None, false);
            self.write(kind, vec![("response", response)], out);
        }
    }

    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        match event {
            StreamEvent::TextDelta { text } => {
                self.open_message(out);
                if text.is_empty() {
                    return Flow::Continue;
                }
                let Some(Open::Message { id, text: so_far }) = &mut self.open else {
                    unreachable!("a message item was just opened");
                };
                so_far.push_str(text);
                let id = id.clone();
                let fields = self.delta_fields(&id, text, vec![("content_index", 0u32.into())]);
                // `logprobs: []` before `obfuscation` (GM).
                let mut fields = fields;
                let obfuscation = fields.pop().expect("delta fields end with obfuscation");
                fields.push(("logprobs", Json::Array(Vec::new())));
                fields.push(obfuscation);
                self.write("response.output_text.delta", fields, out);
            }
            StreamEvent::ReasoningDelta { text } => self.reasoning(text, out),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => {
                self.call(
                    *index,
                    id.as_deref(),
                    name.as_deref(),
                    arguments_fragment.as_deref(),
                    out,
                );
            }
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                self.finish(finish_reason, *usage, out);
                return Flow::End;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, error: &LlmError, out: &mut Vec<u8>) -> Flow {
        self.marks.push("wire.shape.responses.error_in_stream");
        let (_, object) = error_object(&self.errors, &self.era, error, None);
        // The live order nests `{type, code, message, param}` (SWA, V-ERR, DYAD).
        let field = |key: &str| match &object {
            Json::Object(fields) => fields
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(Json::null(), |(_, v)| v.clone()),
            Json::Value(_)
            | Json::Null
            | Json::Bool(_)
            | Json::U64(_)
            | Json::Str(_)
            | Json::Array(_) => Json::null(),
        };
        // `response.error.code` is one of SPEC's `ResponseErrorCode`s, never null: a
        // failure OpenAI gives no code of its own is `server_error`.
        let code = match field("code") {
            code if code.is_null() => Json::from("server_error"),
            code => code,
        };
        let nested = Json::object(vec![
            ("type", field("type")),
            ("code", code.clone()),
            ("message", field("message")),
            ("param", field("param")),
        ]);
        self.write("error", vec![("error", nested)], out);
        // `response.failed` carries `{code, message}` only.
        let failure = Json::object(vec![("code", code), ("message", field("message"))]);
        let output = std::mem::take(&mut self.output);
        let response = self
            .era
            .response(Status::Failed(failure), output, None, false);
        self.write("response.failed", vec![("response", response)], out);
        Flow::End
    }

    fn keep_alive(&self) -> Option<KeepAlive> {
        // No capture shows a keep-alive comment on a Responses stream.
        None
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// SSE lines end in `\n` (PY-SNAP's Responses streams).
    fn line_end(&self) -> &'static str {
        "\n"
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        crate::network::unparseable::cut_frame(frame, rng)
    }
}
