//! SqliteDisk: the production `SqliteStorage` in a simulation, on a database that
//! outlives its connections, so a run can close and reopen it.
//!
//! The database is SQLite in memory (`SqliteStorage::open_in_memory`), not a file: per
//! docs/adr/0001-determinism.md code in a simulation does no real I/O, and an in-memory
//! SQLite is computation (same seed, same bytes, no fsync, no filesystem that can fill
//! up or be slow, nothing left behind by a run the watchdog retired). Its queries run on
//! the simulation's thread, so paused time never races a worker thread.
//!
//! What a file gives that a lone connection does not is a life beyond the connection.
//! Here that life is a second handle, held idle for the whole run: the "disk". A
//! close-and-reopen ([`SqliteDisk::reopen`]) drops the working connection (whatever it
//! had not committed is gone) and opens the name again (header, pragmas and migrations
//! run again on what is there). Every run gets its own name (seed and a process-wide
//! counter): the same seed can run twice at once (the determinism check, parallel tests)
//! and must not share a database. The name never enters the trace.
//!
//! A run's database starts as a copy of a migrated image built once per worker thread
//! (`sqlite_disk/image.rs`): the schema is not built again for every seed. The working connection
//! opens the copy as production opens a file (header, pragmas, migrations).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use umi_core::storage::{
    Entity, EntityVector, EvolutionLink, Note, SearchHit, SqliteStorage, Storage, StorageError,
    WriteBatch,
};

use crate::environment::SimEnvironment;
use crate::trace::{StorageEvent, Trace};

mod image;

/// Databases opened by this process, for unique names.
static DATABASES_OPENED: AtomicU64 = AtomicU64::new(0);

/// A handle to the run's SQLite database; clones share it.
#[derive(Clone)]
pub struct SqliteDisk {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    /// The idle handle that keeps the database alive across reopens.
    _disk: Mutex<rusqlite::Connection>,
    /// The working connection (none between a close and a reopen that failed).
    current: Mutex<Option<Arc<SqliteStorage>>>,
    trace: Arc<Trace>,
}

impl std::fmt::Debug for SqliteDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDisk")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl SqliteDisk {
    /// A fresh, migrated database for the run `sim`.
    pub fn open(sim: &SimEnvironment) -> Result<Self, StorageError> {
        let number = DATABASES_OPENED.fetch_add(1, Ordering::Relaxed);
        let name = format!("umi-sim-{}-{number}", sim.seed());
        let disk = image::restore(&name)?;
        let current = SqliteStorage::open_in_memory(&name)?;
        Ok(Self {
            shared: Arc::new(Shared {
                name,
                _disk: Mutex::new(disk),
                current: Mutex::new(Some(Arc::new(current))),
                trace: sim.trace().clone(),
            }),
        })
    }

    /// Closes the working connection, then opens the database again. If reopening
    /// fails, every later call fails with `StorageError::Closed`.
    pub fn reopen(&self) -> Result<(), StorageError> {
        let mut current = self
            .shared
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Close first: the old connection is gone before the new one looks.
        *current = None;
        *current = Some(Arc::new(SqliteStorage::open_in_memory(&self.shared.name)?));
        self.shared
            .trace
            .emit(StorageEvent::Reopen { backend: "sqlite" });
        Ok(())
    }

    fn current(&self) -> Result<Arc<SqliteStorage>, StorageError> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(StorageError::Closed)
    }
}

#[async_trait]
impl Storage for SqliteDisk {
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError> {
        self.current()?.apply(batch).await
    }
    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError> {
        self.current()?.get_entity(id).await
    }
    async fn list_entities(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Entity>, StorageError> {
        self.current()?.list_entities(offset, limit).await
    }
    async fn count_entities(&self) -> Result<u64, StorageError> {
        self.current()?.count_entities().await
    }
    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError> {
        self.current()?.entities_named(name).await
    }
    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError> {
        self.current()?.entities_of_note(note_id).await
    }
    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError> {
        self.current()?.get_note(id).await
    }
    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError> {
        self.current()?.notes_with_text(text).await
    }
    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError> {
        self.current()?.links_of(entity_id).await
    }
    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError> {
        self.current()?.list_links(offset, limit).await
    }
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        self.current()?.search(query, limit).await
    }
    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError> {
        self.current()?.get_vector(entity_id).await
    }
    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError> {
        self.current()?.search_vectors(model, query, limit).await
    }
    async fn search_vectors_with_stored(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(SearchHit, Option<EntityVector>)>, StorageError> {
        self.current()?
            .search_vectors_with_stored(model, query, limit)
            .await
    }
}
