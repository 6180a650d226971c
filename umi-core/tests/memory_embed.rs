//! The memory with an embedder: vectors stored beside their entities in the same write,
//! recall fusing the nearest entities, and every embedding failure degrading to text
//! search (entities stored without vectors; recall equal to the text-only recall).

use std::sync::Arc;

use async_trait::async_trait;
use umi_core::llm::LlmError;
use umi_core::llm::embed::{Embedder, EmbeddingRequest, Embeddings};
use umi_core::memory::{Degradation, Memory, RecallOptions, RememberOptions, RewriteMode};
use umi_core::storage::{InMemoryStorage, SqliteStorage, Storage};
use umi_dst::embed::embed_text;
use umi_dst::{SimConfig, SimEnvironment, Simulation, ensure};

const DIMENSIONS: u32 = 16;

/// How the test embedder answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// umi-dst's simulated model, at the dimensions asked.
    Good,
    /// An error, as a server's 503.
    Fail,
    /// One number short.
    Short,
    /// A NaN in the first vector (an embedder other than umi-core's clients, which check).
    NotFinite,
}

struct TestEmbedder(Answer);

#[async_trait]
impl Embedder for TestEmbedder {
    fn model(&self) -> &str {
        "sim-embed"
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, LlmError> {
        let dimensions = request.dimensions.unwrap_or(DIMENSIONS);
        let mut vectors: Vec<Vec<f32>> = request
            .inputs
            .iter()
            .map(|text| embed_text("sim-embed", text, dimensions))
            .collect();
        match self.0 {
            Answer::Good => {}
            Answer::Fail => {
                return Err(LlmError::Connection {
                    reason: "refused (test)".into(),
                });
            }
            Answer::Short => {
                vectors[0].pop();
            }
            Answer::NotFinite => vectors[0][0] = f32::NAN,
        }
        Ok(Embeddings {
            vectors,
            model: "sim-embed".into(),
            input_tokens: 0,
        })
    }
}

const FACTS: [&str; 4] = [
    "Alice joined Acme in Paris",
    "Bob moved to Berlin",
    "Carol likes green tea",
    "Dan sold his boat in Oslo",
];

/// A memory (no model: each text is one note entity) with `answer`'s embedder, and the
/// same memory without one.
fn memories(sim: &SimEnvironment, storage: Arc<dyn Storage>, answer: Answer) -> (Memory, Memory) {
    let text_only = Memory::new(storage, sim.env());
    let embedded = text_only
        .clone()
        .with_embedder(Arc::new(TestEmbedder(answer)), DIMENSIONS);
    (embedded, text_only)
}

#[test]
fn vectors_are_stored_beside_entities_and_recalled() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let storage: Arc<dyn Storage> =
            Arc::new(SqliteStorage::open_in_memory("embed-ok").unwrap());
        let (memory, _) = memories(&sim, storage.clone(), Answer::Good);
        let mut ids = Vec::new();
        for fact in FACTS {
            let outcome = memory.remember(fact, RememberOptions::default()).await?;
            ensure!(
                outcome.degradations.is_empty(),
                "{:?}",
                outcome.degradations
            );
            ensure!(outcome.vectors.len() == 1, "{:?}", outcome.vectors);
            let stored = storage.get_vector(&outcome.entities[0].id).await?;
            ensure!(stored.as_ref() == Some(&outcome.vectors[0]), "{stored:?}");
            ensure!(stored.unwrap().dimensions() == DIMENSIONS as usize, "dims");
            ids.push(outcome.entities[0].id.clone());
        }
        let options = RecallOptions::default().with_rewrite(RewriteMode::Never);
        let outcome = memory.recall("Carol likes green tea", options).await?;
        ensure!(
            outcome.degradations.is_empty(),
            "{:?}",
            outcome.degradations
        );
        ensure!(outcome.hits[0].entity.id == ids[2], "{:?}", outcome.hits);
        // The vector list on its own: the entity's own text finds it first, at cosine 1.
        let own = embed_text("sim-embed", FACTS[2], DIMENSIONS);
        let nearest = storage.search_vectors("sim-embed", &own, 4).await?;
        ensure!(nearest[0].entity.id == ids[2], "{nearest:?}");
        ensure!((nearest[0].score - 1.0).abs() < 1e-6, "{nearest:?}");
        ensure!(memory.forget(&ids[2]).await?, "forgotten");
        ensure!(
            storage.get_vector(&ids[2]).await?.is_none(),
            "vector deleted"
        );
        Ok(())
    });
}

#[test]
fn a_failed_embedding_stores_without_vectors_and_recalls_by_text() {
    // NotFinite pins a review finding: a NaN reached the write, which refused the whole
    // batch, and `remember` failed.
    for answer in [Answer::Fail, Answer::Short, Answer::NotFinite] {
        Simulation::new(SimConfig::new(11)).run(async |sim| {
            let storage: Arc<dyn Storage> = Arc::new(InMemoryStorage::new());
            let (memory, text_only) = memories(&sim, storage.clone(), answer);
            for fact in FACTS {
                let outcome = memory.remember(fact, RememberOptions::default()).await?;
                ensure!(
                    matches!(
                        &outcome.degradations[..],
                        [Degradation::EmbeddingFailed { .. }]
                    ),
                    "{answer:?}: {:?}",
                    outcome.degradations
                );
                ensure!(outcome.vectors.is_empty(), "no vectors");
                let id = &outcome.entities[0].id;
                ensure!(storage.get_entity(id).await?.is_some(), "entity stored");
                ensure!(storage.get_vector(id).await?.is_none(), "without a vector");
            }
            let options = RecallOptions::default().with_rewrite(RewriteMode::Never);
            let degraded = memory.recall("Bob Berlin tea", options).await?;
            let text = text_only.recall("Bob Berlin tea", options).await?;
            ensure!(
                matches!(
                    &degraded.degradations[..],
                    [Degradation::QueryEmbeddingFailed { .. }]
                ),
                "{:?}",
                degraded.degradations
            );
            ensure!(degraded.hits == text.hits, "{degraded:?} vs {text:?}");
            ensure!(!text.hits.is_empty(), "text search finds Bob");
            Ok(())
        });
    }
}
