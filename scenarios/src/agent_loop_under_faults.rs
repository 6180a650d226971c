//! Scenario `agent_loop_under_faults`: the whole stack at once: the agent loop over the
//! router over the real clients over SimNetwork, with failing and slow tools.
//!
//! Workload: three agent runs (each a question that needs the tools) through the router;
//! the model side sees 429s, 503s, cut streams, connection resets and late first bytes;
//! tools fail one time in six and may run past their two-second timeout.
//!
//! Invariants:
//! 1. Every run ends within its bounds: at most `iterations_max` model turns, and within
//!    the simulated time those turns and their tools can take.
//! 2. Every call the model asked for runs exactly once, even when the router retried or
//!    fell back, or the agent sent a cut turn again (`stream_cut_retries_max` is on): the
//!    tool runs, as (tool, arguments), are exactly the calls started.
//! 3. A finished run pairs every call with one result, and counts them right.
//! 4. A failed run failed as the router reports exhaustion or a stream broken mid-turn,
//!    or as the loop guard; the router's own rules hold throughout (checkers).
//!
//! Steering marks (stepping stones for `dst explore`): the most stream-cut retries of one
//! turn, the longest tool chain and the most turns of one run, and a run that failed on
//! a turn error.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use umi_core::agent::{Agent, AgentConfig, AgentError, AgentEvent, AgentOutcome};
use umi_core::env::Env;
use umi_core::env::steer::Mark;
use umi_core::llm::router::CooldownPolicy;
use umi_core::llm::{LlmErrorKind, Message, ToolCall};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::common::{
    Execution, RouterStack, orphan_tool_result, scenario_retry, tool_registry, unanswered_tool_call,
};

/// Model turns per run.
const ITERATIONS_MAX: u32 = 6;

/// The tools' timeout.
const TOOL_TIMEOUT: Duration = Duration::from_secs(2);

/// Tools run at once.
const PARALLEL_TOOLS_MAX: usize = 2;

/// Retries of a turn whose stream was cut (the agent's opt-in, exercised here).
const STREAM_CUT_RETRIES_MAX: u32 = 2;

/// The error kinds a routed turn may end with: exhaustion, or a stream broken after its
/// first event (which no router may retry without duplicating output).
const TURN_ERRORS: [LlmErrorKind; 6] = [
    LlmErrorKind::Exhausted,
    LlmErrorKind::StreamTruncated,
    LlmErrorKind::Connection,
    LlmErrorKind::Timeout,
    LlmErrorKind::InvalidResponse,
    LlmErrorKind::ServiceUnavailable,
];

/// The most times one turn was sent again after its stream was cut.
pub const RETRIES_IN_ONE_TURN: Mark = Mark::maximize(
    "retries in one turn",
    "stream-cut retries of one agent turn (a retried turn must not run a tool twice)",
);

/// The most tool calls one agent run started.
pub const LONGEST_TOOL_CHAIN: Mark =
    Mark::maximize("longest tool chain", "tool calls started in one agent run");

/// The most model turns one agent run took.
pub const TURNS_IN_ONE_RUN: Mark =
    Mark::maximize("turns in one run", "model turns of one agent run");

/// A run that ended on a turn error (the router exhausted, or a stream broken mid-turn).
pub const RUN_FAILED_ON_A_TURN: Mark = Mark::sometimes(
    "run failed on a turn error",
    "an agent run ended with a provider error after the router and retries gave up",
);

/// The scenario.
#[umi_dst::scenario(
    goal = "the agent over the router ends every run in bounds and runs each tool call once",
    faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.05),
        FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.04),
        FaultConfig::chance(FaultKind::NetworkReset, 0.03),
        FaultConfig::chance(FaultKind::NetworkSlowFirstByte, 0.05),
    ],
    marks = [
        "agent.tool_failed",
        "agent.tool_timeout",
        "agent.parallel_tools",
        "agent.stream_retry",
        "router.retry",
    ],
    steering = [
        &RETRIES_IN_ONE_TURN,
        &LONGEST_TOOL_CHAIN,
        &TURNS_IN_ONE_RUN,
        &RUN_FAILED_ON_A_TURN,
    ],
    run = run,
    rank = 120,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentLoopUnderFaults;

/// What one agent run reached, for the steering marks (free: no step, draw or trace).
fn steer_run(env: &Env, turn_retries_max: u64, started: usize, iterations: u32, failed: bool) {
    umi_core::maximize!(env, RETRIES_IN_ONE_TURN, turn_retries_max);
    umi_core::maximize!(env, LONGEST_TOOL_CHAIN, started as u64);
    umi_core::maximize!(env, TURNS_IN_ONE_RUN, u64::from(iterations));
    umi_core::sometimes!(env, failed, RUN_FAILED_ON_A_TURN);
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let retry = scenario_retry();
    let stack = RouterStack::build(&sim, retry, CooldownPolicy::default(), |_, config| config);
    let executions = Arc::new(Mutex::new(Vec::new()));
    let config = AgentConfig::default()
        .with_iterations_max(ITERATIONS_MAX)
        .with_parallel_tools_max(PARALLEL_TOOLS_MAX)
        .with_tool_timeout(TOOL_TIMEOUT)
        .with_stream_cut_retries_max(STREAM_CUT_RETRIES_MAX);
    let agent = Agent::new(stack.router.clone(), sim.env())
        .with_tools(tool_registry(&sim, &executions, 1.0 / 6.0))
        .with_config(config);
    let env = sim.env();
    // A turn is one routed call (its deadline plus one attempt's timeout), sent at most
    // 1 + STREAM_CUT_RETRIES_MAX times, and at most three tool calls run two at a time
    // (two rounds of the tool timeout).
    let turn_max = Duration::from_millis(retry.deadline_ms + retry.request_timeout_ms)
        * (1 + STREAM_CUT_RETRIES_MAX)
        + TOOL_TIMEOUT * 2;
    let run_max = turn_max * ITERATIONS_MAX;
    for prompt in [
        "What is the weather in Kyoto for three days?",
        "Search my travel notes.",
        "Book me a slot at noon.",
    ] {
        executions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let (mut started, mut finished, mut iterations) = (Vec::new(), 0usize, 0u32);
        let mut retries_max = 0u64;
        let began = env.elapsed();
        let outcome = agent
            .run_with_events(
                vec![Message::system("Use the tools."), Message::user(prompt)],
                &mut |event| match event {
                    AgentEvent::ToolCallStarted { call } => started.push(call),
                    AgentEvent::ToolCallFinished { .. } => finished += 1,
                    AgentEvent::IterationStarted { iteration } => iterations = iteration,
                    AgentEvent::TurnRetried { retry, .. } => {
                        retries_max = retries_max.max(u64::from(retry));
                    }
                    _ => {}
                },
            )
            .await;
        let failed = matches!(outcome, Err(AgentError::Provider(_)));
        steer_run(&env, retries_max, started.len(), iterations, failed);
        let took = env.elapsed() - began;
        ensure!(
            iterations <= ITERATIONS_MAX,
            "{prompt:?}: {iterations} turns, over {ITERATIONS_MAX}"
        );
        ensure!(
            took <= run_max,
            "{prompt:?}: the run took {took:?}, over {run_max:?}"
        );
        check_tool_runs(prompt, &executions, &started, finished)?;
        check_outcome(prompt, outcome, started.len())?;
    }
    stack.check()
}

/// Each call started ran once, and finished: the tool runs are the calls started, as a
/// multiset of (tool, arguments).
fn check_tool_runs(
    prompt: &str,
    executions: &Mutex<Vec<Execution>>,
    started: &[ToolCall],
    finished: usize,
) -> Result<(), Violation> {
    let mut ran: Vec<(String, String)> = executions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|run| (run.tool.clone(), run.arguments.to_string()))
        .collect();
    let mut asked: Vec<(String, String)> = started
        .iter()
        .map(|call| (call.name.clone(), call.arguments.to_string()))
        .collect();
    ran.sort();
    asked.sort();
    ensure!(
        ran == asked,
        "{prompt:?}: the tool runs are not the calls started, one each: ran {ran:?}, asked {asked:?}"
    );
    ensure!(
        finished == started.len(),
        "{prompt:?}: {} calls started, {finished} finished",
        started.len()
    );
    Ok(())
}

/// A finished run pairs every call with one result and counts the calls started; a
/// failed one failed with a turn error the faults explain, or hit a loop bound.
fn check_outcome(
    prompt: &str,
    outcome: Result<AgentOutcome, AgentError>,
    started: usize,
) -> Result<(), Violation> {
    match outcome {
        Ok(outcome) => {
            if let Some(id) = orphan_tool_result(&outcome.messages)
                .or_else(|| unanswered_tool_call(&outcome.messages))
            {
                return Err(Violation::new(format!(
                    "{prompt:?}: call {id} is not paired with one result"
                )));
            }
            ensure!(
                outcome.tool_calls == started,
                "{prompt:?}: outcome counts {} calls, {started} started",
                outcome.tool_calls
            );
        }
        Err(AgentError::Provider(error)) => {
            ensure!(
                TURN_ERRORS.contains(&error.kind()),
                "{prompt:?}: a turn failed with {}: {error}",
                error.kind()
            );
        }
        Err(AgentError::LoopDetected { .. } | AgentError::MaxIterations { .. }) => {}
        Err(error) => {
            return Err(Violation::new(format!(
                "{prompt:?}: the agent failed: {error}"
            )));
        }
    }
    Ok(())
}
