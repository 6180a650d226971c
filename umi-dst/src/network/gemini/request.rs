//! A `GenerateContentRequest` read as the Gemini API reads it: the model and the method
//! from the path ([`super::route_of_url`]), `contents` (turns of role `user` or `model`
//! whose parts are text, function calls and function responses), `systemInstruction`,
//! `tools[].functionDeclarations`, `toolConfig` and `generationConfig`, in the proto's
//! camelCase or snake_case spellings. Refusals carry the API's words, each from a
//! capture (beside each); a field the request proto does not have is refused as the JSON
//! parser of Google's front end refuses it.

use serde_json::{Map, Value};
use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{
    CompletionRequest, Message, OutputSchema, ToolCall, ToolChoice, ToolDefinition,
};

use crate::network::format::{Parsed, RequestError};

/// The request's top-level fields (GEMINI-REST `models.generateContent` request body),
/// in both spellings the JSON mapping of a proto accepts.
const FIELDS: [&str; 16] = [
    "contents",
    "model",
    "systemInstruction",
    "system_instruction",
    "tools",
    "toolConfig",
    "tool_config",
    "generationConfig",
    "generation_config",
    "safetySettings",
    "safety_settings",
    "cachedContent",
    "cached_content",
    "labels",
    "generateContentRequest",
    "generate_content_request",
];

fn refuse(param: &str, message: impl Into<String>) -> RequestError {
    RequestError {
        param: Some(param.to_owned()),
        message: message.into(),
    }
}

/// A field-violation line: `* GenerateContentRequest.<field>: <what>` (the form of
/// every field error the API returns, e.g. `* GenerateContentRequest.contents: contents
/// is not specified`).
fn violation(field: &str, what: &str) -> RequestError {
    refuse(field, format!("* GenerateContentRequest.{field}: {what}\n"))
}

/// `body[camel]`, or `body[snake]`.
fn field<'a>(body: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    body.get(camel).or_else(|| body.get(snake))
}

/// Reads `http` as the Gemini API does.
pub(crate) fn parse(http: &HttpRequest) -> Result<Parsed, RequestError> {
    let Some(route) = super::route_of_url(&http.url) else {
        return Err(refuse("path", "Requested entity was not found."));
    };
    let value: Value = serde_json::from_slice(&http.body).map_err(|error| {
        refuse(
            "body",
            format!("Invalid JSON payload received. Unexpected token.\n{error}"),
        )
    })?;
    let Some(body) = value.as_object() else {
        return Err(refuse(
            "body",
            "Invalid JSON payload received. Expected an object.",
        ));
    };
    if let Some(unknown) = body.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        // The front end's words for a field the proto lacks (many agent threads quote
        // `Invalid JSON payload received. Unknown name "…": Cannot find field.`).
        return Err(refuse(
            unknown,
            format!(
                "Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."
            ),
        ));
    }
    let mut request = CompletionRequest::new(Vec::new());
    request.model = route.model.clone().unwrap_or_default();
    if let Some(system) = field(body, "systemInstruction", "system_instruction") {
        let text = parts_text(
            system
                .get("parts")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice),
        );
        if !text.is_empty() {
            request.messages.push(Message::system(text));
        }
    }
    let contents = body.get("contents").and_then(Value::as_array);
    let contents = contents
        .filter(|c| !c.is_empty())
        .ok_or_else(|| violation("contents", "contents is not specified"))?;
    request.messages.extend(conversation(contents)?);
    request.tools = tools(body)?;
    request.tool_choice = tool_choice(body);
    let reasoning_requested = apply_generation_config(body, &mut request);
    Ok(Parsed {
        request,
        stream: route.stream.unwrap_or(false),
        include_usage: true,
        reasoning_requested,
    })
}

/// The text of `parts`, joined (a turn's parts are read in place, not copied into an
/// array of their own first: a long conversation's texts were copied once more per turn).
fn parts_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|part| !is_thought(part))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

fn is_thought(part: &Value) -> bool {
    part.get("thought").and_then(Value::as_bool) == Some(true)
}

/// The data fields a part may carry (GEMINI-REST `Part`: the `data` oneof).
const PART_DATA: [&str; 12] = [
    "text",
    "inlineData",
    "inline_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "fileData",
    "file_data",
    "executableCode",
    "codeExecutionResult",
    "thoughtSignature",
];

/// The turns of `contents` as Umi's messages, with the API's checks on each turn and on
/// the pairing of function calls with their responses.
fn conversation(contents: &[Value]) -> Result<Vec<Message>, RequestError> {
    let mut messages = Vec::new();
    let mut call_number = 0usize;
    // The calls of the last model turn not answered yet, by name, with their ids.
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut previous_calls = 0usize;
    for (index, turn) in contents.iter().enumerate() {
        let parts = checked_parts(index, turn)?;
        let role = turn.get("role").and_then(Value::as_str).unwrap_or("user");
        let calls = count(parts, &["functionCall", "function_call"]);
        let responses = count(parts, &["functionResponse", "function_response"]);
        check_turn_order(index, role, calls, responses, previous_calls)?;
        match role {
            "user" => {
                user_turn(parts, &mut open_calls, &mut messages);
            }
            "model" => {
                let message = model_turn(parts, &mut call_number);
                if let Message::Assistant { tool_calls, .. } = &message {
                    open_calls = tool_calls
                        .iter()
                        .map(|c| (c.name.clone(), c.id.clone()))
                        .collect();
                }
                messages.push(message);
            }
            // Words quoted in agent threads for a turn of another role.
            _ => {
                return Err(refuse(
                    &format!("contents[{index}].role"),
                    "Please use a valid role: user, model.",
                ));
            }
        }
        previous_calls = calls;
    }
    Ok(messages)
}

/// Turn `index`'s parts, refusing an empty list or a part with no data (the API's words,
/// quoted in agent threads: `contents.parts must not be empty`, `required oneof field
/// 'data' must have one initialized field`).
fn checked_parts(index: usize, turn: &Value) -> Result<&[Value], RequestError> {
    let parts = turn.get("parts").and_then(Value::as_array);
    let parts = parts.filter(|p| !p.is_empty()).ok_or_else(|| {
        violation(
            &format!("contents[{index}].parts"),
            "contents.parts must not be empty.",
        )
    })?;
    for (at, part) in parts.iter().enumerate() {
        if !PART_DATA.iter().any(|key| part.get(*key).is_some()) {
            return Err(violation(
                &format!("contents[{index}].parts[{at}].data"),
                "required oneof field 'data' must have one initialized field",
            ));
        }
    }
    Ok(parts)
}

fn count(parts: &[Value], keys: &[&str]) -> usize {
    parts
        .iter()
        .filter(|part| keys.iter().any(|key| part.get(*key).is_some()))
        .count()
}

/// The API's rules on function turns (words quoted in agent threads and client tests):
/// a call turn follows a user turn or a response turn; a response turn follows a call
/// turn and answers every call of it.
fn check_turn_order(
    index: usize,
    role: &str,
    calls: usize,
    responses: usize,
    previous_calls: usize,
) -> Result<(), RequestError> {
    let at = format!("contents[{index}]");
    if role == "model" && calls > 0 && index == 0 {
        return Err(refuse(
            &at,
            "Please ensure that function call turns come immediately after a user turn or after a function response turn.",
        ));
    }
    if responses > 0 {
        if previous_calls == 0 {
            return Err(refuse(
                &at,
                "Please ensure that function response turn comes immediately after a function call turn.",
            ));
        }
        if responses != previous_calls {
            return Err(refuse(
                &at,
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
            ));
        }
    }
    Ok(())
}

/// A user turn: its text, and each function response as the result of the open call of
/// that name (or of its `id`, when the client sent one).
fn user_turn(parts: &[Value], open_calls: &mut Vec<(String, String)>, out: &mut Vec<Message>) {
    let text = parts_text(parts);
    for part in parts {
        let Some(response) = part
            .get("functionResponse")
            .or_else(|| part.get("function_response"))
        else {
            continue;
        };
        let name = response.get("name").and_then(Value::as_str).unwrap_or("");
        let by_id = response.get("id").and_then(Value::as_str);
        let at = open_calls
            .iter()
            .position(|(n, id)| by_id.map_or(n == name, |want| id == want));
        let id = match at {
            Some(at) => open_calls.remove(at).1,
            None => by_id.unwrap_or(name).to_owned(),
        };
        let (content, success) = result_text(response.get("response"));
        out.push(Message::tool_result(id, content, success));
    }
    if !text.is_empty() {
        out.push(Message::user(text));
    }
}

/// A function response's content: a lone `result`, `output` or `content` string as it
/// is, an `error` as a failure, anything else as its JSON text.
fn result_text(response: Option<&Value>) -> (String, bool) {
    let Some(response) = response else {
        return (String::new(), true);
    };
    if let Some(object) = response.as_object()
        && object.len() == 1
    {
        for (key, success) in [
            ("result", true),
            ("output", true),
            ("content", true),
            ("error", false),
        ] {
            if let Some(text) = object.get(key).and_then(Value::as_str) {
                return (text.to_owned(), success);
            }
        }
    }
    (umi_core::canonical_json::to_string(response), true)
}

/// A model turn: its text (thoughts aside) and its calls, numbered `call_<n>` across
/// the conversation unless the client sent ids.
fn model_turn(parts: &[Value], call_number: &mut usize) -> Message {
    let text = parts_text(parts);
    let mut calls = Vec::new();
    for part in parts {
        let Some(call) = part
            .get("functionCall")
            .or_else(|| part.get("function_call"))
        else {
            continue;
        };
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{call_number}"), str::to_owned);
        *call_number += 1;
        let args = call
            .get("args")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        calls.push(ToolCall::new(id, name, args));
    }
    Message::assistant_tool_calls(text, calls)
}

/// `tools[].functionDeclarations` as tool definitions; a declaration without a name is
/// refused (`Name cannot be empty.`, quoted in agent threads).
fn tools(body: &Map<String, Value>) -> Result<Vec<ToolDefinition>, RequestError> {
    let mut out = Vec::new();
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (index, tool) in tools.enumerate() {
        let declarations = tool
            .get("functionDeclarations")
            .or_else(|| tool.get("function_declarations"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (at, declaration) in declarations.enumerate() {
            let name = declaration
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                return Err(violation(
                    &format!("tools[{index}].function_declarations[{at}].name"),
                    "Name cannot be empty.",
                ));
            }
            let description = declaration
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let schema = declaration
                .get("parametersJsonSchema")
                .or_else(|| declaration.get("parameters_json_schema"))
                .cloned()
                .or_else(|| declaration.get("parameters").map(json_schema))
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            out.push(ToolDefinition::new(name, description, schema));
        }
    }
    Ok(out)
}

/// A Gemini `Schema` (an OpenAPI subset: `type` in capitals, `nullable`,
/// `propertyOrdering`) as the JSON Schema it means.
pub(crate) fn json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, value) in fields {
                match key.as_str() {
                    "type" => {
                        let name = value.as_str().unwrap_or("").to_ascii_lowercase();
                        out.insert(key.clone(), Value::String(name));
                    }
                    "nullable" | "propertyOrdering" | "property_ordering" => {}
                    "properties" => {
                        let properties = value
                            .as_object()
                            .map(|p| p.iter().map(|(k, v)| (k.clone(), json_schema(v))).collect())
                            .unwrap_or_default();
                        out.insert(key.clone(), Value::Object(properties));
                    }
                    _ => {
                        out.insert(key.clone(), json_schema(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
        other => other.clone(),
    }
}

/// `toolConfig.functionCallingConfig`: `mode` (`AUTO`, `ANY`, `NONE`, `VALIDATED`) and
/// `allowedFunctionNames` (GEMINI-REST `FunctionCallingConfig`).
fn tool_choice(body: &Map<String, Value>) -> Option<ToolChoice> {
    let config = field(body, "toolConfig", "tool_config")?;
    let calling = config
        .get("functionCallingConfig")
        .or_else(|| config.get("function_calling_config"))?;
    let allowed: Vec<&str> = calling
        .get("allowedFunctionNames")
        .or_else(|| calling.get("allowed_function_names"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match calling.get("mode").and_then(Value::as_str) {
        Some("ANY") if allowed.len() == 1 => Some(ToolChoice::Tool(allowed[0].to_owned())),
        Some("ANY") => Some(ToolChoice::Required),
        Some("NONE") => Some(ToolChoice::None),
        Some(_) => Some(ToolChoice::Auto),
        None => None,
    }
}

/// `generationConfig` (GEMINI-REST `GenerationConfig`): `maxOutputTokens`,
/// `temperature`, `stopSequences`, `seed`, `responseMimeType` with `responseSchema` or
/// `responseJsonSchema`; returns whether `thinkingConfig.includeThoughts` asks to see
/// the thoughts.
fn apply_generation_config(body: &Map<String, Value>, request: &mut CompletionRequest) -> bool {
    let Some(Value::Object(config)) = field(body, "generationConfig", "generation_config") else {
        return false;
    };
    let get = |camel: &str, snake: &str| field(config, camel, snake);
    request.max_tokens = get("maxOutputTokens", "max_output_tokens")
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    request.temperature = get("temperature", "temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    request.stop = get("stopSequences", "stop_sequences")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    request.seed = get("seed", "seed").and_then(Value::as_u64);
    let json_mime = get("responseMimeType", "response_mime_type").and_then(Value::as_str)
        == Some("application/json");
    let schema = get("responseJsonSchema", "response_json_schema")
        .cloned()
        .or_else(|| get("responseSchema", "response_schema").map(json_schema));
    match schema {
        Some(schema) => {
            request.output_schema = Some(OutputSchema {
                name: "response".to_owned(),
                schema,
                strict: true,
            });
        }
        None => request.json_output = json_mime,
    }
    get("thinkingConfig", "thinking_config")
        .and_then(|thinking| {
            thinking
                .get("includeThoughts")
                .or_else(|| thinking.get("include_thoughts"))
        })
        .and_then(Value::as_bool)
        .unwrap_or(false)
}
