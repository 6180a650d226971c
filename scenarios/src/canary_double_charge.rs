//! Scenario `canary_double_charge`: a planted bug only the effect ledger's checker finds.
//!
//! The agent is umi-core's, but its tools are wrapped by a "resilience" layer of the
//! kind agents grow: a tool call that does not answer within a second is sent again, as
//! it is, once. No idempotency key goes with it. When the first call had already paid
//! before it stalled (`tool.timeout` lets a tool apply its effect, then hang), the second
//! pays again: one logical call, two charges. Nothing the agent sees is wrong (the second
//! call answers), so only `check_effects` over the ledger sees it.
//!
//! Like the [`crate::canary`], a sweep that does not find it is broken; its failures are
//! not regressions and its seeds are not recorded.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use umi_core::agent::{Agent, ToolHandler, ToolInvocation, ToolRegistry};
use umi_core::env::{Env, EnvironmentExt};
use umi_core::llm::Message;
use umi_dst::checkers::effects::check_effects;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation};

use crate::tool_effects::{PROMPTS, agent_config, tools};

/// How long the planted layer waits before it sends a call again.
const RESEND_AFTER: Duration = Duration::from_secs(1);

/// The scenario.
#[umi_dst::scenario(
    goal = "a tool layer that resends a stalled call without an idempotency key (planted bug)",
    faults = [FaultConfig::chance(FaultKind::ToolTimeout, 0.3)],
    marks = ["canary.call_resent"],
    canary,
    run = run,
    rank = 190,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CanaryDoubleCharge;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = tools(&sim);
    let resending = resending(&tools.registry(), &sim.env());
    let agent = Agent::new(sim.llm(), sim.env())
        .with_tools(resending)
        .with_config(agent_config());
    for prompt in PROMPTS {
        let _ = agent
            .run(vec![
                Message::system("Use the tools."),
                Message::user(prompt),
            ])
            .await;
    }
    sim.faults().heal();
    check_effects(&tools.ledger(), &sim.llm().tool_call_ids())
}

/// `registry` with every tool behind the planted resend layer.
fn resending(registry: &ToolRegistry, env: &Env) -> ToolRegistry {
    let mut wrapped = ToolRegistry::new();
    for definition in registry.definitions() {
        let inner = registry
            .handler(&definition.name)
            .expect("every listed tool has its handler");
        let handler = Resend {
            inner,
            env: env.clone(),
        };
        wrapped
            .register(definition, Arc::new(handler))
            .expect("the names were unique in the registry it came from");
    }
    wrapped
}

/// The planted bug: a stalled call is sent again, as it is.
struct Resend {
    inner: Arc<dyn ToolHandler>,
    env: Env,
}

#[async_trait]
impl ToolHandler for Resend {
    async fn call(&self, arguments: Value) -> Result<String, String> {
        self.inner.call(arguments).await
    }

    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        match self
            .env
            .timeout(RESEND_AFTER, self.inner.invoke(invocation.clone()))
            .await
        {
            Ok(outcome) => outcome,
            Err(_) => {
                self.env.cover("canary.call_resent");
                self.inner.invoke(invocation).await
            }
        }
    }
}
