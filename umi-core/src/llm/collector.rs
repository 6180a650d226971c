//! StreamCollector: stream events back into one [`CompletionResponse`].
//!
//! It accepts what real providers send, not just what the contract promises: a tool
//! call's id and name only in its first delta (or repeated, unchanged, in every one);
//! parallel calls interleaved by index; an index reused for a new call, told by its new
//! id (Ollama's /v1 numbers every call 0); argument fragments split anywhere, including
//! inside a JSON escape or between the halves of a surrogate-pair escape (arguments are
//! parsed only once the call is complete); text before tool calls; usage before Done,
//! inside it, or after it. A missing tool-call id (Ollama's native API sends none)
//! becomes `call_<index>`. Calls come out in index order, and calls that share an index
//! in the order they were opened.
//!
//! Everything else is a typed error, never a panic: a stream with no Done
//! ([`LlmError::EmptyStream`] when nothing came at all, [`LlmError::StreamTruncated`]
//! otherwise), a Done without a finish reason ([`FinishReason::Missing`]) and nothing
//! before it ([`LlmError::EmptyStream`]), or after a tool call whose arguments never
//! came ([`LlmError::InvalidResponse`]: with no finish reason to vouch for it, an empty
//! call is a cut one, never `{}`), arguments that are not JSON at Done ([`LlmError::Json`], naming the call
//! and showing the text), a runaway answer (a tool index over `TOOL_CALL_INDEX_MAX`, or
//! more calls than `TOOL_CALLS_PER_RESPONSE_MAX`: [`LlmError::TooManyToolCalls`], which
//! no retry of the same model fixes), a call without a name, a name that changes
//! mid-call, anything but usage after Done ([`LlmError::InvalidResponse`]), and text or
//! arguments past their byte limits ([`LlmError::ResponseTooLarge`]).

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::Value;

use super::error::{LlmError, snippet};
use super::event::{EventStream, StreamEvent};
use super::message::ToolCall;
use super::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::constants::{
    RESPONSE_TEXT_BYTES_MAX, STREAM_EVENTS_MAX, TOOL_ARGUMENTS_BYTES_MAX, TOOL_CALL_INDEX_MAX,
    TOOL_CALLS_PER_RESPONSE_MAX,
};

#[derive(Debug, Default)]
struct PartialCall {
    index: u32,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Accumulates stream events; [`StreamCollector::finish`] turns them into a response.
#[derive(Debug)]
pub struct StreamCollector {
    model: String,
    text: String,
    reasoning: Option<String>,
    /// Calls in the order they were opened.
    calls: Vec<PartialCall>,
    /// The call each index currently continues (a position in `calls`).
    open: BTreeMap<u32, usize>,
    usage: Option<TokenUsage>,
    finish_reason: Option<FinishReason>,
    events: u64,
}

impl StreamCollector {
    /// A collector for an answer from `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            text: String::new(),
            reasoning: None,
            calls: Vec::new(),
            open: BTreeMap::new(),
            usage: None,
            finish_reason: None,
            events: 0,
        }
    }

    /// Collects items already in hand (a decoded body): as [`StreamCollector::collect`],
    /// the first `Err` item ends it and is returned as it is.
    pub fn collect_items(
        model: impl Into<String>,
        items: impl IntoIterator<Item = Result<StreamEvent, LlmError>>,
    ) -> Result<CompletionResponse, LlmError> {
        let mut collector = Self::new(model);
        for item in items {
            collector.push(item?)?;
        }
        collector.finish()
    }

    /// Collects a whole stream. An `Err` item ends it and is returned as it is.
    pub async fn collect(
        model: impl Into<String>,
        mut stream: EventStream,
    ) -> Result<CompletionResponse, LlmError> {
        let mut collector = Self::new(model);
        while let Some(item) = stream.next().await {
            collector.push(item?)?;
        }
        collector.finish()
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Events accepted so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether the Done event has arrived.
    pub fn is_done(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Adds one event.
    pub fn push(&mut self, event: StreamEvent) -> Result<(), LlmError> {
        if self.events >= STREAM_EVENTS_MAX {
            return Err(invalid(
                format!("stream of more than {STREAM_EVENTS_MAX} events"),
                &event,
            ));
        }
        if self.finish_reason.is_some() && !matches!(event, StreamEvent::Usage { .. }) {
            return Err(invalid("event after Done".into(), &event));
        }
        self.events += 1;
        match event {
            StreamEvent::TextDelta { text } => {
                append_bounded(&mut self.text, &text, "text", RESPONSE_TEXT_BYTES_MAX)?;
            }
            StreamEvent::ReasoningDelta { text } => {
                let reasoning = self.reasoning.get_or_insert_with(String::new);
                append_bounded(reasoning, &text, "reasoning", RESPONSE_TEXT_BYTES_MAX)?;
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => {
                if index > TOOL_CALL_INDEX_MAX {
                    return Err(LlmError::TooManyToolCalls {
                        calls: index.saturating_add(1),
                        limit: TOOL_CALL_INDEX_MAX + 1,
                    });
                }
                let position = self.call_for(index, id.as_deref())?;
                let call = &mut self.calls[position];
                set_once(&mut call.id, id, index, "id")?;
                set_once(&mut call.name, name, index, "name")?;
                if let Some(fragment) = arguments_fragment {
                    let what = format!("arguments of tool call {index}");
                    append_bounded(
                        &mut call.arguments,
                        &fragment,
                        &what,
                        TOOL_ARGUMENTS_BYTES_MAX,
                    )?;
                }
            }
            StreamEvent::Usage { usage } => self.usage = Some(usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                self.finish_reason = Some(finish_reason);
                if usage.is_some() {
                    self.usage = usage;
                }
            }
        }
        Ok(())
    }

    /// The position of the call a delta at `index` with `id` continues, opening a new
    /// one for a new index, or for a new id at an index already in use.
    fn call_for(&mut self, index: u32, id: Option<&str>) -> Result<usize, LlmError> {
        if let Some(&position) = self.open.get(&index) {
            assert_eq!(
                self.calls[position].index, index,
                "the open map points each index at a call of that index"
            );
            let reused = match (self.calls[position].id.as_deref(), id) {
                (Some(current), Some(new)) => current != new,
                _ => false,
            };
            if !reused {
                return Ok(position);
            }
        }
        if self.calls.len() == TOOL_CALLS_PER_RESPONSE_MAX {
            return Err(LlmError::TooManyToolCalls {
                calls: u32::try_from(self.calls.len() + 1).unwrap_or(u32::MAX),
                limit: TOOL_CALLS_PER_RESPONSE_MAX as u32,
            });
        }
        self.calls.push(PartialCall {
            index,
            ..PartialCall::default()
        });
        self.open.insert(index, self.calls.len() - 1);
        Ok(self.calls.len() - 1)
    }

    /// The response, once Done has arrived.
    pub fn finish(self) -> Result<CompletionResponse, LlmError> {
        let answered = !self.text.is_empty() || self.reasoning.is_some() || !self.calls.is_empty();
        if self.finish_reason == Some(FinishReason::Missing) && !answered {
            // The end marker and nothing else: no answer, not an empty one.
            return Err(LlmError::EmptyStream);
        }
        let Some(finish_reason) = self.finish_reason else {
            return Err(if self.events == 0 {
                LlmError::EmptyStream
            } else {
                LlmError::StreamTruncated {
                    events_received: self.events,
                }
            });
        };
        assert!(
            self.open.len() <= self.calls.len(),
            "every open index has its call"
        );
        let mut calls = self.calls;
        // Index order; calls that share an index (a reused index) in the order opened.
        calls.sort_by_key(|call| call.index);
        let mut tool_calls = Vec::with_capacity(calls.len());
        for call in calls {
            let index = call.index;
            let Some(name) = call.name.filter(|name| !name.is_empty()) else {
                return Err(LlmError::InvalidResponse {
                    reason: format!("tool call {index} has no name"),
                    snippet: snippet(&call.arguments),
                });
            };
            if finish_reason == FinishReason::Missing && call.arguments.trim().is_empty() {
                // No finish reason vouches for an empty call: its arguments never came.
                return Err(LlmError::InvalidResponse {
                    reason: format!(
                        "tool call {index} ({name}) ended without its arguments: the stream \
                         ended with no finish reason"
                    ),
                    snippet: String::new(),
                });
            }
            let arguments = parse_arguments(&call.arguments, index, &name)?;
            let id = call.id.unwrap_or_else(|| format!("call_{index}"));
            tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
        Ok(CompletionResponse {
            text: self.text,
            tool_calls,
            reasoning: self.reasoning,
            finish_reason,
            usage: self.usage,
            model: self.model,
        })
    }
}

fn invalid(reason: String, event: &StreamEvent) -> LlmError {
    let shown = serde_json::to_string(event).unwrap_or_default();
    LlmError::InvalidResponse {
        reason,
        snippet: snippet(&shown),
    }
}

fn append_bounded(
    target: &mut String,
    more: &str,
    what: &str,
    limit: usize,
) -> Result<(), LlmError> {
    let bytes = target.len() + more.len();
    if bytes > limit {
        return Err(LlmError::ResponseTooLarge {
            what: what.to_owned(),
            bytes,
            limit,
        });
    }
    target.push_str(more);
    Ok(())
}

/// Takes `value` if the field is unset; accepts a repeat of the same value; refuses a
/// change.
fn set_once(
    field: &mut Option<String>,
    value: Option<String>,
    index: u32,
    what: &str,
) -> Result<(), LlmError> {
    let Some(value) = value else { return Ok(()) };
    match field {
        None => *field = Some(value),
        Some(existing) if *existing == value => {}
        Some(existing) => {
            return Err(LlmError::InvalidResponse {
                reason: format!(
                    "tool call {index} changed its {what} from {existing:?} to {value:?}"
                ),
                snippet: String::new(),
            });
        }
    }
    Ok(())
}

fn parse_arguments(text: &str, index: u32, name: &str) -> Result<Value, LlmError> {
    if text.trim().is_empty() {
        // Tools without parameters: providers send "" (or nothing) for "{}".
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text).map_err(|error| LlmError::Json {
        what: format!("arguments of tool call {index} ({name})"),
        reason: error.to_string(),
        snippet: snippet(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(index: u32, id: Option<&str>, name: Option<&str>, args: Option<&str>) -> StreamEvent {
        StreamEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments_fragment: args.map(str::to_owned),
        }
    }

    fn collect(events: Vec<StreamEvent>) -> Result<CompletionResponse, LlmError> {
        let mut collector = StreamCollector::new("m");
        for event in events {
            collector.push(event)?;
        }
        collector.finish()
    }

    /// Items in hand collect as a stream would: the text joined, and the first error
    /// returned as it is (nothing after it is looked at).
    #[test]
    fn items_in_hand_collect_and_stop_at_the_first_error() {
        let whole = StreamCollector::collect_items(
            "m",
            [
                Ok(StreamEvent::text("a")),
                Ok(StreamEvent::text("b")),
                Ok(StreamEvent::done(FinishReason::Stop, None)),
            ],
        )
        .unwrap();
        assert_eq!(whole.text, "ab");
        let cut = StreamCollector::collect_items(
            "m",
            [
                Ok(StreamEvent::text("a")),
                Err(LlmError::Timeout { after_ms: 5 }),
                Err(LlmError::Timeout { after_ms: 9 }),
            ],
        );
        assert_eq!(cut.unwrap_err().to_string(), "timed out after 5 ms");
    }

    #[test]
    fn interleaved_parallel_calls_with_split_escapes() {
        let response = collect(vec![
            StreamEvent::text("Let me check. "),
            delta(0, Some("a"), Some("read"), Some("{\"path\": \"a\\")),
            delta(1, Some("b"), Some("read"), Some("{\"path\": \"\\ud83d")),
            delta(0, None, None, Some("\"b.txt\"}")),
            delta(1, Some("b"), None, Some("\\ude00\"}")),
            StreamEvent::Usage {
                usage: TokenUsage::new(10, 5),
            },
            StreamEvent::done(FinishReason::ToolCalls, None),
        ])
        .unwrap();
        assert_eq!(response.text, "Let me check. ");
        assert_eq!(
            response.tool_calls[0],
            ToolCall::new("a", "read", json!({"path": "a\"b.txt"}))
        );
        assert_eq!(response.tool_calls[1].arguments, json!({"path": "😀"}));
        assert_eq!(response.usage, Some(TokenUsage::new(10, 5)));
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn usage_after_done_is_accepted_and_missing_ids_are_filled() {
        let response = collect(vec![
            delta(0, None, Some("ping"), None),
            StreamEvent::done(FinishReason::ToolCalls, Some(TokenUsage::new(1, 1))),
            StreamEvent::Usage {
                usage: TokenUsage::new(7, 3),
            },
        ])
        .unwrap();
        assert_eq!(
            response.tool_calls[0],
            ToolCall::new("call_0", "ping", json!({}))
        );
        assert_eq!(response.usage, Some(TokenUsage::new(7, 3)));
    }

    #[test]
    fn empty_and_truncated_streams_are_told_apart() {
        assert_eq!(collect(vec![]), Err(LlmError::EmptyStream));
        assert_eq!(
            collect(vec![StreamEvent::text("half")]),
            Err(LlmError::StreamTruncated { events_received: 1 })
        );
    }

    #[test]
    fn malformed_streams_give_typed_errors_naming_the_value() {
        let bad_json = collect(vec![
            delta(0, Some("x"), Some("search"), Some("{\"q\": ")),
            StreamEvent::done(FinishReason::ToolCalls, None),
        ])
        .unwrap_err();
        assert!(matches!(bad_json, LlmError::Json { .. }));
        assert!(
            bad_json.to_string().contains("tool call 0 (search)"),
            "{bad_json}"
        );
        assert!(bad_json.to_string().contains("{\\\"q\\\": "), "{bad_json}");

        // A runaway answer is its own kind, which a retry on the same model does not fix.
        let over = collect(vec![delta(64, Some("x"), Some("t"), None)]).unwrap_err();
        assert_eq!(
            over,
            LlmError::TooManyToolCalls {
                calls: 65,
                limit: 64
            }
        );
        assert!(!over.is_retryable() && over.is_fallback_eligible());
        let reused: Vec<StreamEvent> = (0..=TOOL_CALLS_PER_RESPONSE_MAX)
            .map(|n| delta(0, Some(&format!("id{n}")), Some("t"), Some("{}")))
            .collect();
        assert!(matches!(
            collect(reused),
            Err(LlmError::TooManyToolCalls { .. })
        ));

        let nameless = collect(vec![
            delta(0, Some("x"), None, Some("{}")),
            StreamEvent::done(FinishReason::ToolCalls, None),
        ]);
        assert!(
            nameless
                .unwrap_err()
                .to_string()
                .contains("tool call 0 has no name")
        );

        let renamed = collect(vec![
            delta(0, Some("x"), Some("a"), None),
            delta(0, None, Some("b"), None),
        ]);
        assert!(
            renamed
                .unwrap_err()
                .to_string()
                .contains("changed its name from \"a\" to \"b\"")
        );

        let late = collect(vec![
            StreamEvent::done(FinishReason::Stop, None),
            StreamEvent::text("more"),
        ]);
        assert!(late.unwrap_err().to_string().contains("event after Done"));

        let twice = collect(vec![
            StreamEvent::done(FinishReason::Stop, None),
            StreamEvent::done(FinishReason::Stop, None),
        ]);
        assert!(twice.is_err());
    }

    #[test]
    fn a_new_id_at_an_index_in_use_starts_a_new_call() {
        // Two calls that both say index 0, told apart by their ids; an empty id on a
        // continuation (DashScope) is no id, so it continues the open call.
        let response = collect(vec![
            delta(0, Some("call_a"), Some("read"), Some("{\"path\":")),
            delta(0, None, None, Some("\"a\"}")),
            delta(0, Some("call_b"), Some("write"), Some("{\"path\": \"b\"}")),
            delta(0, Some("call_b"), None, None),
            StreamEvent::done(FinishReason::ToolCalls, None),
        ])
        .unwrap();
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall::new("call_a", "read", json!({"path": "a"})),
                ToolCall::new("call_b", "write", json!({"path": "b"})),
            ]
        );
    }

    #[test]
    fn sizes_past_the_limits_are_refused() {
        let huge = "x".repeat(RESPONSE_TEXT_BYTES_MAX);
        let error = collect(vec![StreamEvent::text(huge), StreamEvent::text("y")]).unwrap_err();
        assert!(
            matches!(error, LlmError::ResponseTooLarge { ref what, .. } if what == "text"),
            "{error}"
        );
        let args = "x".repeat(TOOL_ARGUMENTS_BYTES_MAX + 1);
        let error = collect(vec![delta(0, Some("a"), Some("t"), Some(&args))]).unwrap_err();
        assert!(
            error.to_string().contains("arguments of tool call 0"),
            "{error}"
        );
    }
}
