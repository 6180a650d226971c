//! Tool calls: when tools are offered, call one (or, sometimes, several in parallel)
//! with arguments generated from their JSON Schemas; sometimes answer instead.
//!
//! An answer that calls no tool follows the request's output schema when it has one: a
//! provider with strict structured outputs answers either tool calls or JSON valid under
//! the schema, never free text (OpenAI's structured outputs guide: with `strict`, the
//! model's response "will always adhere to the supplied schema"). So the answer without
//! calls is `generate::structured`'s then, and the calls come with no preamble text (the
//! message content of a call is then null, as OpenAI sends it).
//!
//! Arguments take values from the conversation as a real model's do: after a field is
//! drawn from its schema, with [`ARGUMENT_FROM_CONVERSATION_PROBABILITY`] (drawn from its
//! own stream, [`CONVERSATION_STREAM`], so the schema's draws never shift) it takes a
//! value the user's messages or the tool results offer for it instead, matched by name
//! and type ([`crate::llm::conversation`]): `order_id` <- `ORD-1234`, `amount` <- `$25`.

use umi_core::llm::{CompletionRequest, ToolCall, ToolChoice};

use super::generic;
use crate::llm::conversation::Facts;
use crate::llm::route::Generated;
use crate::llm::schema::{self, FromConversation};
use crate::rng::DeterministicRng;

/// How likely a field takes a value the conversation offers for it (when one matches).
pub(crate) const ARGUMENT_FROM_CONVERSATION_PROBABILITY: f64 = 0.7;

/// The label of the stream that draws which fields take values from the conversation
/// (forked from the call's stream).
pub(crate) const CONVERSATION_STREAM: crate::rng::streams::Label =
    crate::rng::streams::llm_call::CONVERSATION;

/// Tool calls one simulated answer makes at most.
const PARALLEL_CALLS_MAX: u64 = 3;

const PREAMBLES: &[&str] = &["Let me check that.", "I'll look it up.", "One moment."];

/// The answer that calls no tool: JSON valid under the output schema when the request
/// has one (SimLLM checked the schema before: a schema it cannot answer was refused),
/// else text.
fn without_calls(request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
    if request.output_schema.is_some() {
        return super::structured(request, rng).unwrap_or_default();
    }
    generic::generate(request, rng)
}

/// `count` calls of tools drawn from `candidates`, their arguments from the tools'
/// schemas and (fields the conversation offers values for) the conversation; a tool
/// whose schema SimLLM cannot answer is left out.
fn calls(
    request: &CompletionRequest,
    candidates: &[&umi_core::llm::ToolDefinition],
    count: u64,
    rng: &mut DeterministicRng,
) -> Vec<ToolCall> {
    let facts = Facts::from_messages(&request.messages);
    let mut conversation_rng = rng.stream(CONVERSATION_STREAM);
    let mut calls = Vec::new();
    for _ in 0..count {
        let tool = *rng.choose(candidates).expect("candidates are not empty");
        let id_bits = rng.next_u64();
        let conversation = FromConversation {
            facts: &facts,
            rng: &mut conversation_rng,
            probability: ARGUMENT_FROM_CONVERSATION_PROBABILITY,
        };
        match schema::generate_with(&tool.parameters, rng, Some(conversation)) {
            Ok(arguments) => calls.push(ToolCall::new(
                format!("call_{:012x}", id_bits >> 16),
                tool.name.clone(),
                arguments,
            )),
            Err(error) => {
                tracing::debug!(tool = %tool.name, %error, "SimLLM cannot generate arguments");
            }
        }
    }
    calls
}

/// The tool-calling answer for `request`: calls with probability `call_probability`,
/// as `tool_choice` allows (`none`: never; `required` or a named tool: always, only that
/// tool) and `parallel_tool_calls` allows (`false`: one call at most).
pub(crate) fn generate(
    request: &CompletionRequest,
    rng: &mut DeterministicRng,
    call_probability: f64,
) -> Generated {
    let forced = matches!(
        request.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Tool(_))
    );
    let refused = request.tool_choice == Some(ToolChoice::None);
    if request.tools.is_empty() || refused {
        return without_calls(request, rng);
    }
    // One draw either way, so forcing a call does not shift the draws after it.
    let wants = rng.bool_with(call_probability);
    if !(wants || forced) {
        return without_calls(request, rng);
    }
    let candidates: Vec<&umi_core::llm::ToolDefinition> = match &request.tool_choice {
        Some(ToolChoice::Tool(name)) => request.tools.iter().filter(|t| &t.name == name).collect(),
        Some(ToolChoice::Auto | ToolChoice::None | ToolChoice::Required) | None => {
            request.tools.iter().collect()
        }
    };
    if candidates.is_empty() {
        return without_calls(request, rng);
    }
    let parallel = rng.bool_with(0.3) && request.parallel_tool_calls != Some(false);
    let count = if parallel {
        rng.range_inclusive(2, PARALLEL_CALLS_MAX)
    } else {
        1
    };
    let calls = calls(request, &candidates, count, rng);
    if calls.is_empty() {
        if request.output_schema.is_some() {
            return without_calls(request, rng);
        }
        return Generated::text("I cannot call the available tools with valid arguments.");
    }
    // Drawn either way, so a schema does not shift the draws after it.
    let preamble = rng.bool_with(0.4);
    let text = if preamble && request.output_schema.is_none() {
        rng.choose(PREAMBLES).copied().unwrap_or("").to_owned()
    } else {
        String::new()
    };
    Generated {
        text,
        tool_calls: calls,
        reasoning: None,
        structured: false,
    }
}
