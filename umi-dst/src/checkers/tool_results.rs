//! Oracles over what the model is told of its tool calls: every call it made gets
//! exactly one result, in the messages that follow the turn that made it.
//!
//! A tool result that never reaches the model leaves it answering without what it
//! asked for; one that reaches it twice (a retried call whose first result was kept too)
//! tells it a payment happened twice. Real providers refuse such a conversation
//! outright: OpenAI's chat API answers 400 "An assistant message with 'tool_calls' must
//! be followed by tool messages responding to each 'tool_call_id'", Anthropic's
//! "tool_use ids were found without tool_result blocks immediately after". SimLLM checks
//! every request it gets with
//! `unpaired_tool_results` (SimLLM's own pairing check) and keeps
//! what it found (`SimLlm::tool_result_problems`).

/// Whether every request `llm` got told the model of each of its calls exactly once.
pub fn check_tool_results(llm: &crate::llm::SimLlm) -> Result<(), crate::simulation::Violation> {
    match llm.tool_result_problems().first() {
        None => Ok(()),
        Some(problem) => Err(crate::simulation::Violation::new(format!(
            "a request to the model has its tool results wrong: {problem}"
        ))),
    }
}
