//! The server side of the OpenAI chat-completions format: requests parsed as a server
//! would, answers and errors encoded as a server sends them.

use serde_json::{Map, Value, json};
use umi_core::llm::{
    CompletionRequest, CompletionResponse, LlmError, Message, StreamEvent, ToolCall,
};

/// The request a client sent, and whether it asked for a stream.
pub fn parse_request(body: &[u8]) -> Result<(CompletionRequest, bool), String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let mut request = CompletionRequest::new(Vec::new());
    request.model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    for message in value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("missing messages")?
    {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or("a message has no role")?;
        let content = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        request.messages.push(match role {
            "system" | "developer" => Message::system(content),
            "user" => Message::user(content),
            "assistant" => {
                let mut calls = Vec::new();
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let function = call.get("function").ok_or("a tool call has no function")?;
                    let arguments = match function.get("arguments") {
                        Some(Value::String(text)) => serde_json::from_str(text)
                            .map_err(|e| format!("tool arguments are not JSON: {e}"))?,
                        Some(other) => other.clone(),
                        None => json!({}),
                    };
                    calls.push(ToolCall::new(
                        call.get("id").and_then(Value::as_str).unwrap_or(""),
                        function.get("name").and_then(Value::as_str).unwrap_or(""),
                        arguments,
                    ));
                }
                Message::assistant_tool_calls(content, calls)
            }
            "tool" => Message::tool_result(
                message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                content,
                true,
            ),
            other => return Err(format!("unknown role {other:?}")),
        });
    }
    request.tools = super::parse_tools(&value)?;
    request.max_tokens = value
        .get("max_tokens")
        .or_else(|| value.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .map(|n| n as u32);
    request.temperature = value
        .get("temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    request.stop = match value.get("stop") {
        Some(Value::String(stop)) => vec![stop.clone()],
        Some(Value::Array(stops)) => stops
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    request.seed = value.get("seed").and_then(Value::as_u64);
    request.json_output = value
        .pointer("/response_format/type")
        .and_then(Value::as_str)
        == Some("json_object");
    let stream = value
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((request, stream))
}

fn wire_calls(calls: &[ToolCall]) -> Vec<Value> {
    calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
        .collect()
}

/// A whole chat completion.
pub(crate) fn response_body(response: &CompletionResponse, created: u64) -> Vec<u8> {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = if response.text.is_empty() && !response.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(response.text)
    };
    message.insert("content".into(), content);
    if !response.tool_calls.is_empty() {
        message.insert(
            "tool_calls".into(),
            Value::Array(wire_calls(&response.tool_calls)),
        );
    }
    if let Some(reasoning) = &response.reasoning {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    let usage = response.usage.unwrap_or_default();
    json!({
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": created,
        "model": response.model,
        "choices": [{"index": 0, "message": message, "finish_reason": response.finish_reason.as_str()}],
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total()},
    })
    .to_string()
    .into_bytes()
}

/// Encodes stream events as SSE chunks, the way OpenAI does: role first, usage in a
/// chunk of its own after the finish reason, then `[DONE]`.
#[derive(Debug, Default)]
pub struct SseEncoder {
    started: bool,
    usage: Option<umi_core::llm::TokenUsage>,
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let body = json!({"id": "chatcmpl-sim", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

impl SseEncoder {
    /// The bytes for `event`.
    pub fn event(&mut self, event: &StreamEvent) -> Vec<u8> {
        let mut out = String::new();
        if !self.started {
            self.started = true;
            out.push_str(&chunk(&json!({"role": "assistant", "content": ""}), None));
        }
        match event {
            StreamEvent::TextDelta { text } => {
                out.push_str(&chunk(&json!({"content": text}), None));
            }
            StreamEvent::ReasoningDelta { text } => {
                out.push_str(&chunk(&json!({"reasoning_content": text}), None));
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => {
                let mut call = Map::new();
                call.insert("index".into(), json!(index));
                if let Some(id) = id {
                    call.insert("id".into(), json!(id));
                    call.insert("type".into(), json!("function"));
                }
                let mut function = Map::new();
                if let Some(name) = name {
                    function.insert("name".into(), json!(name));
                }
                function.insert(
                    "arguments".into(),
                    json!(arguments_fragment.clone().unwrap_or_default()),
                );
                call.insert("function".into(), Value::Object(function));
                out.push_str(&chunk(&json!({"tool_calls": [Value::Object(call)]}), None));
            }
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                out.push_str(&chunk(&json!({}), Some(finish_reason.as_str())));
                if let Some(usage) = usage.or(self.usage) {
                    let body = json!({"id": "chatcmpl-sim", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total()}});
                    out.push_str(&format!("data: {body}\n\n"));
                }
                out.push_str("data: [DONE]\n\n");
            }
        }
        out.into_bytes()
    }

    /// The bytes of an error inside a 200 stream.
    pub fn error(&mut self, error: &LlmError) -> Vec<u8> {
        format!("data: {}\n\n", error_object(error)).into_bytes()
    }
}

/// The JSON error object a server sends for `error`.
pub fn error_object(error: &LlmError) -> Value {
    let (message, kind, code) = match error {
        LlmError::RateLimit { .. } => (
            "Rate limit reached for requests".to_owned(),
            "requests",
            json!("rate_limit_exceeded"),
        ),
        LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        } => (
            format!(
                "This model's maximum context length is {} tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.",
                limit.unwrap_or(0),
                prompt_tokens.unwrap_or(0)
            ),
            "invalid_request_error",
            json!("context_length_exceeded"),
        ),
        LlmError::ServiceUnavailable { message, .. } => {
            (message.clone(), "server_error", Value::Null)
        }
        LlmError::InvalidPrompt { reason } => {
            (reason.clone(), "invalid_request_error", Value::Null)
        }
        other => (other.to_string(), "server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// The status of an error a server answers with.
pub fn error_status(error: &LlmError) -> u16 {
    match error {
        LlmError::RateLimit { .. } => 429,
        LlmError::ContextOverflow { .. }
        | LlmError::InvalidPrompt { .. }
        | LlmError::BadRequest { .. } => 400,
        LlmError::Auth { status, .. } => *status,
        LlmError::Timeout { .. } => 504,
        LlmError::ServiceUnavailable { status, .. } => status.unwrap_or(503),
        _ => 500,
    }
}
