//! A Responses request read as the API reads it: `input` (a string, or items:
//! messages, `function_call`, `function_call_output`), `instructions`, flat function
//! tools, `tool_choice`, `max_output_tokens`, `text.format`, `reasoning`; unknown
//! parameters refused by name, as the API does (`Unknown parameter: 'stop'.`, a live
//! body quoted in a migration log, and a test of xai's Responses adapter).

use serde_json::{Map, Value};
use umi_core::llm::{
    CompletionRequest, Message, OutputSchema, ToolCall, ToolChoice, ToolDefinition,
};

use crate::network::format::{Parsed, RequestError};
use umi_core::llm::structured::strict::strict_violation;

/// The smallest `max_output_tokens` the API takes (SPEC `CreateResponse`: minimum 16).
pub(crate) const MAX_OUTPUT_TOKENS_MIN: u64 = 16;

/// The top-level parameters SPEC's `CreateResponse` lists; anything else is refused.
const KNOWN: [&str; 30] = [
    "background",
    "conversation",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
    "context_management",
    "verbosity",
];

fn refuse(param: &str, message: impl Into<String>) -> RequestError {
    RequestError {
        param: Some(param.to_owned()),
        message: message.into(),
    }
}

/// Reads a Responses body.
pub(crate) fn parse(body: &[u8]) -> Result<Parsed, RequestError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| RequestError {
        param: None,
        message: format!("We could not parse the JSON body of your request. ({error})"),
    })?;
    let Some(body) = value.as_object() else {
        return Err(RequestError {
            param: None,
            message: "We could not parse the JSON body of your request. (expected an object)"
                .into(),
        });
    };
    if let Some(unknown) = umi_core::canonical_json::sorted_keys(body)
        .into_iter()
        .find(|key| !KNOWN.contains(&key.as_str()))
    {
        return Err(refuse(unknown, format!("Unknown parameter: '{unknown}'.")));
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| refuse("model", "Missing required parameter: 'model'."))?;
    // The server keeps no responses, so a continuation names one it never stored: the
    // API's 400 for it (`previous_response_not_found`, quoted by router-for-me/CLIProxyAPI
    // in its Responses tests), never an answer that silently lost the history.
    if let Some(id) = body.get("previous_response_id").and_then(Value::as_str) {
        return Err(refuse(
            "previous_response_id",
            format!("Previous response with id '{id}' not found."),
        ));
    }
    let mut request = CompletionRequest::new(Vec::new());
    request.model = model.to_owned();
    if let Some(instructions) = body
        .get("instructions")
        .and_then(Value::as_str)
        .filter(|i| !i.is_empty())
    {
        request.messages.push(Message::system(instructions));
    }
    push_input(body, &mut request.messages)?;
    request.max_tokens = max_output_tokens(body)?;
    request.tools = tools(body)?;
    request.tool_choice = tool_choice(body);
    request.parallel_tool_calls = body.get("parallel_tool_calls").and_then(Value::as_bool);
    request.temperature = body
        .get("temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    apply_text_format(body, &mut request)?;
    let reasoning_requested = body
        .get("reasoning")
        .and_then(|r| r.get("summary"))
        .is_some_and(|s| !s.is_null());
    Ok(Parsed {
        request,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: true,
        reasoning_requested,
    })
}

/// `input`: a string (one user message) or an array of items.
fn push_input(body: &Map<String, Value>, messages: &mut Vec<Message>) -> Result<(), RequestError> {
    match body.get("input") {
        Some(Value::String(text)) => messages.push(Message::user(text.as_str())),
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                push_item(messages, index, item)?;
            }
        }
        _ => return Err(refuse("input", "Missing required parameter: 'input'.")),
    }
    Ok(())
}

/// `max_output_tokens`, at least [`MAX_OUTPUT_TOKENS_MIN`] when given.
fn max_output_tokens(body: &Map<String, Value>) -> Result<Option<u32>, RequestError> {
    let Some(max) = body.get("max_output_tokens").and_then(Value::as_u64) else {
        return Ok(None);
    };
    // The captured form for a number below its minimum (PY
    // `test_openai_responses_model_http_error.yaml`: `decimal below minimum value`).
    if max < MAX_OUTPUT_TOKENS_MIN {
        return Err(refuse(
            "max_output_tokens",
            format!(
                "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= {MAX_OUTPUT_TOKENS_MIN}, but got {max} instead."
            ),
        ));
    }
    Ok(Some(u32::try_from(max).unwrap_or(u32::MAX)))
}

/// `text.format`: a JSON schema (structured output) or a JSON object. A strict schema
/// that strict mode refuses is refused as the API does: `param` `text.format.schema`,
/// `code` `invalid_json_schema` (a live capture in mavam/pi-web-providers #14).
fn apply_text_format(
    body: &Map<String, Value>,
    request: &mut CompletionRequest,
) -> Result<(), RequestError> {
    let format_type = body
        .get("text")
        .and_then(|text| text.pointer("/format/type"))
        .and_then(Value::as_str);
    match format_type {
        Some("json_schema") => {
            let format = &body["text"]["format"];
            request.output_schema = Some(OutputSchema {
                name: format
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("response")
                    .to_owned(),
                schema: format.get("schema").cloned().unwrap_or(Value::Null),
                strict: format
                    .get("strict")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
        }
        Some("json_object") => request.json_output = true,
        _ => {}
    }
    if let Some(output) = &request.output_schema
        && output.strict
        && let Some(violation) = strict_violation(&output.schema)
    {
        return Err(refuse(
            "text.format.schema",
            violation.openai_message(&output.name),
        ));
    }
    Ok(())
}

/// A message's content: a string, or `input_text`/`output_text` parts joined.
fn content_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// One input item as Umi's messages: a `function_call` joins the assistant message
/// before it (the client sends an assistant's text, then its calls).
fn push_item(messages: &mut Vec<Message>, index: usize, item: &Value) -> Result<(), RequestError> {
    let text = |key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => {
            let arguments: Value =
                serde_json::from_str(&text("arguments")).unwrap_or(Value::Object(Map::new()));
            let call = ToolCall::new(text("call_id"), text("name"), arguments);
            match messages.last_mut() {
                Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                Some(Message::System { .. } | Message::User { .. } | Message::Tool { .. })
                | None => {
                    messages.push(Message::assistant_tool_calls("", vec![call]));
                }
            }
        }
        Some("function_call_output") => {
            messages.push(Message::tool_result(
                text("call_id"),
                content_of(item.get("output")),
                true,
            ));
        }
        Some("message") | None => {
            let content = content_of(item.get("content"));
            match item.get("role").and_then(Value::as_str) {
                Some("user") => messages.push(Message::user(content)),
                Some("assistant") => messages.push(Message::assistant(content)),
                Some("system" | "developer") => messages.push(Message::system(content)),
                other => {
                    return Err(refuse(
                        &format!("input[{index}].role"),
                        format!(
                            "Invalid value: '{}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.",
                            other.unwrap_or("")
                        ),
                    ));
                }
            }
        }
        // Reasoning items and others this simulator's models do not read.
        Some(_) => {}
    }
    Ok(())
}

fn tools(body: &Map<String, Value>) -> Result<Vec<ToolDefinition>, RequestError> {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    tools
        .enumerate()
        .filter(|(_, tool)| tool.get("type").and_then(Value::as_str) == Some("function"))
        .map(|(index, tool)| {
            let name = tool.get("name").and_then(Value::as_str).ok_or_else(|| {
                refuse(
                    &format!("tools[{index}].name"),
                    format!("Missing required parameter: 'tools[{index}].name'."),
                )
            })?;
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let parameters = tool
                .get("parameters")
                .cloned()
                .filter(|p| !p.is_null())
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            Ok(ToolDefinition::new(name, description, parameters))
        })
        .collect()
}

fn tool_choice(body: &Map<String, Value>) -> Option<ToolChoice> {
    match body.get("tool_choice")? {
        Value::String(choice) => match choice.as_str() {
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            _ => Some(ToolChoice::Auto),
        },
        choice => choice
            .get("name")
            .and_then(Value::as_str)
            .map(|name| ToolChoice::Tool(name.to_owned())),
    }
}
