//! Turn: one scripted answer, part by part, and how it plays out as a stream.
//!
//! A turn is what a scripted or function model answers to one call. Its parts are
//! emitted in order: text, reasoning, whole tool calls (each one delta at the next index),
//! raw tool-call fragments (to reproduce exactly what a real provider sent), usage,
//! pauses in environment time, and an error at that point (which ends the stream, as the
//! contract says). After the last part comes `Done`, unless an error came first. A turn
//! can instead *refuse*: `stream()` itself fails, as a provider does for a 429 or a 401.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use umi_core::env::Env;
use umi_core::llm::{EventStream, FinishReason, LlmError, StreamEvent, TokenUsage, ToolCall};

/// One piece of a scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// A text delta.
    Text(String),
    /// A reasoning delta.
    Reasoning(String),
    /// A whole tool call, sent as one delta at the next free index.
    ToolCall(ToolCall),
    /// A raw tool-call delta, exactly as given.
    ToolCallFragment {
        /// The call's index.
        index: u32,
        /// The id, if this delta carries it.
        id: Option<String>,
        /// The name, if this delta carries it.
        name: Option<String>,
        /// Arguments text to append, if any.
        arguments: Option<String>,
    },
    /// A usage event.
    Usage(TokenUsage),
    /// Wait this long (environment time) before the next part.
    Pause(Duration),
    /// Fail here: an `Err` item that ends the stream.
    Error(LlmError),
}

/// One scripted answer. Build with [`Turn::new`] or a shortcut ([`Turn::text`],
/// [`Turn::tool_call`], [`Turn::refuse`]) and chain parts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    parts: Vec<Part>,
    finish_reason: Option<FinishReason>,
    usage: Option<TokenUsage>,
    refusal: Option<LlmError>,
}

impl Turn {
    /// An empty turn (just `Done`).
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn answering `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().then_text(text)
    }

    /// A turn calling one tool.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self::new().then_tool_call(id, name, arguments)
    }

    /// A turn whose `stream()` call fails with `error` before anything is produced.
    pub fn refuse(error: LlmError) -> Self {
        Self {
            refusal: Some(error),
            ..Self::default()
        }
    }

    /// Adds text.
    pub fn then_text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Adds reasoning text.
    pub fn then_reasoning(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Reasoning(text.into()));
        self
    }

    /// Adds a whole tool call.
    pub fn then_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.parts
            .push(Part::ToolCall(ToolCall::new(id, name, arguments)));
        self
    }

    /// Adds a raw tool-call delta.
    pub fn then_fragment(
        mut self,
        index: u32,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> Self {
        self.parts.push(Part::ToolCallFragment {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.map(str::to_owned),
        });
        self
    }

    /// Adds a usage event.
    pub fn then_usage(mut self, usage: TokenUsage) -> Self {
        self.parts.push(Part::Usage(usage));
        self
    }

    /// Adds a pause (needs the model to have an environment).
    pub fn then_pause(mut self, duration: Duration) -> Self {
        self.parts.push(Part::Pause(duration));
        self
    }

    /// Fails the stream at this point.
    pub fn then_error(mut self, error: LlmError) -> Self {
        self.parts.push(Part::Error(error));
        self
    }

    /// Sets the finish reason (default: `tool_calls` if the turn calls tools, else `stop`).
    pub fn with_finish_reason(mut self, finish_reason: FinishReason) -> Self {
        self.finish_reason = Some(finish_reason);
        self
    }

    /// Reports `usage` inside `Done`.
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    fn calls_tools(&self) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, Part::ToolCall(_) | Part::ToolCallFragment { .. }))
    }

    /// Plays the turn: the refusal, or the stream of its parts then `Done`. Pauses sleep
    /// on `env`; a turn with a pause and no environment is refused with a clear error.
    pub fn play(self, env: Option<Env>) -> Result<EventStream, LlmError> {
        if let Some(error) = self.refusal {
            return Err(error);
        }
        let has_pause = self.parts.iter().any(|part| matches!(part, Part::Pause(_)));
        if has_pause && env.is_none() {
            return Err(LlmError::BadRequest {
                status: None,
                message: "scripted turn has a pause but the model has no environment \
                          (build it with .with_env(env))"
                    .into(),
            });
        }
        let calls_tools = self.calls_tools();
        let finish_reason = self.finish_reason.unwrap_or(if calls_tools {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        let state = PlayState {
            parts: self.parts.into(),
            next_call_index: 0,
            done: Some(StreamEvent::done(finish_reason, self.usage)),
            env,
        };
        // Fused: a stream polled again after its end answers `None` again (an unfused
        // `unfold` panics), as a consumer that polls once more may expect.
        Ok(futures::stream::unfold(state, PlayState::next)
            .fuse()
            .boxed())
    }
}

struct PlayState {
    parts: VecDeque<Part>,
    next_call_index: u32,
    /// The Done still to send; `None` once sent or once an error ended the stream.
    done: Option<StreamEvent>,
    env: Option<Env>,
}

impl PlayState {
    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            let Some(part) = self.parts.pop_front() else {
                let done = self.done.take()?;
                return Some((Ok(done), self));
            };
            let event = match part {
                Part::Text(text) => StreamEvent::TextDelta { text },
                Part::Reasoning(text) => StreamEvent::ReasoningDelta { text },
                Part::ToolCall(call) => {
                    let index = self.next_call_index;
                    self.next_call_index += 1;
                    StreamEvent::ToolCallDelta {
                        index,
                        id: Some(call.id),
                        name: Some(call.name),
                        arguments_fragment: Some(umi_core::canonical_json::to_string(
                            &call.arguments,
                        )),
                    }
                }
                Part::ToolCallFragment {
                    index,
                    id,
                    name,
                    arguments,
                } => {
                    self.next_call_index = self.next_call_index.max(index + 1);
                    StreamEvent::ToolCallDelta {
                        index,
                        id,
                        name,
                        arguments_fragment: arguments,
                    }
                }
                Part::Usage(usage) => StreamEvent::Usage { usage },
                Part::Pause(duration) => {
                    if let Some(env) = &self.env {
                        env.sleep(duration).await;
                    }
                    continue;
                }
                Part::Error(error) => {
                    self.parts.clear();
                    self.done = None;
                    return Some((Err(error), self));
                }
            };
            return Some((Ok(event), self));
        }
    }
}
