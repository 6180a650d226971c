//! The simulated embedding model written the plain way, one byte and one word at a time,
//! as it was first built: the specification [`super::embed_text`] is held to bit for bit.
//!
//! The fast version reads the text in two halves with branch-free chunks (see the module
//! docs); this one follows the construction's five steps literally. Test-only.

use super::{
    BIGRAM_TAG, EMBED_WORDS_MAX, EMPTY_TAG, FNV_OFFSET_BASIS, FNV_PRIME, fnv1a, is_word_byte, mix,
};

/// Integer weights, as the construction states them.
const WORD_WEIGHT: i64 = 2;
const BIGRAM_WEIGHT: i64 = 1;

fn add_feature(counts: &mut [i64], key: u64, weight: i64) {
    let bucket = ((u128::from(key) * counts.len() as u128) >> 64) as usize;
    counts[bucket] += if key & 1 == 1 { -weight } else { weight };
}

/// Each word's FNV-1a hash from `start`, in order, at most [`EMBED_WORDS_MAX`].
fn word_hashes(text: &str, start: u64) -> Vec<u64> {
    let mut hashes = Vec::new();
    let (mut hash, mut in_word) = (start, false);
    for &b in text.as_bytes() {
        if is_word_byte(b) {
            hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
            in_word = true;
        } else if in_word {
            hashes.push(hash);
            (hash, in_word) = (start, false);
        }
    }
    if in_word {
        hashes.push(hash);
    }
    hashes.truncate(EMBED_WORDS_MAX);
    hashes
}

/// The vector of `text`, computed step by step.
pub(super) fn embed_text_plain(model: &str, text: &str, dimensions: u32) -> Vec<f32> {
    if dimensions == 0 {
        return Vec::new();
    }
    let mut counts = vec![0_i64; dimensions as usize];
    let start = fnv1a(fnv1a(FNV_OFFSET_BASIS, model.as_bytes()), &[0xff]);
    let hashes = word_hashes(text, start);
    for (index, hash) in hashes.iter().enumerate() {
        add_feature(&mut counts, mix(*hash), WORD_WEIGHT);
        if index > 0 {
            let key = mix(hashes[index - 1] ^ hash.rotate_left(32) ^ BIGRAM_TAG);
            add_feature(&mut counts, key, BIGRAM_WEIGHT);
        }
    }
    if counts.iter().all(|c| *c == 0) {
        add_feature(&mut counts, mix(start ^ EMPTY_TAG), 1);
    }
    let squares: f64 = counts.iter().map(|c| (*c as f64) * (*c as f64)).sum();
    let norm = squares.sqrt();
    counts.iter().map(|c| (*c as f64 / norm) as f32).collect()
}
