//! Scenario `streaming_tool_calls`: tool calls arrive as adversarially chunked deltas
//! (arguments split anywhere, several calls interleaved, streams cut short) and pass
//! through the real stream collector and agent loop.
//!
//! Workload: three agent runs against a SimLLM that calls the tools (with arguments drawn
//! from their JSON Schemas, sometimes several in parallel) in chunks of one to eight
//! characters; tools fail now and then; streams are cut and answers broken by faults.
//!
//! Invariants:
//! 1. Every tool runs with arguments valid under its schema, exactly those of the call
//!    the model streamed, in call order.
//! 2. Every started call runs once; call ids are never reused within a run.
//! 3. A finished run's conversation pairs every call with one result.
//! 4. A run fails only with a provider error, and only when a fault was injected.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use umi_core::agent::{Agent, AgentConfig, AgentError, AgentEvent, AgentOutcome};
use umi_core::llm::{Message, ToolCall};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::common::{
    Execution, orphan_tool_result, sim_model, tool_definitions, tool_registry, unanswered_tool_call,
};

/// Agent runs per seed.
const RUNS_PER_SEED: usize = 3;

/// The scenario.
#[umi_dst::scenario(
    goal = "tool calls streamed in adversarial deltas run once each, with valid arguments",
    faults = [
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.1),
        FaultConfig::chance(FaultKind::LlmWrongContent, 0.05),
    ],
    marks = ["agent.parallel_tools", "agent.tool_failed"],
    run = run,
    rank = 80,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamingToolCalls;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let chunk_chars_max = sim.task_rng("workload.chunking").range_inclusive(1, 8) as usize;
    let llm = sim_model(&sim, "sim", "sim-tools", 32_768, |mut config| {
        config.chunk_chars_max = chunk_chars_max;
        config.tool_call_probability = 0.9;
        config
    });
    let executions = Arc::new(Mutex::new(Vec::new()));
    let config = AgentConfig::default()
        .with_parallel_tools_max(2)
        .with_iterations_max(6);
    let agent = Agent::new(llm, sim.env())
        .with_tools(tool_registry(&sim, &executions, 0.1))
        .with_config(config);
    let prompts = [
        "What is the weather in Oslo?",
        "Find my notes about the offsite.",
        "Book a room for tomorrow at ten.",
    ];
    let mut ids = BTreeSet::new();
    let tools: BTreeSet<String> = tool_definitions().into_iter().map(|t| t.name).collect();
    for prompt in prompts.iter().take(RUNS_PER_SEED) {
        executions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let mut started: Vec<ToolCall> = Vec::new();
        let messages = vec![
            Message::system("Use the tools when they help."),
            Message::user(*prompt),
        ];
        let outcome = agent
            .run_with_events(messages, &mut |event| {
                if let AgentEvent::ToolCallStarted { call } = event {
                    started.push(call);
                }
            })
            .await;
        let ran: Vec<Execution> = executions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let started = offered_calls(&sim, prompt, started, &tools)?;
        check_started_calls(prompt, &started, &ran, &mut ids)?;
        check_outcome(&sim, prompt, outcome)?;
    }
    Ok(())
}

/// The calls of `started` to offered tools. A call to a tool that was never offered (a
/// broken answer) gets an error result and runs nothing; SimLLM only makes one when a
/// fault broke the answer.
fn offered_calls(
    sim: &SimEnvironment,
    prompt: &str,
    started: Vec<ToolCall>,
    tools: &BTreeSet<String>,
) -> Result<Vec<ToolCall>, Violation> {
    let (offered, unknown): (Vec<ToolCall>, Vec<ToolCall>) =
        started.into_iter().partition(|c| tools.contains(&c.name));
    if let Some(call) = unknown.first() {
        ensure!(
            sim.faults().injected_total() > 0,
            "{prompt:?}: call {} to unknown tool {} without any fault",
            call.id,
            call.name
        );
    }
    Ok(offered)
}

/// Invariants 1 and 2: each started call ran once, in order, with its streamed
/// arguments, valid under its schema, and under an id not seen before in the seed.
fn check_started_calls(
    prompt: &str,
    started: &[ToolCall],
    ran: &[Execution],
    ids: &mut BTreeSet<String>,
) -> Result<(), Violation> {
    ensure!(
        ran.len() == started.len(),
        "{prompt:?}: {} calls started, {} tool runs",
        started.len(),
        ran.len()
    );
    for (call, execution) in started.iter().zip(ran) {
        ensure!(
            execution.valid,
            "{prompt:?}: {} ran with arguments invalid under its schema: {}",
            call.name,
            execution.arguments
        );
        ensure!(
            execution.tool == call.name && execution.arguments == call.arguments,
            "{prompt:?}: call {} ({}) ran as {}({})",
            call.id,
            call.arguments,
            execution.tool,
            execution.arguments
        );
        ensure!(
            ids.insert(call.id.clone()),
            "{prompt:?}: call id {} started twice",
            call.id
        );
    }
    Ok(())
}

/// Invariants 3 and 4: a finished run pairs every call with one result; a failed one
/// failed with a provider error after a fault.
fn check_outcome(
    sim: &SimEnvironment,
    prompt: &str,
    outcome: Result<AgentOutcome, AgentError>,
) -> Result<(), Violation> {
    match outcome {
        Ok(outcome) => {
            let calls = outcome
                .messages
                .iter()
                .map(|m| m.tool_calls().len())
                .sum::<usize>();
            ensure!(
                outcome.tool_calls == calls,
                "{prompt:?}: outcome counts {} calls, the conversation has {calls}",
                outcome.tool_calls
            );
            if let Some(id) = orphan_tool_result(&outcome.messages)
                .or_else(|| unanswered_tool_call(&outcome.messages))
            {
                return Err(Violation::new(format!(
                    "{prompt:?}: call {id} is not paired with one result"
                )));
            }
        }
        Err(AgentError::Provider(error)) => {
            ensure!(
                sim.faults().injected_total() > 0,
                "{prompt:?}: provider error without any fault: {error}"
            );
        }
        Err(error) => {
            return Err(Violation::new(format!(
                "{prompt:?}: the agent failed: {error}"
            )));
        }
    }
    Ok(())
}
