//! Ollama's native `/api/chat` format: a JSON request, newline-delimited JSON back.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;
use crate::llm::wire::lines::LineDecoder;
use crate::llm::wire::reader::WireDecoder;

/// The JSON body of an `/api/chat` request.
pub fn request_body(request: &CompletionRequest, model: &str, stream: bool) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(index, message)| match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
            Message::Assistant { content, tool_calls } => json!({
                "role": "assistant",
                "content": content,
                "tool_calls": tool_calls.iter().map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>(),
            }),
            Message::Tool { tool_call_id, content, .. } => {
                // Ollama matches results to calls by tool name: find the call this answers.
                let name = request.messages[..index]
                    .iter()
                    .rev()
                    .flat_map(Message::tool_calls)
                    .find(|call| &call.id == tool_call_id)
                    .map(|call| call.name.clone());
                match name {
                    Some(name) => json!({"role": "tool", "content": content, "tool_name": name}),
                    None => json!({"role": "tool", "content": content}),
                }
            }
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(stream));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(output) = &request.output_schema {
        // Ollama's structured outputs: the schema itself in `format`.
        body.insert("format".into(), output.schema.clone());
    } else if request.json_output {
        body.insert("format".into(), json!("json"));
    }
    let mut options = Map::new();
    if let Some(max_tokens) = request.max_tokens {
        options.insert("num_predict".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        options.insert("temperature".into(), json!(temperature));
    }
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        options.insert("stop".into(), json!(stops));
    }
    if let Some(seed) = request.seed {
        options.insert("seed".into(), json!(seed));
    }
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    Value::Object(body)
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

impl WireChunk {
    /// The counts, if the server sent any (absent is not zero).
    fn usage(&self) -> Option<TokenUsage> {
        let count = |n: Option<u64>| n.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        match (count(self.prompt_eval_count), count(self.eval_count)) {
            (None, None) => None,
            (prompt, eval) => Some(TokenUsage::new(prompt.unwrap_or(0), eval.unwrap_or(0))),
        }
    }
}

/// Why an Ollama answer ended: `stop` (after tool calls: `tool_calls`), `length`, and
/// any other reason kept raw (`load`, `unload`); a final line with none is `Missing`.
pub fn done_reason(done_reason: Option<&str>, called_tools: bool) -> FinishReason {
    match done_reason {
        Some("stop") | None if called_tools => FinishReason::ToolCalls,
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_owned()),
        None => FinishReason::Missing,
    }
}

fn chunk(line: &str) -> Result<WireChunk, LlmError> {
    let chunk: WireChunk = serde_json::from_str(line).map_err(|e| LlmError::InvalidResponse {
        reason: format!("an NDJSON line is not a chat chunk: {e}"),
        snippet: snippet(line),
    })?;
    if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
        return Err(from_stream_error(&serde_json::json!({ "error": error })));
    }
    Ok(chunk)
}

/// A tool call's arguments: Ollama sends an object; `null` or nothing is `{}`.
fn arguments(value: Value) -> Value {
    if value.is_null() { json!({}) } else { value }
}

/// A whole (non-streamed) response.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let chunk = chunk(body.trim())?;
    let usage = chunk.usage();
    let message = chunk.message.unwrap_or_default();
    let calls = message.tool_calls.unwrap_or_default();
    let called = !calls.is_empty();
    let tool_calls = calls
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}")),
            name: call.function.name,
            arguments: arguments(call.function.arguments),
        })
        .collect();
    Ok(CompletionResponse {
        text: message.content.unwrap_or_default(),
        tool_calls,
        reasoning: message.thinking.filter(|t| !t.is_empty()),
        finish_reason: done_reason(chunk.done_reason.as_deref(), called),
        usage,
        model: model.to_owned(),
    })
}

/// NDJSON lines into stream events.
#[derive(Default)]
pub struct NdjsonDecoder {
    lines: LineDecoder,
    calls: u32,
    done: bool,
}

impl NdjsonDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_line(&mut self, line: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done || line.trim().is_empty() {
            return Ok(());
        }
        let chunk = chunk(line)?;
        let usage = chunk.usage();
        if let Some(message) = chunk.message {
            if let Some(text) = message.thinking.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::ReasoningDelta { text });
            }
            if let Some(text) = message.content.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta { text });
            }
            for call in message.tool_calls.unwrap_or_default() {
                out.push(StreamEvent::ToolCallDelta {
                    index: self.calls,
                    id: call.id.filter(|id| !id.is_empty()),
                    name: Some(call.function.name),
                    arguments_fragment: Some(crate::canonical_json::to_string(&arguments(
                        call.function.arguments,
                    ))),
                });
                self.calls = self.calls.saturating_add(1);
            }
        }
        if chunk.done {
            self.done = true;
            out.push(StreamEvent::done(
                done_reason(chunk.done_reason.as_deref(), self.calls > 0),
                usage,
            ));
        }
        Ok(())
    }
}

impl WireDecoder for NdjsonDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let mut lines = Vec::new();
        let fed = self.lines.feed(bytes, &mut lines);
        for line in lines {
            self.on_line(&line, out)?;
        }
        fed
    }

    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let before = out.len();
        // A last line without its newline counts if it is whole (an error line too); a
        // cut one is a cut.
        if let Ok(Some(line)) = self.lines.finish() {
            let mut whole = Vec::new();
            match self.on_line(&line, &mut whole) {
                Ok(()) => out.extend(whole),
                Err(error @ LlmError::InvalidResponse { .. }) => drop(error),
                Err(error) => return Err(error),
            }
        }
        if self.done {
            Ok(())
        } else {
            Err(LlmError::StreamTruncated {
                events_received: events_so_far + (out.len() - before) as u64,
            })
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
