//! Entity vectors: an optional embedding stored beside an entity, and brute-force cosine
//! search over them.
//!
//! A vector is written in the same [`WriteBatch`](super::WriteBatch) as its entity (or a
//! later one), replaces any earlier vector of that entity, and is deleted with it. It
//! records the embedder's model, so a search only compares vectors of the query's model
//! and length: vectors of two models live in different spaces.
//!
//! Scores are cosine similarities computed in `f64` with `+`, `*`, `/` and `sqrt` only
//! (correctly rounded everywhere, see [`crate::portable_math`]), summed in index order,
//! so a score, and the order of results, is the same on every platform. Equal scores
//! are ordered by entity id. On disk a vector is its numbers as little-endian `f32`s.

use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::constants::EMBED_DIMENSIONS_MAX;

/// Bytes of one stored number (an `f32`).
pub const VECTOR_NUMBER_BYTES: usize = 4;

/// The embedding of one entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityVector {
    /// The entity it belongs to.
    pub entity_id: String,
    /// The embedder's model that made it.
    pub model: String,
    /// The numbers; their count is the vector's dimensions.
    pub vector: Vec<f32>,
}

impl EntityVector {
    /// How many numbers the vector has.
    pub fn dimensions(&self) -> usize {
        self.vector.len()
    }

    /// The numbers as stored: little-endian `f32`s.
    pub fn to_bytes(&self) -> Vec<u8> {
        vector_to_bytes(&self.vector)
    }
}

/// `vector`'s numbers as little-endian `f32`s.
pub fn vector_to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The numbers of `bytes` (little-endian `f32`s); `None` unless the length is a multiple
/// of four.
pub fn vector_from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(VECTOR_NUMBER_BYTES) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(VECTOR_NUMBER_BYTES)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect(),
    )
}

/// The cosine similarity of `a` and `b` (equal lengths), in `f64`, portable; 0 when
/// either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut norm_a, mut norm_b) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    dot / (norm_a.sqrt() * norm_b.sqrt())
}

/// Refuses a vector no search could use: no model, no numbers, more than
/// [`EMBED_DIMENSIONS_MAX`], or a number that is not finite.
pub fn validate_vector(vector: &EntityVector) -> Result<(), StorageError> {
    let reason = if vector.model.is_empty() {
        "has no model".to_owned()
    } else if vector.vector.is_empty() {
        "has no numbers".to_owned()
    } else if vector.vector.len() > EMBED_DIMENSIONS_MAX as usize {
        format!(
            "has {} numbers, over the limit of {EMBED_DIMENSIONS_MAX}",
            vector.vector.len()
        )
    } else if let Some(at) = vector.vector.iter().position(|x| !x.is_finite()) {
        format!("has a number that is not finite at {at}")
    } else {
        return Ok(());
    };
    Err(StorageError::Invalid {
        reason: format!("the vector of entity {:?} {reason}", vector.entity_id),
    })
}

/// The best `limit` of `candidates` (entity id, numbers) by cosine with `query`: best
/// first, equal scores by id. Candidates of another length are skipped.
pub fn rank_by_cosine<'a>(
    candidates: impl IntoIterator<Item = (&'a str, &'a [f32])>,
    query: &[f32],
    limit: usize,
) -> Vec<(String, f64)> {
    let mut ranked: Vec<(&str, f64)> = candidates
        .into_iter()
        .filter(|(_, numbers)| numbers.len() == query.len())
        .map(|(id, numbers)| (id, cosine(numbers, query)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked.truncate(limit);
    ranked
        .into_iter()
        .map(|(id, score)| (id.to_owned(), score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_bit_exactly() {
        let numbers = vec![0.1_f32, -0.0, f32::MIN_POSITIVE, 1.0e-40, -3.5];
        let bytes = vector_to_bytes(&numbers);
        assert_eq!(bytes.len(), numbers.len() * VECTOR_NUMBER_BYTES);
        assert_eq!(&bytes[..4], &0.1_f32.to_le_bytes());
        let back = vector_from_bytes(&bytes).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&numbers));
        assert_eq!(vector_from_bytes(&bytes[..5]), None);
    }

    #[test]
    fn cosine_is_one_for_parallel_and_zero_for_orthogonal_or_zero() {
        assert_eq!(cosine(&[1.0, 0.0], &[2.0, 0.0]), 1.0);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
        // Exact: +, *, / and sqrt are correctly rounded on every platform.
        assert_eq!(
            cosine(&[3.0, 4.0], &[4.0, 3.0]).to_bits(),
            (24.0_f64 / 25.0).to_bits()
        );
    }

    #[test]
    fn ranking_is_best_first_ties_by_id_and_skips_other_lengths() {
        let a = [1.0_f32, 0.0];
        let b = [1.0_f32, 0.0];
        let c = [0.0_f32, 1.0];
        let d = [1.0_f32, 0.0, 0.0];
        let candidates = [("b", &b[..]), ("a", &a[..]), ("c", &c[..]), ("d", &d[..])];
        let ranked = rank_by_cosine(candidates, &[1.0, 0.1], 10);
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(rank_by_cosine(candidates, &[1.0, 0.1], 1).len(), 1);
    }

    #[test]
    fn invalid_vectors_are_refused() {
        let good = EntityVector {
            entity_id: "e".into(),
            model: "m".into(),
            vector: vec![0.5, 0.5],
        };
        assert!(validate_vector(&good).is_ok());
        for bad in [
            EntityVector {
                model: String::new(),
                ..good.clone()
            },
            EntityVector {
                vector: Vec::new(),
                ..good.clone()
            },
            EntityVector {
                vector: vec![0.5, f32::NAN],
                ..good.clone()
            },
        ] {
            assert!(matches!(
                validate_vector(&bad),
                Err(StorageError::Invalid { .. })
            ));
        }
    }
}
