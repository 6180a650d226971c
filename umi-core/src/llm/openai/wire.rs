//! The OpenAI chat-completions wire format: requests out, responses and SSE chunks in.
//!
//! Differences between compatible providers handled here: `content` may be null;
//! tool-call arguments arrive as a JSON string (or, from some servers, as an object);
//! `reasoning_content` (DeepSeek, Qwen, llama.cpp) or `reasoning` (OpenRouter, vLLM,
//! Ollama's /v1) is surfaced as reasoning; finish reasons beyond OpenAI's (`sensitive`
//! from GLM, `error` from OpenRouter) are mapped and unknown ones kept raw; usage may
//! come on its own chunk with empty `choices`, on the finish chunk, as `null` on every
//! chunk, or not at all, with cached and reasoning token details; an `index` may be
//! missing on a single tool call, and an id may be empty on a continuation; an error may
//! arrive inside a 200 stream in several shapes.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::constants::TOOL_CALLS_PER_RESPONSE_MAX;
use crate::llm::error::{LlmError, snippet};
use crate::llm::event::StreamEvent;
use crate::llm::message::{Message, ToolCall, ToolDefinition};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;
use crate::llm::wire::reader::WireDecoder;
use crate::llm::wire::sse::{SseDecoder, SseEvent};
use crate::llm::wire::tag::ErrorTag;

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
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    crate::llm::wire::tools::insert_tools(&mut body, request, tool_json, named_tool_json);
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
    if let Some(output) = &request.output_schema {
        // OpenAI's structured outputs (OPENAI-SPEC `ResponseFormatJsonSchema`).
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": output.name, "schema": output.schema, "strict": output.strict}}),
        );
    } else if request.json_output {
        body.insert("response_format".into(), json!({"type": "json_object"}));
    }
    body.insert("stream".into(), json!(stream));
    if stream && stream_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// One message as chat completions take it: tool calls with their arguments as JSON
/// text, an assistant turn of calls only with `content: null`.
fn message_json(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => json!({
            "role": "assistant",
            "content": if content.is_empty() { Value::Null } else { Value::String(content.clone()) },
            "tool_calls": tool_calls.iter().map(|call| json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": crate::canonical_json::to_string(&call.arguments)},
            })).collect::<Vec<_>>(),
        }),
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// `tools` as chat completions take them: each a `function`.
fn tool_json(tool: &ToolDefinition) -> Value {
    json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}})
}

/// A `tool_choice` naming one tool.
fn named_tool_json(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name}})
}

/// A finish reason as OpenAI-compatible servers spell it. A reason this library does not
/// know is kept raw ([`FinishReason::Other`]), never read as a clean stop.
pub fn finish_reason(name: &str) -> FinishReason {
    match name {
        // TGI 2.0 says `eos_token` and `stop_sequence` (its `FinishReason`'s Display).
        "stop" | "eos" | "eos_token" | "end_turn" | "stop_sequence" => FinishReason::Stop,
        "length" | "max_tokens" | "model_length" => FinishReason::Length,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        // GLM says `sensitive` where OpenAI says `content_filter`.
        "content_filter" | "sensitive" => FinishReason::ContentFilter,
        "abort" | "aborted" | "cancelled" => FinishReason::Aborted,
        // OpenRouter's `error`; GLM's `network_error`.
        "error" | "network_error" => FinishReason::Error,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A token count as sent: past `u32` it saturates instead of wrapping; `null` is absent.
fn count(value: Option<u64>) -> Option<u32> {
    value.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

#[derive(Deserialize, Default)]
struct WireDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireDetails>,
    #[serde(default)]
    completion_tokens_details: Option<WireDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

impl From<WireUsage> for TokenUsage {
    fn from(usage: WireUsage) -> Self {
        let mut out = TokenUsage::new(
            count(usage.prompt_tokens).unwrap_or(0),
            count(usage.completion_tokens).unwrap_or(0),
        );
        out.cached_prompt_tokens = count(
            usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens),
        );
        out.reasoning_tokens = count(
            usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens),
        );
        out
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
    /// DeepSeek, Qwen, llama.cpp and older vLLM.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, newer vLLM, Ollama's /v1.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

impl WireMessage {
    /// The reasoning text, from whichever field carries it (never both: a server that
    /// fills both with the same text would otherwise be read twice).
    fn reasoning(&mut self) -> Option<String> {
        let content = self.reasoning_content.take().filter(|r| !r.is_empty());
        let other = self.reasoning.take().filter(|r| !r.is_empty());
        content.or(other)
    }
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u32>,
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
    #[serde(default)]
    error: Option<Value>,
    /// `chat.completion.chunk`, or vLLM's flat error's `"error"`: only which is kept
    /// (every chunk carries it; no `Value` built for it).
    #[serde(default)]
    object: Option<ErrorTag>,
    /// FastAPI's error (`{"detail": ...}`, Xinference).
    #[serde(default)]
    detail: Option<Value>,
}

impl WireResponse {
    /// The error this body is, when it is one: `{"error": ...}` (every wrapped shape,
    /// a string or an object), vLLM's flat `{"object": "error", "message", ...}` (up to
    /// 0.10.0, relayed into a stream by proxies), FastAPI's `{"detail": ...}`. `text`
    /// is the body, for the error's own reading.
    fn error(&mut self, text: &str) -> Option<LlmError> {
        if let Some(error) = self.error.take().filter(|e| !e.is_null()) {
            return Some(from_stream_error(&json!({ "error": error })));
        }
        let flat = self.object.is_some_and(|tag| tag.is_error);
        let fastapi = self.detail.as_ref().is_some_and(|d| !d.is_null());
        if self.choices.is_empty() && (flat || fastapi) {
            let value = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
            return Some(from_stream_error(&value));
        }
        None
    }

    /// The first choice (index 0, or the first one listed); others (`n > 1`) are ignored.
    fn first_choice(&mut self) -> Option<WireChoice> {
        let position = self
            .choices
            .iter()
            .position(|c| c.index.unwrap_or(0) == 0)?;
        Some(self.choices.swap_remove(position))
    }
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
    let mut response: WireResponse = serde_json::from_str(body).map_err(|error| {
        if serde_json::from_str::<Value>(body).is_ok() {
            invalid(&format!("unexpected response shape: {error}"), body)
        } else {
            invalid("the response is not JSON", body)
        }
    })?;
    if let Some(error) = response.error(body) {
        return Err(error);
    }
    let choice = response
        .first_choice()
        .ok_or_else(|| invalid("the response has no choices", body))?;
    let mut message = choice
        .message
        .ok_or_else(|| invalid("the choice has no message", body))?;
    let reasoning = message.reasoning();
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
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}")),
            name,
            arguments,
        });
    }
    if tool_calls.len() > TOOL_CALLS_PER_RESPONSE_MAX {
        return Err(LlmError::TooManyToolCalls {
            calls: u32::try_from(tool_calls.len()).unwrap_or(u32::MAX),
            limit: TOOL_CALLS_PER_RESPONSE_MAX as u32,
        });
    }
    Ok(CompletionResponse {
        text: message.content.unwrap_or_default(),
        tool_calls,
        reasoning,
        finish_reason: choice
            .finish_reason
            .as_deref()
            .map_or(FinishReason::Missing, finish_reason),
        usage: response.usage.map(TokenUsage::from),
        model: model.to_owned(),
    })
}

/// SSE chunks into stream events.
///
/// The end is `data: [DONE]`; `Done` carries the last finish reason seen
/// ([`FinishReason::Missing`] when none came) and the last usage seen, wherever it came
/// (on its own chunk with empty `choices`, or on the finish chunk). A body that ends
/// after a finish reason but without `[DONE]` is accepted; one that ends before any is
/// [`LlmError::StreamTruncated`]; `[DONE]` with nothing before it (no text, no tool call,
/// no finish reason) is [`LlmError::EmptyStream`]. Errors inside the stream, in every
/// shape providers use (`data: {"error": ...}` with an object or a string, vLLM's flat
/// `{"object": "error", ...}`, FastAPI's `{"detail": ...}`, `event: error`, llama.cpp's
/// `error:` field, OpenRouter's error chunk with `finish_reason: "error"`), end it with
/// their typed error.
#[derive(Default)]
pub struct ChunkDecoder {
    sse: SseDecoder,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    /// Whether any text, reasoning or tool call has come.
    answered: bool,
    done: bool,
}

impl ChunkDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if let Some(error) = event.error {
            // llama.cpp: `error: {"code":500,"message":...,"type":...}`.
            return Err(stream_error_text(&error));
        }
        if event.event.as_deref() == Some("error") {
            return Err(stream_error_text(&event.data));
        }
        self.on_data(&event.data, out)
    }

    fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if data.trim() == "[DONE]" {
            if self.finish.is_none() && !self.answered {
                // Nothing but the end marker: no answer at all, not an empty one.
                return Err(LlmError::EmptyStream);
            }
            self.done = true;
            let finish = self.finish.take().unwrap_or(FinishReason::Missing);
            out.push(StreamEvent::done(finish, self.usage));
            return Ok(());
        }
        let mut chunk: WireResponse = serde_json::from_str(data).map_err(|error| {
            if serde_json::from_str::<Value>(data).is_ok() {
                invalid(&format!("unexpected chunk shape: {error}"), data)
            } else {
                invalid("a stream chunk is not JSON", data)
            }
        })?;
        if let Some(error) = chunk.error(data) {
            return Err(error);
        }
        if let Some(usage) = chunk.usage.take() {
            self.usage = Some(usage.into());
        }
        let Some(choice) = chunk.first_choice() else {
            return Ok(());
        };
        let before = out.len();
        if let Some(mut delta) = choice.message {
            if let Some(text) = delta.reasoning() {
                out.push(StreamEvent::ReasoningDelta { text });
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta { text });
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                out.push(tool_call_delta(call, position));
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
        self.answered |= out.len() > before;
        Ok(())
    }
}

/// One tool-call delta: an empty id or name (DashScope's continuations) is no id or
/// name; an index left out (a single call, from some servers) is its position.
fn tool_call_delta(call: WireToolCall, position: usize) -> StreamEvent {
    let (name, fragment) = match call.function {
        Some(function) => (
            function.name.filter(|n| !n.is_empty()),
            match function.arguments {
                Some(Value::String(text)) if !text.is_empty() => Some(text),
                Some(object @ Value::Object(_)) => Some(crate::canonical_json::to_string(&object)),
                _ => None,
            },
        ),
        None => (None, None),
    };
    StreamEvent::ToolCallDelta {
        index: call
            .index
            .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX)),
        id: call.id.filter(|id| !id.is_empty()),
        name,
        arguments_fragment: fragment,
    }
}

/// The error an `event: error` or `error:` field's text stands for.
fn stream_error_text(text: &str) -> LlmError {
    let value =
        serde_json::from_str::<Value>(text).unwrap_or_else(|_| json!({"error": {"message": text}}));
    from_stream_error(&value)
}

impl WireDecoder for ChunkDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let mut events = Vec::new();
        let fed = self.sse.feed(bytes, &mut events);
        for event in events {
            self.on_event(event, out)?;
        }
        fed
    }

    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let before = out.len();
        // An event the body ended in the middle of is a cut, not a malformed chunk: a
        // whole one (`data: [DONE]` without its blank line) still counts, an error too.
        if let Ok(Some(event)) = self.sse.finish() {
            let mut whole = Vec::new();
            match self.on_event(event, &mut whole) {
                Ok(()) => out.extend(whole),
                Err(error @ LlmError::InvalidResponse { .. }) => drop(error),
                Err(error) => return Err(error),
            }
        }
        if self.done {
            return Ok(());
        }
        match self.finish.take() {
            // The server finished the answer but closed without `[DONE]`: accept it.
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
