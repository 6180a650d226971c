//! A Messages request read as the API reads it: the headers it requires, the body's
//! required fields, content blocks into Umi's messages, and the pairing of tool calls
//! with their results that the API enforces. Refusals carry the API's words, each from a
//! capture (sources in [`super`] and beside each).

use serde_json::{Map, Value};
use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{
    CompletionRequest, Message, OutputSchema, ToolCall, ToolChoice, ToolDefinition,
};

use crate::network::format::{Parsed, RequestError};

fn refuse(param: Option<&str>, message: impl Into<String>) -> RequestError {
    RequestError {
        param: param.map(str::to_owned),
        message: message.into(),
    }
}

/// `<field>: Field required`, capital F (tickernelz/opencode-mem #50, live).
fn required(field: &str) -> RequestError {
    refuse(Some(field), format!("{field}: Field required"))
}

/// The largest Messages request, in bytes (DOC-ERR: 32 MB, enforced by Cloudflare in
/// front of the API).
pub(crate) const REQUEST_BYTES_MAX: usize = 32 * 1024 * 1024;

/// Cloudflare's words for a larger one (anthropics/claude-code #14567, #10314).
pub(crate) const TOO_LARGE: &str = "Request exceeds the maximum size";

/// Reads `http` as the Messages API does.
pub(crate) fn parse(http: &HttpRequest) -> Result<Parsed, RequestError> {
    let mut value = body_value(http)?;
    let Some(body) = value.as_object_mut() else {
        return Err(refuse(
            None,
            "The request body is not valid JSON: expected an object",
        ));
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| required("model"))?
        .to_owned();
    let max_tokens = body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .ok_or_else(|| required("max_tokens"))?;
    // The turns are taken out of the body, so their texts move into the request instead
    // of being copied (a long conversation is most of a request's bytes). Nothing after
    // this reads `messages` from the body.
    let turns = match body.get_mut("messages") {
        Some(Value::Array(turns)) => std::mem::take(turns),
        _ => return Err(required("messages")),
    };
    let body = &*body;
    let mut request = CompletionRequest::new(Vec::new());
    request.model = model;
    request.max_tokens = Some(u32::try_from(max_tokens).unwrap_or(u32::MAX));
    if let Some(system) = body.get("system") {
        let text = text_of(system);
        if !text.is_empty() {
            request.messages.push(Message::system(text));
        }
    }
    check_tool_pairing(&turns)?;
    for (index, turn) in turns.into_iter().enumerate() {
        request.messages.extend(messages_of(index, turn)?);
    }
    request.tools = tools(body)?;
    (request.tool_choice, request.parallel_tool_calls) = tool_choice(body);
    apply_sampling(body, &mut request);
    let reasoning_requested = thinking(body, max_tokens)?;
    Ok(Parsed {
        request,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: true,
        reasoning_requested,
    })
}

/// The body as JSON, after the checks that come before it: its size (413) and the
/// `anthropic-version` header.
fn body_value(http: &HttpRequest) -> Result<Value, RequestError> {
    if http.body.len() > REQUEST_BYTES_MAX {
        return Err(refuse(None, TOO_LARGE));
    }
    // Farama-Foundation/ChatArena #124.
    if http.header("anthropic-version").is_none() {
        return Err(refuse(None, "anthropic-version: header is required"));
    }
    // anthropics/claude-code #77525: the parser's own words after this prefix.
    serde_json::from_slice(&http.body)
        .map_err(|error| refuse(None, format!("The request body is not valid JSON: {error}")))
}

/// `stop_sequences`, `temperature`, and a structured output's schema.
fn apply_sampling(body: &Map<String, Value>, request: &mut CompletionRequest) {
    request.stop = body
        .get("stop_sequences")
        .and_then(Value::as_array)
        .map(|stops| {
            stops
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    request.temperature = body
        .get("temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    // Structured outputs: `output_config.format` (GA), or the beta's top-level
    // `output_format` (platform.claude.com structured-outputs).
    let format = body
        .get("output_config")
        .and_then(|config| config.get("format"))
        .or_else(|| body.get("output_format"));
    if let Some(schema) = format
        .filter(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"))
        .and_then(|f| f.get("schema"))
    {
        request.output_schema = Some(OutputSchema {
            name: "response".to_owned(),
            schema: schema.clone(),
            strict: true,
        });
    }
}

/// A `system` or `content` value: a string, or text blocks joined.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// A turn's content blocks, taken out of it: a string content is one text block.
fn take_blocks(turn: &mut Value) -> Vec<Value> {
    match turn.get_mut("content").map(Value::take) {
        Some(Value::String(text)) => {
            let mut block = Map::new();
            block.insert("type".to_owned(), Value::from("text"));
            block.insert("text".to_owned(), Value::String(text));
            vec![Value::Object(block)]
        }
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    }
}

/// `block`'s string at `key`, taken out of it ("" if it is missing or not a string).
fn take_text(block: &mut Value, key: &str) -> String {
    match block.get_mut(key).map(Value::take) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// The ids of a turn's blocks of `kind` (`tool_use`'s `id`, `tool_result`'s
/// `tool_use_id`), with each block's position. A string content is one text block,
/// which has no id.
fn ids_of(turn: &Value, kind: &str, key: &str) -> Vec<(usize, String)> {
    let Some(Value::Array(blocks)) = turn.get("content") else {
        return Vec::new();
    };
    blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some(kind))
        .map(|(i, b)| {
            (
                i,
                b.get(key).and_then(Value::as_str).unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The API's pairing rule: every `tool_use` is answered by a `tool_result` in the very
/// next message, and every `tool_result` answers a `tool_use` of the message before.
/// Words: `messages.N: \`tool_use\` ids were found without \`tool_result\` blocks
/// immediately after: …` (agent captures, e.g. a repair test quoting the live body), and
/// VERCEL `anthropic-issue-17366-error.json` for the other direction. A last assistant
/// message with calls is a turn still waiting for results, which the API accepts.
fn check_tool_pairing(turns: &[Value]) -> Result<(), RequestError> {
    for (index, pair) in turns.windows(2).enumerate() {
        let calls = ids_of(&pair[0], "tool_use", "id");
        let results = ids_of(&pair[1], "tool_result", "tool_use_id");
        let missing: Vec<&str> = calls
            .iter()
            .filter(|(_, id)| !results.iter().any(|(_, r)| r == id))
            .map(|(_, id)| id.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(refuse(
                Some(&format!("messages.{index}")),
                format!(
                    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.join(", ")
                ),
            ));
        }
        if let Some((block, id)) = results
            .iter()
            .find(|(_, r)| !calls.iter().any(|(_, c)| c == r))
        {
            let at = format!("messages.{}.content.{block}", index + 1);
            return Err(refuse(
                Some(&at),
                format!(
                    "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ),
            ));
        }
    }
    if let Some((block, id)) = turns
        .first()
        .and_then(|t| ids_of(t, "tool_result", "tool_use_id").into_iter().next())
    {
        let at = format!("messages.0.content.{block}");
        return Err(refuse(
            Some(&at),
            format!(
                "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ),
        ));
    }
    Ok(())
}

/// One turn as Umi's messages: a user turn's text and tool results in their order, an
/// assistant turn's text and calls as one message.
fn messages_of(index: usize, mut turn: Value) -> Result<Vec<Message>, RequestError> {
    let blocks = take_blocks(&mut turn);
    let role = turn.get("role").and_then(Value::as_str).unwrap_or("");
    match role {
        "user" => Ok(blocks.into_iter().filter_map(user_message).collect()),
        "assistant" => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for mut block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => text.push_str(&take_text(&mut block, "text")),
                    Some("tool_use") => calls.push(ToolCall::new(
                        take_text(&mut block, "id"),
                        take_text(&mut block, "name"),
                        block
                            .get_mut("input")
                            .map_or_else(|| Value::Object(Map::new()), Value::take),
                    )),
                    _ => {}
                }
            }
            Ok(vec![Message::assistant_tool_calls(text, calls)])
        }
        // Seen live in many agent threads (e.g. an issue quoting
        // `req_011CXSyUgR4EhfV8dKsJ6Gzt`).
        "system" => Err(refuse(
            Some("messages"),
            "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.",
        )),
        other => Err(refuse(
            Some(&format!("messages.{index}.role")),
            format!("messages.{index}.role: Input should be 'user' or 'assistant', got {other:?}"),
        )),
    }
}

/// A user turn's block as a message: its text, or a tool result's content (a string,
/// or its text blocks joined) with the call it answers; other blocks are not messages.
fn user_message(mut block: Value) -> Option<Message> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Some(Message::user(take_text(&mut block, "text"))),
        Some("tool_result") => {
            let succeeded = !block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let content = match block.get_mut("content").map(Value::take) {
                Some(Value::String(text)) => text,
                Some(other) => text_of(&other),
                None => String::new(),
            };
            Some(Message::tool_result(
                take_text(&mut block, "tool_use_id"),
                content,
                succeeded,
            ))
        }
        _ => None,
    }
}

fn tools(body: &Map<String, Value>) -> Result<Vec<ToolDefinition>, RequestError> {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    tools
        .enumerate()
        .map(|(index, tool)| {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| required(&format!("tools.{index}.name")))?;
            let schema = tool
                .get("input_schema")
                .cloned()
                .ok_or_else(|| required(&format!("tools.{index}.input_schema")))?;
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(ToolDefinition::new(name, description, schema))
        })
        .collect()
}

/// `tool_choice` (`auto`, `any`, `tool` with a name, `none`) and
/// `disable_parallel_tool_use`.
fn tool_choice(body: &Map<String, Value>) -> (Option<ToolChoice>, Option<bool>) {
    let Some(choice) = body.get("tool_choice") else {
        return (None, None);
    };
    let kind = match choice.get("type").and_then(Value::as_str) {
        Some("any") => Some(ToolChoice::Required),
        Some("none") => Some(ToolChoice::None),
        Some("tool") => choice
            .get("name")
            .and_then(Value::as_str)
            .map(|name| ToolChoice::Tool(name.to_owned())),
        _ => Some(ToolChoice::Auto),
    };
    let parallel = choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        .map(|disabled| !disabled);
    (kind, parallel)
}

/// Whether the request enables thinking, refusing a budget the answer cannot hold
/// (ProfSynapse/nexus #17, live).
fn thinking(body: &Map<String, Value>, max_tokens: u64) -> Result<bool, RequestError> {
    let Some(thinking) = body.get("thinking") else {
        return Ok(false);
    };
    match thinking.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            let budget = thinking
                .get("budget_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if budget >= max_tokens {
                return Err(refuse(
                    Some("max_tokens"),
                    "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
                ));
            }
            Ok(true)
        }
        Some("adaptive") => Ok(true),
        _ => Ok(false),
    }
}
