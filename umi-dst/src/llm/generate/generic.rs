//! Generic answers: a few sentences that echo the question, a summary after tool
//! results, or a JSON object when the request asks for JSON.

use umi_core::llm::{CompletionRequest, Message};

use super::{confidence, cut};
use crate::llm::route::Generated;
use crate::rng::DeterministicRng;

const OPENERS: &[&str] = &[
    "Understood.",
    "Sure.",
    "Here is what I found.",
    "Good question.",
    "Noted.",
];
const BODIES: &[&str] = &[
    "The short answer is that it depends on the details you gave.",
    "I would start with the most recent information and work backwards.",
    "There are two parts to this, and the second matters more.",
    "Nothing in the conversation contradicts that.",
    "That matches what was said earlier.",
    "I could not find anything more specific.",
];

/// Up to `count` words of the last user message.
fn echo(request: &CompletionRequest, count: usize) -> String {
    let words: Vec<&str> = request
        .last_user_text()
        .unwrap_or("")
        .split_whitespace()
        .take(count)
        .collect();
    words.join(" ")
}

/// The generic answer for `request`.
pub(crate) fn generate(request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
    let results: Vec<&str> = request
        .messages
        .iter()
        .rev()
        .take_while(|m| matches!(m, Message::Tool { .. }))
        .map(Message::text)
        .collect();
    let sentence = if results.is_empty() {
        let opener = rng.choose(OPENERS).copied().unwrap_or("Sure.");
        let body = rng.choose(BODIES).copied().unwrap_or("");
        let about = echo(request, 6);
        if about.is_empty() {
            format!("{opener} {body}")
        } else {
            format!("{opener} About \"{about}\": {body}")
        }
    } else {
        let shown: Vec<String> = results
            .iter()
            .rev()
            .map(|r| cut(r, 60).to_owned())
            .collect();
        format!(
            "Based on the tool results ({}), here is the answer.",
            shown.join("; ")
        )
    };
    if request.json_output {
        let answer =
            serde_json::json!({ "answer": sentence, "confidence": confidence(rng, 0.5, 1.0) });
        return Generated::json(umi_core::canonical_json::to_string(&answer));
    }
    Generated::text(sentence)
}
