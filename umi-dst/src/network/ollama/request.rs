//! Ollama's `/api/chat` request as its server reads it (ollama/ollama `api/types.go`
//! `ChatRequest` and `Message`, `server/routes.go` `ChatHandler`): Go's JSON decoding
//! errors for fields of the wrong type, `model` required, tool call arguments an object,
//! sampling settings under `options`, JSON mode or a schema in `format`, `stream` on by
//! default. Each refusal names its field and carries the server's own wording.

use serde_json::{Value, json};
use umi_core::llm::{CompletionRequest, Message, OutputSchema, ToolCall};

use super::super::format::{Parsed, RequestError};

fn refuse(param: &str, message: impl Into<String>) -> RequestError {
    RequestError {
        param: Some(param.to_owned()),
        message: message.into(),
    }
}

/// `body` as Ollama's server reads a chat request, or its refusal.
pub(super) fn parse(body: &[u8]) -> Result<Parsed, RequestError> {
    let mut value = body_value(body)?;
    let mut request = CompletionRequest::new(Vec::new());
    request.model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if request.model.is_empty() {
        return Err(refuse("model", "model is required"));
    }
    request.messages = messages(&mut value)?;
    request.tools =
        super::super::parse_tools(&value).map_err(|message| refuse("tools", message))?;
    apply_options(&value, &mut request);
    apply_format(&value, &mut request);
    let stream = value.get("stream").and_then(Value::as_bool).unwrap_or(true);
    if request.messages.is_empty() {
        // An empty conversation loads the model and answers `done_reason: "load"`; a
        // simulated model has nothing to load, so it is refused by name instead.
        return Err(refuse("messages", "messages is required"));
    }
    Ok(Parsed {
        request,
        stream,
        include_usage: true,
        reasoning_requested: true,
    })
}

/// The body as JSON: not empty, and valid.
fn body_value(body: &[u8]) -> Result<Value, RequestError> {
    if body.is_empty() {
        return Err(RequestError {
            param: None,
            message: "missing request body".into(),
        });
    }
    serde_json::from_slice(body).map_err(|error| RequestError {
        param: None,
        message: format!("invalid character in request body: {error}"),
    })
}

/// The conversation: `messages`, an array (absent: none). Calls without an id are
/// numbered `call_<n>` across the whole conversation. Each message's text is moved out
/// of the parsed body, not copied: nothing reads it there again.
fn messages(value: &mut Value) -> Result<Vec<Message>, RequestError> {
    let items = match value.get_mut("messages") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(refuse(
                "messages",
                "json: cannot unmarshal into Go struct field ChatRequest.messages of type []api.Message",
            ));
        }
    };
    let mut call_number = 0usize;
    let mut messages = Vec::with_capacity(items.len());
    for (index, item) in items.iter_mut().enumerate() {
        messages.push(message(item, index, &mut call_number)?);
    }
    Ok(messages)
}

/// Message `index` of the conversation.
fn message(
    item: &mut Value,
    index: usize,
    call_number: &mut usize,
) -> Result<Message, RequestError> {
    let content = match item.get_mut("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => std::mem::take(text),
        Some(_) => {
            return Err(refuse(
                &format!("messages[{index}].content"),
                "json: cannot unmarshal into Go struct field Message.messages.content of type string",
            ));
        }
    };
    let role = item.get("role").and_then(Value::as_str).unwrap_or("");
    Ok(match role {
        "system" => Message::system(content),
        "user" => Message::user(content),
        "assistant" => {
            Message::assistant_tool_calls(content, tool_calls(item, index, call_number)?)
        }
        "tool" => Message::tool_result(
            item.get("tool_call_id")
                .or_else(|| item.get("tool_name"))
                .and_then(Value::as_str)
                .unwrap_or(""),
            content,
            true,
        ),
        other => {
            return Err(refuse(
                &format!("messages[{index}].role"),
                format!("invalid role {other:?}"),
            ));
        }
    })
}

/// The tool calls of assistant message `index`: arguments an object (absent: `{}`).
fn tool_calls(
    item: &Value,
    index: usize,
    call_number: &mut usize,
) -> Result<Vec<ToolCall>, RequestError> {
    let mut calls = Vec::new();
    for call in item
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").cloned().unwrap_or_default();
        let arguments = match function.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(object @ Value::Object(_)) => object.clone(),
            Some(_) => {
                return Err(refuse(
                    &format!("messages[{index}].tool_calls"),
                    "json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type map[string]interface {}",
                ));
            }
        };
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{call_number}"), str::to_owned);
        *call_number += 1;
        calls.push(ToolCall::new(
            id,
            function.get("name").and_then(Value::as_str).unwrap_or(""),
            arguments,
        ));
    }
    Ok(calls)
}

/// The sampling settings under `options`: `num_predict`, `temperature`, `stop`, `seed`.
fn apply_options(value: &Value, request: &mut CompletionRequest) {
    let options = value.get("options").cloned().unwrap_or_default();
    request.max_tokens = options
        .get("num_predict")
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
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
}

/// `format`: `"json"` is JSON mode; a schema is a structured output (which implies JSON,
/// as `output_schema` does everywhere).
fn apply_format(value: &Value, request: &mut CompletionRequest) {
    request.json_output = value.get("format").and_then(Value::as_str) == Some("json");
    if let Some(schema) = value.get("format").filter(|f| f.is_object()) {
        request.output_schema = Some(OutputSchema {
            name: "response".to_owned(),
            schema: schema.clone(),
            strict: true,
        });
    }
}
