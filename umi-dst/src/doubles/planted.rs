//! Planted bugs: a `Storage` whose writes go through your code.
//!
//! A harness must be tested against bugs it should find. [`HookedStorage`] wraps a real
//! storage and hands every `apply` to a [`WriteHook`], which may write, delay, reorder or
//! drop the batch (and still acknowledge it: the classic lost write); every read goes
//! straight to the wrapped storage. The canary scenario and the checkers' own tests plant
//! their bugs this way, so the bug is the only thing that differs from the real storage.

use async_trait::async_trait;
use umi_core::storage::{
    Entity, EntityVector, EvolutionLink, Note, SearchHit, Storage, StorageError, WriteBatch,
};

/// What a [`HookedStorage`] does with a write.
#[async_trait]
pub trait WriteHook: Send + Sync {
    /// Handles `batch`, writing to `inner` (or not).
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError>;
}

/// A storage whose writes go through `hook`; reads go to `inner`.
#[derive(Debug)]
pub struct HookedStorage<S, H> {
    /// The real storage.
    pub inner: S,
    /// The planted behaviour.
    pub hook: H,
}

impl<S, H> HookedStorage<S, H> {
    /// Wraps `inner`.
    pub fn new(inner: S, hook: H) -> Self {
        Self { inner, hook }
    }
}

#[async_trait]
impl<S: Storage, H: WriteHook> Storage for HookedStorage<S, H> {
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError> {
        self.hook.apply(&self.inner, batch).await
    }
    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError> {
        self.inner.get_entity(id).await
    }
    async fn list_entities(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Entity>, StorageError> {
        self.inner.list_entities(offset, limit).await
    }
    async fn count_entities(&self) -> Result<u64, StorageError> {
        self.inner.count_entities().await
    }
    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError> {
        self.inner.entities_named(name).await
    }
    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError> {
        self.inner.entities_of_note(note_id).await
    }
    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError> {
        self.inner.get_note(id).await
    }
    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError> {
        self.inner.notes_with_text(text).await
    }
    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError> {
        self.inner.links_of(entity_id).await
    }
    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError> {
        self.inner.list_links(offset, limit).await
    }
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        self.inner.search(query, limit).await
    }
    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError> {
        self.inner.get_vector(entity_id).await
    }
    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError> {
        self.inner.search_vectors(model, query, limit).await
    }
    async fn search_vectors_with_stored(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(SearchHit, Option<EntityVector>)>, StorageError> {
        self.inner
            .search_vectors_with_stored(model, query, limit)
            .await
    }
}
