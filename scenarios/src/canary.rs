//! Scenario `canary`: a planted bug that every sweep must find.
//!
//! A write-back cache in front of SimStorage acknowledges each batch at once and writes
//! batches out three at a time. The bug: when writing out fails, it drops the whole
//! buffer, though every batch in it was acknowledged. The memory's `remember` then
//! reports success for text that is gone, which the no-data-loss checker catches once a
//! write fault lands on a flush.
//!
//! A sweep that does not find this bug is broken (its faults do not fire, its checker
//! does not look, or its seeds do not vary): the canary's failures never count as
//! regressions, but a sweep that misses them fails. Its seeds are not recorded.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use umi_core::env::Env;
use umi_core::memory::{Memory, RememberOptions};
use umi_core::storage::{Storage, StorageError, WriteBatch};
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation};

use crate::common::facts;

/// Batches buffered before they are written out.
const FLUSH_EVERY_BATCHES: usize = 3;

/// Facts remembered per seed.
const FACTS_PER_SEED: usize = 10;

/// The scenario.
#[umi_dst::scenario(
    goal = "a write-back cache that drops acknowledged batches when a flush fails (planted bug)",
    faults = [
        FaultConfig::chance(FaultKind::StorageWriteFail, 0.1),
        FaultConfig::chance(FaultKind::StorageLatency, 0.3),
    ],
    marks = ["canary.batch_dropped"],
    canary,
    run = run,
    rank = 170,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Canary;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let cache = WriteBackCache {
        pending: Mutex::new(Vec::new()),
        env: sim.env(),
    };
    let storage = Arc::new(HookedStorage::new(SimStorage::new(&sim), cache));
    let memory = Memory::new(storage.clone(), sim.env());
    let mut model = MemoryModel::new();
    for text in facts(&sim, "workload.facts", FACTS_PER_SEED) {
        if let Ok(outcome) = memory.remember(&text, RememberOptions::default()).await {
            model.remembered(&outcome);
        }
    }
    sim.faults().heal();
    let _ = storage.hook.flush(&storage.inner).await;
    check_no_data_loss(&memory, &model, &storage.inner.corrupted()).await
}

/// The buggy cache: a write hook in front of SimStorage.
struct WriteBackCache {
    pending: Mutex<Vec<WriteBatch>>,
    env: Env,
}

impl WriteBackCache {
    /// Writes the buffer out to `inner`; on failure (the bug) forgets it.
    async fn flush(&self, inner: &dyn Storage) -> Result<(), StorageError> {
        let batches =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for batch in batches {
            if let Err(error) = inner.apply(batch).await {
                self.env.cover("canary.batch_dropped");
                return Err(error);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl WriteHook for WriteBackCache {
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError> {
        let full = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.push(batch);
            pending.len() >= FLUSH_EVERY_BATCHES
        };
        if full {
            let _ = self.flush(inner).await;
        }
        Ok(())
    }
}
