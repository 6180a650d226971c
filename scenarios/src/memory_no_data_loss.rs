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
//!    entities unless forgotten and each of its evolution links unless an end was
//!    forgotten, every record exactly as acknowledged (a checksum of every field), or the
//!    damage was reported as corruption of exactly that record.
//! 3. No forgotten entity comes back from `recall` or `list`.
//! 4. Every evolution link points at an entity that exists.
//!
//! The workload and the checks are public ([`MemoryWorkload`]), so the SQLite scenario
//! and the planted-bug tests drive exactly this workload over other storages.

use std::collections::BTreeSet;
use std::sync::Arc;

use umi_core::env::{Env, EnvironmentExt};
use umi_core::memory::{Memory, MemoryError, RecallOptions, RememberOptions};
use umi_dst::checkers::memory::{MemoryModel, check_memory, forget_live_entity};
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::{DeterministicRng, FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation};

use crate::common::{facts, question};

/// Facts remembered per seed.
pub const FACTS_PER_SEED: usize = 12;

/// A recall follows every `RECALL_EVERY_STEPS`-th remember.
const RECALL_EVERY_STEPS: usize = 3;

/// A forget follows every `FORGET_EVERY_STEPS`-th remember.
const FORGET_EVERY_STEPS: usize = 4;

/// Queries the final recall check asks.
const CHECK_QUERIES: [&str; 3] = ["Alice", "where did Maria go?", "Paris"];

/// The scenario.
#[umi_dst::scenario(
    goal = "the memory under LLM and storage faults never loses an acknowledged write",
    faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.08),
        FaultConfig::chance(FaultKind::LlmWrongContent, 0.12),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.08),
        FaultConfig::chance(FaultKind::LlmTimeout, 0.04),
        FaultConfig::chance(FaultKind::StorageWriteFail, 0.08),
        FaultConfig::chance(FaultKind::StorageReadFail, 0.08),
        FaultConfig::chance(FaultKind::StorageLatency, 0.2),
        FaultConfig::chance(FaultKind::StorageCorruption, 0.02),
        FaultConfig::chance(FaultKind::StorageDeleteFail, 0.15),
    ],
    marks = [
        "memory.note_after_extraction_failure",
        "memory.evolution_linked",
        "memory.evolution_skipped",
        "memory.rewrite_fused",
        "memory.rewrite_failed",
    ],
    run = run,
    rank = 10,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryNoDataLoss;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let storage = Arc::new(SimStorage::new(&sim));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let mut workload = MemoryWorkload::new(&sim);
    workload.steps(&memory, FACTS_PER_SEED).await?;
    sim.faults().heal();
    workload.check(&memory, &storage.corrupted()).await
}

/// The scenario with a planted bug: every write goes through `hook` before SimStorage
/// (`HookedStorage` over `SimStorage`), the workload and the checks unchanged. For
/// proving the checkers see each kind of loss.
pub async fn run_with_hook<H: WriteHook + 'static>(
    sim: SimEnvironment,
    hook: H,
) -> Result<(), Violation> {
    let storage = Arc::new(HookedStorage::new(SimStorage::new(&sim), hook));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let mut workload = MemoryWorkload::new(&sim);
    workload.steps(&memory, FACTS_PER_SEED).await?;
    sim.faults().heal();
    workload.check(&memory, &storage.inner.corrupted()).await
}

/// The scenario's workload and its model of what the memory acknowledged.
pub struct MemoryWorkload {
    facts: Vec<String>,
    questions: DeterministicRng,
    env: Env,
    step: usize,
    model: MemoryModel,
}

impl std::fmt::Debug for MemoryWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryWorkload")
            .field("facts", &self.facts.len())
            .field("step", &self.step)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl MemoryWorkload {
    /// The workload of the run `sim`: `FACTS_PER_SEED` facts.
    pub fn new(sim: &SimEnvironment) -> Self {
        Self {
            facts: facts(sim, "workload.facts", FACTS_PER_SEED),
            questions: sim.task_rng("workload.questions"),
            env: sim.env(),
            step: 0,
            model: MemoryModel::new(),
        }
    }

    /// What the memory acknowledged so far.
    pub fn model(&self) -> &MemoryModel {
        &self.model
    }

    /// Runs the next `count` steps (fewer if the facts run out): remember a fact, a
    /// recall after every third, a forget of a live entity after every fourth.
    pub async fn steps(&mut self, memory: &Memory, count: usize) -> Result<(), Violation> {
        let end = (self.step + count).min(self.facts.len());
        while self.step < end {
            let step = self.step;
            self.step += 1;
            let text = &self.facts[step];
            match memory.remember(text, RememberOptions::default()).await {
                Ok(outcome) => self.model.remembered(&outcome),
                Err(MemoryError::Storage(_)) => {}
                Err(error) => {
                    return Err(Violation::new(format!(
                        "remember({text:?}) failed with a non-storage error: {error}"
                    )));
                }
            }
            if step % RECALL_EVERY_STEPS == RECALL_EVERY_STEPS - 1 {
                let query = question(&mut self.questions);
                match memory.recall(&query, RecallOptions::default()).await {
                    Ok(_) | Err(MemoryError::Storage(_)) => {}
                    Err(error) => {
                        return Err(Violation::new(format!("recall({query:?}): {error}")));
                    }
                }
            }
            if step % FORGET_EVERY_STEPS == FORGET_EVERY_STEPS - 1 {
                self.forget_one(memory).await;
            }
        }
        Ok(())
    }

    async fn forget_one(&mut self, memory: &Memory) {
        let pick = self.env.random_in_range("workload.forget", 0, 1_000) as usize;
        forget_live_entity(memory, &mut self.model, pick).await;
    }

    /// Every checker, after the faults healed; `rotten` are the records the simulation
    /// rotted (their damage must be reported, not hidden).
    pub async fn check(&self, memory: &Memory, rotten: &BTreeSet<String>) -> Result<(), Violation> {
        check_memory(memory, &self.model, &CHECK_QUERIES, rotten).await
    }
}
