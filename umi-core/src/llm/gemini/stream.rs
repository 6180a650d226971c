//! The stream of `streamGenerateContent?alt=sse`: each SSE event's `data` is one whole
//! `GenerateContentResponse` chunk (VERCEL-FIXTURES
//! `google-stream-gemini-3.7-flash-2026-09-16.chunks.txt` at 1eea90a0). There is no
//! end marker: the stream just ends, its last chunk carrying the `finishReason`;
//! `usageMetadata` comes on every chunk, as running totals, and the last one counts.
//!
//! | chunk | becomes |
//! | --- | --- |
//! | a `text` part | a text delta (an empty one, which carries a thought signature, nothing) |
//! | a `text` part with `thought: true` | a reasoning delta |
//! | a `functionCall` part | one whole tool-call delta (id, name and all the arguments: the API does not stream them) |
//! | `finishReason` | the stop reason of the `Done` the end of the body brings |
//! | `promptFeedback.blockReason` (no candidates) | a content-filter stop (VERCEL-FIXTURES `issue-19758-prompt-block.chunks.txt`) |
//! | `{"error": {...}}` | the typed error, after every event before it (PYTHON-GENAI `google/genai/_api_client.py` raises a chunk that starts with `{"error":`) |
//!
//! A body that ends before any finish reason (or block) is
//! [`LlmError::StreamTruncated`]; one that ends inside a chunk drops that chunk.

use super::wire::{WireResponse, WireUsage, finish_reason, read_response};
use crate::llm::error::LlmError;
use crate::llm::event::StreamEvent;
use crate::llm::response::{FinishReason, TokenUsage};
use crate::llm::wire::reader::WireDecoder;
use crate::llm::wire::sse::{SseDecoder, SseEvent};

/// SSE chunks of `streamGenerateContent` into stream events.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    sse: SseDecoder,
    /// Function calls so far: the next call's index.
    calls: u32,
    /// The last finish reason seen, as sent.
    finish: Option<String>,
    /// Whether the prompt was blocked.
    blocked: bool,
    usage: Option<TokenUsage>,
    done: bool,
}

impl GeminiDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done || event.data.trim().is_empty() {
            return Ok(());
        }
        let mut chunk: WireResponse = read_response(&event.data)?;
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(WireUsage::usage(usage));
        }
        self.blocked |= chunk.block_reason().is_some();
        if chunk.candidates.is_empty() {
            return Ok(());
        }
        let candidate = chunk.candidates.swap_remove(0);
        for part in candidate.content.unwrap_or_default().parts {
            if let Some(call) = part.function_call {
                let position = usize::try_from(self.calls).unwrap_or(usize::MAX);
                let call = super::wire::tool_call(call, position, &event.data)?;
                out.push(StreamEvent::ToolCallDelta {
                    index: self.calls,
                    id: Some(call.id),
                    name: Some(call.name),
                    arguments_fragment: Some(crate::canonical_json::to_string(&call.arguments)),
                });
                self.calls = self.calls.saturating_add(1);
            } else if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                out.push(if part.thought == Some(true) {
                    StreamEvent::ReasoningDelta { text }
                } else {
                    StreamEvent::TextDelta { text }
                });
            }
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(reason);
        }
        Ok(())
    }

    /// The stop the stream ended with, if it said one.
    fn stop(&self) -> Option<FinishReason> {
        match &self.finish {
            Some(reason) => Some(finish_reason(reason, self.calls > 0)),
            None => self.blocked.then_some(FinishReason::ContentFilter),
        }
    }
}

impl WireDecoder for GeminiDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let mut events = Vec::new();
        let fed = self.sse.feed(bytes, &mut events);
        for event in &events {
            self.on_event(event, out)?;
        }
        fed
    }

    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let before = out.len();
        // A chunk the body ended inside is a cut, not a malformed chunk: a whole one
        // (the last chunk without its blank line) still counts, an error too.
        if let Ok(Some(event)) = self.sse.finish() {
            let mut whole = Vec::new();
            match self.on_event(&event, &mut whole) {
                Ok(()) => out.extend(whole),
                Err(error @ LlmError::InvalidResponse { .. }) => drop(error),
                Err(error) => return Err(error),
            }
        }
        if self.done {
            return Ok(());
        }
        match self.stop() {
            Some(reason) => {
                self.done = true;
                out.push(StreamEvent::done(reason, self.usage));
                Ok(())
            }
            None => Err(LlmError::StreamTruncated {
                events_received: events_so_far + (out.len() - before) as u64,
            }),
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
