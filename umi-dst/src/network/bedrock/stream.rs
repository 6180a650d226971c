//! A ConverseStream body: the model's events as event-stream messages
//! ([`super::eventstream`]), each payload one `ConverseStreamOutput` member's JSON
//! (BEDROCK-API `ConverseStream`, "Response Syntax"; the events in the order botocore's
//! docs example and AWS's "Converse API" user guide show them).
//!
//! `messageStart {role}` goes out as the stream opens. Text is `contentBlockDelta`
//! events of one block with no `contentBlockStart` (the API sends a start only for a
//! tool use); each tool call is a block of its own, `contentBlockStart {start: {toolUse:
//! {toolUseId, name}}}`, then its input as `contentBlockDelta {delta: {toolUse: {input}}}`
//! string fragments; every block ends with `contentBlockStop`; blocks are numbered from
//! 0 in the order they start. `messageStop {stopReason}` and `metadata {usage, metrics}`
//! end the body. A failure after the 200 is an exception message, then the connection
//! ends.

use crate::rng::DeterministicRng;
use umi_core::llm::{FinishReason, LlmError, StreamEvent, TokenUsage};

use super::{Answer, errors, eventstream, stop_name};
use crate::network::format::{Flow, Parsed, StreamEncoder};
use crate::network::json::{Json, Spacing};
use crate::network::shapes::KeepAlive;

/// What the open block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Reasoning,
    /// The model's tool call number.
    Tool(u32),
}

pub(crate) struct BedrockStream {
    answer: Answer,
    open: Option<(u32, Block)>,
    next_index: u32,
    usage: Option<TokenUsage>,
    input_estimate: u32,
    marks: Vec<&'static str>,
}

impl BedrockStream {
    pub(crate) fn new(answer: Answer, parsed: &Parsed, marks: Vec<&'static str>) -> Self {
        Self {
            answer,
            open: None,
            next_index: 0,
            usage: None,
            input_estimate: crate::llm::memo::request_tokens(&parsed.request),
            marks,
        }
    }

    fn write(kind: &str, payload: &Json, out: &mut Vec<u8>) {
        out.extend(eventstream::event(
            kind,
            &payload.to_bytes(Spacing::Compact),
        ));
    }

    /// Closes the open block unless it is `block`; returns the index `block` is at,
    /// opening it (`true`) when it was not open.
    fn block(&mut self, block: Block, out: &mut Vec<u8>) -> (u32, bool) {
        if let Some((index, open)) = self.open
            && open == block
        {
            return (index, false);
        }
        self.close(out);
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((index, block));
        (index, true)
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if let Some((index, _)) = self.open.take() {
            let stop = Json::object(vec![("contentBlockIndex", index.into())]);
            Self::write("contentBlockStop", &stop, out);
        }
    }

    fn delta(index: u32, delta: Json, out: &mut Vec<u8>) {
        let payload = Json::object(vec![("contentBlockIndex", index.into()), ("delta", delta)]);
        Self::write("contentBlockDelta", &payload, out);
    }

    fn tool_delta(
        &mut self,
        call: u32,
        id: Option<&str>,
        name: Option<&str>,
        fragment: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        let (index, opened) = self.block(Block::Tool(call), out);
        if opened {
            let tool_use = Json::object(vec![
                ("toolUseId", self.answer.call_id(call, id).into()),
                ("name", name.unwrap_or_default().into()),
            ]);
            let start = Json::object(vec![
                ("contentBlockIndex", index.into()),
                ("start", Json::object(vec![("toolUse", tool_use)])),
            ]);
            Self::write("contentBlockStart", &start, out);
            self.marks.push("wire.shape.bedrock.tool_use");
        }
        if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
            let input = Json::object(vec![("input", fragment.into())]);
            Self::delta(index, Json::object(vec![("toolUse", input)]), out);
        }
    }

    fn done(&mut self, finish: &FinishReason, usage: Option<TokenUsage>, out: &mut Vec<u8>) {
        self.close(out);
        let stop = Json::object(vec![("stopReason", stop_name(finish).into())]);
        Self::write("messageStop", &stop, out);
        let usage = usage
            .or(self.usage)
            .unwrap_or_else(|| TokenUsage::new(self.input_estimate, 0));
        let metadata = Json::object(vec![
            ("usage", self.answer.usage(usage)),
            ("metrics", self.answer.metrics()),
        ]);
        Self::write("metadata", &metadata, out);
    }
}

impl StreamEncoder for BedrockStream {
    fn preamble(&mut self, out: &mut Vec<u8>) {
        let start = Json::object(vec![("role", "assistant".into())]);
        Self::write("messageStart", &start, out);
    }

    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        match event {
            StreamEvent::TextDelta { text } => {
                let (index, _) = self.block(Block::Text, out);
                Self::delta(
                    index,
                    Json::object(vec![("text", text.as_str().into())]),
                    out,
                );
            }
            StreamEvent::ReasoningDelta { text } => {
                let (index, _) = self.block(Block::Reasoning, out);
                let reasoning = Json::object(vec![("text", text.as_str().into())]);
                Self::delta(
                    index,
                    Json::object(vec![("reasoningContent", reasoning)]),
                    out,
                );
            }
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
                self.done(finish_reason, *usage, out);
                return Flow::End;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, error: &LlmError, out: &mut Vec<u8>) -> Flow {
        let (_, exception, message) = errors::kind_of(error, None);
        let payload = Json::object(vec![("message", message.into())]);
        out.extend(eventstream::exception(
            errors::stream_exception(exception),
            &payload.to_bytes(Spacing::Compact),
        ));
        self.marks.push("wire.shape.bedrock.stream_exception");
        Flow::Close
    }

    fn keep_alive(&self) -> Option<KeepAlive> {
        // The event stream has no comment frame: a silent model sends nothing.
        None
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// Binary frames have no line end, and no keep-alive comment ends with one
    /// ([`StreamEncoder::keep_alive`] is `None`; the Amazon Event Stream specification).
    fn line_end(&self) -> &'static str {
        ""
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        eventstream::cut_last_payload(frame, rng)
    }
}
