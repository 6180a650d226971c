//! Scenario `recall_degrades_gracefully`: when the model fails, recall still answers,
//! with exactly what the fast path finds.
//!
//! Workload: sixteen facts are remembered without faults; then questions and keyword
//! queries are recalled with query rewriting on, while the rewrite calls fail (429s,
//! 503s, malformed JSON, cut streams, stalls) and storage searches sometimes fail.
//!
//! Invariants:
//! 1. The model's failures never fail `recall`: it fails only when the fast search itself
//!    failed in storage.
//! 2. A recall whose rewrite failed returns exactly the fast path's hits (`RewriteMode::
//!    Never` on the same query), in the same order.
//! 3. Every hit is a stored entity, as stored; hits are distinct, best first, within the
//!    limit.
//! 4. A query sharing a term with some stored entity recalls at least one entity.

use std::collections::BTreeMap;
use std::sync::Arc;

use umi_core::memory::{
    Degradation, Memory, MemoryError, RecallOptions, RecallOutcome, RememberOptions, RewriteMode,
};
use umi_core::storage::Entity;
use umi_core::storage::search::terms;
use umi_dst::{FaultKind, SimEnvironment, SimStorage, Violation, ensure};

use crate::common::{facts, fault_on, question};

/// Facts remembered before the queries.
const FACTS_PER_SEED: usize = 16;

/// Queries per seed.
const QUERIES_PER_SEED: usize = 8;

/// The operation of the model's rewrite calls.
const REWRITE_CALL: &str = "llm.call.memory.rewrite_query";

/// The scenario.
#[umi_dst::scenario(
    goal = "a failed query rewrite leaves exactly the fast-path results, never an error",
    faults = [
        fault_on(FaultKind::LlmRateLimit, 0.1, REWRITE_CALL),
        fault_on(FaultKind::LlmServiceUnavailable, 0.1, REWRITE_CALL),
        fault_on(FaultKind::LlmWrongContent, 0.15, REWRITE_CALL),
        fault_on(FaultKind::LlmStreamCut, 0.05, REWRITE_CALL),
        fault_on(FaultKind::LlmTimeout, 0.05, REWRITE_CALL),
        fault_on(FaultKind::StorageReadFail, 0.05, "storage.search"),
    ],
    marks = ["memory.rewrite_failed", "memory.rewrite_fused"],
    run = run,
    rank = 30,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RecallDegradesGracefully;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let storage = Arc::new(SimStorage::new(&sim));
    let memory = Memory::new(storage, sim.env()).with_llm(sim.llm());
    let remember = RememberOptions::default().with_evolution(false);
    let mut stored: BTreeMap<String, Entity> = BTreeMap::new();
    for text in facts(&sim, "workload.facts", FACTS_PER_SEED) {
        let outcome = memory.remember(&text, remember).await.map_err(|e| {
            Violation::new(format!("remember({text:?}) without storage faults: {e}"))
        })?;
        stored.extend(outcome.entities.into_iter().map(|e| (e.id.clone(), e)));
    }
    let mut questions = sim.task_rng("workload.questions");
    for _ in 0..QUERIES_PER_SEED {
        let query = question(&mut questions);
        let limit = 1 + (questions.next_u64() % 8) as usize;
        let rewritten = RecallOptions::default()
            .with_limit(limit)
            .with_rewrite(RewriteMode::Always);
        let degraded = match memory.recall(&query, rewritten).await {
            Ok(outcome) => outcome,
            Err(MemoryError::Storage(error)) if error.is_transient() => continue,
            Err(error) => return Err(Violation::new(format!("recall({query:?}) failed: {error}"))),
        };
        check_hits(&query, limit, &degraded, &stored)?;
        let rewrite_failed = degraded
            .degradations
            .iter()
            .any(|d| matches!(d, Degradation::RewriteFailed { .. }));
        if rewrite_failed {
            let fast = RecallOptions::default()
                .with_limit(limit)
                .with_rewrite(RewriteMode::Never);
            if let Ok(fast) = memory.recall(&query, fast).await {
                let ids = |o: &RecallOutcome| {
                    o.hits
                        .iter()
                        .map(|h| h.entity.id.clone())
                        .collect::<Vec<_>>()
                };
                ensure!(
                    ids(&degraded) == ids(&fast),
                    "recall({query:?}) after a failed rewrite returned {:?}, the fast path {:?}",
                    ids(&degraded),
                    ids(&fast)
                );
            }
        }
    }
    Ok(())
}

fn check_hits(
    query: &str,
    limit: usize,
    outcome: &RecallOutcome,
    stored: &BTreeMap<String, Entity>,
) -> Result<(), Violation> {
    ensure!(
        outcome.hits.len() <= limit,
        "recall({query:?}) returned {} hits over the limit {limit}",
        outcome.hits.len()
    );
    for (index, hit) in outcome.hits.iter().enumerate() {
        ensure!(
            stored.get(&hit.entity.id) == Some(&hit.entity),
            "recall({query:?}) returned {} ({}), which is not an entity as stored",
            hit.entity.id,
            hit.entity.name
        );
        ensure!(
            !outcome.hits[..index]
                .iter()
                .any(|h| h.entity.id == hit.entity.id),
            "recall({query:?}) returned {} twice",
            hit.entity.id
        );
        ensure!(
            index == 0 || outcome.hits[index - 1].score >= hit.score,
            "recall({query:?}) hits are not best first at {index}"
        );
    }
    let query_terms = terms(query);
    let findable = stored.values().any(|e| {
        let document = terms(&format!("{} {}", e.name, e.content));
        query_terms.iter().any(|t| document.contains(t))
    });
    ensure!(
        !findable || !outcome.hits.is_empty(),
        "recall({query:?}) found nothing, though stored entities share its terms"
    );
    Ok(())
}
