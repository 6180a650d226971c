//! What can go wrong in the memory, and what it did instead of failing.

use crate::storage::StorageError;

/// A memory call that failed: nothing was stored (for `remember`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// `remember` was given nothing to remember.
    #[error("nothing to remember: the text is empty")]
    EmptyText,
    /// The text is over the limit.
    #[error("text of {bytes} bytes is over the limit of {limit}")]
    TextTooLong {
        /// Its size.
        bytes: usize,
        /// `MEMORY_TEXT_BYTES_MAX`.
        limit: usize,
    },
    /// `recall` was given an empty query.
    #[error("the query is empty")]
    EmptyQuery,
    /// The query is over the limit.
    #[error("query of {bytes} bytes is over the limit of {limit}")]
    QueryTooLong {
        /// Its size.
        bytes: usize,
        /// `MEMORY_QUERY_BYTES_MAX`.
        limit: usize,
    },
    /// An option is out of range.
    #[error("invalid options: {reason}")]
    InvalidOptions {
        /// Which, and why.
        reason: String,
    },
    /// The storage failed.
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
}

/// Something the memory did instead of failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Degradation {
    /// Extraction failed; the raw text was stored as a note entity.
    ExtractionFailed {
        /// Why extraction failed (the model's or the parser's error).
        error: String,
    },
    /// Evolution detection for one entity failed and was skipped.
    EvolutionSkipped {
        /// The entity's name.
        entity: String,
        /// Why.
        error: String,
    },
    /// A detected evolution pointed at an entity deleted meanwhile, and was dropped.
    EvolutionDropped {
        /// How many links were dropped.
        links: usize,
    },
    /// Query rewriting failed; the fast results were used alone.
    RewriteFailed {
        /// Why.
        error: String,
    },
    /// A search of one query variant failed; the others were merged.
    VariantSearchFailed {
        /// The variant.
        variant: String,
        /// Why.
        error: String,
    },
    /// Embedding the entities failed; they were stored without vectors.
    EmbeddingFailed {
        /// Why (the embedder's error, or the answer's wrong shape).
        error: String,
    },
    /// Embedding the query failed; the text-search results were used alone.
    QueryEmbeddingFailed {
        /// Why.
        error: String,
    },
    /// The search by the query's vector failed; the text-search results were used alone.
    VectorSearchFailed {
        /// Why.
        error: String,
    },
}

impl Degradation {
    /// A short name for traces and counters.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ExtractionFailed { .. } => "extraction_failed",
            Self::EvolutionSkipped { .. } => "evolution_skipped",
            Self::EvolutionDropped { .. } => "evolution_dropped",
            Self::RewriteFailed { .. } => "rewrite_failed",
            Self::VariantSearchFailed { .. } => "variant_search_failed",
            Self::EmbeddingFailed { .. } => "embedding_failed",
            Self::QueryEmbeddingFailed { .. } => "query_embedding_failed",
            Self::VectorSearchFailed { .. } => "vector_search_failed",
        }
    }
}
