//! Scenario `recall_by_embeddings`: the memory recalls by embeddings on the production
//! SQLite store, and an embedding that fails never fails a call: it degrades to text
//! search.
//!
//! Workload: twelve facts are remembered by a memory with a model (extraction) and an
//! embedder: umi-core's OpenAI embeddings client over SimNetwork's embeddings endpoint,
//! the simulated embedding model behind it. The store is `SqliteStorage` (in memory, see
//! [`umi_dst::SqliteDisk`]) under SimStorage's checksums, closed and reopened before the
//! queries. Then queries are recalled: the exact content of a stored entity, or a
//! question. The embeddings endpoint fails (429s, 503s, stalls) and answers with the
//! wrong shape (a vector of the wrong length, cut short, or missing); storage has no
//! faults.
//!
//! Invariants:
//! 1. Embedding faults never fail `remember` or `recall`. A `remember` stores a vector
//!    for each of its entities (of the configured dimensions), or none and reports
//!    `EmbeddingFailed`.
//! 2. A recall whose query embedding failed returns exactly what a memory without an
//!    embedder returns for the same query (hits, order and scores).
//! 3. Every entity acknowledged with a vector has it, bit for bit, after the reopen
//!    (the memory checker's `check_no_data_loss`, vectors included).
//! 4. A query that is the exact content of a stored entity with a vector, whose own
//!    embedding succeeded, recalls that entity (or one with the same content) among its
//!    hits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use umi_core::llm::Connection;
use umi_core::llm::embed::{EmbedClient, Embedder, OpenAiEmbedConfig};
use umi_core::memory::{
    Degradation, Memory, RecallOptions, RecallOutcome, RememberOptions, RememberOutcome,
    RewriteMode, embedding_text,
};
use umi_core::storage::Entity;
use umi_dst::SqliteDisk;
use umi_dst::checkers::memory::{MemoryModel, check_no_data_loss};
use umi_dst::network::{Endpoint, SimNetwork};
use umi_dst::{FaultKind, SimEnvironment, SimStorage, Violation, ensure};

use crate::common::{facts, fault_on, question};

/// Facts remembered before the queries.
const FACTS_PER_SEED: usize = 12;

/// Queries per seed.
const QUERIES_PER_SEED: usize = 10;

/// Results asked of each recall.
const RECALL_LIMIT: usize = 8;

/// The vector length the memory asks for.
const EMBED_DIMENSIONS: u32 = 32;

/// The embedding model's name.
const EMBED_MODEL: &str = "sim-embed";

/// The simulated embeddings server.
const EMBED_URL: &str = "https://api.openai.example/v1";

/// How long the client waits for the server, simulated.
const EMBED_TIMEOUT: Duration = Duration::from_secs(30);

/// The scenario.
#[umi_dst::scenario(
    goal = "embedding faults degrade recall to text search, never fail it; vectors are never lost",
    faults = [
        fault_on(FaultKind::LlmRateLimit, 0.06, "llm.embed"),
        fault_on(FaultKind::LlmServiceUnavailable, 0.06, "llm.embed"),
        fault_on(FaultKind::LlmTimeout, 0.03, "llm.embed"),
        fault_on(FaultKind::LlmEmbeddingWrongDimensions, 0.05, "llm.embed"),
        fault_on(FaultKind::LlmEmbeddingTruncated, 0.05, "llm.embed"),
        fault_on(FaultKind::LlmEmbeddingMissing, 0.05, "llm.embed"),
    ],
    marks = [
        "memory.entities_embedded",
        "memory.embedding_failed",
        "memory.vectors_fused",
        "memory.query_embedding_failed",
        "recall_by_embeddings.exact_recalled",
    ],
    run = run,
    rank = 40,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RecallByEmbeddings;

/// The embedder: umi-core's OpenAI client over SimNetwork's embeddings endpoint.
fn embedder(sim: &SimEnvironment) -> Arc<dyn Embedder> {
    let network = SimNetwork::new(sim).with_endpoint(Endpoint::openai(EMBED_URL, sim.llm()));
    let config = OpenAiEmbedConfig::new(
        Connection::new(EMBED_URL).with_timeout(EMBED_TIMEOUT),
        EMBED_MODEL,
    );
    Arc::new(EmbedClient::new(config, Arc::new(network), sim.env()))
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let disk = SqliteDisk::open(&sim)
        .map_err(|error| Violation::new(format!("opening the SQLite memory: {error}")))?;
    let storage = Arc::new(SimStorage::over(&sim, disk.clone()));
    let text_only = Memory::new(storage.clone(), sim.env());
    let memory = text_only
        .clone()
        .with_llm(sim.llm())
        .with_embedder(embedder(&sim), EMBED_DIMENSIONS);
    let mut model = MemoryModel::new();
    let mut stored: BTreeMap<String, Entity> = BTreeMap::new();
    let remember = RememberOptions::default().with_evolution(false);
    for text in facts(&sim, "workload.facts", FACTS_PER_SEED) {
        let outcome = memory.remember(&text, remember).await.map_err(|e| {
            Violation::new(format!(
                "remember({text:?}) failed under embedding faults: {e}"
            ))
        })?;
        check_vectors(&outcome)?;
        model.remembered(&outcome);
        let vectored = outcome.vectors.iter().map(|v| v.entity_id.as_str());
        let vectored: Vec<&str> = vectored.collect();
        for entity in outcome.entities {
            if vectored.contains(&entity.id.as_str()) {
                stored.insert(entity.id.clone(), entity);
            }
        }
    }
    disk.reopen()
        .map_err(|error| Violation::new(format!("reopening the SQLite memory: {error}")))?;
    check_no_data_loss(&memory, &model, &storage.corrupted()).await?;
    let vectored: Vec<Entity> = stored.into_values().collect();
    let mut queries = sim.task_rng("workload.questions");
    for _ in 0..QUERIES_PER_SEED {
        let exact = queries.choose(&vectored).filter(|_| queries.bool_with(0.6));
        let query = match exact {
            Some(entity) => embedding_text(entity).to_owned(),
            None => question(&mut queries),
        };
        check_recall(&sim, &memory, &text_only, &query, exact).await?;
    }
    Ok(())
}

/// Invariant 1 for one `remember`: a vector of the configured length for each entity,
/// or none and `EmbeddingFailed`.
fn check_vectors(outcome: &RememberOutcome) -> Result<(), Violation> {
    let failed = outcome
        .degradations
        .iter()
        .any(|d| matches!(d, Degradation::EmbeddingFailed { .. }));
    if failed {
        ensure!(
            outcome.vectors.is_empty(),
            "remember reported EmbeddingFailed but stored {} vectors",
            outcome.vectors.len()
        );
        return Ok(());
    }
    let ids = |ids: Vec<&String>| ids.into_iter().cloned().collect::<Vec<_>>();
    ensure!(
        ids(outcome.entities.iter().map(|e| &e.id).collect())
            == ids(outcome.vectors.iter().map(|v| &v.entity_id).collect()),
        "remember stored vectors for {:?}, its entities are {:?}",
        ids(outcome.vectors.iter().map(|v| &v.entity_id).collect()),
        ids(outcome.entities.iter().map(|e| &e.id).collect())
    );
    for vector in &outcome.vectors {
        ensure!(
            vector.dimensions() == EMBED_DIMENSIONS as usize && vector.model == EMBED_MODEL,
            "entity {} got a vector of {} dimensions by {:?}",
            vector.entity_id,
            vector.dimensions(),
            vector.model
        );
    }
    Ok(())
}

/// Invariants 1, 2 and 4 for one query.
async fn check_recall(
    sim: &SimEnvironment,
    memory: &Memory,
    text_only: &Memory,
    query: &str,
    exact: Option<&Entity>,
) -> Result<(), Violation> {
    let options = RecallOptions::default()
        .with_limit(RECALL_LIMIT)
        .with_rewrite(RewriteMode::Never);
    let outcome = memory.recall(query, options).await.map_err(|e| {
        Violation::new(format!(
            "recall({query:?}) failed under embedding faults: {e}"
        ))
    })?;
    let ids = |o: &RecallOutcome| {
        o.hits
            .iter()
            .map(|h| h.entity.id.clone())
            .collect::<Vec<_>>()
    };
    let embedding_failed = outcome
        .degradations
        .iter()
        .any(|d| matches!(d, Degradation::QueryEmbeddingFailed { .. }));
    if embedding_failed {
        let text = text_only
            .recall(query, options)
            .await
            .map_err(|e| Violation::new(format!("text-only recall({query:?}) failed: {e}")))?;
        ensure!(
            outcome.hits == text.hits,
            "recall({query:?}) after a failed query embedding returned {:?}, text search {:?}",
            ids(&outcome),
            ids(&text)
        );
        return Ok(());
    }
    ensure!(
        outcome.degradations.is_empty(),
        "recall({query:?}) degraded without a failed embedding: {:?}",
        outcome.degradations
    );
    if let Some(entity) = exact {
        let found = outcome
            .hits
            .iter()
            .any(|h| h.entity.id == entity.id || h.entity.content == entity.content);
        ensure!(
            found,
            "recall of entity {}'s exact content {query:?} missed it: {:?}",
            entity.id,
            ids(&outcome)
        );
        sim.env().cover("recall_by_embeddings.exact_recalled");
    }
    Ok(())
}
