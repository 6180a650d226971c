//! Planted bugs the memory scenarios must find: one storage bug per kind of loss (a whole
//! batch, a note, an entity, a delete, an evolution link, altered entity content), each
//! planted with `umi_dst::doubles::HookedStorage` between the memory and its storage, each found by the
//! memory checker within `PLANTED_SEEDS_MAX` seeds of the default sweep (from its default
//! start, the scenario's default faults), as the kind of loss it is.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::future::LocalBoxFuture;
use umi_core::storage::{Storage, StorageError, WriteBatch};
use umi_dst::Scenario;
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::scenario::run_one;
use umi_dst::{FailureClass, FaultConfig, SimEnvironment, Violation};
use umi_scenarios::memory_no_data_loss::{MemoryNoDataLoss, run_with_hook};
use umi_scenarios::sqlite_no_data_loss::{SqliteNoDataLoss, run_with};
use umi_sweep::SweepOptions;

/// Seeds of the default sweep within which every planted bug must be found.
const PLANTED_SEEDS_MAX: u64 = 200;

/// The batch-losing bug drops every `LOST_BATCH_EVERY`-th batch.
const LOST_BATCH_EVERY: usize = 4;

/// `memory_no_data_loss` with a bug planted in front of its storage.
struct Planted {
    name: &'static str,
    hook: fn() -> Box<dyn WriteHook>,
}

impl Scenario for Planted {
    fn name(&self) -> &'static str {
        self.name
    }
    fn goal(&self) -> &'static str {
        "memory_no_data_loss with a planted storage bug"
    }
    fn faults(&self) -> Vec<FaultConfig> {
        MemoryNoDataLoss.faults()
    }
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run_with_hook(sim, BoxedHook((self.hook)())))
    }
}

struct BoxedHook(Box<dyn WriteHook>);

#[async_trait]
impl WriteHook for BoxedHook {
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError> {
        self.0.apply(inner, batch).await
    }
}

/// The first seed of the default sweep (at most `PLANTED_SEEDS_MAX` of them) at which
/// `scenario` fails, with its message; the failure must be a correctness violation.
fn first_failure(scenario: &dyn Scenario) -> Option<(u64, String)> {
    let start = SweepOptions::default().seed_start;
    (start..start + PLANTED_SEEDS_MAX).find_map(|seed| {
        run_one(scenario, seed, false, |config| config)
            .failure
            .map(|(class, message)| {
                assert_eq!(
                    class,
                    FailureClass::Correctness,
                    "{}: seed {seed}: {message}",
                    scenario.name()
                );
                (seed, message)
            })
    })
}

/// `scenario`'s bug is found within `PLANTED_SEEDS_MAX` seeds as a violation saying
/// `expected`; prints the seed.
fn assert_found(scenario: &dyn Scenario, expected: &str) {
    let start = SweepOptions::default().seed_start;
    let Some((seed, message)) = first_failure(scenario) else {
        panic!(
            "{}: the planted bug was not found in seeds {start}..{}",
            scenario.name(),
            start + PLANTED_SEEDS_MAX
        );
    };
    #[allow(clippy::print_stderr)] // which seed found it, shown with --nocapture
    {
        eprintln!(
            "{}: found at seed {seed} ({} from the start): {message}",
            scenario.name(),
            seed - start + 1
        );
    }
    assert!(
        message.contains(expected),
        "{}: seed {seed} failed for another reason: {message}",
        scenario.name()
    );
}

/// Acknowledges every `LOST_BATCH_EVERY`-th batch without writing it.
#[derive(Default)]
struct LosesBatches {
    batches: AtomicUsize,
}

#[async_trait]
impl WriteHook for LosesBatches {
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError> {
        if self.batches.fetch_add(1, Ordering::Relaxed) % LOST_BATCH_EVERY == LOST_BATCH_EVERY - 1 {
            return Ok(());
        }
        inner.apply(batch).await
    }
}

/// Writes every batch without its notes.
struct LosesNotes;

#[async_trait]
impl WriteHook for LosesNotes {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        batch.notes.clear();
        inner.apply(batch).await
    }
}

/// Writes every batch without its last entity that no link of the batch points at.
struct LosesEntities;

#[async_trait]
impl WriteHook for LosesEntities {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        let linked = |id: &str| batch.links.iter().any(|l| l.from_id == id || l.to_id == id);
        if let Some(index) = batch.entities.iter().rposition(|e| !linked(&e.id)) {
            batch.entities.remove(index);
        }
        inner.apply(batch).await
    }
}

/// Acknowledges every delete without deleting.
struct LosesDeletes;

#[async_trait]
impl WriteHook for LosesDeletes {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        batch.delete_entities.clear();
        if batch.is_empty() {
            return Ok(());
        }
        inner.apply(batch).await
    }
}

/// Writes every batch without its evolution links.
struct LosesLinks;

#[async_trait]
impl WriteHook for LosesLinks {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        batch.links.clear();
        inner.apply(batch).await
    }
}

/// Writes each entity's content cut to its first half (a lossy encoding).
struct AltersContent;

#[async_trait]
impl WriteHook for AltersContent {
    async fn apply(&self, inner: &dyn Storage, mut batch: WriteBatch) -> Result<(), StorageError> {
        for entity in &mut batch.entities {
            let mut half = entity.content.len() / 2;
            while !entity.content.is_char_boundary(half) {
                half -= 1;
            }
            entity.content.truncate(half);
        }
        inner.apply(batch).await
    }
}

#[test]
fn a_lost_batch_is_found() {
    assert_found(
        &Planted {
            name: "planted_lost_batch",
            hook: || Box::new(LosesBatches::default()),
        },
        "lost write",
    );
}

#[test]
fn a_lost_note_is_found() {
    assert_found(
        &Planted {
            name: "planted_lost_note",
            hook: || Box::new(LosesNotes),
        },
        "lost write: acknowledged note",
    );
}

#[test]
fn a_lost_entity_is_found() {
    assert_found(
        &Planted {
            name: "planted_lost_entity",
            hook: || Box::new(LosesEntities),
        },
        "lost write: entity",
    );
}

#[test]
fn a_lost_delete_is_found() {
    assert_found(
        &Planted {
            name: "planted_lost_delete",
            hook: || Box::new(LosesDeletes),
        },
        "forgotten entity",
    );
}

#[test]
fn a_lost_link_is_found() {
    assert_found(
        &Planted {
            name: "planted_lost_link",
            hook: || Box::new(LosesLinks),
        },
        "lost write: link",
    );
}

#[test]
fn altered_entity_content_is_found() {
    assert_found(
        &Planted {
            name: "planted_altered_content",
            hook: || Box::new(AltersContent),
        },
        "altered",
    );
}

/// `sqlite_no_data_loss` with the batch-losing bug planted between SimStorage's fault
/// layer and SQLite: a write SQLite never committed, acknowledged.
struct PlantedInSqlite;

impl Scenario for PlantedInSqlite {
    fn name(&self) -> &'static str {
        "planted_lost_sqlite_write"
    }
    fn goal(&self) -> &'static str {
        "sqlite_no_data_loss with a lost SQLite write"
    }
    fn faults(&self) -> Vec<FaultConfig> {
        SqliteNoDataLoss.faults()
    }
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run_with(sim, |disk| {
            HookedStorage::new(disk, LosesBatches::default())
        }))
    }
}

#[test]
fn a_lost_sqlite_write_is_found() {
    assert_found(&PlantedInSqlite, "lost write");
}

/// Issue 39, item 3: a support agent that retries the whole run after a model failure
/// that came after its refund ran refunds the order twice; found within
/// `PLANTED_SEEDS_MAX` seeds (SimLLM takes the order id from the user's message, and
/// amounts can be positive). Its correct twin (an idempotent refund) passes the same
/// seeds. Prints, for each, how many seeds failed, refunded at all, and refunded the
/// order the user named.
#[test]
fn a_refund_made_twice_after_a_whole_run_retry_is_found() {
    use umi_scenarios::planted_refund_twice::RefundAgent;
    let planted = RefundAgent { idempotent: false };
    let correct = RefundAgent { idempotent: true };
    let (planted_failed, _, _) = refund_figures(&planted);
    let (correct_failed, _, _) = refund_figures(&correct);
    assert_eq!(correct_failed, 0, "the correct agent never refunds twice");
    assert!(planted_failed > 0, "the planted agent was not found");
    assert_found(&planted, "was refunded 2 times");
}

/// Over the default sweep's first `PLANTED_SEEDS_MAX` seeds: how many failed, refunded
/// some order, and refunded the order the user named (printed).
fn refund_figures(scenario: &dyn Scenario) -> (u64, u64, u64) {
    use umi_scenarios::planted_refund_twice::{MARK_NAMED_ORDER, MARK_REFUNDED};
    let start = SweepOptions::default().seed_start;
    let (mut failed, mut refunded, mut named) = (0, 0, 0);
    for seed in start..start + PLANTED_SEEDS_MAX {
        let run = run_one(scenario, seed, false, |config| config);
        failed += u64::from(!run.passed());
        refunded += u64::from(run.marks.contains_key(MARK_REFUNDED));
        named += u64::from(run.marks.contains_key(MARK_NAMED_ORDER));
    }
    #[allow(clippy::print_stderr)] // the figures, shown with --nocapture
    {
        eprintln!(
            "{}: of {PLANTED_SEEDS_MAX} seeds, {failed} failed, {refunded} refunded an order, {named} refunded the order the user named",
            scenario.name()
        );
    }
    (failed, refunded, named)
}
