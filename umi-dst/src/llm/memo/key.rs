//! A memo's key for an input: XXH3 of a sample of its bytes, not of all of them.
//!
//! A key only finds the entry to compare: a hit still needs the stored input to be the
//! one asked about, byte for byte (`holds`, `walks_to`). So a key need not tell every two
//! inputs apart, and hashing all of a 145 KB conversation to find its entry, then
//! comparing all of it, read it twice where once does. The key reads the input's first
//! [`EDGE_BYTES`], a window of [`WINDOW_BYTES`] at each power of two from 2 KiB on, its
//! last [`EDGE_BYTES`], and its length: about 2.5 KB of a 145 KB input, wherever it is
//! split into pieces.
//!
//! Two inputs that agree in all of that but differ elsewhere share a key. Then only one
//! of them is stored, and the other is computed each time it is asked for (the memo's
//! rule for a key whose stored input is another): slower, never wrong. It happens: a
//! request's tools come after its messages, so two long conversations of one length whose
//! last messages differ only before the tools' last KiB share a key (mixed_formats' ten
//! long calls with tools do, in SimLLM's request hash and the Responses API's body). A
//! digest is then resumed from the state of the prefix the two share (`midstates`), which
//! costs about what a hit does; a text's own facts and tokens are keyed by the text alone,
//! whose tail is its own end.

use xxhash_rust::xxh3::Xxh3Default;

/// Bytes of an input's head, and of its tail, that its key reads.
pub(super) const EDGE_BYTES: usize = 1024;

/// Bytes of each window the key reads, at offsets 2 KiB, 4 KiB, 8 KiB, ...
pub(super) const WINDOW_BYTES: usize = 64;

/// The offset of the first window (each next one is at twice the offset).
const WINDOW_FIRST_OFFSET: usize = 2 * EDGE_BYTES;

/// The key of an input fed to it in pieces, in order.
pub(super) struct KeySampler {
    hasher: Xxh3Default,
    /// Bytes fed so far.
    offset: usize,
    /// The next window's offset.
    window_at: usize,
    /// At least the last [`EDGE_BYTES`] fed (at most twice that).
    tail: Vec<u8>,
}

impl KeySampler {
    pub(super) fn new() -> Self {
        Self {
            hasher: Xxh3Default::new(),
            offset: 0,
            window_at: WINDOW_FIRST_OFFSET,
            tail: Vec::with_capacity(2 * EDGE_BYTES),
        }
    }

    /// Feeds the input's next `piece`.
    pub(super) fn feed(&mut self, piece: &[u8]) {
        let start = self.offset;
        let end = start + piece.len();
        if start < EDGE_BYTES {
            self.hasher
                .update(&piece[..(EDGE_BYTES - start).min(piece.len())]);
        }
        // The windows this piece reaches, in order; a window split across pieces is
        // fed in its parts, so the bytes read do not depend on the split.
        while self.window_at < end {
            let window_end = self.window_at + WINDOW_BYTES;
            let from = self.window_at.max(start) - start;
            let to = window_end.min(end) - start;
            self.hasher.update(&piece[from..to]);
            if window_end > end {
                break;
            }
            self.window_at *= 2;
        }
        if piece.len() >= EDGE_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&piece[piece.len() - EDGE_BYTES..]);
        } else {
            self.tail.extend_from_slice(piece);
            if self.tail.len() > 2 * EDGE_BYTES {
                let cut = self.tail.len() - EDGE_BYTES;
                self.tail.drain(..cut);
            }
        }
        self.offset = end;
    }

    /// The key of everything fed.
    pub(super) fn finish(mut self) -> u64 {
        let tail = &self.tail[self.tail.len().saturating_sub(EDGE_BYTES)..];
        self.hasher.update(tail);
        self.hasher.update(&(self.offset as u64).to_le_bytes());
        self.hasher.digest()
    }
}

/// The key of `parts` concatenated.
pub(super) fn key_of(parts: &[&[u8]]) -> u64 {
    let mut sampler = KeySampler::new();
    for part in parts {
        sampler.feed(part);
    }
    sampler.finish()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The bytes the key reads, by offset: the reference the sampler is held to.
    fn sampled(input: &[u8]) -> Vec<u8> {
        let mut read = input[..EDGE_BYTES.min(input.len())].to_vec();
        let mut at = WINDOW_FIRST_OFFSET;
        while at < input.len() {
            read.extend_from_slice(&input[at..(at + WINDOW_BYTES).min(input.len())]);
            at *= 2;
        }
        read.extend_from_slice(&input[input.len().saturating_sub(EDGE_BYTES)..]);
        read.extend_from_slice(&(input.len() as u64).to_le_bytes());
        read
    }

    /// `len` bytes that repeat nowhere (splitmix64 from `seed`), so a byte read from the
    /// wrong offset reads another value.
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    fn reference_key(input: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&sampled(input))
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(41),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// However an input is cut into pieces, its key reads the same bytes.
        #[test]
        fn the_key_reads_the_same_bytes_however_the_input_is_cut(
            len in prop_oneof![0usize..5_000, 0usize..300_000],
            cuts in proptest::collection::vec(0usize..300_000, 0..12),
            fill in any::<u64>(),
        ) {
            let input = noise(fill, len);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(len)).collect();
            cuts.sort_unstable();
            let mut parts = Vec::new();
            let mut from = 0;
            for cut in cuts {
                parts.push(&input[from..cut]);
                from = cut;
            }
            parts.push(&input[from..]);
            prop_assert_eq!(key_of(&parts), reference_key(&input));
            prop_assert_eq!(key_of(&[&input]), reference_key(&input));
        }
    }

    #[test]
    fn the_key_reads_head_windows_tail_and_length() {
        let input = vec![b'a'; 150_000];
        let key = key_of(&[&input]);
        // A byte in the head, in a window, in the tail, or one byte more: another key.
        for at in [
            0,
            EDGE_BYTES - 1,
            2048,
            2048 + WINDOW_BYTES - 1,
            32_768,
            131_072,
            149_999,
        ] {
            let mut other = input.clone();
            other[at] = b'b';
            assert_ne!(key_of(&[&other]), key, "a byte at {at}");
        }
        let mut longer = input.clone();
        longer.push(b'a');
        assert_ne!(key_of(&[&longer]), key);
        // A byte between the windows is not read: the same key (the memo then compares
        // the whole input, `a_hit_compares_the_whole_input_not_its_key`).
        let mut unread = input.clone();
        unread[3_000] = b'b';
        assert_eq!(key_of(&[&unread]), key);
    }
}
