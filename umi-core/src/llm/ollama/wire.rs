//! Ollama's native `/api/chat` format: a JSON request, newline-delimited JSON back.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
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
    if request.json_output {
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
    content: String,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
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
    prompt_eval_count: Option<u32>,
    #[serde(default)]
    eval_count: Option<u32>,
    #[serde(default)]
    error: Option<String>,
}

fn finish(done_reason: Option<&str>, called_tools: bool) -> FinishReason {
    match done_reason {
        Some("length") => FinishReason::Length,
        _ if called_tools => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

fn chunk(line: &str) -> Result<WireChunk, LlmError> {
    let chunk: WireChunk = serde_json::from_str(line).map_err(|e| LlmError::InvalidResponse {
        reason: format!("an NDJSON line is not a chat chunk: {e}"),
        snippet: snippet(line),
    })?;
    if let Some(error) = &chunk.error {
        return Err(ollama_error(error));
    }
    Ok(chunk)
}

/// The error an Ollama error string stands for.
pub fn ollama_error(message: &str) -> LlmError {
    let lower = message.to_lowercase();
    if let Some((prompt_tokens, limit)) = crate::llm::wire::errors::context_overflow(message, None)
    {
        return LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        };
    }
    if lower.contains("not found") {
        return LlmError::BadRequest {
            status: Some(404),
            message: message.to_owned(),
        };
    }
    if lower.contains("overloaded") || lower.contains("busy") {
        return LlmError::ServiceUnavailable {
            status: None,
            message: message.to_owned(),
        };
    }
    LlmError::InvalidResponse {
        reason: format!("error from Ollama: {message}"),
        snippet: String::new(),
    }
}

/// A whole (non-streamed) response.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let chunk = chunk(body.trim())?;
    let message = chunk.message.unwrap_or_default();
    let called = !message.tool_calls.is_empty();
    let tool_calls = message
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            id: call.id.unwrap_or_else(|| format!("call_{index}")),
            name: call.function.name,
            arguments: if call.function.arguments.is_null() {
                json!({})
            } else {
                call.function.arguments
            },
        })
        .collect();
    Ok(CompletionResponse {
        text: message.content,
        tool_calls,
        reasoning: message.thinking.filter(|t| !t.is_empty()),
        finish_reason: finish(chunk.done_reason.as_deref(), called),
        usage: TokenUsage::new(
            chunk.prompt_eval_count.unwrap_or(0),
            chunk.eval_count.unwrap_or(0),
        ),
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
        if let Some(message) = chunk.message {
            if let Some(text) = message.thinking.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::ReasoningDelta { text });
            }
            if !message.content.is_empty() {
                out.push(StreamEvent::TextDelta {
                    text: message.content,
                });
            }
            for call in message.tool_calls {
                let arguments = if call.function.arguments.is_null() {
                    json!({})
                } else {
                    call.function.arguments
                };
                out.push(StreamEvent::ToolCallDelta {
                    index: self.calls,
                    id: call.id,
                    name: Some(call.function.name),
                    arguments_fragment: Some(arguments.to_string()),
                });
                self.calls += 1;
            }
        }
        if chunk.done {
            self.done = true;
            let usage = TokenUsage::new(
                chunk.prompt_eval_count.unwrap_or(0),
                chunk.eval_count.unwrap_or(0),
            );
            out.push(StreamEvent::done(
                finish(chunk.done_reason.as_deref(), self.calls > 0),
                Some(usage),
            ));
        }
        Ok(())
    }
}

impl WireDecoder for NdjsonDecoder {
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        for line in self.lines.feed(bytes)? {
            self.on_line(&line, &mut out)?;
        }
        Ok(out)
    }

    fn finish(&mut self, events_so_far: u64) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        // A last line without its newline counts if it is whole; a cut one is a cut.
        if let Ok(Some(line)) = self.lines.finish() {
            let mut whole = Vec::new();
            if self.on_line(&line, &mut whole).is_ok() {
                out.extend(whole);
            }
        }
        if self.done {
            Ok(out)
        } else {
            Err(LlmError::StreamTruncated {
                events_received: events_so_far + out.len() as u64,
            })
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
