//! Scenario `deep_canary_outbox`: a deep canary in memory on storage, a lost write that
//! needs four storage faults in order.
//!
//! An outbox layer sits between umi-core's `Memory` and SimStorage. A write that fails is
//! parked in the outbox and acknowledged (the outbox is sent when the run ends). When the
//! disk is full while batches are parked, they are spilled aside; when a write is slow
//! while batches are spilled, the layer decides to send the spill along with the next
//! write, merged into it. The planted bug: it clears the spill when it builds the merged
//! batch, and when that merged write fails it parks only the caller's own batch. The
//! spilled batches, acknowledged long ago, are gone, and the no-data-loss checker says so.
//!
//! The events, each a rule on one `storage.write` with chance 1/20, in order:
//! 1. write 2 fails: a batch is parked (`deep_outbox.parked`);
//! 2. write 4 finds the disk full: the parked batch is spilled (`deep_outbox.spilled`);
//! 3. write 6 is slow: the spill rides on the next write (`deep_outbox.merge_pending`);
//! 4. write 7 (the merged one) fails: the spilled batch is lost.
//!
//! A blind seed needs all four (odds 1/160,000); each stepping stone is one run in twenty
//! from the one before. Runs only when named (`--scenario deep_canary_outbox`): the
//! default sweep is not expected to find it; `dst explore` is.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::future::LocalBoxFuture;
use umi_core::env::Env;
use umi_core::memory::{Memory, RememberOptions};
use umi_core::storage::{Storage, StorageError, WriteBatch};
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::planted::{HookedStorage, WriteHook};
use umi_dst::{FaultConfig, FaultKind, Scenario, SimEnvironment, SimStorage, Violation};

use crate::common::{Stages, event, facts};

/// Facts remembered per seed (a write each).
const FACTS_PER_SEED: usize = 10;

/// The stepping stones, in order.
const MARKS: &[&str] = &[
    "deep_outbox.parked",
    "deep_outbox.spilled",
    "deep_outbox.merge_pending",
];

/// The scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeepCanaryOutbox;

impl Scenario for DeepCanaryOutbox {
    fn name(&self) -> &'static str {
        "deep_canary_outbox"
    }

    fn goal(&self) -> &'static str {
        "an outbox that loses a spilled batch after four storage faults in order (deep planted bug)"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        vec![
            event(FaultKind::StorageWriteFail, "storage.write", 2),
            event(FaultKind::StorageDiskFull, "storage.write", 4),
            event(FaultKind::StorageLatency, "storage.write", 6),
            event(FaultKind::StorageWriteFail, "storage.write", 7),
        ]
    }

    fn marks(&self) -> &'static [&'static str] {
        MARKS
    }

    fn is_canary(&self) -> bool {
        true
    }

    fn only_when_named(&self) -> bool {
        true
    }

    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run(sim))
    }
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let outbox = Outbox {
        state: Mutex::new(State::default()),
        stages: Stages::new(MARKS, sim.env()),
        env: sim.env(),
    };
    let storage = Arc::new(HookedStorage::new(SimStorage::new(&sim), outbox));
    let memory = Memory::new(storage.clone(), sim.env());
    let mut model = MemoryModel::new();
    for text in facts(&sim, "workload.facts", FACTS_PER_SEED) {
        if let Ok(outcome) = memory.remember(&text, RememberOptions::default()).await {
            model.remembered(&outcome);
        }
    }
    sim.faults().heal();
    storage.hook.send_outbox(&storage.inner).await;
    check_no_data_loss(&memory, &model, &storage.inner.corrupted()).await
}

/// What the outbox holds.
#[derive(Debug, Default)]
struct State {
    /// Acknowledged batches whose write failed, sent when the run ends.
    parked: Vec<WriteBatch>,
    /// Parked batches moved aside when the disk was full, sent at the end too.
    spilled: Vec<WriteBatch>,
    /// Whether the spill rides on the next write.
    merge_pending: bool,
}

/// The layer with the planted bug.
struct Outbox {
    state: Mutex<State>,
    stages: Stages,
    env: Env,
}

impl Outbox {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `batch` with the spill merged in when a merge is pending (the bug: the spill is
    /// cleared here, before the merged write is known to have landed).
    fn with_spill(&self, mut batch: WriteBatch) -> (WriteBatch, WriteBatch) {
        let own = batch.clone();
        let mut state = self.state();
        if std::mem::take(&mut state.merge_pending) {
            for spilled in std::mem::take(&mut state.spilled) {
                batch.notes.extend(spilled.notes);
                batch.entities.extend(spilled.entities);
                batch.vectors.extend(spilled.vectors);
                batch.links.extend(spilled.links);
                batch.delete_entities.extend(spilled.delete_entities);
            }
        }
        (batch, own)
    }

    /// Sends what is parked and spilled (faults are healed by then).
    async fn send_outbox(&self, inner: &dyn Storage) {
        let batches: Vec<WriteBatch> = {
            let mut state = self.state();
            let mut batches = std::mem::take(&mut state.spilled);
            batches.append(&mut state.parked);
            batches
        };
        for batch in batches {
            let _ = inner.apply(batch).await;
        }
    }
}

#[async_trait]
impl WriteHook for Outbox {
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError> {
        let (sent, own) = self.with_spill(batch);
        let began = self.env.elapsed();
        match inner.apply(sent).await {
            Ok(()) => {
                let slow = self.env.elapsed() > began;
                if slow && !self.state().spilled.is_empty() && self.stages.climb(3) {
                    self.state().merge_pending = true;
                }
                Ok(())
            }
            Err(StorageError::DiskFull) => {
                let mut state = self.state();
                if !state.parked.is_empty() && self.stages.climb(2) {
                    let parked = std::mem::take(&mut state.parked);
                    state.spilled.extend(parked);
                }
                Err(StorageError::DiskFull)
            }
            Err(_) => {
                self.state().parked.push(own);
                self.stages.climb(1);
                Ok(())
            }
        }
    }
}
