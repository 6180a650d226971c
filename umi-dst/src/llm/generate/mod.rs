//! The built-in generators. Each answers one kind of request in exactly the shape the
//! real code parses: the memory answers are built from umi-core's own types and checked
//! by umi-core's own parsers in tests, over a thousand seeds each.

pub(super) mod evolution;
pub(super) mod extraction;
pub(super) mod generic;
mod reasoning;
pub(super) mod rewrite;
pub(super) mod tools;

use umi_core::llm::CompletionRequest;

pub(super) use reasoning::reasoning;

use super::route::{Builtin, Generated};
use crate::rng::DeterministicRng;

/// Runs the built-in generator `route` (tool calls use `tool_call_probability`).
pub(crate) fn builtin(
    route: Builtin,
    request: &CompletionRequest,
    rng: &mut DeterministicRng,
    tool_call_probability: f64,
) -> Generated {
    match route {
        Builtin::ToolCalls => tools::generate(request, rng, tool_call_probability),
        Builtin::ExtractEntities => extraction::generate(request, rng),
        Builtin::RewriteQuery => rewrite::generate(request, rng),
        Builtin::DetectEvolution => evolution::generate(request, rng),
        // The schema was checked by `structured` before (SimLlm::prepare).
        Builtin::Structured => structured(request, rng).unwrap_or_default(),
        Builtin::Generic => generic::generate(request, rng),
    }
}

/// A JSON answer valid under the request's output schema, or why SimLLM cannot make one.
pub(crate) fn structured(
    request: &CompletionRequest,
    rng: &mut DeterministicRng,
) -> Result<Generated, super::schema::SchemaError> {
    let schema = request
        .output_schema
        .as_ref()
        .map_or(&serde_json::Value::Null, |s| &s.schema);
    let value = super::schema::generate(schema, rng)?;
    Ok(Generated::json(umi_core::canonical_json::to_string(&value)))
}

/// `text` cut to at most `bytes` bytes at a char boundary.
pub(crate) fn cut(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A confidence in `[low, high)` rounded to two decimals.
pub(crate) fn confidence(rng: &mut DeterministicRng, low: f64, high: f64) -> f64 {
    (rng.f64_in(low, high) * 100.0).round() / 100.0
}
