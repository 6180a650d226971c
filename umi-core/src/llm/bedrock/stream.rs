//! The stream of `ConverseStream`: event-stream messages ([`super::eventstream`]), each
//! an event named by its `:event-type` header whose payload is that event's JSON
//! (BEDROCK-API `ConverseStreamOutput`; botocore `botocore/eventstream.py` reads them
//! so).
//!
//! | event | becomes |
//! | --- | --- |
//! | `messageStart {role}` | nothing |
//! | `contentBlockStart {contentBlockIndex, start: {toolUse: {toolUseId, name}}}` | a tool-call delta opening call n (its id and name) |
//! | `contentBlockDelta {delta: {text}}` | a text delta |
//! | `contentBlockDelta {delta: {toolUse: {input}}}` | an arguments fragment of the open call |
//! | `contentBlockDelta {delta: {reasoningContent: {text}}}` | a reasoning delta |
//! | `contentBlockStop`, unknown events | nothing |
//! | `messageStop {stopReason}` | the finish |
//! | `metadata {usage, metrics}` | `Done`, with the usage (the stream's last event) |
//! | `:message-type` `exception` (`:exception-type` names it) or `error` (`:error-code`, `:error-message`) | the typed error, after every event before it |
//!
//! A body that ends after `messageStop` but before `metadata` still ends well (the
//! finish was said); one that ends before `messageStop`, or inside a message, is
//! [`LlmError::StreamTruncated`].

use serde::Deserialize;
use serde_json::Value;

use super::eventstream::{FrameDecoder, Message};
use super::wire::{WireUsage, exception_error, stop_reason};
use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::response::{FinishReason, TokenUsage};
use crate::llm::wire::reader::WireDecoder;

/// Event-stream messages of `ConverseStream` into stream events.
#[derive(Debug, Default)]
pub struct BedrockDecoder {
    frames: FrameDecoder,
    /// The content block index of each tool call opened, in order (its position is the
    /// call's index).
    calls: Vec<u64>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    done: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockEvent {
    #[serde(default)]
    content_block_index: u64,
    #[serde(default)]
    start: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
}

impl BedrockDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_message(
        &mut self,
        message: &Message,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        match message.header(":message-type").unwrap_or("event") {
            "exception" => {
                let name = message.header(":exception-type").unwrap_or("exception");
                return Err(exception_error(name, &message.payload));
            }
            "error" => {
                let code = message.header(":error-code").unwrap_or("error");
                let text = message.header(":error-message").unwrap_or_default();
                let payload = serde_json::json!({ "message": text }).to_string();
                return Err(exception_error(code, payload.as_bytes()));
            }
            _ => {}
        }
        let text = String::from_utf8_lossy(&message.payload);
        let payload: Value =
            serde_json::from_str(&text).map_err(|_| LlmError::InvalidResponse {
                reason: "a ConverseStream event's payload is not JSON".into(),
                snippet: snippet(&text),
            })?;
        match message.header(":event-type").unwrap_or_default() {
            "contentBlockStart" | "contentBlockDelta" => self.on_block(payload, &text, out),
            "messageStop" => {
                let reason = payload.get("stopReason").and_then(Value::as_str);
                self.finish = Some(reason.map_or(FinishReason::Missing, stop_reason));
                Ok(())
            }
            "metadata" => {
                if let Some(usage) = payload.get("usage") {
                    let usage: WireUsage = serde_json::from_value(usage.clone()).map_err(|_| {
                        LlmError::InvalidResponse {
                            reason: "a metadata event's usage is not BEDROCK-API TokenUsage".into(),
                            snippet: snippet(&text),
                        }
                    })?;
                    self.usage = Some(usage.usage());
                }
                self.end(out);
                Ok(())
            }
            // messageStart, contentBlockStop, and events added later.
            _ => Ok(()),
        }
    }

    fn on_block(
        &mut self,
        payload: Value,
        text: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let event: BlockEvent =
            serde_json::from_value(payload).map_err(|_| LlmError::InvalidResponse {
                reason: "a content block event is not BEDROCK-API's".into(),
                snippet: snippet(text),
            })?;
        if let Some(tool) = event.start.as_ref().and_then(|s| s.get("toolUse")) {
            let field = |name: &str| tool.get(name).and_then(Value::as_str).map(str::to_owned);
            let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
            self.calls.push(event.content_block_index);
            out.push(StreamEvent::ToolCallDelta {
                index,
                id: field("toolUseId"),
                name: field("name"),
                arguments_fragment: None,
            });
            return Ok(());
        }
        let Some(delta) = event.delta else {
            return Ok(());
        };
        if let Some(text) = delta.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                out.push(StreamEvent::TextDelta {
                    text: text.to_owned(),
                });
            }
        } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str) {
            let Some(position) = self
                .calls
                .iter()
                .position(|b| *b == event.content_block_index)
            else {
                return Err(LlmError::InvalidResponse {
                    reason: "tool input for a content block that opened no tool call".into(),
                    snippet: snippet(text),
                });
            };
            out.push(StreamEvent::ToolCallDelta {
                index: u32::try_from(position).unwrap_or(u32::MAX),
                id: None,
                name: None,
                arguments_fragment: Some(input.to_owned()),
            });
        } else if let Some(reasoning) = delta
            .pointer("/reasoningContent/text")
            .and_then(Value::as_str)
            && !reasoning.is_empty()
        {
            out.push(StreamEvent::ReasoningDelta {
                text: reasoning.to_owned(),
            });
        }
        Ok(())
    }

    /// `Done` with the finish said (or `Missing`) and the usage, once.
    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        if self.done {
            return;
        }
        self.done = true;
        let finish = self.finish.take().unwrap_or(FinishReason::Missing);
        out.push(StreamEvent::done(finish, self.usage));
    }
}

impl WireDecoder for BedrockDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let mut messages = Vec::new();
        let framed = self.frames.feed(bytes, &mut messages);
        for message in &messages {
            self.on_message(message, out)?;
        }
        framed
    }

    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() && self.frames.pending_bytes() == 0 {
            // `messageStop` came; only `metadata` (the usage) is missing.
            self.end(out);
            return Ok(());
        }
        Err(LlmError::StreamTruncated {
            events_received: events_so_far,
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
