//! The input block every task prompt ends with: the data the prompt is about, as compact
//! JSON with sorted keys in a fenced block, so text with quotes or code fences in it cannot
//! confuse a model or a simulator, and the block reads back exactly.

use serde_json::Value;

use crate::llm::CompletionRequest;

pub(super) const INPUT_FENCE_OPEN: &str = "Input:\n```json\n";

pub(super) const INPUT_FENCE_CLOSE: &str = "\n```";

/// `lead`, then `data` as compact JSON (keys sorted: the prompt is part of the request a
/// simulated model hashes) in a fenced block.
pub(super) fn with_input_block(lead: &str, data: &Value) -> String {
    let data = crate::canonical_json::Canonical(data);
    format!("{lead}\n\n{INPUT_FENCE_OPEN}{data}{INPUT_FENCE_CLOSE}")
}

/// The JSON block of a prompt built by this module, if `request` carries one.
pub fn input_block(request: &CompletionRequest) -> Option<Value> {
    serde_json::from_str(input_block_text(request)?).ok()
}

/// The raw JSON of a prompt's input block.
pub(super) fn input_block_text(request: &CompletionRequest) -> Option<&str> {
    let text = request.last_user_text()?;
    let start = text.rfind(INPUT_FENCE_OPEN)? + INPUT_FENCE_OPEN.len();
    let end = start + text[start..].find(INPUT_FENCE_CLOSE)?;
    Some(&text[start..end])
}
