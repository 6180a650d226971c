//! The support bot as a sweep scenario: five questions, with model and storage faults.
//!
//! Invariants:
//! 1. Every question ends (answered or not) within the bot's own budget: its attempts,
//!    their timeouts and the waits between them.
//! 2. A reply took at most `attempts_max` attempts; a failure is a model failure after
//!    faults, or a storage failure, never anything else.
//! 3. Every answered question is remembered: after the faults heal, its note is found.

use std::sync::Arc;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use umi_core::llm::router::{LlmRouter, RetryPolicy};
use umi_core::memory::{Memory, RememberOptions};
use umi_dst::Scenario;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation, ensure};

use crate::bot::{BotConfig, BotError, SupportBot};

/// The questions each seed asks.
const QUESTIONS: [&str; 5] = [
    "Where is my order?",
    "Can I change the delivery address to Oslo?",
    "Why was I charged twice?",
    "Does the Pro plan include support?",
    "How do I reset my password?",
];

/// The scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct SupportBotScenario;

impl Scenario for SupportBotScenario {
    fn name(&self) -> &'static str {
        "support_bot"
    }

    fn goal(&self) -> &'static str {
        "the support bot answers in bounded time and remembers every question it answered"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        [
            (FaultKind::LlmRateLimit, 0.1),
            (FaultKind::LlmTimeout, 0.05),
            (FaultKind::LlmServiceUnavailable, 0.05),
            (FaultKind::StorageWriteFail, 0.05),
        ]
        .into_iter()
        .map(|(kind, p)| FaultConfig::chance(kind, p))
        .collect()
    }

    fn marks(&self) -> &'static [&'static str] {
        &["memory.rewrite_fused"]
    }

    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run(sim))
    }
}

/// One seed: the questions, then the checks.
pub async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let storage = Arc::new(SimStorage::new(&sim));
    // The memory's own model calls (extraction, query rewriting) go through a router, for
    // its timeouts and retries: the first sweep of this scenario, with the SimLLM handed
    // straight to the memory, found questions stuck for ten minutes behind a stalled
    // rewrite call.
    let retry = RetryPolicy::default()
        .with_request_timeout_ms(15_000)
        .with_deadline_ms(40_000);
    let router = LlmRouter::builder(sim.env())
        .model("sim/sim-large", sim.llm())
        .default_model("sim/sim-large")
        .retry(retry)
        .build()
        .map_err(|e| Violation::new(format!("the router config: {e}")))?;
    let memory = Memory::new(storage, sim.env()).with_llm(Arc::new(router));
    // What the bot knows before the questions (a failed write here is a fault, not a bug).
    let _ = memory
        .remember(
            "Alice ordered a Pro plan and lives in Paris.",
            RememberOptions::default(),
        )
        .await;
    let config = BotConfig::default();
    let bot = SupportBot::new(sim.llm(), memory.clone(), sim.env(), config);
    let env = sim.env();
    // The bot's attempts and waits, plus the memory's recall and remember (each a routed
    // call within the router's deadline).
    let budget = (config.attempt_timeout + config.wait_max) * config.attempts_max
        + Duration::from_millis(retry.deadline_ms * 2);
    let mut answered = Vec::new();
    for question in QUESTIONS {
        let started = env.elapsed();
        let outcome = bot.answer(question).await;
        let took = env.elapsed() - started;
        ensure!(
            took <= budget,
            "{question:?} took {took:?}, over the budget {budget:?}"
        );
        match outcome {
            Ok(reply) => {
                ensure!(
                    (1..=config.attempts_max).contains(&reply.attempts),
                    "{question:?}: {} attempts",
                    reply.attempts
                );
                answered.push(question);
            }
            Err(BotError::Model { attempts, .. }) => ensure!(
                attempts <= config.attempts_max,
                "{question:?}: {attempts} attempts"
            ),
            Err(BotError::Memory(_)) => {}
        }
    }
    sim.faults().heal();
    for question in answered {
        let text = format!("The customer asked: {question}");
        let notes = memory.notes_with_text(&text).await?;
        ensure!(
            !notes.is_empty(),
            "answered {question:?} but did not remember it"
        );
    }
    Ok(())
}
