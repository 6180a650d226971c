//! A chat-completions request parsed as the servers parse it: `content` as a string or
//! as an array of parts, `max_tokens` or `max_completion_tokens`, `stream_options`,
//! `tool_choice`, `parallel_tool_calls`, `response_format`, `n`, `seed`; unknown fields
//! ignored (vLLM logs and ignores them, Ollama and llama.cpp drop them). A malformed
//! request is refused with a message naming the field at fault, as OpenAI does (`param`).

use serde_json::{Value, json};
use umi_core::llm::{
    CompletionRequest, Message, OutputSchema, ToolCall, ToolChoice, ToolDefinition,
};

use crate::network::format::{Parsed, RequestError};
use crate::network::profile::Profile;
use umi_core::llm::structured::strict::strict_violation;

fn refuse(param: impl Into<String>, message: impl Into<String>) -> RequestError {
    RequestError {
        param: Some(param.into()),
        message: message.into(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The text of a message's `content`: a string, an array of parts (the text parts,
/// joined; images and audio are accepted and carry no text a simulated model reads), or
/// `null`. A string is moved out of the parsed body, not copied: nothing reads a
/// message's `content` again (a long conversation's text is most of a request's bytes).
fn content(value: Option<&mut Value>, path: &str) -> Result<String, RequestError> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(std::mem::take(text)),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (index, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).ok_or_else(|| {
                    refuse(
                        format!("{path}[{index}].type"),
                        format!("Missing required parameter: '{path}[{index}].type'."),
                    )
                })?;
                match kind {
                    "text" => {
                        let piece = part.get("text").and_then(Value::as_str).ok_or_else(|| {
                            refuse(
                                format!("{path}[{index}].text"),
                                format!("Missing required parameter: '{path}[{index}].text'."),
                            )
                        })?;
                        text.push_str(piece);
                    }
                    "image_url" | "input_audio" | "file" | "refusal" => {}
                    other => {
                        return Err(refuse(
                            format!("{path}[{index}].type"),
                            format!(
                                "Invalid value: '{other}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', and 'file'."
                            ),
                        ));
                    }
                }
            }
            Ok(text)
        }
        Some(other) => Err(refuse(
            path,
            format!(
                "Invalid type for '{path}': expected one of a string or array of objects, but got {} instead.",
                type_name(other)
            ),
        )),
    }
}

fn tool_calls(message: &Value, path: &str) -> Result<Vec<ToolCall>, RequestError> {
    let Some(calls) = message.get("tool_calls") else {
        return Ok(Vec::new());
    };
    let calls = calls.as_array().ok_or_else(|| {
        refuse(
            format!("{path}.tool_calls"),
            format!("Invalid type for '{path}.tool_calls': expected an array."),
        )
    })?;
    let mut out = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let at = format!("{path}.tool_calls[{index}]");
        let function = call.get("function").ok_or_else(|| {
            refuse(
                format!("{at}.function"),
                format!("Missing required parameter: '{at}.function'."),
            )
        })?;
        let name = function.get("name").and_then(Value::as_str).unwrap_or("");
        // A server keeps the arguments as the text it was given; a simulated model reads
        // them as JSON when they are.
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
            Some(other) => other.clone(),
            None => json!({}),
        };
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        out.push(ToolCall::new(id, name, arguments));
    }
    Ok(out)
}

fn message(value: &mut Value, index: usize) -> Result<Message, RequestError> {
    let path = format!("messages[{index}]");
    // Moved out, not copied (see `content`); the role is checked first, as before.
    let mut taken = value.get_mut("content").map(Value::take);
    let role = value.get("role").and_then(Value::as_str).ok_or_else(|| {
        refuse(
            format!("{path}.role"),
            format!("Missing required parameter: '{path}.role'."),
        )
    })?;
    let text = content(taken.as_mut(), &format!("{path}.content"))?;
    Ok(match role {
        "system" | "developer" => Message::system(text),
        "user" => Message::user(text),
        "assistant" => Message::assistant_tool_calls(text, tool_calls(value, &path)?),
        "tool" => {
            let id = value
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    refuse(
                        format!("{path}.tool_call_id"),
                        format!("Missing required parameter: '{path}.tool_call_id'."),
                    )
                })?;
            Message::tool_result(id, text, true)
        }
        other => {
            return Err(refuse(
                format!("{path}.role"),
                format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."
                ),
            ));
        }
    })
}

fn tools(value: &Value) -> Result<Vec<ToolDefinition>, RequestError> {
    let Some(tools) = value.get("tools").filter(|t| !t.is_null()) else {
        return Ok(Vec::new());
    };
    let tools = tools
        .as_array()
        .ok_or_else(|| refuse("tools", "Invalid type for 'tools': expected an array."))?;
    let mut out = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let function = tool.get("function").ok_or_else(|| {
            refuse(
                format!("tools[{index}].function"),
                format!("Missing required parameter: 'tools[{index}].function'."),
            )
        })?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                refuse(
                    format!("tools[{index}].function.name"),
                    format!("Missing required parameter: 'tools[{index}].function.name'."),
                )
            })?;
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let parameters = function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        out.push(ToolDefinition::new(name, description, parameters));
    }
    Ok(out)
}

fn tool_choice(value: &Value) -> Result<Option<ToolChoice>, RequestError> {
    match value.get("tool_choice") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(mode)) => match mode.as_str() {
            "auto" => Ok(Some(ToolChoice::Auto)),
            "none" => Ok(Some(ToolChoice::None)),
            "required" => Ok(Some(ToolChoice::Required)),
            other => Err(refuse(
                "tool_choice",
                format!(
                    "Invalid value: '{other}'. Supported values are: 'none', 'auto', and 'required'."
                ),
            )),
        },
        Some(object @ Value::Object(_)) => object
            .pointer("/function/name")
            .and_then(Value::as_str)
            .map(|name| Some(ToolChoice::Tool(name.to_owned())))
            .ok_or_else(|| {
                refuse(
                    "tool_choice.function.name",
                    "Missing required parameter: 'tool_choice.function.name'.",
                )
            }),
        Some(other) => Err(refuse(
            "tool_choice",
            format!(
                "Invalid type for 'tool_choice': expected a string or an object, but got {} instead.",
                type_name(other)
            ),
        )),
    }
}

fn positive_u32(value: &Value, key: &str) -> Result<Option<u32>, RequestError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(number) => number
            .as_u64()
            .filter(|n| *n >= 1)
            .map(|n| Some(u32::try_from(n).unwrap_or(u32::MAX)))
            .ok_or_else(|| {
                refuse(
                    key,
                    format!("Invalid '{key}': expected an integer of at least 1, but got {number} instead."),
                )
            }),
    }
}

/// `response_format.json_schema` as OpenAI takes it: `name`, `schema`, `strict`.
fn output_schema(value: &Value) -> Result<OutputSchema, RequestError> {
    let spec = value.pointer("/response_format/json_schema");
    let schema = spec.and_then(|s| s.get("schema")).cloned().ok_or_else(|| {
        refuse(
            "response_format.json_schema.schema",
            "Missing required parameter: 'response_format.json_schema.schema'.",
        )
    })?;
    let text = |key: &str| spec.and_then(|s| s.get(key));
    let output = OutputSchema {
        name: text("name")
            .and_then(Value::as_str)
            .unwrap_or("response")
            .to_owned(),
        schema,
        strict: text("strict").and_then(Value::as_bool).unwrap_or(false),
    };
    // Strict mode takes only closed schemas with every property required; OpenAI's
    // `param` is `response_format` and its `code` null (dottxt-ai/outlines #844).
    if output.strict
        && let Some(violation) = strict_violation(&output.schema)
    {
        return Err(refuse(
            "response_format",
            violation.openai_message(&output.name),
        ));
    }
    Ok(output)
}

/// Parses `body` as `profile`'s server does.
pub(crate) fn parse(body: &[u8], profile: Profile) -> Result<Parsed, RequestError> {
    let mut value = body_object(body)?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let messages = messages_of(&mut value)?;
    let mut request = CompletionRequest::new(Vec::with_capacity(messages.len()));
    request.model = model;
    for (index, item) in messages.iter_mut().enumerate() {
        request.messages.push(message(item, index)?);
    }
    request.tools = tools(&value)?;
    request.tool_choice = tool_choice(&value)?;
    request.parallel_tool_calls = value.get("parallel_tool_calls").and_then(Value::as_bool);
    request.max_tokens = match positive_u32(&value, "max_completion_tokens")? {
        Some(n) => Some(n),
        None => positive_u32(&value, "max_tokens")?,
    };
    request.temperature = temperature(&value)?;
    request.stop = stop(&value)?;
    request.seed = value.get("seed").and_then(Value::as_u64);
    response_format(&value, &mut request)?;
    one_choice(&value)?;
    profile_tools(profile, &mut request)?;
    let (stream, include_usage) = stream_options(&value, profile);
    Ok(Parsed {
        request,
        stream,
        include_usage,
        reasoning_requested: true,
    })
}

/// The body as a JSON object, or the API's refusal of what it is instead.
fn body_object(body: &[u8]) -> Result<Value, RequestError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| RequestError {
        param: None,
        message: format!("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. {error})"),
    })?;
    if !value.is_object() {
        return Err(RequestError {
            param: None,
            message: format!(
                "The request body must be a JSON object, not {}.",
                type_name(&value)
            ),
        });
    }
    Ok(value)
}

/// The `messages` array: present, an array, not empty.
fn messages_of(value: &mut Value) -> Result<&mut Vec<Value>, RequestError> {
    match value.get_mut("messages") {
        None | Some(Value::Null) => Err(refuse(
            "messages",
            "Missing required parameter: 'messages'.",
        )),
        Some(Value::Array(messages)) if messages.is_empty() => Err(refuse(
            "messages",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        )),
        Some(Value::Array(messages)) => Ok(messages),
        Some(other) => Err(refuse(
            "messages",
            format!(
                "Invalid type for 'messages': expected an array, but got {} instead.",
                type_name(other)
            ),
        )),
    }
}

/// `temperature`, in [0, 2] when present.
fn temperature(value: &Value) -> Result<Option<f32>, RequestError> {
    let Some(number) = value.get("temperature").filter(|t| !t.is_null()) else {
        return Ok(None);
    };
    match number.as_f64().filter(|t| (0.0..=2.0).contains(t)) {
        Some(temperature) => Ok(Some(temperature as f32)),
        None => Err(refuse(
            "temperature",
            format!(
                "Invalid 'temperature': expected a number between 0 and 2, but got {number} instead."
            ),
        )),
    }
}

/// `stop`: a string or an array of strings.
fn stop(value: &Value) -> Result<Vec<String>, RequestError> {
    Ok(match value.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(stop)) => vec![stop.clone()],
        Some(Value::Array(stops)) => stops
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(other) => {
            return Err(refuse(
                "stop",
                format!(
                    "Invalid type for 'stop': expected a string or an array of strings, but got {} instead.",
                    type_name(other)
                ),
            ));
        }
    })
}

/// `response_format`: text, a JSON object, or a JSON schema.
fn response_format(value: &Value, request: &mut CompletionRequest) -> Result<(), RequestError> {
    match value
        .pointer("/response_format/type")
        .and_then(Value::as_str)
    {
        None | Some("text") => {}
        Some("json_object") => request.json_output = true,
        Some("json_schema") => request.output_schema = Some(output_schema(value)?),
        Some(other) => {
            return Err(refuse(
                "response_format.type",
                format!(
                    "Invalid value: '{other}'. Supported values are: 'text', 'json_object', and 'json_schema'."
                ),
            ));
        }
    }
    Ok(())
}

/// `n`: one choice per request.
fn one_choice(value: &Value) -> Result<(), RequestError> {
    if let Some(n) = value.get("n").filter(|n| !n.is_null())
        && n.as_u64() != Some(1)
    {
        // Several choices are a real feature of these servers, which this simulator
        // does not serve: refused by name rather than answered with one choice.
        return Err(refuse(
            "n",
            format!(
                "Invalid 'n': {n}. This simulated server answers one choice per request (n = 1)."
            ),
        ));
    }
    Ok(())
}

/// What `profile`'s server makes of the request's tools.
fn profile_tools(profile: Profile, request: &mut CompletionRequest) -> Result<(), RequestError> {
    if profile
        .chat_shapes()
        .is_some_and(|shapes| shapes.tools_need_choice)
    {
        match request.tool_choice {
            // TGI 2.0 ignores `tools` unless `tool_choice` is given.
            None => request.tools.clear(),
            // ...and then answers through a grammar in a shape of its own (`tool_calls`
            // an object, `name` null), which this simulator does not serve: refused by
            // name rather than answered in another server's shape.
            Some(_) => {
                return Err(refuse(
                    "tool_choice",
                    "This simulated TGI 2.0 server does not serve grammar tool calls.",
                ));
            }
        }
    }
    Ok(())
}

/// Whether the answer streams, and whether the stream reports usage.
fn stream_options(value: &Value, profile: Profile) -> (bool, bool) {
    let stream = value
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let options = value.get("stream_options").filter(|o| o.is_object());
    // vLLM's `StreamOptions.include_usage` defaults to true once `stream_options` is
    // present (VLLM protocol.py @0052bed3); everyone else wants it said.
    let usage_default = profile == Profile::Vllm && options.is_some();
    let include_usage = options
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(usage_default);
    (stream, include_usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_json(value: &Value) -> Result<Parsed, RequestError> {
        parse(value.to_string().as_bytes(), Profile::OpenAi)
    }

    #[test]
    fn content_parts_and_options_are_read() {
        let parsed = parse_json(&json!({
            "model": "gpt-sim",
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hello, "}, {"type": "image_url", "image_url": {"url": "data:,"}}, {"type": "text", "text": "world"}]},
            ],
            "max_completion_tokens": 64,
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": false,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
            "n": 1,
            "seed": 7,
            "some_future_field": {"anything": true},
        }))
        .unwrap();
        // A string content is moved out of the parsed body (issue 41): the same text.
        assert_eq!(parsed.request.messages[0].text(), "Be brief.");
        assert_eq!(parsed.request.messages[1].text(), "Hello, world");
        assert_eq!(parsed.request.max_tokens, Some(64));
        assert!(parsed.stream && parsed.include_usage);
        assert_eq!(
            parsed.request.tool_choice,
            Some(ToolChoice::Tool("get_weather".into()))
        );
        assert_eq!(parsed.request.parallel_tool_calls, Some(false));
        let output = parsed.request.output_schema.as_ref().unwrap();
        assert_eq!((output.name.as_str(), &output.schema), ("x", &json!({})));
        assert_eq!(parsed.request.seed, Some(7));
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let cases = [
            (json!({"model": "m"}), "messages"),
            (json!({"messages": []}), "messages"),
            (json!({"messages": [{"content": "hi"}]}), "messages[0].role"),
            (
                json!({"messages": [{"role": "user", "content": 7}]}),
                "messages[0].content",
            ),
            (
                json!({"messages": [{"role": "tool", "content": "x"}]}),
                "messages[0].tool_call_id",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}),
                "max_tokens",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"}),
                "tool_choice",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "n": 3}),
                "n",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]}),
                "tools[0].function.name",
            ),
        ];
        for (body, field) in cases {
            let error = parse_json(&body).unwrap_err();
            assert_eq!(error.param.as_deref(), Some(field), "{body}: {error:?}");
            assert!(!error.message.is_empty());
        }
        assert!(
            parse(b"{not json", Profile::OpenAi)
                .unwrap_err()
                .param
                .is_none()
        );
    }

    #[test]
    fn vllm_turns_usage_on_with_empty_stream_options() {
        let body = json!({"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": {}});
        let bytes = body.to_string();
        assert!(
            parse(bytes.as_bytes(), Profile::Vllm)
                .unwrap()
                .include_usage
        );
        assert!(
            !parse(bytes.as_bytes(), Profile::OpenAi)
                .unwrap()
                .include_usage
        );
    }
}
