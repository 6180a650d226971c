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
//!    added exactly. Every byte of the text is hashed once. The reading is branch-free
//!    (a word's end is a bit in a mask, not a branch) and a text is read as two halves
//!    side by side (two hash chains in flight), the same bits as reading it word by
//!    word; `benches/embed.rs` measured about 2x what hashing the text and writing a
//!    vector costs (1.84x-2.25x on a 2-core machine shared with other builds, from
//!    2.38x-2.51x before; about 26k instructions a call from 40k, the baseline's 5k
//!    being one multiply chain). The goal of 1.25x is not reached: see the bench's docs.
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
mod reference;
#[cfg(test)]
mod tests;

/// Words of one text the model reads at most; the rest is not embedded.
pub const EMBED_WORDS_MAX: usize = 65_536;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const BIGRAM_TAG: u64 = 0x9e37_79b9_7f4a_7c15;
const EMPTY_TAG: u64 = 0x5bd1_e995_5bd1_e995;
const WORD_WEIGHT: f32 = 2.0;
const BIGRAM_WEIGHT: f32 = 1.0;

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

const fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// Each byte's lowercased self if it is a word byte, 0 if not (no word byte is 0): one
/// load answers both questions the scan asks of a byte.
const WORD_BYTES: [u8; 256] = {
    let mut table = [0_u8; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if is_word_byte(byte) {
            table[b] = byte.to_ascii_lowercase();
        }
        b += 1;
    }
    table
};

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

/// Adds `weight` (an integer: the counts stay integers below 2^24, so `f32` adds them
/// exactly) to `key`'s bucket, negated when `key`'s lowest bit is set. The sign is
/// or-ed into the bits rather than chosen by a branch, which a hash would mispredict
/// half the time.
fn add_feature(counts: &mut [f32], key: u64, weight: f32) {
    let bucket = ((u128::from(key) * counts.len() as u128) >> 64) as usize;
    let sign = ((key & 1) as u32) << 31;
    counts[bucket] += f32::from_bits(weight.to_bits() | sign);
}

fn add_bigram(counts: &mut [f32], h1: u64, h2: u64) {
    let key = mix(h1 ^ h2.rotate_left(32) ^ BIGRAM_TAG);
    add_feature(counts, key, BIGRAM_WEIGHT);
}

/// Bytes of a stretch read between handing its words over: one bit each of a `u64`.
const CHUNK: usize = 64;

/// One FNV-1a step without a branch: `before` gets the hash before `byte`, `lowered`
/// the byte as [`WORD_BYTES`] has it, and a non-word byte puts the hash back to
/// `start` (a conditional move). A word's hash is so the `before` of the non-word byte
/// that ends it.
#[inline(always)]
fn step(hash: &mut u64, start: u64, byte: u8, before: &mut u64, lowered: &mut u8) {
    let lower = WORD_BYTES[usize::from(byte)];
    *before = *hash;
    *lowered = lower;
    let next = (*hash ^ u64::from(lower)).wrapping_mul(FNV_PRIME);
    *hash = if lower != 0 { next } else { start };
}

/// The positions among the first `len` of `lowered` that end a word (a non-word byte
/// after a word byte; `carry` says whether the byte before the first was one), as bits.
/// Eight bytes at a time: a byte's top bit after `((x & 0x7f) + 0x7f) | x` says whether
/// it is non-zero, and a multiply gathers the eight top bits into one byte.
fn word_ends(lowered: &[u8; CHUNK], len: usize, carry: &mut u64) -> u64 {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut word = 0_u64;
    for (k, eight) in lowered.chunks_exact(8).enumerate() {
        let mut bytes = [0_u8; 8];
        bytes.copy_from_slice(eight);
        let x = u64::from_le_bytes(bytes);
        let nonzero = ((((x & LOW) + LOW) | x) & !LOW) >> 7;
        word |= (nonzero.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    let valid = u64::MAX >> (CHUNK - len);
    let word = word & valid;
    let ends = !word & ((word << 1) | *carry) & valid;
    *carry = (word >> (len - 1)) & 1;
    ends
}

/// One stretch's reading: its running hash, whether its last byte was a word byte,
/// and, for the chunk being read, each byte's hash before it and its lowered self.
struct Scan {
    hash: u64,
    carry: u64,
    before: [u64; CHUNK],
    lowered: [u8; CHUNK],
}

/// The bigram chain through one stretch's words: its first word, the word before the
/// next, and how many words may still be read.
struct Chain {
    first: Option<u64>,
    previous: Option<u64>,
    left: usize,
}

impl Chain {
    /// Adds the features of the words that end at `ends` (hashes in `before`), in
    /// order, the first [`EMBED_WORDS_MAX`] in all: each word's, and each adjacent
    /// pair's.
    fn words(&mut self, counts: &mut [f32], before: &[u64; CHUNK], mut ends: u64) {
        // Near the limit only: drop the words past it, latest first.
        while self.left < CHUNK && ends.count_ones() as usize > self.left {
            ends ^= 1 << (63 - ends.leading_zeros());
        }
        while ends != 0 {
            self.left -= 1;
            let hash = before[ends.trailing_zeros() as usize % CHUNK];
            ends &= ends - 1;
            add_feature(counts, mix(hash), WORD_WEIGHT);
            match self.previous {
                Some(word) => add_bigram(counts, word, hash),
                None => self.first = Some(hash),
            }
            self.previous = Some(hash);
        }
    }
}

/// Reads `bytes` with `scan` alone, chunk by chunk, to its end (a space read last ends
/// its last word) or the word limit.
fn read_alone(bytes: &[u8], start: u64, scan: &mut Scan, chain: &mut Chain, counts: &mut [f32]) {
    for chunk in bytes.chunks(CHUNK).chain([&b" "[..]]) {
        if chain.left == 0 {
            return;
        }
        let (before, lowered) = (
            &mut scan.before[..chunk.len()],
            &mut scan.lowered[..chunk.len()],
        );
        for ((byte, before), lowered) in chunk.iter().zip(before).zip(lowered) {
            step(&mut scan.hash, start, *byte, before, lowered);
        }
        let ends = word_ends(&scan.lowered, chunk.len(), &mut scan.carry);
        chain.words(counts, &scan.before, ends);
    }
}

/// Reads the first `len` bytes of both `parts` in lockstep: two hash chains in
/// flight at once, where one would wait on each byte's multiply.
fn read_pair(
    parts: [&[u8]; 2],
    len: usize,
    start: u64,
    scans: &mut [Scan; 2],
    chains: &mut [Chain; 2],
    counts: &mut [f32],
) {
    let [a, b] = scans;
    for at in (0..len).step_by(CHUNK) {
        let n = CHUNK.min(len - at);
        let (x, y) = (&parts[0][at..at + n], &parts[1][at..at + n]);
        let (a_before, a_lowered) = (&mut a.before[..n], &mut a.lowered[..n]);
        let (b_before, b_lowered) = (&mut b.before[..n], &mut b.lowered[..n]);
        let (mut a_hash, mut b_hash) = (a.hash, b.hash);
        #[allow(
            clippy::needless_range_loop,
            reason = "one index into six slices of length `n` leaves no bounds check in the loop"
        )]
        for i in 0..n {
            step(
                &mut a_hash,
                start,
                x[i],
                &mut a_before[i],
                &mut a_lowered[i],
            );
            step(
                &mut b_hash,
                start,
                y[i],
                &mut b_before[i],
                &mut b_lowered[i],
            );
        }
        (a.hash, b.hash) = (a_hash, b_hash);
        let ends = word_ends(&a.lowered, n, &mut a.carry);
        chains[0].words(counts, &a.before, ends);
        let ends = word_ends(&b.lowered, n, &mut b.carry);
        chains[1].words(counts, &b.before, ends);
    }
}

/// `text` cut in two at the first non-word byte from its middle on (which the second
/// half starts with), so no word is split.
fn halves(text: &[u8]) -> [&[u8]; 2] {
    let middle = text.len() / 2;
    let cut = text[middle..]
        .iter()
        .position(|b| WORD_BYTES[usize::from(*b)] == 0)
        .map_or(text.len(), |more| middle + more);
    let (head, tail) = text.split_at(cut);
    [head, tail]
}

/// Adds the features of `text`'s words to `counts`. A text too short to hold more than
/// [`EMBED_WORDS_MAX`] words (a word and its separator take two bytes) is read as two
/// halves side by side: the counts are exact integer sums, so the order features are
/// added in does not matter, and the bigram across the cut is added last. A longer one
/// is read whole, up to the limit.
fn count_features(text: &[u8], start: u64, counts: &mut [f32]) {
    let mut scans = [(); 2].map(|()| Scan {
        hash: start,
        carry: 0,
        before: [0; CHUNK],
        lowered: [0; CHUNK],
    });
    let mut chains = [(); 2].map(|()| Chain {
        first: None,
        previous: None,
        left: EMBED_WORDS_MAX,
    });
    if text.len() >= 2 * EMBED_WORDS_MAX {
        return read_alone(text, start, &mut scans[0], &mut chains[0], counts);
    }
    let parts = halves(text);
    let len = parts[0].len().min(parts[1].len());
    read_pair(parts, len, start, &mut scans, &mut chains, counts);
    for ((part, scan), chain) in parts.iter().zip(&mut scans).zip(&mut chains) {
        read_alone(&part[len..], start, scan, chain, counts);
    }
    if let (Some(word), Some(next)) = (chains[0].previous, chains[1].first) {
        add_bigram(counts, word, next);
    }
}

/// Divides the integer `counts` by their L2 norm in `f64`, each rounded to `f32`: the
/// squares are integers and so is every partial sum (below 2^36), exact in any order,
/// so four sums run side by side.
fn normalize(counts: &mut [f32]) {
    let mut squares = [0.0_f64; 4];
    let mut lanes = counts.chunks_exact(4);
    for lane in &mut lanes {
        for (sum, c) in squares.iter_mut().zip(lane) {
            *sum += f64::from(*c) * f64::from(*c);
        }
    }
    for c in lanes.remainder() {
        squares[0] += f64::from(*c) * f64::from(*c);
    }
    let norm = ((squares[0] + squares[1]) + (squares[2] + squares[3])).sqrt();
    for c in counts.iter_mut() {
        *c = (f64::from(*c) / norm) as f32;
    }
}

/// The vector of `text` under `model` with `dimensions` numbers (see the module docs):
/// unit length, the same bits everywhere. `dimensions` of 0 gives an empty vector.
pub fn embed_text(model: &str, text: &str, dimensions: u32) -> Vec<f32> {
    if dimensions == 0 {
        return Vec::new();
    }
    // The counts are kept in the vector itself, as `f32`s: integers below 2^24 (see
    // `normalize`), which `f32` adds exactly.
    let mut counts = vec![0.0_f32; dimensions as usize];
    let start = fnv1a(fnv1a(FNV_OFFSET_BASIS, model.as_bytes()), &[0xff]);
    count_features(text.as_bytes(), start, &mut counts);
    if counts.iter().all(|c| *c == 0.0) {
        // No words, or features that cancelled out: the fixed "no words" feature.
        add_feature(&mut counts, mix(start ^ EMPTY_TAG), 1.0);
    }
    normalize(&mut counts);
    counts
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
