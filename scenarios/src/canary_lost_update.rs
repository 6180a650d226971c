//! Scenario `canary_lost_update`: a race between two parallel tool calls that only
//! seeded interleavings expose.
//!
//! A booking layer wraps the `reserve_seat` tool: after a reservation succeeds it reads
//! the seats-taken counter, writes an audit record (another tool call), and stores the
//! counter plus one. A read-modify-write across an await: when two parallel calls
//! interleave inside it, one update is lost. The runtime polls futures ready at the same
//! instant in one fixed order, and both tools answer at once, so without seeded
//! interleavings the window never opens: each call's read, audit and write run in one
//! poll. With them ([`umi_dst::SimConfig::interleave`], on here and in swarm mode), the
//! audit may yield to the other call between the read and the write.
//!
//! Like the [`crate::canary`], a sweep that does not find it is broken; its failures are
//! not regressions and its seeds are not recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use umi_core::agent::{Agent, AgentConfig, ToolHandler, ToolInvocation, ToolRegistry};
use umi_core::env::Env;
use umi_core::llm::Message;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{SimConfig, SimEnvironment, Violation};

/// Agent runs per seed (each may reserve several seats in parallel).
const RUNS_PER_SEED: usize = 4;

/// The scenario.
#[umi_dst::scenario(
    goal = "a counter updated across an await by parallel tool calls (planted race)",
    marks = ["canary.parallel_reservations"],
    canary,
    config = config,
    run = run,
    rank = 200,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CanaryLostUpdate;

/// A seed's config: seeded interleavings on (the race needs an order, no fault).
fn config(seed: u64, swarm: bool) -> SimConfig {
    let config = SimConfig::new(seed).with_interleave();
    if swarm { config.with_swarm() } else { config }
}

/// One seed's workload: `RUNS_PER_SEED` booking runs; a lost update is a violation.
pub async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = SimTools::new(&sim)
        .with(
            SimTool::new(
                "reserve_seat",
                "reserve a seat",
                json!({"type": "object", "properties": {"row": {"type": "integer", "minimum": 1, "maximum": 30}}, "required": ["row"]}),
            )
            .with_latency_ms(0, 0),
        )
        .with(SimTool::new("audit", "record an audit line", json!({"type": "object"})).with_latency_ms(0, 0));
    let registry = tools.registry();
    let booking = Arc::new(Booking {
        reserve: registry.handler("reserve_seat").expect("registered"),
        audit: registry.handler("audit").expect("registered"),
        taken: AtomicU64::new(0),
        reserved: AtomicU64::new(0),
        active: AtomicU64::new(0),
        env: sim.env(),
    });
    let mut offered = ToolRegistry::new();
    let definition = registry
        .definitions()
        .into_iter()
        .find(|d| d.name == "reserve_seat")
        .expect("registered");
    offered
        .register(definition, booking.clone())
        .expect("one tool");
    let agent = Agent::new(sim.llm(), sim.env())
        .with_tools(offered)
        .with_config(
            AgentConfig::default()
                .with_parallel_tools_max(3)
                .with_iterations_max(3),
        );
    for run in 0..RUNS_PER_SEED {
        let prompt = format!("Reserve seats for the {} of us, run {run}.", run + 2);
        let _ = agent.run(vec![Message::user(prompt)]).await;
    }
    let (taken, reserved) = (
        booking.taken.load(Ordering::SeqCst),
        booking.reserved.load(Ordering::SeqCst),
    );
    if taken != reserved {
        return Err(Violation::new(format!(
            "lost update: {reserved} seats reserved, the counter says {taken}"
        )));
    }
    Ok(())
}

/// The planted race: read, await the audit, write.
struct Booking {
    reserve: Arc<dyn ToolHandler>,
    audit: Arc<dyn ToolHandler>,
    taken: AtomicU64,
    reserved: AtomicU64,
    /// Calls inside `invoke` now.
    active: AtomicU64,
    env: Env,
}

#[async_trait]
impl ToolHandler for Booking {
    async fn call(&self, arguments: Value) -> Result<String, String> {
        self.reserve.call(arguments).await
    }

    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        if self.active.fetch_add(1, Ordering::SeqCst) > 0 {
            // Another reservation is inside this layer: their awaits interleave.
            self.env.cover("canary.parallel_reservations");
        }
        let outcome = self.book(invocation).await;
        self.active.fetch_sub(1, Ordering::SeqCst);
        outcome
    }
}

impl Booking {
    async fn book(&self, invocation: ToolInvocation) -> Result<String, String> {
        let call_id = invocation.call_id.clone();
        let result = self.reserve.invoke(invocation).await?;
        self.reserved.fetch_add(1, Ordering::SeqCst);
        let taken = self.taken.load(Ordering::SeqCst);
        let audit = ToolInvocation {
            call_id: format!("{call_id}.audit"),
            name: "audit".into(),
            arguments: json!({}),
        };
        let _ = self.audit.invoke(audit).await;
        self.taken.store(taken + 1, Ordering::SeqCst);
        Ok(result)
    }
}
