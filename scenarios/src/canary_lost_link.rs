//! Scenario `canary_lost_link`: a planted bug only a checker of evolution links finds.
//!
//! A storage adapter writes each batch in two steps: the note and entities first, then
//! (in a second write) the evolution links. The bug: when the second write fails, it
//! still acknowledges the batch, so the memory reports a link that was never stored.
//! Notes and entities are all there; only the no-data-loss checker's link check sees the
//! loss, once a write fault lands on a batch's links.
//!
//! Like the [`crate::canary`], a sweep that does not find it is broken; its failures are
//! not regressions and its seeds are not recorded.

use std::sync::Arc;

use async_trait::async_trait;
use umi_core::env::Env;
use umi_core::memory::{Memory, RememberOptions};
use umi_core::storage::{Storage, StorageError, WriteBatch};
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation};

use crate::common::facts;

/// Facts remembered per seed.
const FACTS_PER_SEED: usize = 12;

/// The scenario.
#[umi_dst::scenario(
    goal = "a storage adapter that acknowledges evolution links it failed to write (planted bug)",
    faults = [FaultConfig::chance(FaultKind::StorageWriteFail, 0.15)],
    marks = ["canary.links_dropped"],
    canary,
    run = run,
    rank = 180,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CanaryLostLink;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let adapter = TwoStepWrites { env: sim.env() };
    let storage = Arc::new(HookedStorage::new(SimStorage::new(&sim), adapter));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let mut model = MemoryModel::new();
    for text in facts(&sim, "workload.facts", FACTS_PER_SEED) {
        if let Ok(outcome) = memory.remember(&text, RememberOptions::default()).await {
            model.remembered(&outcome);
        }
    }
    sim.faults().heal();
    check_no_data_loss(&memory, &model, &storage.inner.corrupted()).await
}

/// The buggy adapter: links in a second write whose failure is swallowed.
struct TwoStepWrites {
    env: Env,
}

#[async_trait]
impl WriteHook for TwoStepWrites {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        let links = std::mem::take(&mut batch.links);
        inner.apply(batch).await?;
        if !links.is_empty()
            && inner
                .apply(WriteBatch {
                    links,
                    ..WriteBatch::default()
                })
                .await
                .is_err()
        {
            self.env.cover("canary.links_dropped"); // BUG (planted): acknowledged anyway
        }
        Ok(())
    }
}
