//! A Messages stream: the model's events as named SSE events.
//!
//! `message_start` goes out as soon as the stream opens (its input count is the
//! server's own estimate, as the API counts before it generates); each run of text,
//! thinking or one tool call is a content block (`content_block_start`, deltas,
//! `content_block_stop`), numbered from 0 in the order they start and never interleaved
//! (FANTASY `multi_tool_streaming.yaml`); `message_delta` carries the stop reason and
//! the counts, and `message_stop` ends the body. One `ping` follows the first block's
//! start (FANTASY, all streams) or its second delta (VERCEL
//! `anthropic-json-output-format.1.chunks.txt`); more come while the model is silent
//! (DOC-STREAM: "any number of ping events"). A failure after the 200 is an `error`
//! event, then the connection ends without `message_stop`.
//!
//! Tool input arrives as `input_json_delta` fragments, the first always empty. A
//! fragment never ends inside a JSON escape: no capture shows one split there (about
//! 140 fragments in FANTASY, VERCEL 11719), so an escape cut by the model's chunking is
//! held back and sent with the next fragment.

use umi_core::llm::{FinishReason, LlmError, StreamEvent, TokenUsage};

use super::errors;
use super::{Era, Layout, signature, write_padded};
use crate::network::format::{Flow, Parsed, StreamEncoder};
use crate::network::json::Json;
use crate::network::shapes::KeepAlive;
use crate::rng::DeterministicRng;

/// The widest padding before an event's last `}` (FANTASY: 0 to 15 spaces).
pub(crate) const PAD_SPACES_MAX: u64 = 15;

/// What a content block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    /// The model's tool call number.
    Tool(u32),
}

/// Where the first `ping` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PingPlace {
    AfterFirstBlockStart,
    AfterSecondDelta,
}

/// The length of the prefix of `text` that ends outside any JSON escape (`\"`,
/// `\uXXXX`): what may be sent now; the rest waits for the next fragment.
pub(crate) fn escape_safe_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let width = if bytes.get(at + 1) == Some(&b'u') {
            6
        } else {
            2
        };
        if at + width > bytes.len() {
            return at;
        }
        at += width;
    }
    bytes.len()
}

pub(crate) struct AnthropicStream {
    era: Era,
    organization_id: String,
    rng: DeterministicRng,
    ping: PingPlace,
    pinged: bool,
    deltas: u32,
    reasoning_requested: bool,
    input_tokens_estimate: u32,
    open: Option<(u32, Block)>,
    next_index: u32,
    /// A tool fragment's tail held back because it ends inside an escape.
    held: String,
    usage: Option<TokenUsage>,
    marks: Vec<&'static str>,
}

impl AnthropicStream {
    pub(crate) fn new(
        era: Era,
        organization_id: String,
        mut rng: DeterministicRng,
        parsed: &Parsed,
        marks: Vec<&'static str>,
    ) -> Self {
        let ping = if rng.bool_with(0.75) {
            PingPlace::AfterFirstBlockStart
        } else {
            PingPlace::AfterSecondDelta
        };
        Self {
            era,
            organization_id,
            rng,
            ping,
            pinged: false,
            deltas: 0,
            reasoning_requested: parsed.reasoning_requested,
            input_tokens_estimate: crate::llm::memo::request_tokens(&parsed.request),
            open: None,
            next_index: 0,
            held: String::new(),
            usage: None,
            marks,
        }
    }

    /// Writes one event: `event: <name>`, then its data padded as the era pads.
    fn write(&mut self, name: &str, data: &Json, out: &mut Vec<u8>) {
        let pad = if self.era.layout.pads() {
            self.rng.range_inclusive(0, PAD_SPACES_MAX) as usize
        } else {
            0
        };
        if pad > 0 && !self.marks.contains(&"wire.shape.anthropic.padded") {
            self.marks.push("wire.shape.anthropic.padded");
        }
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\ndata: ");
        write_padded(data, pad, out);
        out.extend_from_slice(b"\n\n");
    }

    fn write_ping(&mut self, out: &mut Vec<u8>, mark: &'static str) {
        self.pinged = true;
        self.marks.push(mark);
        out.extend_from_slice(b"event: ping\ndata: {\"type\": \"ping\"}\n\n");
    }

    fn delta(&mut self, index: u32, delta: Json, out: &mut Vec<u8>) {
        let data = Json::object(vec![
            ("type", "content_block_delta".into()),
            ("index", index.into()),
            ("delta", delta),
        ]);
        self.write("content_block_delta", &data, out);
        self.deltas += 1;
        if !self.pinged && self.ping == PingPlace::AfterSecondDelta && self.deltas == 2 {
            self.write_ping(out, "wire.shape.anthropic.ping_after_deltas");
        }
    }

    /// Opens a block of `block` unless it is the one open, closing the one open.
    fn open_block(
        &mut self,
        block: Block,
        start: impl FnOnce(&Era) -> Json,
        out: &mut Vec<u8>,
    ) -> u32 {
        if let Some((index, open)) = self.open
            && open == block
        {
            return index;
        }
        self.close_block(out);
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((index, block));
        let data = Json::object(vec![
            ("type", "content_block_start".into()),
            ("index", index.into()),
            ("content_block", start(&self.era)),
        ]);
        self.write("content_block_start", &data, out);
        if !self.pinged && self.ping == PingPlace::AfterFirstBlockStart {
            self.write_ping(out, "wire.shape.anthropic.ping_after_first_block");
        }
        index
    }

    /// Closes the open block: a thinking block ends with an empty `thinking_delta` and
    /// its `signature_delta` (FANTASY `thinking-streaming.yaml`; DOC-STREAM); a tool
    /// block sends what it held back.
    fn close_block(&mut self, out: &mut Vec<u8>) {
        let Some((index, block)) = self.open.take() else {
            return;
        };
        match block {
            Block::Thinking => {
                let empty = json_delta("thinking_delta", "thinking", String::new());
                self.delta(index, empty, out);
                let signature = signature(&mut self.rng);
                self.delta(
                    index,
                    json_delta("signature_delta", "signature", signature),
                    out,
                );
            }
            Block::Tool(_) if !self.held.is_empty() => {
                let rest = std::mem::take(&mut self.held);
                self.delta(
                    index,
                    json_delta("input_json_delta", "partial_json", rest),
                    out,
                );
            }
            Block::Text | Block::Tool(_) => {}
        }
        let data = Json::object(vec![
            ("type", "content_block_stop".into()),
            ("index", index.into()),
        ]);
        self.write("content_block_stop", &data, out);
    }

    fn tool_delta(
        &mut self,
        call: u32,
        id: Option<&str>,
        name: Option<&str>,
        fragment: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        let (id, name) = (
            id.unwrap_or_default().to_owned(),
            name.unwrap_or_default().to_owned(),
        );
        let was_open = matches!(self.open, Some((_, Block::Tool(open))) if open == call);
        let index = self.open_block(
            Block::Tool(call),
            |era| era.tool_block(&id, &name, Json::object(Vec::new())),
            out,
        );
        if !was_open {
            self.delta(
                index,
                json_delta("input_json_delta", "partial_json", String::new()),
                out,
            );
        }
        let mut text = std::mem::take(&mut self.held);
        text.push_str(fragment.unwrap_or_default());
        let safe = escape_safe_len(&text);
        self.held = text.split_off(safe);
        if !text.is_empty() {
            self.delta(
                index,
                json_delta("input_json_delta", "partial_json", text),
                out,
            );
        }
    }

    fn finish(&mut self, finish: &FinishReason, usage: Option<TokenUsage>, out: &mut Vec<u8>) {
        self.close_block(out);
        if *finish == FinishReason::ContentFilter {
            self.marks.push("wire.shape.anthropic.refusal");
        }
        let usage = usage.or(self.usage).unwrap_or_default();
        let mut delta = Json::object(Vec::new());
        self.era.push_stop(&mut delta, Some(finish));
        let counts = if self.era.layout == Layout::Y2024 {
            Json::object(vec![("output_tokens", usage.completion_tokens.into())])
        } else {
            // 2026 captures repeat every count, without the cache object or tier.
            let cache_read = usage.cached_prompt_tokens.unwrap_or(0);
            let cache_write = usage.cache_write_tokens.unwrap_or(0);
            Json::object(vec![
                (
                    "input_tokens",
                    usage
                        .prompt_tokens
                        .saturating_sub(cache_read + cache_write)
                        .into(),
                ),
                ("cache_creation_input_tokens", cache_write.into()),
                ("cache_read_input_tokens", cache_read.into()),
                ("output_tokens", usage.completion_tokens.into()),
            ])
        };
        let data = Json::object(vec![
            ("type", "message_delta".into()),
            ("delta", delta),
            ("usage", counts),
        ]);
        self.write("message_delta", &data, out);
        let stop = Json::object(vec![("type", "message_stop".into())]);
        self.write("message_stop", &stop, out);
    }
}

fn json_delta(kind: &'static str, key: &'static str, value: String) -> Json {
    Json::object(vec![("type", kind.into()), (key, value.into())])
}

impl StreamEncoder for AnthropicStream {
    fn preamble(&mut self, out: &mut Vec<u8>) {
        let mut message = self.era.message_head();
        message.push("content", Json::Array(Vec::new()));
        self.era.push_stop(&mut message, None);
        // `output_tokens` is small but not zero in `message_start` (FANTASY: 1 to 6).
        let output_so_far = self.rng.range_inclusive(1, 6) as u32;
        let input = TokenUsage::new(self.input_tokens_estimate, 0);
        message.push("usage", self.era.usage(input, output_so_far));
        let data = Json::object(vec![("type", "message_start".into()), ("message", message)]);
        self.write("message_start", &data, out);
    }

    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        match event {
            StreamEvent::TextDelta { text } => {
                let start =
                    |_: &Era| Json::object(vec![("type", "text".into()), ("text", "".into())]);
                let index = self.open_block(Block::Text, start, out);
                if !text.is_empty() {
                    self.delta(index, json_delta("text_delta", "text", text.clone()), out);
                }
            }
            StreamEvent::ReasoningDelta { text } if self.reasoning_requested => {
                let start = |_: &Era| {
                    Json::object(vec![
                        ("type", "thinking".into()),
                        ("thinking", "".into()),
                        ("signature", "".into()),
                    ])
                };
                let index = self.open_block(Block::Thinking, start, out);
                if !text.is_empty() {
                    self.delta(
                        index,
                        json_delta("thinking_delta", "thinking", text.clone()),
                        out,
                    );
                }
            }
            // Claude shows no thinking to a request that did not enable it.
            StreamEvent::ReasoningDelta { .. } => {}
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => self.tool_delta(
                *index,
                id.as_deref(),
                name.as_deref(),
                arguments_fragment.as_deref(),
                out,
            ),
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
        self.marks.push("wire.shape.anthropic.error_event");
        let data = errors::event(&self.era, error, &self.organization_id);
        self.write("error", &data, out);
        Flow::Close
    }

    fn keep_alive(&self) -> Option<KeepAlive> {
        Some(KeepAlive {
            comment: "event: ping\ndata: {\"type\": \"ping\"}",
            every_ms: None,
        })
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// SSE lines end in `\n` (the Messages API's streaming reference).
    fn line_end(&self) -> &'static str {
        "\n"
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        crate::network::unparseable::cut_frame(frame, rng)
    }
}
