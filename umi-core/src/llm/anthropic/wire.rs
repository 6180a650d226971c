//! The Messages format on the wire: requests out, messages and named SSE events in.
//!
//! | event | becomes |
//! | --- | --- |
//! | `message_start` | the input usage (input, cache read and cache write tokens) |
//! | `content_block_start` | a `text` block's text if any; a `tool_use` block's id and name (a tool-call delta); `thinking` opens reasoning |
//! | `content_block_delta` | `text_delta` text; `input_json_delta` argument fragments (the first is empty); `thinking_delta` reasoning; `signature_delta` and unknown deltas nothing |
//! | `message_delta` | the stop reason and the output usage |
//! | `message_stop` | `Done` |
//! | `ping`, unknown events | nothing (the docs ask clients to ignore new event types) |
//! | `error` | the typed error, after every event before it |
//!
//! Block indexes count every block (thinking, text, tools); tool calls are numbered by
//! their own order, so the collector sees indexes 0, 1, ... whatever blocks came before.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::head::DeltaEvent;

use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;
use crate::llm::wire::fields::Scalar;
use crate::llm::wire::reader::WireDecoder;
use crate::llm::wire::sse::{SseDecoder, SseEvent};

/// A turn's content blocks, merged with the previous turn's when the role repeats (a
/// tool result after a user message): the API wants user and assistant turns.
fn push_turn(turns: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, blocks: Vec<Value>) {
    match turns.last_mut() {
        Some((last, existing)) if *last == role => existing.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

/// The JSON body of a Messages request.
pub fn request_body(
    request: &CompletionRequest,
    model: &str,
    max_tokens: u32,
    stream: bool,
) -> Value {
    let (system, turns) = system_and_turns(&request.messages);
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    insert_tools(&mut body, request);
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        body.insert("stop_sequences".into(), json!(stops));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(output) = &request.output_schema {
        // Structured outputs (platform.claude.com structured-outputs: `output_config.format`).
        body.insert(
            "output_config".into(),
            json!({"format": {"type": "json_schema", "schema": output.schema}}),
        );
    }
    body.insert("stream".into(), json!(stream));
    Value::Object(body)
}

/// The system prompts (sent apart) and the turns of `messages`: consecutive messages of
/// one role joined into one turn of content blocks, tool results as `tool_result`
/// blocks in a user turn.
fn system_and_turns(messages: &[Message]) -> (Vec<&str>, Vec<(&'static str, Vec<Value>)>) {
    let mut system = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        match message {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => {
                push_turn(
                    &mut turns,
                    "user",
                    vec![json!({"type": "text", "text": content})],
                );
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
                }));
                push_turn(&mut turns, "assistant", blocks);
            }
            Message::Tool {
                tool_call_id,
                content,
                success,
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content});
                if !success {
                    block["is_error"] = json!(true);
                }
                push_turn(&mut turns, "user", vec![block]);
            }
        }
    }
    (system, turns)
}

/// `tools` (with `input_schema`) and, when the request says anything about the choice,
/// `tool_choice` (`any` for required; `disable_parallel_tool_use` for one call at most).
fn insert_tools(body: &mut Map<String, Value>, request: &CompletionRequest) {
    if request.tools.is_empty() {
        return;
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
        .collect();
    body.insert("tools".into(), Value::Array(tools));
    let mut choice = match &request.tool_choice {
        None | Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::None) => json!({"type": "none"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool(name)) => json!({"type": "tool", "name": name}),
    };
    if request.parallel_tool_calls == Some(false) && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = json!(true);
    }
    if request.tool_choice.is_some() || request.parallel_tool_calls.is_some() {
        body.insert("tool_choice".into(), choice);
    }
}

/// A stop reason as the API spells it. `pause_turn` (a long turn paused, to be
/// continued) and any reason this library does not know are kept raw.
pub fn stop_reason(name: &str) -> FinishReason {
    match name {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

fn count(value: Option<u64>) -> Option<u32> {
    value.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl WireUsage {
    /// Later counts replace earlier ones (`message_delta` repeats the totals).
    fn merge(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    /// Umi's usage: the prompt is every input token, cached or not.
    fn usage(self) -> TokenUsage {
        let read = count(self.cache_read_input_tokens);
        let written = count(self.cache_creation_input_tokens);
        let prompt = count(self.input_tokens)
            .unwrap_or(0)
            .saturating_add(read.unwrap_or(0))
            .saturating_add(written.unwrap_or(0));
        let mut usage = TokenUsage::new(prompt, count(self.output_tokens).unwrap_or(0));
        usage.cached_prompt_tokens = read;
        usage.cache_write_tokens = written;
        usage
    }
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn invalid(reason: &str, text: &str) -> LlmError {
    LlmError::InvalidResponse {
        reason: reason.to_owned(),
        snippet: snippet(text),
    }
}

/// A whole (non-streamed) message.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let value: Value =
        serde_json::from_str(body).map_err(|_| invalid("the response is not JSON", body))?;
    if value.get("type").and_then(Value::as_str) == Some("error") || value.get("error").is_some() {
        return Err(from_stream_error(&value));
    }
    let message: WireMessage = serde_json::from_value(value)
        .map_err(|e| invalid(&format!("unexpected message shape: {e}"), body))?;
    let (mut text, mut reasoning, mut tool_calls) = (String::new(), String::new(), Vec::new());
    for block in &message.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => {
                reasoning.push_str(block.get("thinking").and_then(Value::as_str).unwrap_or(""));
            }
            Some("tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    return Err(invalid("a tool_use block has no name", body));
                }
                tool_calls.push(ToolCall::new(
                    block.get("id").and_then(Value::as_str).unwrap_or(""),
                    name,
                    block.get("input").cloned().unwrap_or_else(|| json!({})),
                ));
            }
            _ => {} // redacted thinking, server tools, blocks this library does not use
        }
    }
    Ok(CompletionResponse {
        text,
        tool_calls,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        finish_reason: message
            .stop_reason
            .as_deref()
            .map_or(FinishReason::Missing, stop_reason),
        usage: message.usage.map(WireUsage::usage),
        model: model.to_owned(),
    })
}

/// Named SSE events into stream events.
#[derive(Default)]
pub struct EventDecoder {
    sse: SseDecoder,
    /// Block index to tool-call number, for the blocks that are tool calls.
    tools: BTreeMap<u64, u32>,
    usage: Option<WireUsage>,
    stop: Option<FinishReason>,
    done: bool,
}

impl EventDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn merge_usage(&mut self, value: Option<&Value>) {
        if let Some(later) = value.and_then(|u| serde_json::from_value::<WireUsage>(u.clone()).ok())
        {
            self.usage.get_or_insert_default().merge(later);
        }
    }

    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        // Deltas (nearly every event) are read for their few fields, without a tree;
        // the head accepts exactly what a `Value` accepts, so the rest read it whole.
        let head: DeltaEvent<'_> = serde_json::from_str(&event.data)
            .map_err(|_| invalid("an event's data is not JSON", &event.data))?;
        let head_kind = match &head.kind {
            Scalar::Str(kind) => Some(kind.as_ref()),
            Scalar::U64(_) | Scalar::Other => None,
        }
        .or(event.event.as_deref())
        .unwrap_or("");
        match head_kind {
            "content_block_delta" => {
                self.head_delta(&head, out);
                return Ok(());
            }
            "ping" | "content_block_stop" => return Ok(()),
            _ => {}
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|_| invalid("an event's data is not JSON", &event.data))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => self.merge_usage(value.pointer("/message/usage")),
            "content_block_start" => self.block_start(&value, out),
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                self.merge_usage(value.get("usage"));
            }
            "message_stop" => {
                self.done = true;
                let finish = self.stop.take().unwrap_or(FinishReason::Missing);
                out.push(StreamEvent::done(finish, self.usage.map(WireUsage::usage)));
            }
            "error" => return Err(from_stream_error(&value)),
            _ => {} // ping, content_block_stop, and event types added later
        }
        Ok(())
    }

    fn block_start(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(block) = value.get("content_block") else {
            return;
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(StreamEvent::text(text));
                }
            }
            Some("tool_use") => {
                let number = u32::try_from(self.tools.len()).unwrap_or(u32::MAX);
                self.tools.insert(index, number);
                let text = |key: &str| {
                    block
                        .get(key)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                };
                out.push(StreamEvent::ToolCallDelta {
                    index: number,
                    id: text("id"),
                    name: text("name"),
                    arguments_fragment: None,
                });
            }
            _ => {}
        }
    }

    /// A `content_block_delta`, from its head: its text, reasoning or arguments fragment.
    fn head_delta(&mut self, head: &DeltaEvent<'_>, out: &mut Vec<StreamEvent>) {
        let index = match head.index {
            Scalar::U64(index) => index,
            Scalar::Str(_) | Scalar::Other => 0,
        };
        let Some(delta) = &head.delta else {
            return;
        };
        let text = |field: &Scalar<'_>| Some(field.text().to_owned()).filter(|t| !t.is_empty());
        match delta.kind.text() {
            "text_delta" => {
                if let Some(text) = text(&delta.text) {
                    out.push(StreamEvent::TextDelta { text });
                }
            }
            "thinking_delta" => {
                if let Some(text) = text(&delta.thinking) {
                    out.push(StreamEvent::ReasoningDelta { text });
                }
            }
            "input_json_delta" => {
                if let (Some(fragment), Some(number)) =
                    (text(&delta.partial_json), self.tools.get(&index))
                {
                    out.push(StreamEvent::ToolCallDelta {
                        index: *number,
                        id: None,
                        name: None,
                        arguments_fragment: Some(fragment),
                    });
                }
            }
            _ => {} // signature_delta, citations_delta, later delta types
        }
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
                Err(error @ LlmError::InvalidResponse { .. }) => drop(error),
                Err(error) => return Err(error),
            }
        }
        if self.done {
            return Ok(());
        }
        match self.stop.take() {
            // The answer's end was said, and only `message_stop` is missing.
            Some(reason) => {
                self.done = true;
                out.push(StreamEvent::done(reason, self.usage.map(WireUsage::usage)));
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
