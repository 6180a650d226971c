//! The Gemini format on the wire: the `GenerateContentRequest` out, a whole
//! `GenerateContentResponse` in. Every shape is Google's REST reference for
//! `models.generateContent` (ai.google.dev/api/generate-content) as the official Python
//! SDK writes and reads it (googleapis/python-genai `google/genai/types.py` and
//! `google/genai/models.py` at 66807187f2123c6676175ac991f4e34eb09200d1, cited below
//! as PYTHON-GENAI), and responses recorded from the API by vercel/ai
//! (`packages/google/src/__fixtures__`, cited as VERCEL-FIXTURES with the file).
//!
//! | neutral | request |
//! | --- | --- |
//! | system messages | `systemInstruction.parts[].text`, joined by a blank line |
//! | user message | a `user` turn's `text` part |
//! | assistant message | a `model` turn: a `text` part, then a `functionCall {name, args, id?}` part per call |
//! | tool result | a `functionResponse {name, response: {output} or {error}, id?}` part in a `user` turn; consecutive results share one turn |
//! | tools | `tools[0].functionDeclarations[] {name, description, parametersJsonSchema}` |
//! | tool choice | `toolConfig.functionCallingConfig.mode` (`AUTO`, `NONE`, `ANY`; one tool: `ANY` with `allowedFunctionNames`) |
//! | sampling, limits | `generationConfig {temperature, maxOutputTokens, stopSequences, seed}` |
//! | structured output | `generationConfig {responseMimeType: "application/json", responseJsonSchema}` |
//!
//! Schemas go as JSON Schema (`parametersJsonSchema`, `responseJsonSchema`), the fields
//! PYTHON-GENAI documents for it, not as the OpenAPI subset of `parameters` and
//! `responseSchema`, which refuses keywords a JSON Schema may hold
//! (`additionalProperties`).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::constants::TOOL_CALLS_PER_RESPONSE_MAX;
use crate::llm::error::{LlmError, snippet};
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::llm::wire::errors::from_stream_error;

/// The start of a call id this client made up for a function call the API sent
/// without one (`gemini-call-0`, `gemini-call-1`, ... by the call's position in its
/// answer). Such ids are not sent back.
pub const SYNTHETIC_CALL_ID_PREFIX: &str = "gemini-call-";

/// The signature Google documents for a function call whose own signature is not at
/// hand (ai.google.dev/gemini-api/docs/thought-signatures): Gemini 3 refuses a step
/// whose first function call comes back without one (HTTP 400). vercel/ai#15560 sends
/// it to Gemini 3 models only; strands-agents/sdk-python#1298 to every Gemini model,
/// which is what this client does (the body does not know the model's generation).
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// The id of call number `position` of an answer: the one sent, or a synthetic one.
fn call_id(sent: Option<&str>, position: usize) -> String {
    match sent.filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        None => format!("{SYNTHETIC_CALL_ID_PREFIX}{position}"),
    }
}

/// The JSON body of a `generateContent` request (the same for a stream: the method in
/// the path says which). An `Err` is a request this format cannot express: a tool
/// result that answers no earlier call.
pub fn request_body(request: &CompletionRequest) -> Result<Value, LlmError> {
    let (system, contents) = system_and_contents(&request.messages)?;
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        // PYTHON-GENAI `GenerateContentConfig.system_instruction`: a `Content`.
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system.join("\n\n")}]}),
        );
    }
    insert_tools(&mut body, request);
    let config = generation_config(request);
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    Ok(Value::Object(body))
}

/// `generationConfig` (PYTHON-GENAI `GenerationConfig`): only what the request sets.
fn generation_config(request: &CompletionRequest) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(temperature) = request.temperature {
        config.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    let stops: Vec<&String> = request.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        config.insert("stopSequences".into(), json!(stops));
    }
    if let Some(seed) = request.seed {
        // The API's seed is an int32: a larger one keeps its low 32 bits.
        config.insert("seed".into(), json!(seed as u32 as i32));
    }
    if let Some(output) = &request.output_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), output.schema.clone());
    } else if request.json_output {
        config.insert("responseMimeType".into(), json!("application/json"));
    }
    config
}

/// The parts of a turn, merged with the previous turn's when the role repeats (a tool
/// result after a user message, consecutive tool results): the API alternates `user`
/// and `model` turns.
fn push_turn(contents: &mut Vec<Value>, role: &str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    if let Some(last) = contents.last_mut()
        && last["role"] == role
        && let Some(existing) = last["parts"].as_array_mut()
    {
        existing.extend(parts);
        return;
    }
    contents.push(json!({"role": role, "parts": parts}));
}

/// The system prompts (sent apart) and the `contents` of `messages`.
fn system_and_contents(messages: &[Message]) -> Result<(Vec<&str>, Vec<Value>), LlmError> {
    let mut system = Vec::new();
    let mut contents = Vec::new();
    for (position, message) in messages.iter().enumerate() {
        match message {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => {
                push_turn(&mut contents, "user", vec![json!({"text": content})]);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => push_turn(&mut contents, "model", model_parts(content, tool_calls)),
            Message::Tool {
                tool_call_id,
                content,
                success,
            } => {
                let name = called_name(&messages[..position], tool_call_id)?;
                // PYTHON-GENAI `FunctionResponse.response`: "Use "output" key to specify
                // function output and "error" key to specify error details".
                let key = if *success { "output" } else { "error" };
                let mut response = json!({"name": name, "response": {key: content}});
                if !tool_call_id.starts_with(SYNTHETIC_CALL_ID_PREFIX) {
                    response["id"] = json!(tool_call_id);
                }
                push_turn(
                    &mut contents,
                    "user",
                    vec![json!({"functionResponse": response})],
                );
            }
        }
    }
    Ok((system, contents))
}

/// A `model` turn's parts: its text, then its calls (PYTHON-GENAI `FunctionCall`: `id`,
/// `name`, `args`), the first with the documented stand-in signature.
fn model_parts(content: &str, tool_calls: &[ToolCall]) -> Vec<Value> {
    let mut parts = Vec::new();
    if !content.is_empty() {
        parts.push(json!({"text": content}));
    }
    for (position, call) in tool_calls.iter().enumerate() {
        let mut function_call = json!({"name": call.name, "args": call.arguments});
        if !call.id.starts_with(SYNTHETIC_CALL_ID_PREFIX) {
            function_call["id"] = json!(call.id);
        }
        let mut part = json!({"functionCall": function_call});
        if position == 0 {
            part["thoughtSignature"] = json!(SKIP_SIGNATURE);
        }
        parts.push(part);
    }
    parts
}

/// The name of the call `id` answers: the latest assistant call with that id before
/// the result (synthetic ids repeat from one answer to the next).
fn called_name<'a>(before: &'a [Message], id: &str) -> Result<&'a str, LlmError> {
    before
        .iter()
        .rev()
        .flat_map(|message| message.tool_calls().iter().rev())
        .find(|call| call.id == id)
        .map(|call| call.name.as_str())
        .ok_or_else(|| LlmError::InvalidPrompt {
            reason: format!(
                "the tool result for call id {id:?} answers no earlier tool call: the Gemini API names a function response by its function"
            ),
        })
}

/// `tools` and `toolConfig` (PYTHON-GENAI `Tool`, `FunctionDeclaration`,
/// `FunctionCallingConfigMode`).
fn insert_tools(body: &mut Map<String, Value>, request: &CompletionRequest) {
    if request.tools.is_empty() {
        return;
    }
    let declarations: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters})
        })
        .collect();
    body.insert(
        "tools".into(),
        json!([{ "functionDeclarations": declarations }]),
    );
    let config = match &request.tool_choice {
        None => return,
        Some(ToolChoice::Auto) => json!({"mode": "AUTO"}),
        Some(ToolChoice::None) => json!({"mode": "NONE"}),
        Some(ToolChoice::Required) => json!({"mode": "ANY"}),
        Some(ToolChoice::Tool(name)) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    };
    body.insert(
        "toolConfig".into(),
        json!({ "functionCallingConfig": config }),
    );
}

/// A finish reason as the API spells it (PYTHON-GENAI `FinishReason`). `STOP` is a
/// natural end, or tool calls when the answer made any (the API says `STOP` for both:
/// VERCEL-FIXTURES `google-tool-call.chunks.txt`). Every block by a filter (safety,
/// recitation, prohibited content, blocklist, personal data, an unsupported language,
/// and their image kinds) is a content-filter stop. A malformed or unexpected function
/// call, `OTHER`, `FINISH_REASON_UNSPECIFIED` and reasons this library does not know
/// are kept raw, never read as a clean stop.
pub fn finish_reason(name: &str, has_calls: bool) -> FinishReason {
    match name {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "LANGUAGE"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A token count as sent: past `u32` it saturates; `null` is absent.
fn count(value: Option<u64>) -> Option<u32> {
    value.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// `usageMetadata` (PYTHON-GENAI `GenerateContentResponseUsageMetadata`; every field
/// in VERCEL-FIXTURES `issue-19822-complete-usage.json`).
#[derive(Deserialize, Default, Clone, Copy, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    tool_use_prompt_token_count: Option<u64>,
}

impl WireUsage {
    /// Umi's usage. The prompt is every input token: `promptTokenCount` (which counts
    /// the cached ones) and the tool-use prompt. The completion is every output token:
    /// the candidates and the thoughts, which the API counts apart. Their sum is the
    /// API's `totalTokenCount`.
    pub(super) fn usage(self) -> TokenUsage {
        let prompt = count(self.prompt_token_count)
            .unwrap_or(0)
            .saturating_add(count(self.tool_use_prompt_token_count).unwrap_or(0));
        let thoughts = count(self.thoughts_token_count);
        let completion = count(self.candidates_token_count)
            .unwrap_or(0)
            .saturating_add(thoughts.unwrap_or(0));
        let mut usage = TokenUsage::new(prompt, completion);
        usage.cached_prompt_tokens = count(self.cached_content_token_count);
        usage.reasoning_tokens = thoughts;
        usage
    }
}

/// A function call as sent.
#[derive(Deserialize)]
pub(super) struct WireFunctionCall {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) args: Option<Value>,
}

/// One part (PYTHON-GENAI `Part`): text (a thought when `thought` is true), a function
/// call, or something this library does not use (inline data, code execution).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WirePart {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thought: Option<bool>,
    #[serde(default)]
    pub(super) function_call: Option<WireFunctionCall>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireContent {
    #[serde(default)]
    pub(super) parts: Vec<WirePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireCandidate {
    #[serde(default)]
    pub(super) content: Option<WireContent>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WirePromptFeedback {
    #[serde(default)]
    pub(super) block_reason: Option<String>,
}

/// A `GenerateContentResponse`, whole or one chunk of a stream. `modelVersion` and
/// `responseId` have no neutral field and are not read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) candidates: Vec<WireCandidate>,
    #[serde(default)]
    pub(super) prompt_feedback: Option<WirePromptFeedback>,
    #[serde(default)]
    pub(super) usage_metadata: Option<WireUsage>,
}

impl WireResponse {
    /// The prompt's block reason, when the prompt was blocked (no candidates then:
    /// VERCEL-FIXTURES `issue-19758-prompt-block.json`).
    pub(super) fn block_reason(&self) -> Option<&str> {
        self.prompt_feedback
            .as_ref()
            .and_then(|f| f.block_reason.as_deref())
    }
}

pub(super) fn invalid(reason: &str, text: &str) -> LlmError {
    LlmError::InvalidResponse {
        reason: reason.to_owned(),
        snippet: snippet(text),
    }
}

/// `text` read as a response (or chunk): an error object (`{"error": {...}}`) is its
/// typed error.
pub(super) fn read_response(text: &str) -> Result<WireResponse, LlmError> {
    let value: Value =
        serde_json::from_str(text).map_err(|_| invalid("the response is not JSON", text))?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(from_stream_error(&value));
    }
    serde_json::from_value(value)
        .map_err(|e| invalid(&format!("unexpected response shape: {e}"), text))
}

/// A function call part as a neutral call (a call with no name is not one).
pub(super) fn tool_call(
    call: WireFunctionCall,
    position: usize,
    text: &str,
) -> Result<ToolCall, LlmError> {
    let name = call
        .name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid("a function call has no name", text))?;
    let arguments = match call.args {
        None | Some(Value::Null) => json!({}),
        Some(args) => args,
    };
    Ok(ToolCall::new(
        call_id(call.id.as_deref(), position),
        name,
        arguments,
    ))
}

/// A whole (non-streamed) response: the first candidate's parts; a blocked prompt
/// (no candidates) is an empty answer with a content-filter stop.
pub fn parse_response(body: &str, model: &str) -> Result<CompletionResponse, LlmError> {
    let mut response = read_response(body)?;
    let usage = response.usage_metadata.map(WireUsage::usage);
    if response.candidates.is_empty() {
        if response.block_reason().is_none() {
            return Err(invalid("the response has no candidates", body));
        }
        return Ok(CompletionResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            reasoning: None,
            finish_reason: FinishReason::ContentFilter,
            usage,
            model: model.to_owned(),
        });
    }
    let candidate = response.candidates.swap_remove(0);
    let (mut text, mut reasoning, mut tool_calls) = (String::new(), String::new(), Vec::new());
    for part in candidate.content.unwrap_or_default().parts {
        if let Some(call) = part.function_call {
            tool_calls.push(tool_call(call, tool_calls.len(), body)?);
        } else if let Some(piece) = part.text {
            let into = if part.thought == Some(true) {
                &mut reasoning
            } else {
                &mut text
            };
            into.push_str(&piece);
        }
    }
    if tool_calls.len() > TOOL_CALLS_PER_RESPONSE_MAX {
        return Err(LlmError::TooManyToolCalls {
            calls: u32::try_from(tool_calls.len()).unwrap_or(u32::MAX),
            limit: TOOL_CALLS_PER_RESPONSE_MAX as u32,
        });
    }
    let finish_reason = candidate
        .finish_reason
        .as_deref()
        .map_or(FinishReason::Missing, |name| {
            finish_reason(name, !tool_calls.is_empty())
        });
    Ok(CompletionResponse {
        text,
        tool_calls,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        finish_reason,
        usage,
        model: model.to_owned(),
    })
}
