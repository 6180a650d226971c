//! Scenario `deep_canary_outbox`: a deep canary in memory on storage, a lost write that
//! needs four storage faults in order.
//!
//! An outbox layer sits between umi-core's `Memory` and SimStorage. A write that fails is
//! parked in the outbox and acknowledged (the outbox is sent when the run ends). When the
//! disk is full while batches are parked, they are spilled aside; when a write is slow
//! while batches are spilled, the layer suspects some spilled batch landed after all, and
//! before the next write reads each one's note back, to send only those that did not. The
//! planted bug: a read-back that fails is taken for "it landed", and that batch is dropped.
//! The batch, acknowledged long ago, is gone, and the no-data-loss checker says so.
//!
//! The events, each a rule with chance 1/20, in order (each fault kind has one rule, so
//! each stepping stone is reached only from the one before):
//! 1. write 2 fails: a batch is parked (`deep_outbox.parked`);
//! 2. write 4 finds the disk full: the parked batch is spilled (`deep_outbox.spilled`);
//! 3. write 6 is slow: a read-back is due (`deep_outbox.recheck_pending`);
//! 4. the read-back (the run's first `storage.read`) fails: the spilled batch is dropped.
//!
//! A blind seed needs all four (odds 1/160,000); each stepping stone is one run in twenty
//! from the one before. Runs only when named (`--scenario deep_canary_outbox`): the
//! default sweep is not expected to find it; `dst explore` is.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use umi_core::env::Env;
use umi_core::memory::{Memory, RememberOptions};
use umi_core::storage::{Storage, StorageError, WriteBatch};
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::{FaultKind, SimEnvironment, SimStorage, Violation};

use crate::common::{Stages, event, facts};

/// Facts remembered per seed (a write each).
const FACTS_PER_SEED: usize = 10;

/// The stepping stones, in order.
const MARKS: &[&str] = &[
    "deep_outbox.parked",
    "deep_outbox.spilled",
    "deep_outbox.recheck_pending",
];

/// The scenario.
#[umi_dst::scenario(
    goal = "an outbox that loses a spilled batch after four storage faults in order (deep planted bug)",
    faults = [
        event(FaultKind::StorageWriteFail, "storage.write", 2),
        event(FaultKind::StorageDiskFull, "storage.write", 4),
        event(FaultKind::StorageLatency, "storage.write", 6),
        event(FaultKind::StorageReadFail, "storage.read", 1),
    ],
    marks = MARKS,
    canary,
    only_when_named,
    run = run,
    rank = 230,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DeepCanaryOutbox;

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
    /// Whether the spilled batches are read back before the next write.
    recheck_pending: bool,
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

    /// Reads back each spilled batch's note, when a recheck is due, and drops the batches
    /// that landed. The planted bug: a read that fails counts as landed.
    async fn recheck_spill(&self, inner: &dyn Storage) {
        if !std::mem::take(&mut self.state().recheck_pending) {
            return;
        }
        let spilled = std::mem::take(&mut self.state().spilled);
        let mut kept = Vec::new();
        for batch in spilled {
            let Some(note) = batch.notes.first() else {
                continue;
            };
            if let Ok(None) = inner.get_note(&note.id).await {
                kept.push(batch);
            }
        }
        self.state().spilled.extend(kept);
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
        self.recheck_spill(inner).await;
        let began = self.env.elapsed();
        match inner.apply(batch.clone()).await {
            Ok(()) => {
                let slow = self.env.elapsed() > began;
                if slow && !self.state().spilled.is_empty() && self.stages.climb(3) {
                    self.state().recheck_pending = true;
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
                self.state().parked.push(batch);
                self.stages.climb(1);
                Ok(())
            }
        }
    }
}
