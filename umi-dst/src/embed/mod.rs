//! The simulated embedding model: vectors that are deterministic, mean something, and are
//! the same bits on every platform.
//!
//! A vector is a function of (model name, text, dimensions) alone: the same text gets the
//! same vector in every wire format (OpenAI's floats or base64, Ollama's arrays), at every
//! seed, in every process. The seed changes only what happens around it (faults, latency:
//! [`crate::network`]'s embeddings endpoints).
//!
//! # Construction
//!
//! 1. **Words.** The text is split into words: maximal runs of ASCII letters and digits
//!    and of non-ASCII bytes (so "café" and "東京" stay whole), ASCII letters lowercased.
//!    Nothing depends on Unicode tables, which change between Rust versions. At most
//!    [`EMBED_WORDS_MAX`] words are read.
//! 2. **Features.** Each word is a feature of weight 2, each pair of adjacent words (a
//!    bigram) one of weight 1: texts that share words share features, and texts that
//!    share phrases share more.
//! 3. **Hashing.** Each word is hashed with FNV-1a 64 (offset basis
//!    `0xcbf29ce484222325`, prime `0x100000001b3`) over the model name, a `0xff` byte
//!    and the word's (lowercased) bytes. A word's feature key is that hash mixed with
//!    SplitMix64's finalizer; a bigram's is the finalizer of `h1 ^ rotl(h2, 32) ^
//!    0x9e3779b97f4a7c15` (`h1`, `h2` its words' hashes). A key's lowest bit is the sign,
//!    its bucket `(key * dimensions) >> 64` (128-bit product): the counts are integers,
//!    added exactly. Every byte of the text is hashed once, so embedding costs about
//!    what hashing the text does (`benches/embed.rs`).
//! 4. **Normalization.** The vector is the counts divided by their L2 norm, computed in
//!    `f64` (the sum of the integer counts' squares is below 2^36, so exact; `sqrt` and division are
//!    correctly rounded by IEEE 754), then cast to `f32` (a third correctly rounded step). No `exp`, `ln` or
//!    trigonometry, whose results differ between platforms' libms.
//! 5. A text with no words (empty, or punctuation only) is embedded as the one feature
//!    "no words", so every vector has length 1.
//!
//! Asking for fewer dimensions hashes into fewer buckets (not a cut of the full vector):
//! the smaller vector keeps every word. Cosine similarity of two vectors counts their
//! shared features, so texts that share words are nearer than texts that do not (the
//! property test in this module's tests).

pub mod conformance;
#[cfg(test)]
mod tests;

/// Words of one text the model reads at most; the rest is not embedded.
pub const EMBED_WORDS_MAX: usize = 65_536;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const BIGRAM_TAG: u64 = 0x9e37_79b9_7f4a_7c15;
const EMPTY_TAG: u64 = 0x5bd1_e995_5bd1_e995;
const WORD_WEIGHT: i64 = 2;
const BIGRAM_WEIGHT: i64 = 1;

/// One simulated embedding model: its name and limits, as the provider it imitates has
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedModel {
    /// The model id a request names.
    pub name: &'static str,
    /// The native vector length.
    pub dimensions: u32,
    /// The longest input in tokens.
    pub context_tokens: u32,
    /// Whether it takes `dimensions` smaller than its own (the text-embedding-3 models
    /// do; text-embedding-ada-002 refuses "This model does not support specifying
    /// dimensions.").
    pub shortens: bool,
}

/// The models the simulated servers embed with. OpenAI's dimensions and the 8192-token
/// limit are from its embeddings guide; nomic-embed-text's 768 dimensions and
/// 2048-token context, mxbai-embed-large's 1024 and 512, from their Ollama library pages.
pub const EMBED_MODELS: &[EmbedModel] = &[
    EmbedModel {
        name: "sim-embed",
        dimensions: 256,
        context_tokens: 8_192,
        shortens: true,
    },
    EmbedModel {
        name: "text-embedding-3-small",
        dimensions: 1_536,
        context_tokens: 8_192,
        shortens: true,
    },
    EmbedModel {
        name: "text-embedding-3-large",
        dimensions: 3_072,
        context_tokens: 8_192,
        shortens: true,
    },
    EmbedModel {
        name: "text-embedding-ada-002",
        dimensions: 1_536,
        context_tokens: 8_192,
        shortens: false,
    },
    EmbedModel {
        name: "nomic-embed-text",
        dimensions: 768,
        context_tokens: 2_048,
        shortens: true,
    },
    EmbedModel {
        name: "mxbai-embed-large",
        dimensions: 1_024,
        context_tokens: 512,
        shortens: true,
    },
    // Google's (Gemini API embeddings guide and models page): gemini-embedding-001
    // gives 3072 dimensions, takes 2048 input tokens, and accepts a smaller
    // `outputDimensionality` (768 and 1536 recommended); text-embedding-004 gives 768,
    // 2048 tokens, and takes `outputDimensionality` too (google-genai's `embed_content`
    // docstring asks it for 64).
    EmbedModel {
        name: "gemini-embedding-001",
        dimensions: 3_072,
        context_tokens: 2_048,
        shortens: true,
    },
    EmbedModel {
        name: "text-embedding-004",
        dimensions: 768,
        context_tokens: 2_048,
        shortens: true,
    },
];

/// The model named `name` (an Ollama tag, `nomic-embed-text:latest`, names its model).
pub fn embed_model(name: &str) -> Option<&'static EmbedModel> {
    let base = name.strip_suffix(":latest").unwrap_or(name);
    EMBED_MODELS.iter().find(|model| model.name == base)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// The words of `text` (see the module docs), at most [`EMBED_WORDS_MAX`].
pub fn words(text: &str) -> Vec<Vec<u8>> {
    text.as_bytes()
        .split(|b| !is_word_byte(*b))
        .filter(|word| !word.is_empty())
        .take(EMBED_WORDS_MAX)
        .map(<[u8]>::to_ascii_lowercase)
        .collect()
}

fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(hash, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// SplitMix64's finalizer: spreads FNV's weak low bits over the whole word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn add_feature(counts: &mut [i64], key: u64, weight: i64) {
    let bucket = ((u128::from(key) * counts.len() as u128) >> 64) as usize;
    counts[bucket] += if key & 1 == 1 { -weight } else { weight };
}

/// The FNV-1a hash of each word of `text` (lowercased), from `start`, handed to `each`
/// in order; at most [`EMBED_WORDS_MAX`] words.
fn word_hashes(text: &str, start: u64, mut each: impl FnMut(u64)) {
    let (mut hash, mut in_word, mut seen) = (start, false, 0_usize);
    for &b in text.as_bytes() {
        if is_word_byte(b) {
            hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
            in_word = true;
        } else if in_word {
            each(hash);
            (hash, in_word) = (start, false);
            seen += 1;
            if seen == EMBED_WORDS_MAX {
                return;
            }
        }
    }
    if in_word {
        each(hash);
    }
}

/// The vector of `text` under `model` with `dimensions` numbers (see the module docs):
/// unit length, the same bits everywhere. `dimensions` of 0 gives an empty vector.
pub fn embed_text(model: &str, text: &str, dimensions: u32) -> Vec<f32> {
    if dimensions == 0 {
        return Vec::new();
    }
    let mut counts = vec![0_i64; dimensions as usize];
    let start = fnv1a(fnv1a(FNV_OFFSET_BASIS, model.as_bytes()), &[0xff]);
    let mut previous: Option<u64> = None;
    word_hashes(text, start, |hash| {
        add_feature(&mut counts, mix(hash), WORD_WEIGHT);
        if let Some(before) = previous {
            let key = mix(before ^ hash.rotate_left(32) ^ BIGRAM_TAG);
            add_feature(&mut counts, key, BIGRAM_WEIGHT);
        }
        previous = Some(hash);
    });
    if counts.iter().all(|c| *c == 0) {
        // No words, or features that cancelled out: the fixed "no words" feature.
        add_feature(&mut counts, mix(start ^ EMPTY_TAG), 1);
    }
    // Exact: the counts' absolute sum is below 3 * 2^16 (weights 2 and 1 over at most
    // 2^16 words), so the sum of their squares is below 2^36, well inside f64's 2^53.
    let squares: f64 = counts.iter().map(|c| (*c as f64) * (*c as f64)).sum();
    let norm = squares.sqrt();
    counts.iter().map(|c| (*c as f64 / norm) as f32).collect()
}

/// Cosine similarity of two vectors of one length (0 for vectors of no length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| {
        v.iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            .sqrt()
    };
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na * nb)
}
