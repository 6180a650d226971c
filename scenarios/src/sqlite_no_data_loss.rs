//! Scenario `sqlite_no_data_loss`: the memory on the production `SqliteStorage` never
//! loses what it acknowledged, across a close-and-reopen of the database.
//!
//! Workload: `memory_no_data_loss`'s own ([`MemoryWorkload`]: twelve facts remembered,
//! recalls and forgets between them) under the same model and storage faults, on
//! `SqliteStorage` (the schema, migrations, transactions and FTS5 search users run)
//! instead of the in-memory backend. Storage faults are injected at the `Storage` seam by
//! SimStorage's fault layer over SQLite (`SimStorage::over`). At a step drawn from the
//! seed the database is closed and reopened (uncommitted work is gone, opening checks and
//! migrations run again), and once more after the faults heal, before the checks.
//!
//! The database is SQLite in memory ([`umi_dst::SqliteDisk`]), kept alive across the
//! reopen by an idle handle: no file, so no real I/O in the simulation.
//!
//! Invariants: those of `memory_no_data_loss` (every acknowledged note, entity and
//! link there exactly as acknowledged, or its rot reported; nothing forgotten recalled;
//! no dangling link), checked by the same checkers, after the final reopen.

use std::sync::Arc;

use umi_core::env::EnvironmentExt;
use umi_core::memory::Memory;
use umi_core::storage::Storage;
use umi_dst::SqliteDisk;
use umi_dst::{SimEnvironment, SimStorage, Violation};

use crate::memory_no_data_loss::{FACTS_PER_SEED, MemoryNoDataLoss, MemoryWorkload};

/// The scenario.
#[umi_dst::scenario(
    goal = "the memory on SQLite, under LLM and storage faults and a close-and-reopen, never loses an acknowledged write",
    faults = MemoryNoDataLoss.faults(),
    marks = [
        "memory.note_after_extraction_failure",
        "memory.evolution_linked",
        "memory.evolution_skipped",
        "storage.sqlite_reopened",
    ],
    run = |sim| run_with(sim, |disk| disk),
    rank = 20,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteNoDataLoss;

/// The scenario over `wrap(disk)`: the identity for the scenario itself, a planted bug
/// (`HookedStorage` over the disk) for proving it finds a lost SQLite write.
pub async fn run_with<S: Storage + 'static>(
    sim: SimEnvironment,
    wrap: impl FnOnce(SqliteDisk) -> S,
) -> Result<(), Violation> {
    let disk = SqliteDisk::open(&sim)
        .map_err(|error| Violation::new(format!("opening the SQLite memory: {error}")))?;
    let storage = Arc::new(SimStorage::over(&sim, wrap(disk.clone())));
    let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
    let mut workload = MemoryWorkload::new(&sim);
    let reopen_after =
        sim.env()
            .random_in_range("workload.reopen", 1, FACTS_PER_SEED as u64 - 1) as usize;
    workload.steps(&memory, reopen_after).await?;
    reopen(&sim, &disk)?;
    workload.steps(&memory, FACTS_PER_SEED).await?;
    sim.faults().heal();
    reopen(&sim, &disk)?;
    workload.check(&memory, &storage.corrupted()).await
}

/// Closes and reopens the database; a failure to reopen is a violation.
fn reopen(sim: &SimEnvironment, disk: &SqliteDisk) -> Result<(), Violation> {
    disk.reopen()
        .map_err(|error| Violation::new(format!("reopening the SQLite memory: {error}")))?;
    sim.env().cover("storage.sqlite_reopened");
    Ok(())
}
