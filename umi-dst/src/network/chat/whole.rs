//! A whole (non-streamed) chat completion in the drawn provider's layout.

use serde_json::json;
use umi_core::llm::CompletionResponse;

use super::draw::Draw;
use crate::network::chat_shapes::{Layout, ReasoningField};
use crate::network::json::Json;

fn tool_calls(response: &CompletionResponse) -> Json {
    Json::Array(
        response
            .tool_calls
            .iter()
            .map(|call| {
                Json::object(vec![
                    ("id", call.id.clone().into()),
                    ("type", "function".into()),
                    (
                        "function",
                        Json::object(vec![
                            ("name", call.name.clone().into()),
                            (
                                "arguments",
                                umi_core::canonical_json::to_string(&call.arguments).into(),
                            ),
                        ]),
                    ),
                ])
            })
            .collect(),
    )
}

/// The message object: role, content (`null` when the model only called tools), the
/// provider's reasoning field, tool calls, and OpenAI's `refusal`/`annotations`.
fn message(draw: &Draw, response: &CompletionResponse) -> Json {
    let content: Json = if response.text.is_empty() && !response.tool_calls.is_empty() {
        Json::null()
    } else {
        response.text.clone().into()
    };
    let mut message = Json::object(vec![("role", "assistant".into()), ("content", content)]);
    if let Some(reasoning) = response.reasoning.as_ref().filter(|r| !r.is_empty()) {
        match draw.reasoning {
            ReasoningField::None => {}
            ReasoningField::ReasoningContent | ReasoningField::ReasoningContentPaired => {
                message.push("reasoning_content", reasoning.clone());
            }
            ReasoningField::Reasoning | ReasoningField::Separate | ReasoningField::OpenRouter => {
                message.push("reasoning", reasoning.clone());
            }
            ReasoningField::Both => {
                message.push("reasoning_content", reasoning.clone());
                message.push("reasoning", reasoning.clone());
            }
        }
    }
    if !response.tool_calls.is_empty() {
        message.push("tool_calls", tool_calls(response));
    }
    if matches!(
        draw.layout,
        Layout::OpenAi2024 | Layout::OpenAiTiered | Layout::OpenAiTieredNoLogprobs | Layout::Azure
    ) {
        // GOMODEL chat_completion.json: `refusal` and `annotations` after the content.
        message.push("refusal", Json::null());
        if draw.layout != Layout::OpenAi2024 {
            message.push("annotations", Json::Array(Vec::new()));
        }
    }
    message
}

/// The body of a whole answer.
pub(crate) fn body(draw: &mut Draw, response: &CompletionResponse) -> Json {
    let finish = draw.finish_name(&response.finish_reason);
    let mut choice = Json::object(vec![
        ("index", 0u32.into()),
        ("message", message(draw, response)),
    ]);
    if !matches!(
        draw.layout,
        Layout::OpenAiTieredNoLogprobs
            | Layout::Glm
            | Layout::GlmNoObject
            | Layout::LlamaCpp
            | Layout::OllamaV1
    ) {
        choice.push("logprobs", Json::null());
    }
    choice.push("finish_reason", finish);
    let usage = response.usage.map(|usage| draw.usage_json(&usage));
    let mut body = Json::object(vec![
        ("id", draw.id.clone().into()),
        ("object", "chat.completion".into()),
        ("created", draw.created.into()),
        ("model", draw.model.clone().into()),
        ("choices", Json::Array(vec![choice])),
    ]);
    if let Some(usage) = usage {
        body.push("usage", usage);
    }
    match draw.layout {
        Layout::OpenAiTiered | Layout::OpenAiTieredNoLogprobs => {
            body.push("service_tier", "default");
            body.push("system_fingerprint", Json::null());
        }
        Layout::OpenAi2024 | Layout::DeepSeek => {
            body.push(
                "system_fingerprint",
                format!("fp_{}", &draw.id[draw.id.len() - 10..]),
            );
        }
        Layout::Glm | Layout::GlmNoObject => body.push("request_id", draw.id.clone()),
        Layout::OpenRouter => body.push("provider", "Umi"),
        Layout::OllamaV1 => body.push("system_fingerprint", "fp_ollama"),
        Layout::Azure => {
            body.push(
                "prompt_filter_results",
                Json::from(json!([{"prompt_index": 0, "content_filter_results": {}}])),
            );
            body = body.sorted();
        }
        Layout::Tgi => body.push("system_fingerprint", "2.0.1-native"),
        Layout::DashScope | Layout::Vllm | Layout::LlamaCpp | Layout::Xinference => {}
    }
    body
}
