//! `recall`: fast text search, plus the nearest entities by embedding (with an embedder)
//! and LLM query rewriting for questions, merged by reciprocal-rank fusion.

use std::collections::BTreeMap;

use super::Memory;
use super::error::{Degradation, MemoryError};
use super::tasks::{parse_rewrite, rewrite_request};
use crate::constants::{
    MEMORY_QUERY_BYTES_MAX, RECALL_RESULTS_DEFAULT, RECALL_RESULTS_MAX, RRF_K, SEARCH_RESULTS_MAX,
};
use crate::storage::{Entity, SearchHit};

/// When to ask the model for query variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RewriteMode {
    /// For questions ("who...", "...?").
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never: fast search only.
    Never,
}

/// What `recall` should do: `RecallOptions::default()` (the default limit, rewriting
/// questions), then `with_limit` and `with_rewrite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecallOptions {
    /// Results wanted, 1 to `RECALL_RESULTS_MAX`.
    pub limit: usize,
    /// When to rewrite the query.
    pub rewrite: RewriteMode,
}

impl Default for RecallOptions {
    fn default() -> Self {
        Self {
            limit: RECALL_RESULTS_DEFAULT,
            rewrite: RewriteMode::Auto,
        }
    }
}

impl RecallOptions {
    /// Asks for `limit` results (1 to `RECALL_RESULTS_MAX`; `recall` refuses others).
    pub const fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Rewrites the query as `rewrite` says.
    pub const fn with_rewrite(mut self, rewrite: RewriteMode) -> Self {
        self.rewrite = rewrite;
        self
    }
}

/// One recalled entity.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    /// The entity.
    pub entity: Entity,
    /// Its fused score (higher is better).
    pub score: f64,
}

/// What `recall` found.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallOutcome {
    /// Best first.
    pub hits: Vec<RecallHit>,
    /// The query variants searched besides the query itself.
    pub variants: Vec<String>,
    /// What was done instead of failing.
    pub degradations: Vec<Degradation>,
}

const QUESTION_WORDS: [&str; 23] = [
    "who", "what", "when", "where", "why", "how", "which", "whose", "whom", "did", "does", "do",
    "is", "are", "was", "were", "can", "could", "should", "would", "will", "has", "have",
];

/// Whether `query` reads as a question.
pub(crate) fn is_question(query: &str) -> bool {
    let query = query.trim();
    let first = query.split_whitespace().next().unwrap_or("").to_lowercase();
    query.ends_with('?') || QUESTION_WORDS.contains(&first.as_str())
}

/// Merges ranked lists by reciprocal-rank fusion; ties by entity id.
fn fuse(lists: &[Vec<SearchHit>], limit: usize) -> Vec<RecallHit> {
    let mut scores: BTreeMap<&str, (f64, &Entity)> = BTreeMap::new();
    for list in lists {
        for (rank, hit) in list.iter().enumerate() {
            let slot = scores
                .entry(hit.entity.id.as_str())
                .or_insert((0.0, &hit.entity));
            slot.0 += 1.0 / f64::from(RRF_K + rank as u32 + 1);
        }
    }
    let mut hits: Vec<RecallHit> = scores
        .into_values()
        .map(|(score, entity)| RecallHit {
            entity: entity.clone(),
            score,
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.entity.id.cmp(&b.entity.id))
    });
    hits.truncate(limit);
    hits
}

impl Memory {
    /// Recalls what is relevant to `query`: see the module docs of [`crate::memory`].
    pub async fn recall(
        &self,
        query: &str,
        options: RecallOptions,
    ) -> Result<RecallOutcome, MemoryError> {
        check_query(query, options)?;
        let depth = (options.limit * 2).min(SEARCH_RESULTS_MAX);
        let fast = self.storage.search(query, depth).await?;
        let mut lists = vec![fast];
        let mut variants = Vec::new();
        let mut degradations = Vec::new();
        if let Some(hits) = self.vector_hits(query, depth, &mut degradations).await {
            lists.push(hits);
        }
        let rewrite = match options.rewrite {
            RewriteMode::Always => true,
            RewriteMode::Auto => is_question(query),
            RewriteMode::Never => false,
        };
        if let (Some(llm), true) = (&self.llm, rewrite) {
            let rewritten = match llm.complete(&rewrite_request(query)).await {
                Ok(response) => parse_rewrite(&response.text).map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            match rewritten {
                Ok(found) => {
                    self.env.cover("memory.rewrite_fused");
                    for variant in found.into_iter().filter(|v| v.trim() != query.trim()) {
                        match self.storage.search(&variant, depth).await {
                            Ok(hits) => lists.push(hits),
                            Err(error) => degradations.push(Degradation::VariantSearchFailed {
                                variant: variant.clone(),
                                error: error.to_string(),
                            }),
                        }
                        variants.push(variant);
                    }
                }
                Err(error) => {
                    self.env
                        .record("memory.degraded", format_args!("rewrite_failed: {error}"));
                    self.env.cover("memory.rewrite_failed");
                    degradations.push(Degradation::RewriteFailed { error });
                }
            }
        }
        let hits = fuse(&lists, options.limit);
        self.env.record(
            "memory.recall",
            format_args!(
                "hits={} variants={} degraded={}",
                hits.len(),
                variants.len(),
                degradations.len()
            ),
        );
        Ok(RecallOutcome {
            hits,
            variants,
            degradations,
        })
    }
}

/// Whether `recall` may run `query` with `options`: a query with words, within
/// [`MEMORY_QUERY_BYTES_MAX`], and a limit in `1..=RECALL_RESULTS_MAX`.
fn check_query(query: &str, options: RecallOptions) -> Result<(), MemoryError> {
    if query.trim().is_empty() {
        return Err(MemoryError::EmptyQuery);
    }
    if query.len() > MEMORY_QUERY_BYTES_MAX {
        return Err(MemoryError::QueryTooLong {
            bytes: query.len(),
            limit: MEMORY_QUERY_BYTES_MAX,
        });
    }
    if options.limit == 0 || options.limit > RECALL_RESULTS_MAX {
        return Err(MemoryError::InvalidOptions {
            reason: format!(
                "limit {} is outside 1..={RECALL_RESULTS_MAX}",
                options.limit
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_recognized() {
        assert!(is_question("where does Alice work?"));
        assert!(is_question("Who is Bob"));
        assert!(!is_question("Alice Acme"));
    }
}
