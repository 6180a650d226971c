//! The Responses format on the wire: requests out, response objects and named SSE
//! events in.
//!
//! | event | becomes |
//! | --- | --- |
//! | `response.output_item.added` | a `function_call` item: a tool-call delta with its `call_id` and name; other items are remembered by id |
//! | `response.output_text.delta` | text |
//! | `response.function_call_arguments.delta` | argument fragments of the item's call |
//! | `response.reasoning_summary_text.delta` | reasoning |
//! | `response.refusal.delta` | nothing; the finish becomes `content_filter` |
//! | `response.completed` | `Done` (`tool_calls` when the answer has calls) with the usage |
//! | `response.incomplete` | `Done` with its reason (`max_output_tokens` is `length`) |
//! | `error`, `response.failed` | the typed error, after every event before it |
//! | `response.created`, `*.done`, `*.added` parts, unknown events | nothing |
//!
//! Each event's `sequence_number` must be one more than the last (a gap is a lost
//! event), and every delta must name an item the stream added: either failure is an
//! invalid response rather than a silently wrong answer.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall, ToolDefinition};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;
use crate::llm::wire::reader::WireDecoder;
use crate::llm::wire::sse::{SseDecoder, SseEvent};

use super::head::{EventHead, ItemHead};
use crate::llm::wire::fields::Scalar;

/// The JSON body of a Responses request.
pub fn request_body(
    request: &CompletionRequest,
    model: &str,
    reasoning_summary: Option<&str>,
    stream: bool,
) -> Value {
    let (instructions, input) = instructions_and_input(&request.messages);
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input));
    crate::llm::wire::tools::insert_tools(&mut body, request, tool_json, named_tool_json);
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(output) = &request.output_schema {
        body.insert(
            "text".into(),
            json!({"format": {"type": "json_schema", "name": output.name, "schema": output.schema, "strict": output.strict}}),
        );
    } else if request.json_output {
        body.insert("text".into(), json!({"format": {"type": "json_object"}}));
    }
    if let Some(summary) = reasoning_summary {
        body.insert("reasoning".into(), json!({"summary": summary}));
    }
    body.insert("stream".into(), json!(stream));
    Value::Object(body)
}

/// The system prompts (sent as `instructions`) and the `input` items of `messages`: an
/// assistant turn's text as a message and each of its calls as a `function_call`, tool
/// results as `function_call_output`.
fn instructions_and_input(messages: &[Message]) -> (Vec<&str>, Vec<Value>) {
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    for message in messages {
        match message {
            Message::System { content } => instructions.push(content.as_str()),
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() || tool_calls.is_empty() {
                    input.push(json!({"role": "assistant", "content": content}));
                }
                input.extend(tool_calls.iter().map(|call| {
                    json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": crate::canonical_json::to_string(&call.arguments)})
                }));
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => input.push(
                json!({"type": "function_call_output", "call_id": tool_call_id, "output": content}),
            ),
        }
    }
    (instructions, input)
}

/// `tools` as the Responses API takes them: flat functions. `strict` is required by the
/// API's schema; strict mode would also require every property and no additional ones,
/// which tools written for chat rarely satisfy.
fn tool_json(tool: &ToolDefinition) -> Value {
    json!({"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters, "strict": false})
}

/// A `tool_choice` naming one tool.
fn named_tool_json(name: &str) -> Value {
    json!({"type": "function", "name": name})
}

fn invalid(reason: &str, text: &str) -> LlmError {
    LlmError::InvalidResponse {
        reason: reason.to_owned(),
        snippet: snippet(text),
    }
}

fn count(value: Option<&Value>) -> Option<u32> {
    value
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// The usage of a response object (`input_tokens` counts cached tokens too).
fn usage_of(value: &Value) -> Option<TokenUsage> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    let mut out = TokenUsage::new(
        count(usage.get("input_tokens")).unwrap_or(0),
        count(usage.get("output_tokens")).unwrap_or(0),
    );
    out.cached_prompt_tokens = count(usage.pointer("/input_tokens_details/cached_tokens"));
    out.cache_write_tokens = count(usage.pointer("/input_tokens_details/cache_write_tokens"));
    out.reasoning_tokens = count(usage.pointer("/output_tokens_details/reasoning_tokens"));
    Some(out)
}

/// The finish of a response that ended (`completed` or `incomplete`).
fn finish_of(response: &Value, has_calls: bool, refused: bool) -> FinishReason {
    match response.get("status").and_then(Value::as_str) {
        Some("incomplete") => {
            match response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_owned()),
                None => FinishReason::Other("incomplete".into()),
            }
        }
        _ if refused => FinishReason::ContentFilter,
        _ if has_calls => FinishReason::ToolCalls,
        Some("completed") => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_owned()),
        None => FinishReason::Missing,
    }
}

/// The error a failed response stands for (`response.error` is `{code, message}`).
fn failure_of(response: &Value) -> LlmError {
    let error = response.get("error").cloned().unwrap_or(Value::Null);
    from_stream_error(&json!({ "error": error }))
}

fn arguments(text: &str, index: usize, name: &str) -> Result<Value, LlmError> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text).map_err(|error| LlmError::Json {
        what: format!("arguments of tool call {index} ({name})"),
        reason: error.to_string(),
        snippet: snippet(text),
    })
}

fn text_of(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or("")
}

/// A whole (non-streamed) response object.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let value: Value =
        serde_json::from_str(body).map_err(|_| invalid("the response is not JSON", body))?;
    if value.get("object").and_then(Value::as_str) != Some("response") {
        // Not a response object: an error envelope, or something else entirely.
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(from_stream_error(&value));
        }
        return Err(invalid("the body is not a response object", body));
    }
    if value.get("status").and_then(Value::as_str) == Some("failed") {
        return Err(failure_of(&value));
    }
    let (mut text, mut reasoning, mut tool_calls, mut refused) =
        (String::new(), String::new(), Vec::new(), false);
    let output = value.get("output").and_then(Value::as_array);
    for item in output.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let parts = item.get("content").and_then(Value::as_array);
                for part in parts.into_iter().flatten() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => text.push_str(text_of(part.get("text"))),
                        Some("refusal") => refused = true,
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let name = text_of(item.get("name"));
                let index = tool_calls.len();
                let input = arguments(text_of(item.get("arguments")), index, name)?;
                tool_calls.push(ToolCall::new(text_of(item.get("call_id")), name, input));
            }
            Some("reasoning") => {
                let summary = item.get("summary").and_then(Value::as_array);
                for part in summary.into_iter().flatten() {
                    reasoning.push_str(text_of(part.get("text")));
                }
            }
            _ => {}
        }
    }
    let finish_reason = finish_of(&value, !tool_calls.is_empty(), refused);
    Ok(CompletionResponse {
        text,
        tool_calls,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        finish_reason,
        usage: usage_of(&value),
        model: model.to_owned(),
    })
}

/// What an added output item is, by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Message,
    Reasoning,
    /// A function call, numbered in the order the calls were added.
    Call(u32),
    Other,
}

/// Named SSE events into stream events.
#[derive(Default)]
pub struct EventDecoder {
    sse: SseDecoder,
    /// The `sequence_number` the next event must carry, once one was seen.
    next_sequence: Option<u64>,
    items: BTreeMap<String, Item>,
    calls: u32,
    refused: bool,
    done: bool,
}

impl EventDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn check_sequence(&mut self, number: &Scalar<'_>, data: &str) -> Result<(), LlmError> {
        let Scalar::U64(number) = *number else {
            return Ok(());
        };
        if let Some(expected) = self.next_sequence
            && number != expected
        {
            return Err(invalid(
                &format!(
                    "sequence_number {number} where {expected} was due: an event was lost or repeated"
                ),
                data,
            ));
        }
        // A server's number, not ours: u64::MAX leaves none for a next event (it would
        // overflow, a panic where overflow checks are on).
        let Some(next) = number.checked_add(1) else {
            return Err(invalid(
                &format!("sequence_number {number} leaves no number for the next event"),
                data,
            ));
        };
        self.next_sequence = Some(next);
        Ok(())
    }

    /// The item a delta belongs to, which the stream must have added.
    fn item(&self, head: &EventHead<'_>, data: &str) -> Result<Item, LlmError> {
        let id = head.item_id.text();
        self.items.get(id).copied().ok_or_else(|| {
            invalid(
                &format!("a delta for item {id:?}, which the stream never added"),
                data,
            )
        })
    }

    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        // The fields a delta needs, without a tree (`head`); the events that end the
        // stream, one per stream, are read whole below.
        let head: EventHead<'_> = serde_json::from_str(&event.data)
            .map_err(|_| invalid("an event's data is not JSON", &event.data))?;
        self.check_sequence(&head.sequence_number, &event.data)?;
        let kind = match &head.kind {
            Scalar::Str(kind) => Some(kind.as_ref()),
            Scalar::U64(_) | Scalar::Other => None,
        }
        .or(event.event.as_deref())
        .unwrap_or("");
        match kind {
            "response.output_item.added" => self.item_added(head.item.as_ref(), out),
            "response.output_text.delta" => {
                if self.item(&head, &event.data)? != Item::Message {
                    return Err(invalid(
                        "text for an item that is not a message",
                        &event.data,
                    ));
                }
                let text = head.delta.text();
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            "response.refusal.delta" => self.refused = true,
            "response.function_call_arguments.delta" => {
                self.arguments_delta(&head, &event.data, out)?;
            }
            "response.reasoning_summary_text.delta" => {
                if self.item(&head, &event.data)? != Item::Reasoning {
                    return Err(invalid(
                        "a summary for an item that is not reasoning",
                        &event.data,
                    ));
                }
                let text = head.delta.text();
                if !text.is_empty() {
                    out.push(StreamEvent::ReasoningDelta {
                        text: text.to_owned(),
                    });
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" | "error" => {
                return self.on_end(kind, &event.data, out);
            }
            _ => {}
        }
        Ok(())
    }

    /// An event that ends the stream (`kind`), read whole.
    fn on_end(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        // `data` was read as an event head, which accepts what a `Value` accepts.
        let value: Value =
            serde_json::from_str(data).map_err(|_| invalid("an event's data is not JSON", data))?;
        match kind {
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").cloned().unwrap_or(Value::Null);
                self.done = true;
                let finish = finish_of(&response, self.calls > 0, self.refused);
                out.push(StreamEvent::done(finish, usage_of(&response)));
                Ok(())
            }
            "response.failed" => {
                let response = value.get("response").cloned().unwrap_or(Value::Null);
                Err(failure_of(&response))
            }
            _ => Err(from_stream_error(&value)),
        }
    }

    /// A fragment of a call's arguments, for an item that must be a call.
    fn arguments_delta(
        &self,
        head: &EventHead<'_>,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let Item::Call(index) = self.item(head, data)? else {
            return Err(invalid("arguments for an item that is not a call", data));
        };
        let fragment = head.delta.text();
        if !fragment.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                index,
                id: None,
                name: None,
                arguments_fragment: Some(fragment.to_owned()),
            });
        }
        Ok(())
    }

    fn item_added(&mut self, item: Option<&ItemHead<'_>>, out: &mut Vec<StreamEvent>) {
        let Some(item) = item else {
            return;
        };
        let id = item.id.text().to_owned();
        let kind = match item.kind.text() {
            "message" => Item::Message,
            "reasoning" => Item::Reasoning,
            "function_call" => {
                let index = self.calls;
                self.calls += 1;
                let field =
                    |field: &Scalar<'_>| Some(field.text().to_owned()).filter(|t| !t.is_empty());
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: field(&item.call_id),
                    name: field(&item.name),
                    arguments_fragment: field(&item.arguments),
                });
                Item::Call(index)
            }
            _ => Item::Other,
        };
        self.items.insert(id, kind);
    }
}

impl WireDecoder for EventDecoder {
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
        if let Ok(Some(event)) = self.sse.finish() {
            let mut whole = Vec::new();
            match self.on_event(&event, &mut whole) {
                Ok(()) => out.extend(whole),
                // A last event cut short is the truncation reported below.
                Err(LlmError::InvalidResponse { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        if self.done {
            return Ok(());
        }
        Err(LlmError::StreamTruncated {
            events_received: events_so_far + (out.len() - before) as u64,
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
