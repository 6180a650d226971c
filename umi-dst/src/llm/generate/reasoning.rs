//! Reasoning text for models that think aloud before answering: a few seeded sentences
//! about the request (what is asked, whether a tool is needed, how to answer), so a
//! reasoning stream has the length and look of one without saying anything a test
//! could depend on.

use umi_core::llm::CompletionRequest;

use super::cut;
use crate::rng::DeterministicRng;

/// Bytes of the request quoted in the reasoning, at most.
const QUOTE_BYTES_MAX: usize = 80;

const OPENINGS: &[&str] = &[
    "The user asks: \"{}\".",
    "Okay, the question is \"{}\".",
    "Let me think about \"{}\".",
];

const MIDDLES: &[&str] = &[
    "A tool could answer this more reliably than memory.",
    "I should check what is being asked before answering.",
    "The answer should be short and direct.",
    "There may be more than one reasonable reading; I will take the plain one.",
];

const CLOSINGS: &[&str] = &[
    "I will answer now.",
    "That settles it.",
    "Let me write the answer.",
];

/// The reasoning before the answer to `request`.
pub(crate) fn reasoning(request: &CompletionRequest, rng: &mut DeterministicRng) -> String {
    let asked = request.last_user_text().unwrap_or("the task");
    let quote = cut(asked.trim(), QUOTE_BYTES_MAX);
    let opening = rng.choose(OPENINGS).copied().unwrap_or("{}");
    let mut out = opening.replace("{}", quote);
    let middles = 1 + rng.below(2);
    for _ in 0..middles {
        out.push(' ');
        out.push_str(rng.choose(MIDDLES).copied().unwrap_or(""));
    }
    out.push(' ');
    out.push_str(rng.choose(CLOSINGS).copied().unwrap_or(""));
    out
}
