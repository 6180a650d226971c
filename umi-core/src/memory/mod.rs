//! The Umi memory: remember what you are told, recall what is relevant.
//!
//! - [`Memory::remember`] extracts entities from a text with the LLM, detects how each
//!   relates to what is already known (update, extend, derive, contradict), and stores
//!   the raw note, the entities and the evolution links in one atomic write.
//! - [`Memory::recall`] always runs a fast text search; for a question it also asks the
//!   LLM for search variants of the query, searches each, and merges the lists by
//!   reciprocal-rank fusion.
//! - Recall by embeddings is optional ([`Memory::with_embedder`]): `remember` embeds its
//!   entities in one batched call and stores each vector beside its entity in the same
//!   atomic write; `recall` embeds the query, searches the stored vectors (brute-force
//!   cosine) and fuses the nearest entities into the same reciprocal-rank fusion. A
//!   failed embedding stores the entities without vectors, and a failed query embedding
//!   gives exactly the text-search result; both are reported degradations.
//!
//! The memory degrades rather than fails: if extraction fails (after whatever retries the
//! model, typically the router, made), the raw text is stored as a `note` entity, so
//! nothing the user said is lost; a failed evolution detection is skipped; a failed
//! rewrite leaves the fast results; a failed embedding leaves text search. Every degradation is reported in the outcome and
//! recorded in the environment's trace. A `remember` is acknowledged only once its write
//! committed; if the write fails, nothing was stored and the error says so.
//!
//! Ids come from the environment's random stream `memory.ids` and timestamps from its
//! clock, so a simulated memory is as deterministic as the rest of the run.

mod embed;
mod error;
mod recall;
mod remember;
pub mod tasks;

use std::sync::Arc;

pub use embed::embedding_text;
pub use error::{Degradation, MemoryError};
pub use recall::{RecallHit, RecallOptions, RecallOutcome, RewriteMode};
pub use remember::{RememberOptions, RememberOutcome};

use crate::constants::LIST_PAGE_MAX;
use crate::env::Env;
use crate::llm::LanguageModel;
use crate::storage::{Entity, Note, Storage, WriteBatch};

/// A memory: storage, an optional language model, and the environment.
#[derive(Clone)]
pub struct Memory {
    storage: Arc<dyn Storage>,
    llm: Option<Arc<dyn LanguageModel>>,
    embedder: Option<embed::MemoryEmbedder>,
    env: Env,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("llm", &self.llm.as_ref().map(|llm| llm.model_ref().id()))
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// A memory over `storage` in `env`, without a language model (every text is kept as
    /// a note entity; recall is text search).
    pub fn new(storage: Arc<dyn Storage>, env: Env) -> Self {
        Self {
            storage,
            llm: None,
            embedder: None,
            env,
        }
    }

    /// A durable memory in the SQLite file at `path` (created if missing), with the
    /// real clock and OS randomness. Add a model with [`Memory::with_llm`].
    #[cfg(feature = "sqlite")]
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, MemoryError> {
        let storage = crate::storage::SqliteStorage::open(path)?;
        Ok(Self::new(
            Arc::new(storage),
            Arc::new(crate::env::SystemEnvironment::new()),
        ))
    }

    /// Uses `llm` for extraction, evolution detection and query rewriting.
    pub fn with_llm(mut self, llm: Arc<dyn LanguageModel>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// The storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The entity with `id`.
    pub async fn get(&self, id: &str) -> Result<Option<Entity>, MemoryError> {
        Ok(self.storage.get_entity(id).await?)
    }

    /// Entities in the order they were remembered, from `offset`, at most `limit`.
    pub async fn list(&self, offset: usize, limit: usize) -> Result<Vec<Entity>, MemoryError> {
        if limit == 0 || limit > LIST_PAGE_MAX {
            return Err(MemoryError::InvalidOptions {
                reason: format!("limit {limit} is outside 1..={LIST_PAGE_MAX}"),
            });
        }
        Ok(self.storage.list_entities(offset, limit).await?)
    }

    /// Forgets the entity `id` (its evolution links and its vector go with it); returns whether it existed. Its
    /// note, the raw text it came from, is kept.
    pub async fn forget(&self, id: &str) -> Result<bool, MemoryError> {
        let existed = self.storage.get_entity(id).await?.is_some();
        if existed {
            self.storage
                .apply(WriteBatch {
                    delete_entities: vec![id.to_owned()],
                    ..WriteBatch::default()
                })
                .await?;
            self.env.record("memory.forget", format_args!("{id}"));
        }
        Ok(existed)
    }

    /// The notes whose text is exactly `text`.
    pub async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, MemoryError> {
        Ok(self.storage.notes_with_text(text).await?)
    }

    /// The entities extracted from the note `note_id`.
    pub async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, MemoryError> {
        Ok(self.storage.entities_of_note(note_id).await?)
    }
}
