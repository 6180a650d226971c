//! The OpenAI chat-completions wire format: requests out, responses and SSE chunks in.
//!
//! Differences between compatible providers handled here: `content` may be null;
//! tool-call arguments arrive as a JSON string (or, from some servers, as an object);
//! `reasoning_content` (DeepSeek, Qwen) or `reasoning` (OpenRouter, vLLM) is surfaced as
//! reasoning; finish reasons beyond OpenAI's (`sensitive` from GLM, `eos`, `abort`) are
//! mapped; usage may come in the last chunk with empty `choices`; an `index` may be
//! missing on a single tool call; an error object may arrive inside a 200 stream.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;
use crate::llm::wire::reader::WireDecoder;
use crate::llm::wire::sse::SseDecoder;

/// Which field carries the output limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens`: most compatible servers.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's reasoning models.
    MaxCompletionTokens,
}

/// The JSON body of a chat-completions request.
pub fn request_body(
    request: &CompletionRequest,
    model: &str,
    max_tokens_field: MaxTokensField,
    stream: bool,
    stream_usage: bool,
) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
            Message::Assistant { content, tool_calls } => json!({
                "role": "assistant",
                "content": if content.is_empty() { Value::Null } else { Value::String(content.clone()) },
                "tool_calls": tool_calls.iter().map(|call| json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments.to_string()},
                })).collect::<Vec<_>>(),
            }),
            Message::Tool { tool_call_id, content, .. } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max_tokens) = request.max_tokens {
        let field = match max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        body.insert("stop".into(), json!(stops));
    }
    if let Some(seed) = request.seed {
        body.insert("seed".into(), json!(seed));
    }
    if request.json_output {
        body.insert("response_format".into(), json!({"type": "json_object"}));
    }
    body.insert("stream".into(), json!(stream));
    if stream && stream_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// A finish reason as OpenAI-compatible servers spell it.
pub fn finish_reason(name: &str) -> FinishReason {
    match name {
        "length" | "max_tokens" | "model_length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" | "sensitive" => FinishReason::ContentFilter,
        "abort" | "aborted" | "cancelled" => FinishReason::Aborted,
        _ => FinishReason::Stop,
    }
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u32,
    #[serde(default)]
    completion_tokens: u32,
}

impl From<WireUsage> for TokenUsage {
    fn from(usage: WireUsage) -> Self {
        TokenUsage::new(usage.prompt_tokens, usage.completion_tokens)
    }
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default, alias = "delta")]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn invalid(reason: &str, text: &str) -> LlmError {
    LlmError::InvalidResponse {
        reason: reason.to_owned(),
        snippet: snippet(text),
    }
}

/// Arguments as sent: a JSON string (parsed), an object (kept), or nothing (`{}`).
fn arguments(raw: Option<Value>, index: usize, name: &str) -> Result<Value, LlmError> {
    match raw {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(json!({})),
        Some(Value::String(text)) => serde_json::from_str(&text).map_err(|error| LlmError::Json {
            what: format!("arguments of tool call {index} ({name})"),
            reason: error.to_string(),
            snippet: snippet(&text),
        }),
        Some(other) => Ok(other),
    }
}

/// A whole (non-streamed) response.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let value: Value =
        serde_json::from_str(body).map_err(|_| invalid("the response is not JSON", body))?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(from_stream_error(&value));
    }
    let response: WireResponse = serde_json::from_value(value)
        .map_err(|e| invalid(&format!("unexpected response shape: {e}"), body))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| invalid("the response has no choices", body))?;
    let message = choice
        .message
        .ok_or_else(|| invalid("the choice has no message", body))?;
    let mut tool_calls = Vec::new();
    for (index, call) in message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let function = call
            .function
            .ok_or_else(|| invalid("a tool call has no function", body))?;
        let name = function
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid("a tool call has no name", body))?;
        let arguments = arguments(function.arguments, index, &name)?;
        tool_calls.push(ToolCall {
            id: call.id.unwrap_or_else(|| format!("call_{index}")),
            name,
            arguments,
        });
    }
    Ok(CompletionResponse {
        text: message.content.unwrap_or_default(),
        tool_calls,
        reasoning: message.reasoning_content.filter(|r| !r.is_empty()),
        finish_reason: choice
            .finish_reason
            .as_deref()
            .map_or(FinishReason::Stop, finish_reason),
        usage: response.usage.map(TokenUsage::from).unwrap_or_default(),
        model: model.to_owned(),
    })
}

/// SSE chunks into stream events.
#[derive(Default)]
pub struct ChunkDecoder {
    sse: SseDecoder,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    done: bool,
}

impl ChunkDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            out.push(StreamEvent::done(
                self.finish.unwrap_or(FinishReason::Stop),
                self.usage,
            ));
            return Ok(());
        }
        let value: Value =
            serde_json::from_str(data).map_err(|_| invalid("a stream chunk is not JSON", data))?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(from_stream_error(&value));
        }
        let chunk: WireResponse = serde_json::from_value(value)
            .map_err(|e| invalid(&format!("unexpected chunk shape: {e}"), data))?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(());
        };
        if let Some(delta) = choice.message {
            if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::ReasoningDelta { text });
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta { text });
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let (name, fragment) = match call.function {
                    Some(function) => (
                        function.name.filter(|n| !n.is_empty()),
                        match function.arguments {
                            Some(Value::String(text)) if !text.is_empty() => Some(text),
                            Some(Value::Object(object)) => Some(Value::Object(object).to_string()),
                            _ => None,
                        },
                    ),
                    None => (None, None),
                };
                out.push(StreamEvent::ToolCallDelta {
                    index: call.index.unwrap_or(position as u32),
                    id: call.id.filter(|id| !id.is_empty()),
                    name,
                    arguments_fragment: fragment,
                });
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
        Ok(())
    }
}

impl WireDecoder for ChunkDecoder {
    fn feed(&mut self, chunk: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        for event in self.sse.feed(chunk)? {
            if event.event.as_deref() == Some("error") {
                let value = serde_json::from_str(&event.data)
                    .unwrap_or_else(|_| json!({"error": {"message": event.data}}));
                return Err(from_stream_error(&value));
            }
            self.on_data(&event.data, &mut out)?;
        }
        Ok(out)
    }

    fn finish(&mut self, events_so_far: u64) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        // An event the body ended in the middle of is a cut, not a malformed chunk: a
        // whole one (`data: [DONE]` without its blank line) still counts.
        if let Ok(Some(event)) = self.sse.finish() {
            let mut whole = Vec::new();
            if self.on_data(&event.data, &mut whole).is_ok() {
                out.extend(whole);
            }
        }
        if self.done {
            return Ok(out);
        }
        match self.finish {
            // The server finished the answer but closed without `[DONE]`: accept it.
            Some(reason) => {
                self.done = true;
                out.push(StreamEvent::done(reason, self.usage));
                Ok(out)
            }
            None => Err(LlmError::StreamTruncated {
                events_received: events_so_far + out.len() as u64,
            }),
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}
