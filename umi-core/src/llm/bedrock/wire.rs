//! The Converse API on the wire: the request body out, a whole `ConverseResponse` in,
//! and an exception (whole or in the stream) into the error it stands for. Every field
//! is the Bedrock Runtime API reference's (docs.aws.amazon.com/bedrock/latest/
//! APIReference: `API_runtime_Converse`, `Message`, `ContentBlock`, `ToolUseBlock`,
//! `ToolResultBlock`, `SystemContentBlock`, `InferenceConfiguration`, `ToolConfiguration`,
//! `ToolChoice`, `OutputConfig`/`OutputFormat`, `TokenUsage`, `ConverseMetrics`), cited
//! below as BEDROCK-API.
//!
//! | neutral | request |
//! | --- | --- |
//! | system messages | `system: [{text}]`, one block each |
//! | user message | a `user` message's `{text}` block |
//! | assistant message | an `assistant` message: `{text}` (when not empty), then `{toolUse: {toolUseId, name, input}}` per call |
//! | tool result | `{toolResult: {toolUseId, content: [{text}], status: "success" or "error"}}` in a `user` message; consecutive user-side blocks share one message (the API alternates roles) |
//! | tools | `toolConfig.tools[].toolSpec {name, description, inputSchema: {json}}` |
//! | tool choice | `toolConfig.toolChoice`: `{auto: {}}`, `{any: {}}`, `{tool: {name}}`; `none` has no counterpart: tools are sent with `auto` |
//! | sampling, limits | `inferenceConfig {maxTokens, temperature, stopSequences}` |
//! | structured output | `outputConfig.textFormat {type: "json_schema", structure: {jsonSchema: {schema (a JSON string), name}}}` (BEDROCK-API `OutputFormat`; docs "Get validated JSON results from models") |
//!
//! `seed` and `parallel_tool_calls` have no counterpart and are not sent.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::constants::TOOL_CALLS_PER_RESPONSE_MAX;
use crate::llm::error::{LlmError, snippet};
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;

/// The JSON body of a `Converse` or `ConverseStream` request (the same for both: the
/// path says which).
pub fn request_body(request: &CompletionRequest) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content } => system.push(json!({"text": content})),
            Message::User { content } => {
                push_blocks(&mut messages, "user", vec![json!({"text": content})]);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => push_blocks(
                &mut messages,
                "assistant",
                assistant_blocks(content, tool_calls),
            ),
            Message::Tool {
                tool_call_id,
                content,
                success,
            } => {
                let status = if *success { "success" } else { "error" };
                let result = json!({"toolResult": {
                    "toolUseId": tool_call_id,
                    "content": [{"text": content}],
                    "status": status,
                }});
                push_blocks(&mut messages, "user", vec![result]);
            }
        }
    }
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let config = inference_config(request);
    if !config.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(config));
    }
    if !request.tools.is_empty() {
        body.insert("toolConfig".into(), tool_config(request));
    }
    if let Some(output) = &request.output_schema {
        let schema = crate::canonical_json::to_string(&output.schema);
        body.insert(
            "outputConfig".into(),
            json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": schema, "name": output.name}}}}),
        );
    }
    Value::Object(body)
}

/// Appends `blocks` to the last message when its role is `role`, else as a new message.
fn push_blocks(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    messages.push(json!({"role": role, "content": blocks}));
}

/// An assistant turn's blocks: its text, then its calls.
fn assistant_blocks(content: &str, tool_calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !content.is_empty() {
        blocks.push(json!({"text": content}));
    }
    for call in tool_calls {
        blocks.push(
            json!({"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}}),
        );
    }
    blocks
}

/// `inferenceConfig` (BEDROCK-API `InferenceConfiguration`): only what the request sets.
fn inference_config(request: &CompletionRequest) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(max_tokens) = request.max_tokens {
        config.insert("maxTokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        config.insert("temperature".into(), json!(temperature));
    }
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        config.insert("stopSequences".into(), json!(stops));
    }
    config
}

/// `toolConfig` (BEDROCK-API `ToolConfiguration`, `ToolSpecification`, `ToolChoice`).
fn tool_config(request: &CompletionRequest) -> Value {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({"toolSpec": {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": {"json": tool.parameters},
            }})
        })
        .collect();
    let mut config = json!({"tools": tools});
    let choice = match &request.tool_choice {
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::None) | None => None,
    };
    if let Some(choice) = choice {
        config["toolChoice"] = choice;
    }
    config
}

/// A `stopReason` (BEDROCK-API `ConverseResponse.stopReason`: `end_turn`, `tool_use`,
/// `max_tokens`, `stop_sequence`, `guardrail_intervened`, `content_filtered`,
/// `malformed_model_output`, `malformed_tool_use`, `model_context_window_exceeded`).
pub fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "guardrail_intervened" | "content_filtered" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// BEDROCK-API `TokenUsage`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: u32,
    #[serde(default)]
    output_tokens: u32,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
    #[serde(default)]
    cache_write_input_tokens: Option<u32>,
}

impl WireUsage {
    pub(super) fn usage(self) -> TokenUsage {
        let mut usage = TokenUsage::new(self.input_tokens, self.output_tokens);
        usage.cached_prompt_tokens = self.cache_read_input_tokens;
        usage.cache_write_tokens = self.cache_write_input_tokens;
        usage
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    output: WireOutput,
    stop_reason: String,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireOutput {
    message: WireMessage,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<Value>,
}

fn invalid(reason: impl Into<String>, body: &str) -> LlmError {
    LlmError::InvalidResponse {
        reason: reason.into(),
        snippet: snippet(body),
    }
}

/// A whole `ConverseResponse` body.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let wire: WireResponse = serde_json::from_str(body)
        .map_err(|error| invalid(format!("not a Converse response: {error}"), body))?;
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    for block in wire.output.message.content {
        if let Some(part) = block.get("text").and_then(Value::as_str) {
            text.push_str(part);
        } else if let Some(use_) = block.get("toolUse") {
            if tool_calls.len() >= TOOL_CALLS_PER_RESPONSE_MAX {
                return Err(invalid("more tool calls than the limit", body));
            }
            tool_calls.push(tool_call(use_, body)?);
        } else if let Some(part) = block
            .pointer("/reasoningContent/reasoningText/text")
            .and_then(Value::as_str)
        {
            reasoning.push_str(part);
        }
    }
    Ok(CompletionResponse {
        text,
        tool_calls,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        finish_reason: stop_reason(&wire.stop_reason),
        usage: wire.usage.map(WireUsage::usage),
        model: model.to_owned(),
    })
}

/// A `toolUse` block (BEDROCK-API `ToolUseBlock`: `toolUseId`, `name`, `input`).
fn tool_call(block: &Value, body: &str) -> Result<ToolCall, LlmError> {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let (Some(id), Some(name)) = (field("toolUseId"), field("name")) else {
        return Err(invalid("a toolUse block without its id or name", body));
    };
    let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
    Ok(ToolCall::new(id, name, input))
}

/// The HTTP status Bedrock answers an exception with (BEDROCK-API `Converse`, "Errors";
/// the stream's exceptions are the same shapes, their names starting lowercase):
/// `None` for a failure of the model mid-answer, which the classifier takes for a
/// server fault.
fn exception_status(exception: &str) -> Option<u16> {
    match exception.to_ascii_lowercase().as_str() {
        "throttlingexception" | "modelnotreadyexception" => Some(429),
        "validationexception" => Some(400),
        "accessdeniedexception" => Some(403),
        "resourcenotfoundexception" => Some(404),
        "modeltimeoutexception" => Some(408),
        "internalserverexception" => Some(500),
        "serviceunavailableexception" => Some(503),
        _ => None,
    }
}

/// The error an exception stands for: its name (`ThrottlingException`, or a stream's
/// `throttlingException`) and its payload (`{"message": ...}`), through the shared
/// classifier as the status Bedrock answers it with.
pub fn exception_error(exception: &str, payload: &[u8]) -> LlmError {
    let text = String::from_utf8_lossy(payload);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.get("message").or_else(|| v.get("Message")).cloned())
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_else(|| snippet(&text));
    let mut error = json!({"type": exception, "message": message});
    if let Some(status) = exception_status(exception) {
        error["code"] = json!(status);
    }
    overflow_refined(from_stream_error(&json!({"error": error})))
}

/// Bedrock's own words for a prompt past the model's window, which the shared
/// classifier's markers (Anthropic's "prompt is too long: N tokens > M maximum", the
/// OpenAI-style "maximum context length") do not read: a 400 `ValidationException`
/// "Input is too long for requested model." (aws-samples/assessment-generator #2,
/// `httpStatusCode: 400`, Converse), the same in a stream (`validationException`,
/// aws-samples/bedrock-chat #95), and prefixed "The model returned the following errors:"
/// (continuedev/continue #6005, #9592). Lowercase.
const OVERFLOW_MARKERS: [&str; 1] = ["input is too long for requested model"];

/// `error` as a context overflow when it is a refused request whose message is one of
/// Bedrock's own overflow messages ("Input is too long for requested model."); any
/// other error as it is. The message names no counts, so neither is known.
pub fn overflow_refined(error: LlmError) -> LlmError {
    if let LlmError::BadRequest { message, .. } | LlmError::InvalidPrompt { reason: message } =
        &error
        && OVERFLOW_MARKERS
            .iter()
            .any(|marker| message.to_lowercase().contains(marker))
    {
        return LlmError::ContextOverflow {
            prompt_tokens: None,
            limit: None,
        };
    }
    error
}
