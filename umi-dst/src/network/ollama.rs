//! The server side of Ollama's `/api/chat`: requests parsed, NDJSON and JSON answers.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use umi_core::llm::{
    CompletionRequest, CompletionResponse, FinishReason, LlmError, Message, StreamEvent,
    TokenUsage, ToolCall,
};

/// The request a client sent, and whether it asked for a stream (Ollama's default).
pub fn parse_request(body: &[u8]) -> Result<(CompletionRequest, bool), String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let mut request = CompletionRequest::new(Vec::new());
    request.model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut call_number = 0;
    for message in value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("missing messages")?
    {
        let content = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        request.messages.push(
            match message.get("role").and_then(Value::as_str).unwrap_or("") {
                "system" => Message::system(content),
                "user" => Message::user(content),
                "assistant" => {
                    let calls = message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|call| {
                            call_number += 1;
                            let function = call.get("function").cloned().unwrap_or_default();
                            ToolCall::new(
                                format!("call_{}", call_number - 1),
                                function.get("name").and_then(Value::as_str).unwrap_or(""),
                                function
                                    .get("arguments")
                                    .cloned()
                                    .unwrap_or_else(|| json!({})),
                            )
                        })
                        .collect();
                    Message::assistant_tool_calls(content, calls)
                }
                "tool" => Message::tool_result(
                    message
                        .get("tool_name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    content,
                    true,
                ),
                other => return Err(format!("unknown role {other:?}")),
            },
        );
    }
    request.tools = super::parse_tools(&value)?;
    let options = value.get("options").cloned().unwrap_or_default();
    request.max_tokens = options
        .get("num_predict")
        .and_then(Value::as_u64)
        .map(|n| n as u32);
    request.temperature = options
        .get("temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    request.stop = options
        .get("stop")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    request.seed = options.get("seed").and_then(Value::as_u64);
    request.json_output = value.get("format").and_then(Value::as_str) == Some("json");
    Ok((
        request,
        value.get("stream").and_then(Value::as_bool).unwrap_or(true),
    ))
}

fn done_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Length => "length",
        _ => "stop",
    }
}

fn line(model: &str, message: &Value, done: bool, extra: Value) -> Vec<u8> {
    let mut body = json!({"model": model, "created_at": "2024-01-01T00:00:00Z", "message": message, "done": done});
    if let (Value::Object(target), Value::Object(extra)) = (&mut body, extra) {
        target.extend(extra);
    }
    let mut bytes = body.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

fn calls_value(calls: &[(String, String)]) -> Vec<Value> {
    calls
        .iter()
        .map(|(name, arguments)| {
            let arguments: Value =
                serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
            json!({"function": {"name": name, "arguments": arguments}})
        })
        .collect()
}

/// A whole `/api/chat` answer.
pub(crate) fn response_body(response: &CompletionResponse) -> Vec<u8> {
    let calls: Vec<(String, String)> = response
        .tool_calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.to_string()))
        .collect();
    let mut message = json!({"role": "assistant", "content": response.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls_value(&calls));
    }
    let usage = response.usage.unwrap_or_default();
    line(
        &response.model,
        &message,
        true,
        json!({"done_reason": done_reason(response.finish_reason.clone()), "prompt_eval_count": usage.prompt_tokens, "eval_count": usage.completion_tokens}),
    )
}

/// Encodes stream events as NDJSON, the way Ollama does: text as it comes, tool calls
/// whole (gathered until the answer ends), then the `done` line with the counts.
#[derive(Debug)]
pub struct NdjsonEncoder {
    model: String,
    calls: BTreeMap<u32, (String, String)>,
    usage: Option<TokenUsage>,
}

impl NdjsonEncoder {
    /// An encoder for answers from `model`.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            calls: BTreeMap::new(),
            usage: None,
        }
    }

    /// The bytes for `event`.
    pub fn event(&mut self, event: &StreamEvent) -> Vec<u8> {
        match event {
            StreamEvent::TextDelta { text } => line(
                &self.model,
                &json!({"role": "assistant", "content": text}),
                false,
                json!({}),
            ),
            StreamEvent::ReasoningDelta { text } => line(
                &self.model,
                &json!({"role": "assistant", "content": "", "thinking": text}),
                false,
                json!({}),
            ),
            StreamEvent::ToolCallDelta {
                index,
                name,
                arguments_fragment,
                ..
            } => {
                let call = self.calls.entry(*index).or_default();
                if let Some(name) = name {
                    call.0.clone_from(name);
                }
                call.1.push_str(arguments_fragment.as_deref().unwrap_or(""));
                Vec::new()
            }
            StreamEvent::Usage { usage } => {
                self.usage = Some(*usage);
                Vec::new()
            }
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                let mut out = Vec::new();
                if !self.calls.is_empty() {
                    let calls: Vec<(String, String)> =
                        std::mem::take(&mut self.calls).into_values().collect();
                    out.extend(line(&self.model, &json!({"role": "assistant", "content": "", "tool_calls": calls_value(&calls)}), false, json!({})));
                }
                let usage = usage.or(self.usage).unwrap_or_default();
                out.extend(line(
                    &self.model,
                    &json!({"role": "assistant", "content": ""}),
                    true,
                    json!({"done_reason": done_reason(finish_reason.clone()), "prompt_eval_count": usage.prompt_tokens, "eval_count": usage.completion_tokens}),
                ));
                out
            }
        }
    }

    /// The bytes of an error inside a 200 stream.
    pub fn error(&mut self, error: &LlmError) -> Vec<u8> {
        let mut bytes = json!({"error": error_text(error)}).to_string().into_bytes();
        bytes.push(b'\n');
        bytes
    }
}

/// The text Ollama puts in `{"error": ...}` for `error`.
pub(crate) fn error_text(error: &LlmError) -> String {
    match error {
        LlmError::ContextOverflow { .. } => {
            "the input length exceeds the context length".to_owned()
        }
        LlmError::RateLimit { .. } => "too many requests".to_owned(),
        other => other.to_string(),
    }
}
