//! Scenario `tool_effects`: an agent whose tools fail as real tools do, one of them
//! paying invoices, under model faults too.
//!
//! Workload: three agent runs (umi-core's loop over SimLLM, in process, so the model's
//! call ids are the ones the tools see), each offered three simulated tools:
//! `get_weather` (results generated from its output schema), `search_notes` (a function
//! of the query) and `pay` (side effects: every run of it is an effect in the ledger).
//! Tools time out (after paying, sometimes), fail, never get the call, answer garbage,
//! nothing, or late; the model's streams are cut, and the agent sends a cut turn again.
//!
//! Invariants:
//! 1. No effect is applied twice for one logical call (the model's call id), whatever
//!    the agent retried: a cut turn sent again, a tool that timed out.
//! 2. No effect belongs to a call the model never made.
//! 3. The model gets exactly one result for every call it made, in every request.
//! 4. Every run ends within its bounds (turns and simulated time).

use std::time::Duration;

use serde_json::json;
use umi_core::agent::{Agent, AgentConfig};
use umi_core::llm::Message;
use umi_dst::checkers::effects::check_effects;
use umi_dst::checkers::tool_results::check_tool_results;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

/// Model turns per run.
const ITERATIONS_MAX: u32 = 6;

/// The agent's tool timeout.
const TOOL_TIMEOUT: Duration = Duration::from_secs(5);

/// Retries of a turn whose stream was cut.
const STREAM_CUT_RETRIES_MAX: u32 = 2;

/// The scenario.
#[umi_dst::scenario(
    goal = "an agent whose tools fail as real ones do never pays twice for one call",
    faults = [
        FaultConfig::chance(FaultKind::ToolTimeout, 0.1),
        FaultConfig::chance(FaultKind::ToolErrorResult, 0.08),
        FaultConfig::chance(FaultKind::ToolTransportError, 0.05),
        FaultConfig::chance(FaultKind::ToolMalformedResult, 0.05),
        FaultConfig::chance(FaultKind::ToolSlow, 0.1),
        FaultConfig::chance(FaultKind::ToolEmptyResult, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.05),
    ],
    marks = [
        "agent.tool_failed",
        "agent.tool_timeout",
        "agent.stream_retry",
        "tool.effect",
        "tool.effect_then_stall",
    ],
    run = run,
    rank = 130,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolEffects;

/// The three tools every run is offered.
pub fn tools(sim: &SimEnvironment) -> SimTools {
    SimTools::new(sim)
        .with(
            SimTool::new(
                "get_weather",
                "the weather in a city",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            )
            .with_output_schema(json!({"type": "object", "properties": {
                "celsius": {"type": "integer", "minimum": -40, "maximum": 45},
                "sky": {"enum": ["clear", "cloudy", "rain", "snow"]}
            }, "required": ["celsius", "sky"]})),
        )
        .with(
            SimTool::new(
                "search_notes",
                "search the user's notes",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            )
            .with_fn(|arguments, rng| {
                let hits = rng.below(3);
                Ok(json!({"query": arguments["query"], "hits": hits}))
            }),
        )
        .with(
            SimTool::new(
                "pay",
                "pay an invoice",
                json!({"type": "object", "properties": {
                    "invoice_id": {"type": "string"},
                    "amount_cents": {"type": "integer", "minimum": 1, "maximum": 100000}
                }, "required": ["invoice_id", "amount_cents"]}),
            )
            .with_side_effects()
            .with_latency_ms(50, 800),
        )
}

/// The agent's config: bounded turns, a tool timeout, cut turns sent again.
pub fn agent_config() -> AgentConfig {
    AgentConfig::default()
        .with_iterations_max(ITERATIONS_MAX)
        .with_parallel_tools_max(2)
        .with_tool_timeout(TOOL_TIMEOUT)
        .with_stream_cut_retries_max(STREAM_CUT_RETRIES_MAX)
}

/// The prompts of one seed's runs.
pub const PROMPTS: [&str; 3] = [
    "Pay invoice INV-7 and tell me the weather in Oslo.",
    "Search my notes for the landlord's invoice, then pay it.",
    "What is the weather in Kyoto?",
];

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = tools(&sim);
    let agent = Agent::new(sim.llm(), sim.env())
        .with_tools(tools.registry())
        .with_config(agent_config());
    let env = sim.env();
    // A turn: a model answer (cut ones sent again) and two rounds of tools, each bounded
    // by the tool timeout; latency is seconds at most.
    let run_max = (TOOL_TIMEOUT * 2 + Duration::from_secs(120)) * ITERATIONS_MAX;
    for prompt in PROMPTS {
        let began = env.elapsed();
        let _outcome = agent
            .run(vec![
                Message::system("Use the tools."),
                Message::user(prompt),
            ])
            .await;
        let took = env.elapsed() - began;
        ensure!(
            took <= run_max,
            "{prompt:?}: the run took {took:?}, over {run_max:?}"
        );
    }
    sim.faults().heal();
    check_effects(&tools.ledger(), &sim.llm().tool_call_ids())?;
    check_tool_results(&sim.llm())
}
