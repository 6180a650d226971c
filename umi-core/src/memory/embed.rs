//! Embeddings in the memory (optional, [`Memory::with_embedder`]): `remember` embeds its
//! entities in one batched call and stores each vector beside its entity, in the same
//! write; `recall` embeds the query and fuses the nearest entities with the text-search
//! results.
//!
//! Embedding never fails a call. If the entities' embedding fails, they are stored
//! without vectors ([`Degradation::EmbeddingFailed`]); if the query's fails, or the
//! vector search does, recall is exactly the text-search result
//! ([`Degradation::QueryEmbeddingFailed`], [`Degradation::VectorSearchFailed`]). An
//! answer of the wrong shape (a vector missing, or not of the configured dimensions) is
//! a failure like any other: it is never stored or searched with. A vector hit whose
//! cosine is not above zero shares nothing with the query and is not fused.

use std::sync::Arc;

use super::Memory;
use super::error::Degradation;
use crate::llm::embed::{Embedder, EmbeddingRequest};
use crate::storage::{Entity, EntityVector, SearchHit};

/// The embedder of a memory and the vector length it asks for.
#[derive(Clone)]
pub(super) struct MemoryEmbedder {
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) dimensions: u32,
}

/// The text an entity is embedded by: its content (what a query asks about), or its name
/// when the content is blank (extraction may leave it empty, and every provider refuses
/// an empty input, which would fail the whole batch).
pub fn embedding_text(entity: &Entity) -> &str {
    if entity.content.trim().is_empty() {
        &entity.name
    } else {
        &entity.content
    }
}

impl MemoryEmbedder {
    /// Vectors for `texts`, one each, of the configured dimensions; or why not.
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        let count = texts.len();
        let request =
            EmbeddingRequest::new(self.embedder.model(), texts).with_dimensions(self.dimensions);
        let answer = self
            .embedder
            .embed(&request)
            .await
            .map_err(|e| e.to_string())?;
        if answer.vectors.len() != count {
            return Err(format!(
                "{} vectors for {count} texts",
                answer.vectors.len()
            ));
        }
        if let Some(at) = answer
            .vectors
            .iter()
            .position(|v| v.len() != self.dimensions as usize)
        {
            return Err(format!(
                "vector {at} has {} dimensions, expected {}",
                answer.vectors[at].len(),
                self.dimensions
            ));
        }
        if let Some(at) = answer
            .vectors
            .iter()
            .position(|v| v.iter().any(|x| !x.is_finite()))
        {
            return Err(format!("vector {at} has a number that is not finite"));
        }
        Ok(answer.vectors)
    }
}

/// Whether a vector hit shares anything with the query: a cosine above zero. Unrelated
/// texts' vectors are near orthogonal, their cosine a small number of either sign; fusing
/// them would give a query that matches nothing a page of arbitrary entities.
fn is_related(hit: &SearchHit) -> bool {
    hit.score > 0.0
}

impl Memory {
    /// Uses `embedder` for recall by embeddings, asking for vectors of `dimensions`
    /// numbers (see [`crate::memory`]).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>, dimensions: u32) -> Self {
        self.embedder = Some(MemoryEmbedder {
            embedder,
            dimensions,
        });
        self
    }

    /// The vectors of `entities` (one batched call), or none and a degradation.
    pub(super) async fn vectors_of(
        &self,
        entities: &[Entity],
        degradations: &mut Vec<Degradation>,
    ) -> Vec<EntityVector> {
        let Some(embedder) = &self.embedder else {
            return Vec::new();
        };
        if entities.is_empty() {
            return Vec::new();
        }
        let texts = entities
            .iter()
            .map(|e| embedding_text(e).to_owned())
            .collect();
        match embedder.embed(texts).await {
            Ok(vectors) => {
                self.env.cover("memory.entities_embedded");
                let model = embedder.embedder.model();
                entities
                    .iter()
                    .zip(vectors)
                    .map(|(entity, vector)| EntityVector {
                        entity_id: entity.id.clone(),
                        model: model.to_owned(),
                        vector,
                    })
                    .collect()
            }
            Err(error) => {
                self.env
                    .record("memory.degraded", format_args!("embedding_failed: {error}"));
                self.env.cover("memory.embedding_failed");
                degradations.push(Degradation::EmbeddingFailed { error });
                Vec::new()
            }
        }
    }

    /// The entities nearest `query` by embedding, at most `depth`; `None` (and a
    /// degradation) when there is an embedder and the query's embedding or the vector
    /// search failed, or when there is no embedder.
    pub(super) async fn vector_hits(
        &self,
        query: &str,
        depth: usize,
        degradations: &mut Vec<Degradation>,
    ) -> Option<Vec<SearchHit>> {
        let embedder = self.embedder.as_ref()?;
        let vector = match embedder.embed(vec![query.to_owned()]).await {
            Ok(mut vectors) => vectors.remove(0),
            Err(error) => {
                self.env.record(
                    "memory.degraded",
                    format_args!("query_embedding_failed: {error}"),
                );
                self.env.cover("memory.query_embedding_failed");
                degradations.push(Degradation::QueryEmbeddingFailed { error });
                return None;
            }
        };
        let model = embedder.embedder.model();
        match self.storage.search_vectors(model, &vector, depth).await {
            Ok(hits) => {
                self.env.cover("memory.vectors_fused");
                Some(hits.into_iter().filter(is_related).collect())
            }
            Err(error) => {
                let error = error.to_string();
                self.env.record(
                    "memory.degraded",
                    format_args!("vector_search_failed: {error}"),
                );
                self.env.cover("memory.vector_search_failed");
                degradations.push(Degradation::VectorSearchFailed { error });
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::EntityType;

    fn entity(name: &str, content: &str) -> Entity {
        Entity {
            id: "e1".into(),
            name: name.into(),
            entity_type: EntityType::Person,
            content: content.into(),
            confidence: 1.0,
            note_id: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    /// Review finding: an entity extracted with empty content sent an empty input, which
    /// every provider refuses, and the whole batch (every entity's vector) was lost.
    #[test]
    fn a_blank_content_is_embedded_by_the_name() {
        assert_eq!(
            embedding_text(&entity("Alice", "works at Acme")),
            "works at Acme"
        );
        assert_eq!(embedding_text(&entity("Alice", "")), "Alice");
        assert_eq!(embedding_text(&entity("Alice", "  \n")), "Alice");
    }

    #[test]
    fn only_hits_above_zero_cosine_are_related() {
        let hit = |score| SearchHit {
            entity: entity("A", "a"),
            score,
        };
        assert!(is_related(&hit(0.2)));
        assert!(!is_related(&hit(0.0)));
        assert!(!is_related(&hit(-0.1)));
    }
}
