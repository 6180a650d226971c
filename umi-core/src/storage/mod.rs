//! Storage for the memory: entities, the raw notes they came from, evolution links, and
//! text search over entities.
//!
//! An entity may have a vector (an embedding, [`EntityVector`]) stored beside it, written
//! in the same batch and deleted with it; [`Storage::search_vectors`] ranks entities by
//! cosine similarity to a query vector (brute force; see [`vectors`]).
//!
//! Writes go through one atomic [`WriteBatch`] (a `remember` is one batch: its note, its
//! entities and its links, all or nothing), so a failed write never leaves half a memory
//! behind. A link must point at entities that exist (in the store or in the same batch),
//! and deleting an entity deletes its links: "every link points at an existing entity"
//! holds by construction.
//!
//! Backends: [`SqliteStorage`] (the default: one file, WAL, FTS5, migrations) and
//! [`InMemoryStorage`]; umi-dst adds SimStorage (faults, checksums, a ledger). All three
//! pass [`conformance::check`].

pub mod conformance;
mod kinds;
mod memory;
mod records;
pub mod search;
#[cfg(feature = "sqlite")]
mod sqlite;
pub mod vectors;

use async_trait::async_trait;

pub use kinds::{EntityType, EvolutionType};
pub use memory::InMemoryStorage;
pub use records::{Entity, EvolutionLink, Note, SearchHit, WriteBatch, text_fingerprint};
#[cfg(feature = "sqlite")]
pub use sqlite::{SCHEMA_VERSION, SqliteStorage, UMI_APPLICATION_ID};
pub use vectors::EntityVector;

/// A storage operation that failed, with what it was about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The file exists but is not a Umi database (or not a database at all). Nothing in it
    /// was changed.
    #[error("{path}: not a Umi memory database ({reason}); it was left untouched")]
    NotOurs {
        /// The file.
        path: String,
        /// How we can tell.
        reason: String,
    },
    /// The database was written by a newer Umi.
    #[error(
        "{path}: schema version {found} is newer than this Umi supports ({supported}); upgrade Umi"
    )]
    NewerSchema {
        /// The file.
        path: String,
        /// The file's schema version.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// A stored record failed its checksum: it is reported, never returned altered.
    #[error("stored {what} {id:?} is corrupt (checksum mismatch)")]
    Corruption {
        /// The kind of record.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// The device is full; nothing was written.
    #[error("disk full; nothing was written")]
    DiskFull,
    /// A write failed; nothing was written.
    #[error("write failed: {reason}; nothing was written")]
    WriteFailed {
        /// What happened.
        reason: String,
    },
    /// A read failed.
    #[error("read failed: {reason}")]
    ReadFailed {
        /// What happened.
        reason: String,
    },
    /// A delete failed; nothing was deleted.
    #[error("delete failed: {reason}; nothing was deleted")]
    DeleteFailed {
        /// What happened.
        reason: String,
    },
    /// The request breaks a rule of the store (a dangling link, a batch too large).
    #[error("invalid storage request: {reason}")]
    Invalid {
        /// Which rule.
        reason: String,
    },
    /// The database engine reported an error.
    #[error("{path}: database error: {reason}")]
    Database {
        /// The file.
        path: String,
        /// The engine's message.
        reason: String,
    },
    /// The store was closed.
    #[error("storage is closed")]
    Closed,
}

impl StorageError {
    /// Whether trying again may succeed (a fault of the device, not of the request).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::DiskFull
                | Self::WriteFailed { .. }
                | Self::ReadFailed { .. }
                | Self::DeleteFailed { .. }
        )
    }
}

/// Where the memory keeps its entities, notes and links.
///
/// Reads of missing records return `Ok(None)` (or empty lists), never errors. Every list
/// is in a deterministic order: entities in insertion order, search hits by score then id.
#[async_trait]
pub trait Storage: Send + Sync {
    /// Applies `batch` atomically: deletes, then notes, entities and links; all or nothing.
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError>;

    /// The entity with `id`.
    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError>;

    /// Entities in insertion order, from `offset`, at most `limit` (capped at
    /// `LIST_PAGE_MAX`).
    async fn list_entities(&self, offset: usize, limit: usize)
    -> Result<Vec<Entity>, StorageError>;

    /// How many entities are stored.
    async fn count_entities(&self) -> Result<u64, StorageError>;

    /// Entities whose name is exactly `name`, in insertion order.
    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError>;

    /// Entities extracted from the note `note_id`, in insertion order.
    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError>;

    /// The note with `id`.
    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError>;

    /// Notes whose text is exactly `text`, in insertion order.
    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError>;

    /// Links from or to the entity `id`, ordered by id.
    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError>;

    /// Every link, ordered by id, from `offset`, at most `limit`.
    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError>;

    /// Entities matching the words of `query` (name and content; any word), best first,
    /// at most `limit` (capped at `SEARCH_RESULTS_MAX`). A query without words matches
    /// nothing.
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError>;

    /// The vector stored beside the entity `entity_id`, if it has one.
    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError>;

    /// Entities whose vector (of `model`, as long as `query`) is nearest `query` by cosine
    /// similarity, best first, equal scores by id, at most `limit` (capped at
    /// `SEARCH_RESULTS_MAX`); each hit's score is its cosine.
    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError>;

    /// [`search_vectors`](Self::search_vectors), each hit with the vector stored beside
    /// its entity as [`get_vector`](Self::get_vector) reads it, for a caller that checks
    /// what the ranking read (umi-dst's checksums). By default a `get_vector` per hit,
    /// after the search; a store that read the vectors to rank them returns those instead
    /// of reading each again (SQLite: a lookup per hit was 5% of a simulated recall).
    /// A wrapper that forwards `search_vectors` to an inner store forwards this too, or
    /// its callers lose the inner store's answer and read each vector through the
    /// wrapper's `get_vector` (with whatever the wrapper does on a read).
    async fn search_vectors_with_stored(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(SearchHit, Option<EntityVector>)>, StorageError> {
        let hits = self.search_vectors(model, query, limit).await?;
        let mut read = Vec::with_capacity(hits.len());
        for hit in hits {
            let vector = self.get_vector(&hit.entity.id).await?;
            read.push((hit, vector));
        }
        Ok(read)
    }
}
