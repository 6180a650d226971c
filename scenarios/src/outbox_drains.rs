//! Scenario `outbox_drains`: a write-behind outbox in front of the memory drains once the
//! storage heals. The first scenario with a liveness phase (ADR 0023).
//!
//! Workload: twelve facts arrive one to five simulated seconds apart and are queued in an
//! outbox; a drainer remembers the outbox's oldest fact in the Umi memory (SimLLM extracts
//! entities), retrying a failed `remember` after a backoff that doubles from one second
//! up to four. The storage fails often (30% of writes) and is slow at times. After the last
//! fact arrives the faults heal (`sim.heal()`).
//!
//! Invariants:
//! 1. Liveness: after the heal, the outbox drains within `DRAIN_BOUND` of simulated time
//!    (`umi_dst::eventually`); a drainer that stops retrying fails as a liveness failure
//!    naming "the outbox drains" ([`OutboxGivesUp`] plants one).
//! 2. Every fact the drainer saw acknowledged can be found, whole (the memory's
//!    no-data-loss checker).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use umi_core::env::EnvironmentExt;
use umi_core::memory::{Memory, RememberOptions};
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, SimStorage, Violation, ensure, eventually};

use crate::common::facts;

/// Facts per seed.
pub const FACTS_PER_SEED: usize = 12;

/// How long the outbox has to drain after the heal.
pub const DRAIN_BOUND: Duration = Duration::from_secs(120);

/// How long an idle drainer waits before it looks at the outbox again.
const IDLE_PAUSE: Duration = Duration::from_millis(250);

/// Rounds (attempts and idle waits) one drainer runs at most.
const DRAIN_ROUNDS_MAX: u32 = 10_000;

/// How the drainer retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainPolicy {
    /// The pause after the first failure in a row; it doubles with each further one.
    pub backoff_first: Duration,
    /// The longest pause.
    pub backoff_max: Duration,
    /// The planted bug, when set: after this many failures in a row the drainer stops
    /// for good (it waits for a wake-up nothing sends), so the outbox never drains.
    pub gives_up_after: Option<u32>,
}

impl Default for DrainPolicy {
    fn default() -> Self {
        Self {
            backoff_first: Duration::from_secs(1),
            backoff_max: Duration::from_secs(4),
            gives_up_after: None,
        }
    }
}

impl DrainPolicy {
    /// The pause after `failures` failures in a row (at least one).
    fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(16);
        (self.backoff_first * (1u32 << doublings)).min(self.backoff_max)
    }
}

/// The scenario.
#[umi_dst::scenario(
    goal = "a write-behind outbox in front of the memory drains once the storage heals (liveness)",
    faults = [
        FaultConfig::chance(FaultKind::StorageWriteFail, 0.3),
        FaultConfig::chance(FaultKind::StorageLatency, 0.2),
    ],
    marks = ["outbox.retried", "outbox.backoff_capped"],
    run = |sim| run_with(sim, DrainPolicy::default()),
    rank = 160,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct OutboxDrains;

/// The drainer that gives up after `GIVES_UP_AFTER_FAILURES` failures in a row.
pub const GIVES_UP_AFTER_FAILURES: u32 = 2;

/// `outbox_drains` with a planted never-heals bug: its drainer gives up for good after
/// [`GIVES_UP_AFTER_FAILURES`] failures in a row, so on a seed where that happens the
/// outbox never drains and the run fails as a liveness failure naming "the outbox
/// drains". Run only when named (`dst replay --scenario outbox_gives_up --seed N`), not
/// in [`crate::all`]: it proves the liveness phase finds what it is for.
#[umi_dst::scenario(
    goal = "outbox_drains with a drainer that gives up for good (planted liveness bug)",
    faults = OutboxDrains.faults(),
    only_when_named,
    run = |sim| run_with(
        sim,
        DrainPolicy {
            gives_up_after: Some(GIVES_UP_AFTER_FAILURES),
            ..DrainPolicy::default()
        },
    ),
    rank = 260,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct OutboxGivesUp;

/// The scenario with the drainer's `policy` (the tests plant the drainer that gives up).
pub async fn run_with(sim: SimEnvironment, policy: DrainPolicy) -> Result<(), Violation> {
    let storage = Arc::new(SimStorage::new(&sim));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let outbox = Outbox::default();
    let drainer = drain(&sim, &memory, &outbox, policy);
    let phases = async {
        arrive(&sim, &outbox).await;
        sim.heal();
        let drained = eventually(&sim, DRAIN_BOUND, "the outbox drains", || async {
            let queued = outbox.queued.borrow().len();
            ensure!(
                queued == 0,
                "{queued} of {FACTS_PER_SEED} facts still queued"
            );
            Ok(())
        })
        .await;
        outbox.stopped.set(true);
        drained
    };
    futures::join!(drainer, phases).1?;
    let model = outbox.model.take();
    check_no_data_loss(&memory, &model, &storage.corrupted()).await
}

/// The outbox, the model of what the memory acknowledged, and the stop signal.
#[derive(Default)]
struct Outbox {
    queued: RefCell<VecDeque<String>>,
    model: RefCell<MemoryModel>,
    stopped: Cell<bool>,
}

/// The fault phase: every fact arrives in the outbox, one to five seconds apart.
async fn arrive(sim: &SimEnvironment, outbox: &Outbox) {
    let env = sim.env();
    for text in facts(sim, "workload.facts", FACTS_PER_SEED) {
        outbox.queued.borrow_mut().push_back(text);
        let pause = env.random_in_range("workload.arrivals", 1_000, 5_000);
        env.sleep(Duration::from_millis(pause)).await;
    }
}

/// The drainer: remembers the oldest queued fact, retrying with backoff, until stopped.
async fn drain(sim: &SimEnvironment, memory: &Memory, outbox: &Outbox, policy: DrainPolicy) {
    let env = sim.env();
    let mut failures = 0u32;
    for _ in 0..DRAIN_ROUNDS_MAX {
        if outbox.stopped.get() {
            return;
        }
        let head = outbox.queued.borrow().front().cloned();
        let stuck = policy.gives_up_after.is_some_and(|limit| failures >= limit);
        let Some(text) = head.filter(|_| !stuck) else {
            // Idle, or (the planted bug) given up: nothing wakes it but the stop.
            env.sleep(IDLE_PAUSE).await;
            continue;
        };
        match memory.remember(&text, RememberOptions::default()).await {
            Ok(outcome) => {
                failures = 0;
                outbox.model.borrow_mut().remembered(&outcome);
                outbox.queued.borrow_mut().pop_front();
            }
            Err(_) => {
                failures += 1;
                env.cover("outbox.retried");
                let pause = policy.backoff(failures);
                if pause == policy.backoff_max {
                    env.cover("outbox.backoff_capped");
                }
                env.sleep(pause).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let policy = DrainPolicy::default();
        let pauses: Vec<u64> = (1..=6)
            .map(|failures| policy.backoff(failures).as_millis() as u64)
            .collect();
        assert_eq!(pauses, [1_000, 2_000, 4_000, 4_000, 4_000, 4_000]);
    }
}
