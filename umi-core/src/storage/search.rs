//! Text search for the in-memory backends: a tokenizer and a BM25 index.
//!
//! Terms are lowercase runs of letters and digits (any script). A document is an entity's
//! name and content, the name counting twice (a match on a name matters more). Scores
//! are BM25 (k1 = 1.2, b = 0.75), the ranking SQLite's FTS5 uses too, so the backends
//! agree on what is relevant even where their exact numbers differ. The logarithm is
//! `portable_math::ln`, so a score (and an order of results) is the same on every platform.

use std::collections::BTreeMap;

use crate::portable_math::ln;

const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;

/// Query terms at most; the rest of a long query is ignored.
pub const QUERY_TERMS_MAX: usize = 64;

/// The terms of `text`, in order, lowercase.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The distinct terms of a query, in first-occurrence order, at most `QUERY_TERMS_MAX`.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in terms(query) {
        if !out.contains(&term) {
            out.push(term);
            if out.len() == QUERY_TERMS_MAX {
                break;
            }
        }
    }
    out
}

/// An inverted index over documents keyed by `u64`.
#[derive(Debug, Default)]
pub struct SearchIndex {
    lengths: BTreeMap<u64, u32>,
    postings: BTreeMap<String, BTreeMap<u64, u32>>,
    total_length: u64,
}

fn document_terms(name: &str, content: &str) -> Vec<String> {
    let name_terms = terms(name);
    let mut all = name_terms.clone();
    all.extend(name_terms);
    all.extend(terms(content));
    all
}

impl SearchIndex {
    /// Indexes document `key`.
    pub fn insert(&mut self, key: u64, name: &str, content: &str) {
        let doc = document_terms(name, content);
        let length = u32::try_from(doc.len()).unwrap_or(u32::MAX);
        if self.lengths.insert(key, length).is_some() {
            panic!("SearchIndex::insert: key {key} is already indexed; remove it first");
        }
        self.total_length += u64::from(length);
        for term in doc {
            *self
                .postings
                .entry(term)
                .or_default()
                .entry(key)
                .or_insert(0) += 1;
        }
    }

    /// Removes document `key`, which was indexed with `name` and `content`.
    pub fn remove(&mut self, key: u64, name: &str, content: &str) {
        let Some(length) = self.lengths.remove(&key) else {
            return;
        };
        self.total_length -= u64::from(length);
        for term in document_terms(name, content) {
            if let Some(posting) = self.postings.get_mut(&term) {
                posting.remove(&key);
                if posting.is_empty() {
                    self.postings.remove(&term);
                }
            }
        }
    }

    /// Documents indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// BM25 scores of the documents matching any term of `query`, by key.
    ///
    /// The cost depends on the postings of the query's terms, not on the size of the
    /// index: contributions are collected, sorted by key and summed.
    pub fn scores(&self, query: &str) -> Vec<(u64, f64)> {
        let documents = self.lengths.len() as f64;
        if documents == 0.0 {
            return Vec::new();
        }
        let average_length = (self.total_length as f64 / documents).max(1.0);
        let mut contributions: Vec<(u64, f64)> = Vec::new();
        for term in query_terms(query) {
            let Some(posting) = self.postings.get(&term) else {
                continue;
            };
            let frequency = posting.len() as f64;
            let idf = ln(1.0 + (documents - frequency + 0.5) / (frequency + 0.5));
            for (&key, &tf) in posting {
                let tf = f64::from(tf);
                let length = f64::from(self.lengths[&key]);
                let norm = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * length / average_length);
                contributions.push((key, idf * tf * (BM25_K1 + 1.0) / norm));
            }
        }
        // Stable sort: a key's contributions stay in term order, so sums are reproducible.
        contributions.sort_by_key(|(key, _)| *key);
        let mut scores: Vec<(u64, f64)> = Vec::with_capacity(contributions.len());
        for (key, contribution) in contributions {
            match scores.last_mut() {
                Some((last, sum)) if *last == key => *sum += contribution,
                _ => scores.push((key, contribution)),
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_lowercase_alphanumeric_runs() {
        assert_eq!(
            terms("Alice's café, 東京 2024!"),
            ["alice", "s", "café", "東京", "2024"]
        );
        assert_eq!(query_terms("a A a b"), ["a", "b"]);
    }

    #[test]
    fn more_matching_terms_rank_higher_and_removal_unindexes() {
        let mut index = SearchIndex::default();
        index.insert(1, "Alice", "works at Acme in Paris");
        index.insert(2, "Bob", "lives in Paris");
        index.insert(3, "Carol", "likes tea");
        let scores: BTreeMap<u64, f64> = index.scores("Alice Paris").into_iter().collect();
        assert!(scores[&1] > scores[&2]);
        assert!(!scores.contains_key(&3));
        index.remove(1, "Alice", "works at Acme in Paris");
        assert!(index.scores("Alice").iter().all(|(key, _)| *key != 1));
        assert_eq!(index.len(), 2);
    }

    /// Exact score bits: the idf's logarithm is `portable_math::ln`, so these hold on
    /// every platform (the platform's `ln` could move the last bits, and with them the
    /// order of two near-equal results).
    #[test]
    fn scores_have_pinned_bits() {
        let mut index = SearchIndex::default();
        index.insert(1, "Alice", "works at Acme in Paris");
        index.insert(2, "Bob", "lives in Paris");
        index.insert(3, "Carol", "likes tea");
        let bits: Vec<(u64, u64)> = index
            .scores("Alice Paris tea")
            .into_iter()
            .map(|(key, score)| (key, score.to_bits()))
            .collect();
        assert_eq!(
            bits,
            [
                (1, 4_610_138_637_037_426_992),
                (2, 4_602_360_614_386_429_818),
                (3, 4_607_599_313_840_206_873)
            ]
        );
    }
}
