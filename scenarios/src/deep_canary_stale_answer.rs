//! Scenario `deep_canary_stale_answer`: a deep canary in the agent loop, a tool call
//! answered again from a stale cached model answer after four model faults in order.
//!
//! umi-core's agent runs over a model client with a fallback cache, in front of SimLLM.
//! Each agent run is offered one tool, `pay` (side effects), so its first model turn
//! calls it and its second answers. The client starts caching answers once the provider
//! has rate-limited it; a model-not-found while caching makes it trust the cache; an
//! invalid response while trusting turns fallback on: from then, a provider that is down
//! is answered from the cache. The planted bug: answers are cached by the conversation's
//! length, not its content. A first turn answered from the cache gets another run's tool
//! call, id and all, and the agent runs it: the same call pays twice, and the effect
//! ledger's checker says so.
//!
//! The events, each a rule on one model call (`llm.call.agent.step`) with chance 1/20, in order:
//! 1. call 2 (run 1's answer) is rate-limited: caching (`deep_cache.caching`);
//! 2. call 4 (run 2's answer) names no model: trusted (`deep_cache.trusted`);
//! 3. call 6 (run 3's answer) is invalid: fallback on (`deep_cache.fallback_on`);
//! 4. call 7 (run 4's tool turn) finds the provider down: a stale tool call runs.
//!
//! A blind seed needs all four (odds 1/160,000; with all four forced, 336 seeds in 400
//! fail, so about 1/190,000). Runs only when named (`--scenario
//! deep_canary_stale_answer`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::json;
use umi_core::agent::{Agent, AgentConfig};
use umi_core::llm::event_replay::replay;
use umi_core::llm::{
    CompletionRequest, EventStream, LanguageModel, LlmError, LlmErrorKind, Message, ModelRef,
};
use umi_dst::checkers::effects::check_effects;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{FaultKind, SimEnvironment, Violation};

use crate::common::{Stages, event};

/// Agent runs per seed (two model calls each when nothing fails).
const RUNS_PER_SEED: usize = 6;

/// Model turns per run.
const ITERATIONS_MAX: u32 = 3;

/// The stepping stones, in order.
const MARKS: &[&str] = &[
    "deep_cache.caching",
    "deep_cache.trusted",
    "deep_cache.fallback_on",
];

/// The scenario.
#[umi_dst::scenario(
    goal = "an agent's model client that answers from a stale cache after four model faults in order (deep planted bug)",
    faults = [
        event(FaultKind::LlmRateLimit, "llm.call.agent.step", 2),
        event(FaultKind::LlmModelNotFound, "llm.call.agent.step", 4),
        event(FaultKind::LlmInvalidResponse, "llm.call.agent.step", 6),
        event(FaultKind::LlmServiceUnavailable, "llm.call.agent.step", 7),
    ],
    marks = MARKS,
    canary,
    only_when_named,
    run = run,
    rank = 250,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DeepCanaryStaleAnswer;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = SimTools::new(&sim).with(
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
    );
    let llm = sim.llm();
    let client = FallbackCache {
        model: llm.model_ref().clone(),
        inner: llm.clone(),
        cache: Mutex::new(BTreeMap::new()),
        stages: Stages::new(MARKS, sim.env()),
    };
    let agent = Agent::new(Arc::new(client), sim.env())
        .with_tools(tools.registry())
        .with_config(AgentConfig::default().with_iterations_max(ITERATIONS_MAX));
    for run in 1..=RUNS_PER_SEED {
        let _ = agent
            .run(vec![
                Message::system("Use the tools."),
                Message::user(format!("Pay invoice INV-{run}.")),
            ])
            .await;
    }
    sim.faults().heal();
    check_effects(&tools.ledger(), &llm.tool_call_ids())
}

/// The model client with the planted bug.
struct FallbackCache {
    model: ModelRef,
    inner: Arc<dyn LanguageModel>,
    /// Answers by the conversation's length (the bug: not by its content).
    cache: Mutex<BTreeMap<usize, umi_core::llm::CompletionResponse>>,
    stages: Stages,
}

#[async_trait]
impl LanguageModel for FallbackCache {
    fn model_ref(&self) -> &ModelRef {
        &self.model
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        let key = request.messages.len();
        match self.inner.complete(request).await {
            Ok(response) => {
                if self.stages.reached() >= 1 {
                    self.cache().insert(key, response.clone());
                }
                Ok(replay(response))
            }
            Err(error) => {
                let stage = match error.kind() {
                    LlmErrorKind::RateLimit => 1,
                    LlmErrorKind::ModelNotFound => 2,
                    LlmErrorKind::InvalidResponse | LlmErrorKind::Json => 3,
                    _ => 0,
                };
                if stage > 0 {
                    self.stages.climb(stage);
                }
                let fallback = error.kind() == LlmErrorKind::ServiceUnavailable
                    && self.stages.reached() == MARKS.len();
                match self.cache().get(&key).cloned() {
                    Some(cached) if fallback => Ok(replay(cached)),
                    _ => Err(error),
                }
            }
        }
    }
}

impl FallbackCache {
    fn cache(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<usize, umi_core::llm::CompletionResponse>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
