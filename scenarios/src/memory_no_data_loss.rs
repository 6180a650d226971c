//! Scenario `memory_no_data_loss`: the Umi memory never loses what it acknowledged.
//!
//! Workload: twelve short facts are remembered one by one (SimLLM extracts entities and
//! detects evolutions), with a recall after every third and a forget after every fourth,
//! under model faults (429s, malformed JSON, streams cut short, stalls) and storage
//! faults (failed writes, reads and deletes, latency, rot). Then the faults heal and the
//! checkers read everything back.
//!
//! Invariants:
//! 1. A `remember` that fails, fails with a storage error: the model's failures degrade
//!    the memory (the text is kept as a note), they never fail it.
//! 2. Every acknowledged `remember` can be found by its exact text, with each of its
//!    entities unless forgotten, or the damage was reported as corruption of exactly that
//!    record.
//! 3. No forgotten entity comes back from `recall` or `list`.
//! 4. Every evolution link points at an entity that exists.

use std::sync::Arc;

use futures::future::LocalBoxFuture;
use umi_core::env::EnvironmentExt;
use umi_core::memory::{Memory, MemoryError, RecallOptions, RememberOptions};
use umi_dst::checkers::memory::{
    MemoryModel, check_forgotten_not_recalled, check_links_point_to_existing, check_no_data_loss,
};
use umi_dst::sweep::Scenario;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation};

use crate::common::{facts, fault, question};

/// Facts remembered per seed.
const FACTS_PER_SEED: usize = 12;

/// The scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryNoDataLoss;

impl Scenario for MemoryNoDataLoss {
    fn name(&self) -> &'static str {
        "memory_no_data_loss"
    }

    fn goal(&self) -> &'static str {
        "the memory under LLM and storage faults never loses an acknowledged write"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        vec![
            fault(FaultKind::LlmRateLimit, 0.08),
            fault(FaultKind::LlmInvalidResponse, 0.12),
            fault(FaultKind::LlmStreamCut, 0.08),
            fault(FaultKind::LlmTimeout, 0.04),
            fault(FaultKind::StorageWriteFail, 0.08),
            fault(FaultKind::StorageReadFail, 0.08),
            fault(FaultKind::StorageLatency, 0.2),
            fault(FaultKind::StorageCorruption, 0.02),
            fault(FaultKind::StorageDeleteFail, 0.15),
        ]
    }

    fn marks(&self) -> &'static [&'static str] {
        &[
            "memory.note_after_extraction_failure",
            "memory.evolution_linked",
            "memory.evolution_skipped",
            "memory.rewrite_fused",
            "memory.rewrite_failed",
        ]
    }

    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run(sim))
    }
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let storage = Arc::new(SimStorage::new(&sim));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let env = sim.env();
    let mut model = MemoryModel::new();
    let mut questions = sim.rng("workload.questions");
    for (step, text) in facts(&sim, "workload.facts", FACTS_PER_SEED)
        .iter()
        .enumerate()
    {
        match memory.remember(text, RememberOptions::default()).await {
            Ok(outcome) => model.remembered(&outcome),
            Err(MemoryError::Storage(_)) => {}
            Err(error) => {
                return Err(Violation::new(format!(
                    "remember({text:?}) failed with a non-storage error: {error}"
                )));
            }
        }
        if step % 3 == 2 {
            let query = question(&mut questions);
            match memory.recall(&query, RecallOptions::default()).await {
                Ok(_) | Err(MemoryError::Storage(_)) => {}
                Err(error) => return Err(Violation::new(format!("recall({query:?}): {error}"))),
            }
        }
        if step % 4 == 3
            && let Some(id) = model
                .live_entity(env.random_in_range("workload.forget", 0, 1_000) as usize)
                .map(str::to_owned)
            && memory.forget(&id).await == Ok(true)
        {
            model.forgot(&id);
        }
    }
    sim.faults().heal();
    let rotten = storage.corrupted();
    check_no_data_loss(&memory, &model, &rotten).await?;
    check_forgotten_not_recalled(
        &memory,
        &model,
        &["Alice", "where did Maria go?", "Paris"],
        &rotten,
    )
    .await?;
    check_links_point_to_existing(&memory, &rotten).await
}
