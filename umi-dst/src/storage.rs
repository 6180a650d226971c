//! SimStorage: the memory's storage behind storage faults, checksums and a ledger of
//! acknowledged writes.
//!
//! By default it is umi-core's `InMemoryStorage` (so it searches and orders exactly like
//! it) behind a fault layer; [`SimStorage::over`] puts the same layer over any other
//! `Storage` (the production `SqliteStorage`, in the `sqlite_no_data_loss` scenario), so
//! storage faults are injected at the `Storage` seam whatever the backend. Operations and the faults that apply to them:
//!
//! | operation | faults |
//! | --- | --- |
//! | `storage.delete` (a batch that deletes) | `delete_fail` |
//! | `storage.write` (every batch) | `write_fail`, `disk_full`, `latency`, `corruption` |
//! | `storage.read` (gets and lists, `get_vector`) | `read_fail`, `latency` |
//! | `storage.search` (`search`, `search_vectors`) | `read_fail`, `latency` |
//!
//! A failed write writes nothing. `latency` succeeds late, in simulated time.
//! `corruption` acknowledges the write and then rots one record: every record's checksum
//! (XXH3-128) is kept beside it and checked on every read, so a rotten record is reported as
//! [`StorageError::Corruption`], never returned altered. Rot is permanent, as on a disk.
//!
//! The ledger lists every acknowledged batch (and which record rotted), for checkers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use umi_core::storage::{
    Entity, EntityVector, EvolutionLink, InMemoryStorage, Note, SearchHit, Storage, StorageError,
    WriteBatch,
};

use crate::checksum::{Checksum, entity_checksum, note_checksum, vector_checksum};
use crate::clock::SimClock;
use crate::environment::SimEnvironment;
use crate::fault::point::{self, unreachable_kind};
use crate::fault::{FaultInjector, FaultPoint, StorageKind};
use crate::micros::micros_saturating;
use crate::rng::DeterministicRng;
use crate::trace::{StorageEvent, Trace};

/// Shortest and longest delay of a `storage.latency` fault, in ms.
pub const STORAGE_LATENCY_MS_MIN: u64 = 5;
/// See [`STORAGE_LATENCY_MS_MIN`].
pub const STORAGE_LATENCY_MS_MAX: u64 = 2_000;

/// One acknowledged batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    /// Simulated time of the acknowledgement, µs.
    pub at_us: u64,
    /// Notes written.
    pub notes: Vec<String>,
    /// Entities written.
    pub entities: Vec<String>,
    /// Entity vectors written (by entity id).
    pub vectors: Vec<String>,
    /// Links written.
    pub links: Vec<String>,
    /// Entities deleted.
    pub deleted: Vec<String>,
    /// The record a corruption fault rotted, if one did.
    pub corrupted: Option<String>,
}

/// The storage trait with faults. Build one per run with [`SimStorage::new`] (over
/// `InMemoryStorage`) or [`SimStorage::over`].
pub struct SimStorage<S = InMemoryStorage> {
    inner: S,
    faults: Arc<FaultInjector>,
    clock: SimClock,
    trace: Arc<Trace>,
    rng: Mutex<DeterministicRng>,
    state: Mutex<Books>,
}

#[derive(Default)]
struct Books {
    /// `entity:<id>` / `note:<id>` / `vector:<entity id>` -> checksum (XXH3-128) of the
    /// record as written (or rotted).
    checksums: BTreeMap<String, Checksum>,
    ledger: Vec<LedgerEntry>,
    corrupted: BTreeSet<String>,
}

impl SimStorage {
    /// Storage for the run `sim`, drawing fault details from its `storage` stream.
    pub fn new(sim: &SimEnvironment) -> Self {
        Self::over(sim, InMemoryStorage::new())
    }
}

impl<S> SimStorage<S> {
    /// The fault layer of the run `sim` over `inner`: every fault, checksum and ledger
    /// entry as over the in-memory backend.
    pub fn over(sim: &SimEnvironment, inner: S) -> Self {
        Self {
            inner,
            faults: sim.faults().clone(),
            clock: sim.clock().clone(),
            trace: sim.trace().clone(),
            rng: Mutex::new(sim.fork_rng(crate::rng::streams::seed::STORAGE.as_str())),
            state: Mutex::new(Books::default()),
        }
    }

    /// The storage under the fault layer.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Every acknowledged batch, in order.
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        self.books().ledger.clone()
    }

    /// The records corruption faults rotted (`entity:<id>`, `note:<id>` or
    /// `vector:<entity id>`).
    pub fn corrupted(&self) -> BTreeSet<String> {
        self.books().corrupted.clone()
    }

    fn books(&self) -> MutexGuard<'_, Books> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn draw(&self, low: u64, high: u64) -> u64 {
        self.rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .range_inclusive(low, high)
    }

    async fn latency(&self, operation: &str) {
        let delay =
            Duration::from_millis(self.draw(STORAGE_LATENCY_MS_MIN, STORAGE_LATENCY_MS_MAX));
        self.trace.emit(StorageEvent::Slow {
            operation: operation.to_owned(),
            delay,
        });
        self.clock.sleep(delay).await;
    }

    /// The fault for a read-like operation, after any latency.
    async fn read_fault(&self, point: &FaultPoint) -> Result<(), StorageError> {
        let operation = point.name();
        let Some(kind) = self.faults.decide(point) else {
            return Ok(());
        };
        match kind.storage() {
            Some(StorageKind::ReadFail) => Err(StorageError::ReadFailed {
                reason: format!("{operation} failed (simulated)"),
            }),
            Some(StorageKind::Latency) => {
                self.latency(operation).await;
                Ok(())
            }
            // The writes' kinds, and other domains': not drawn at a read.
            Some(
                StorageKind::WriteFail
                | StorageKind::DeleteFail
                | StorageKind::Corruption
                | StorageKind::DiskFull,
            )
            | None => unreachable_kind(point, kind),
        }
    }

    fn verify_entity(&self, entity: &Entity) -> Result<(), StorageError> {
        let books = self.books();
        match books.checksums.get(&format!("entity:{}", entity.id)) {
            Some(sum) if *sum == entity_checksum(entity) => Ok(()),
            _ => Err(StorageError::Corruption {
                what: "entity",
                id: entity.id.clone(),
            }),
        }
    }

    fn verify_note(&self, note: &Note) -> Result<(), StorageError> {
        let books = self.books();
        match books.checksums.get(&format!("note:{}", note.id)) {
            Some(sum) if *sum == note_checksum(note) => Ok(()),
            _ => Err(StorageError::Corruption {
                what: "note",
                id: note.id.clone(),
            }),
        }
    }

    fn verify_vector(&self, vector: &EntityVector) -> Result<(), StorageError> {
        let books = self.books();
        match books.checksums.get(&format!("vector:{}", vector.entity_id)) {
            Some(sum) if *sum == vector_checksum(vector) => Ok(()),
            _ => Err(StorageError::Corruption {
                what: "vector",
                id: vector.entity_id.clone(),
            }),
        }
    }

    fn verify_entities(&self, entities: Vec<Entity>) -> Result<Vec<Entity>, StorageError> {
        for entity in &entities {
            self.verify_entity(entity)?;
        }
        Ok(entities)
    }
}

/// `kind:id` and the checksum of every record `batch` writes: notes, entities, vectors.
fn record_checksums(batch: &WriteBatch) -> Vec<(String, Checksum)> {
    let notes = batch
        .notes
        .iter()
        .map(|n| (format!("note:{}", n.id), note_checksum(n)));
    let entities = batch
        .entities
        .iter()
        .map(|e| (format!("entity:{}", e.id), entity_checksum(e)));
    let vectors = batch
        .vectors
        .iter()
        .map(|v| (format!("vector:{}", v.entity_id), vector_checksum(v)));
    notes.chain(entities).chain(vectors).collect()
}

impl<S> std::fmt::Debug for SimStorage<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let books = self.books();
        f.debug_struct("SimStorage")
            .field("acknowledged", &books.ledger.len())
            .field("corrupted", &books.corrupted)
            .finish()
    }
}

#[async_trait]
impl<S: Storage> Storage for SimStorage<S> {
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError> {
        if !batch.delete_entities.is_empty() && self.faults.decide(&point::STORAGE_DELETE).is_some()
        {
            return Err(StorageError::DeleteFailed {
                reason: "storage.delete failed (simulated)".into(),
            });
        }
        let mut corrupt = false;
        let write_point = if batch.notes.is_empty() && batch.entities.is_empty() {
            &point::STORAGE_WRITE_UNROTTABLE
        } else {
            &point::STORAGE_WRITE
        };
        if let Some(kind) = self.faults.decide(write_point) {
            match kind.storage() {
                Some(StorageKind::WriteFail) => {
                    return Err(StorageError::WriteFailed {
                        reason: "storage.write failed (simulated)".into(),
                    });
                }
                Some(StorageKind::DiskFull) => return Err(StorageError::DiskFull),
                Some(StorageKind::Latency) => self.latency("storage.write").await,
                Some(StorageKind::Corruption) => corrupt = true,
                // The reads' and deletes' kinds, and other domains': not drawn at a write.
                Some(StorageKind::ReadFail | StorageKind::DeleteFail) | None => {
                    unreachable_kind(write_point, kind)
                }
            }
        }
        let keys = record_checksums(&batch);
        let mut entry = LedgerEntry {
            at_us: micros_saturating(self.clock.now()),
            notes: batch.notes.iter().map(|n| n.id.clone()).collect(),
            entities: batch.entities.iter().map(|e| e.id.clone()).collect(),
            vectors: batch.vectors.iter().map(|v| v.entity_id.clone()).collect(),
            links: batch.links.iter().map(|l| l.id.clone()).collect(),
            deleted: batch.delete_entities.clone(),
            corrupted: None,
        };
        let deleted = batch.delete_entities.clone();
        self.inner.apply(batch).await?;
        let mut books = self.books();
        for id in deleted {
            books.checksums.remove(&format!("entity:{id}"));
            books.checksums.remove(&format!("vector:{id}"));
        }
        books.checksums.extend(keys.iter().cloned());
        assert!(
            !corrupt || !keys.is_empty(),
            "corruption is only decided for a batch with records that can rot"
        );
        if corrupt {
            let index = self.draw(0, keys.len() as u64 - 1) as usize;
            let key = keys[index].0.clone();
            if let Some(sum) = books.checksums.get_mut(&key) {
                sum[0] ^= 0xff;
            }
            self.trace.emit(StorageEvent::Rot {
                key: key.to_string(),
            });
            books.corrupted.insert(key.clone());
            entry.corrupted = Some(key);
        }
        books.ledger.push(entry);
        Ok(())
    }

    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        let entity = self.inner.get_entity(id).await?;
        if let Some(entity) = &entity {
            self.verify_entity(entity)?;
        }
        Ok(entity)
    }

    async fn list_entities(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Entity>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.verify_entities(self.inner.list_entities(offset, limit).await?)
    }

    async fn count_entities(&self) -> Result<u64, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.inner.count_entities().await
    }

    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.verify_entities(self.inner.entities_named(name).await?)
    }

    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.verify_entities(self.inner.entities_of_note(note_id).await?)
    }

    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        let note = self.inner.get_note(id).await?;
        if let Some(note) = &note {
            self.verify_note(note)?;
        }
        Ok(note)
    }

    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        let notes = self.inner.notes_with_text(text).await?;
        for note in &notes {
            self.verify_note(note)?;
        }
        Ok(notes)
    }

    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.inner.links_of(entity_id).await
    }

    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        self.inner.list_links(offset, limit).await
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        self.read_fault(&point::STORAGE_SEARCH).await?;
        let hits = self.inner.search(query, limit).await?;
        for hit in &hits {
            self.verify_entity(&hit.entity)?;
        }
        Ok(hits)
    }

    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError> {
        self.read_fault(&point::STORAGE_READ).await?;
        let vector = self.inner.get_vector(entity_id).await?;
        if let Some(vector) = &vector {
            self.verify_vector(vector)?;
        }
        Ok(vector)
    }

    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError> {
        self.read_fault(&point::STORAGE_SEARCH).await?;
        // The ranking read each hit's vector: a rotten one is reported, not used. The
        // inner store hands back the vectors it ranked (or reads each, by default), so
        // SQLite does not look each up again; the checks and their order are the same.
        let read = self
            .inner
            .search_vectors_with_stored(model, query, limit)
            .await?;
        let mut hits = Vec::with_capacity(read.len());
        for (hit, vector) in read {
            self.verify_entity(&hit.entity)?;
            if let Some(vector) = &vector {
                self.verify_vector(vector)?;
            }
            hits.push(hit);
        }
        Ok(hits)
    }
}
