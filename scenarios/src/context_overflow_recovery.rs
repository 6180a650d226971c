//! Scenario `context_overflow_recovery`: a long conversation overflows a small context
//! window; the agent loop trims its oldest turns and still finishes.
//!
//! Workload: a conversation of four to ten earlier turns (questions, tool calls with
//! long results, answers) and a new question, sent by the real agent loop to a SimLLM
//! with a window of 1,600 tokens, which refuses a longer prompt with `ContextOverflow`
//! and its real limit; injected overflows claim smaller limits now and then.
//!
//! Invariants:
//! 1. The run ends with an answer, unless the provider claimed a limit even the minimum
//!    (system message, task, newest turn) cannot fit, or the trims ran out.
//! 2. Every request keeps the system message and the newest user message; what was
//!    dropped is always older than what was kept (a contiguous run of the newest history).
//! 3. No request separates a tool call from its results (no orphan result, no unanswered
//!    call).
//! 4. A conversation over the window was trimmed at least once before it was answered.

use std::sync::{Arc, Mutex};

use serde_json::json;
use umi_core::agent::{Agent, AgentConfig, AgentError};
use umi_core::env::steer::Mark;
use umi_core::llm::tokens::estimate_request_tokens;
use umi_core::llm::{CompletionRequest, Message, ToolCall};
use umi_dst::{DeterministicRng, FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::common::{
    orphan_tool_result, sim_model, tool_definitions, tool_registry, unanswered_tool_call,
};

/// The simulated model's context window, in tokens.
const WINDOW_TOKENS: u32 = 1_600;

/// Context trims one run may make.
const OVERFLOW_RETRIES_MAX: u32 = 6;

/// The scenario.
#[umi_dst::scenario(
    goal = "after a context overflow the agent trims its oldest turns and still finishes",
    faults = [FaultConfig::chance(FaultKind::LlmContextOverflow, 0.08)],
    marks = ["agent.trim"],
    steering = [
        &DEEPEST_CONTEXT_FILL,
        &TRIMS_IN_ONE_RUN,
        &GAVE_UP_ON_CONTEXT,
    ],
    run = run,
    rank = 70,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ContextOverflowRecovery;

/// The fullest request sent, in percent of the window (past 100: an overflow).
pub const DEEPEST_CONTEXT_FILL: Mark = Mark::maximize(
    "deepest context fill",
    "the largest request sent, in percent of the model's context window",
);

/// The most trims one run made.
pub const TRIMS_IN_ONE_RUN: Mark = Mark::maximize(
    "trims in one run",
    "times the agent dropped old turns after an overflow in one run",
);

/// The agent gave up with its context exhausted.
pub const GAVE_UP_ON_CONTEXT: Mark = Mark::sometimes(
    "gave up on context",
    "the agent ended with ContextExhausted (a trim limit or a shrunken window)",
);

/// A conversation of earlier turns and a new question.
fn conversation(rng: &mut DeterministicRng) -> Vec<Message> {
    let mut messages = vec![Message::system(
        "You are a travel assistant. Use the tools.",
    )];
    let cities = ["Paris", "Oslo", "Kyoto", "Lima", "Berlin"];
    for turn in 0..rng.range_inclusive(4, 10) {
        let city = rng.choose(&cities).copied().unwrap_or("Paris");
        messages.push(Message::user(format!(
            "Turn {turn}: what is the weather in {city} this week?"
        )));
        let id = format!("call_history_{turn}");
        messages.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new(
                id.clone(),
                "get_weather",
                json!({"city": city, "days": 3}),
            )],
        ));
        let report = format!("{city}: sunny spells, light wind, {} degrees. ", 10 + turn)
            .repeat(rng.range_inclusive(3, 12) as usize);
        messages.push(Message::tool_result(id, report, true));
        messages.push(Message::assistant(format!(
            "It will be mild in {city}, around {} degrees.",
            10 + turn
        )));
    }
    messages.push(Message::user("Given all that, where should I go first?"));
    messages
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let llm = sim_model(&sim, "sim", "sim-small", WINDOW_TOKENS, |config| config);
    let recording = Arc::new(umi_dst::doubles::RecordingLanguageModel::new(llm));
    let log = Arc::new(Mutex::new(Vec::new()));
    let config = AgentConfig::default()
        .with_overflow_retries_max(OVERFLOW_RETRIES_MAX)
        .with_iterations_max(6);
    let agent = Agent::new(recording.clone(), sim.env())
        .with_tools(tool_registry(&sim, &log, 0.0))
        .with_config(config);
    let messages = conversation(&mut sim.task_rng("workload.conversation"));
    let over_window = estimate_request_tokens(
        &CompletionRequest::new(messages.clone()).with_tools(tool_definitions()),
    ) > WINDOW_TOKENS;
    let outcome = agent.run(messages.clone()).await;
    let env = sim.env();
    let fill_max = recording
        .requests()
        .iter()
        .map(|request| u64::from(estimate_request_tokens(request)) * 100 / u64::from(WINDOW_TOKENS))
        .max()
        .unwrap_or(0);
    umi_core::maximize!(env, DEEPEST_CONTEXT_FILL, fill_max);
    let trims = outcome.as_ref().map_or(0, |outcome| outcome.trims);
    umi_core::maximize!(env, TRIMS_IN_ONE_RUN, u64::from(trims));
    let gave_up = matches!(outcome, Err(AgentError::ContextExhausted { .. }));
    umi_core::sometimes!(env, gave_up, GAVE_UP_ON_CONTEXT);
    for (index, request) in recording.requests().iter().enumerate() {
        check_request(index, &request.messages, &messages)?;
    }
    match outcome {
        Ok(outcome) => {
            ensure!(
                !over_window || outcome.trims >= 1,
                "a conversation over the window was answered without a trim"
            );
            ensure!(
                outcome.trims <= OVERFLOW_RETRIES_MAX,
                "{} trims, over the limit of {OVERFLOW_RETRIES_MAX}",
                outcome.trims
            );
        }
        Err(AgentError::ContextExhausted {
            attempts,
            limit,
            prompt_tokens,
        }) => {
            ensure!(
                attempts == OVERFLOW_RETRIES_MAX
                    || limit.is_some_and(|limit| limit < WINDOW_TOKENS),
                "the agent gave up after {attempts} trims at {prompt_tokens:?} tokens though the real window of {WINDOW_TOKENS} fits the newest turn (limit {limit:?})"
            );
        }
        Err(error) => return Err(Violation::new(format!("the agent failed: {error}"))),
    }
    Ok(())
}

/// Invariants 2 and 3 on one request.
fn check_request(index: usize, sent: &[Message], original: &[Message]) -> Result<(), Violation> {
    ensure!(
        sent.first() == original.first(),
        "request {index} lost the system message"
    );
    ensure!(
        sent.contains(&original[original.len() - 1]),
        "request {index} lost the newest user message"
    );
    let kept: Vec<usize> = original
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, m)| sent.contains(m))
        .map(|(i, _)| i)
        .collect();
    let contiguous =
        kept.windows(2).all(|w| w[1] == w[0] + 1) && kept.last() == Some(&(original.len() - 1));
    ensure!(
        contiguous,
        "request {index} kept history messages {kept:?}: not the newest ones"
    );
    if let Some(id) = orphan_tool_result(sent) {
        return Err(Violation::new(format!(
            "request {index} has a result for call {id} without the call"
        )));
    }
    if let Some(id) = unanswered_tool_call(sent) {
        return Err(Violation::new(format!(
            "request {index} has call {id} without its result"
        )));
    }
    Ok(())
}
