//! DeterministicRng: a ChaCha stream from a `u64` seed, with independent forks.
//!
//! Every random choice in a simulation comes from one of these. Two properties matter:
//!
//! 1. **Same seed, same numbers**, on any machine and after any dependency upgrade:
//!    ChaCha8 is a fixed algorithm, and the helpers that shape draws (ranges, floats,
//!    probabilities) are our own (`umi_core::env::below` and friends), not `rand`'s.
//! 2. **Forks are independent of draws.** [`DeterministicRng::fork`] derives a child from
//!    the parent's *key* and a label, never from its position. The LLM simulator's stream
//!    does not shift when the storage simulator draws one more number, and adding a new
//!    subsystem does not change the numbers any existing one sees.
//!
//! Keys are derived with SHA-256 over a versioned domain tag, the parent key and the
//! label, so distinct labels give unrelated streams.
//!
//! 3. **Branches switch every stream at once.** The root of a run of a path with branch
//!    points ([`crate::path`]) carries the run's [`BranchEpoch`], and so does every stream
//!    forked from it: when the kernel passes a branch point, each stream's next draw comes
//!    from the start of a fresh stream keyed by its own key and the branch. A stream
//!    without an epoch (every stream of a seed alone) pays nothing for this.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng, TryRng};
use sha2::{Digest, Sha256};
use umi_core::env::{below, chance, in_range, unit_f64};

use crate::branch_epoch::BranchEpoch;

pub mod streams;

use streams::{Label, Substream};

/// Domain tag mixed into every key derivation; bump it only with a deliberate break of
/// every recorded seed.
const KEY_DOMAIN: &[u8] = b"umi.rng.v1";

/// A deterministic random number generator. Cloning it clones its position.
#[derive(Clone)]
pub struct DeterministicRng {
    /// The stream's own key: what the seed alone gives it (forks derive from this).
    key: [u8; 32],
    stream: ChaCha8Rng,
    /// The run's branch points, for a stream of a run of a path with branches.
    branching: Option<Branching>,
}

/// A stream's view of its run's branch points.
#[derive(Clone)]
struct Branching {
    epoch: Arc<BranchEpoch>,
    /// The epoch `stream` is keyed for.
    seen: usize,
    /// The ChaCha stream parameter the stream was made with (0, or a substream's index).
    substream: u64,
}

impl DeterministicRng {
    /// The root stream of a run with seed `seed`.
    pub fn new(seed: u64) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(KEY_DOMAIN);
        hasher.update(b"/seed/");
        hasher.update(seed.to_le_bytes());
        Self::from_key(hasher.finalize().into())
    }

    fn from_key(key: [u8; 32]) -> Self {
        Self {
            key,
            stream: ChaCha8Rng::from_seed(key),
            branching: None,
        }
    }

    /// This stream as the root of a run with branch points `epoch`: it and every stream
    /// forked from it switch streams as the run passes them. Its position is kept until
    /// the first branch point is passed.
    pub(crate) fn with_branches(mut self, epoch: Arc<BranchEpoch>) -> Self {
        self.branching = Some(Branching {
            epoch,
            seen: 0,
            substream: 0,
        });
        self
    }

    /// A child keyed `key`: no draws yet, under this stream's branch points if any.
    fn child(&self, key: [u8; 32], substream: u64) -> Self {
        let mut stream = ChaCha8Rng::from_seed(key);
        if substream > 0 {
            stream.set_stream(substream);
        }
        Self {
            key,
            stream,
            branching: self.branching.as_ref().map(|branching| Branching {
                epoch: branching.epoch.clone(),
                seen: 0,
                substream,
            }),
        }
    }

    /// Keys the stream for the run's current epoch before a draw: free without branch
    /// points, one relaxed load with them, a rekey when a branch point was passed.
    #[inline]
    fn sync(&mut self) -> &mut ChaCha8Rng {
        if let Some(branching) = &mut self.branching {
            let current = branching.epoch.current();
            if current != branching.seen {
                let key = branching.epoch.key_at(&self.key, current);
                self.stream = ChaCha8Rng::from_seed(key);
                if branching.substream > 0 {
                    self.stream.set_stream(branching.substream);
                }
                branching.seen = current;
            }
        }
        &mut self.stream
    }

    /// An independent child stream for `label`. The same parent and label always give the
    /// same child, whatever the parent has drawn; different labels give unrelated streams.
    pub fn fork(&self, label: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(KEY_DOMAIN);
        hasher.update(b"/fork/");
        hasher.update(self.key);
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        self.child(hasher.finalize().into(), 0)
    }

    /// The child stream named `label` (one of [`streams`]'s): [`DeterministicRng::fork`]
    /// with a label written once, where the tests see it.
    pub fn stream(&self, label: Label) -> Self {
        self.fork(label.as_str())
    }

    /// A child stream for a label made of several parts (`fork_parts(&["llm", hash, "3"])`),
    /// without allocating the joined label.
    pub fn fork_parts(&self, parts: &[&[u8]]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(KEY_DOMAIN);
        hasher.update(b"/fork-parts/");
        hasher.update(self.key);
        for part in parts {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        self.child(hasher.finalize().into(), 0)
    }

    /// Sub-stream `index` (from 1) of this stream's key: independent of the stream itself
    /// and of every other index, and cheaper than [`DeterministicRng::fork`] (ChaCha's
    /// 64-bit stream parameter, no hashing). For the fixed handful of streams one
    /// operation needs; use `fork` for anything named.
    /// The index is one of [`streams`]'s, so that every index of a key is listed once.
    pub fn substream(&self, stream: Substream) -> Self {
        let index = stream.index();
        assert!(index > 0, "substream 0 is the stream itself");
        self.child(self.key, index)
    }

    /// The next raw 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.sync().next_u64()
    }

    /// A uniform integer in `0..bound`; `bound` must be positive.
    pub fn below(&mut self, bound: u64) -> u64 {
        let stream = self.sync();
        below(bound, || stream.next_u64())
    }

    /// A uniform integer in `low..=high`.
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        let stream = self.sync();
        in_range(low, high, || stream.next_u64())
    }

    /// A uniform `usize` index in `0..len`; `len` must be positive.
    pub fn index(&mut self, len: usize) -> usize {
        assert!(len > 0, "index: empty range");
        self.below(len as u64) as usize
    }

    /// A float in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// A float in `[low, high)`.
    pub fn f64_in(&mut self, low: f64, high: f64) -> f64 {
        assert!(low <= high, "f64_in: low {low} > high {high}");
        low + (high - low) * self.unit_f64()
    }

    /// `true` with probability `probability`; always consumes exactly one draw.
    pub fn bool_with(&mut self, probability: f64) -> bool {
        assert!(
            (0.0..=1.0).contains(&probability),
            "bool_with: probability {probability}"
        );
        chance(probability, self.next_u64())
    }

    /// A uniformly chosen element, or `None` for an empty slice.
    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        Some(&items[self.index(items.len())])
    }

    /// An index chosen with probability proportional to its weight, or `None` when the
    /// weights are empty or all zero.
    pub fn weighted_index(&mut self, weights: &[u64]) -> Option<usize> {
        let total = weights.iter().try_fold(0u64, |sum, w| sum.checked_add(*w));
        let total = total.expect("weighted_index: weights overflow u64");
        if total == 0 {
            return None;
        }
        let mut ticket = self.below(total);
        for (index, weight) in weights.iter().enumerate() {
            if ticket < *weight {
                return Some(index);
            }
            ticket -= weight;
        }
        unreachable!("ticket below the total always lands in a bucket")
    }

    /// Shuffles `items` in place (Fisher-Yates, every permutation equally likely).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for upper in (1..items.len()).rev() {
            let other = self.below(upper as u64 + 1) as usize;
            items.swap(upper, other);
        }
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.sync().fill_bytes(&mut out);
        out
    }

    /// Fills `out` with random bytes.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        self.sync().fill_bytes(out);
    }

    /// A short fingerprint of this stream's key, for logs (not its position).
    pub fn key_fingerprint(&self) -> String {
        umi_core::hex::lower(&self.key[..6])
    }
}

impl fmt::Debug for DeterministicRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeterministicRng")
            .field("key", &self.key_fingerprint())
            .field("word_pos", &self.stream.get_word_pos())
            .finish()
    }
}

/// Lets a `DeterministicRng` drive anything written against `rand_core` (proptest
/// strategies, `rand`'s distributions).
impl TryRng for DeterministicRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.sync().next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.sync().next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.sync().fill_bytes(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(rng: &mut DeterministicRng, n: usize) -> Vec<u64> {
        (0..n).map(|_| rng.next_u64()).collect()
    }

    #[test]
    fn same_seed_same_stream() {
        assert_eq!(
            draws(&mut DeterministicRng::new(7), 16),
            draws(&mut DeterministicRng::new(7), 16)
        );
        assert_ne!(
            draws(&mut DeterministicRng::new(7), 16),
            draws(&mut DeterministicRng::new(8), 16)
        );
    }

    /// Pins the stream itself: if this changes, every seed in `seeds/` replays a
    /// different run. Change it only together with `KEY_DOMAIN`.
    #[test]
    fn stream_is_pinned_across_versions() {
        let mut rng = DeterministicRng::new(42);
        let first = rng.next_u64();
        let mut again = DeterministicRng::new(42);
        assert_eq!(first, again.next_u64());
        assert_eq!(format!("{first:016x}"), PINNED_SEED_42_FIRST_DRAW);
    }
    const PINNED_SEED_42_FIRST_DRAW: &str = "379551bab0e16352";

    #[test]
    fn fork_ignores_parent_position() {
        let parent = DeterministicRng::new(1);
        let mut advanced = parent.clone();
        draws(&mut advanced, 100);
        assert_eq!(
            draws(&mut parent.fork("llm"), 8),
            draws(&mut advanced.fork("llm"), 8)
        );
    }

    #[test]
    fn forks_with_different_labels_differ() {
        let parent = DeterministicRng::new(1);
        let llm = draws(&mut parent.fork("llm"), 8);
        assert_ne!(llm, draws(&mut parent.fork("storage"), 8));
        assert_ne!(
            llm,
            draws(&mut parent.clone(), 8),
            "a fork is not the parent"
        );
        assert_ne!(
            draws(&mut parent.fork_parts(&[b"ab", b"c"]), 4),
            draws(&mut parent.fork_parts(&[b"a", b"bc"]), 4),
            "part boundaries matter"
        );
    }

    #[test]
    fn substreams_are_independent_and_repeatable() {
        let parent = DeterministicRng::new(9);
        let one = draws(&mut parent.substream(Substream::new(1)), 8);
        assert_eq!(one, draws(&mut parent.substream(Substream::new(1)), 8));
        assert_ne!(one, draws(&mut parent.substream(Substream::new(2)), 8));
        assert_ne!(one, draws(&mut parent.clone(), 8));
    }

    fn branched(seed: u64, branches: &[(u64, u64)]) -> (DeterministicRng, Arc<BranchEpoch>) {
        let branches = branches
            .iter()
            .map(|&(step, stream)| crate::path::Branch { step, stream })
            .collect();
        let epoch = Arc::new(BranchEpoch::new(branches));
        (
            DeterministicRng::new(seed).with_branches(epoch.clone()),
            epoch,
        )
    }

    /// Before its first branch point a branched stream is the seed's; after it, every
    /// stream (forks, parts, substreams) draws from a fresh stream of its own.
    #[test]
    fn branches_keep_the_prefix_and_switch_every_stream() {
        let plain = DeterministicRng::new(5);
        let (root, epoch) = branched(5, &[(10, 77)]);
        let mut before = (plain.fork("llm"), root.fork("llm"));
        assert_eq!(draws(&mut before.0, 4), draws(&mut before.1, 4));
        epoch.on_step(10);
        assert_ne!(draws(&mut before.0, 4), draws(&mut before.1, 4));
        for (mut seed_only, mut path) in [
            (plain.fork("x"), root.fork("x")),
            (plain.fork_parts(&[b"a"]), root.fork_parts(&[b"a"])),
            (
                plain.substream(Substream::new(3)),
                root.substream(Substream::new(3)),
            ),
            (plain.clone(), root.clone()),
        ] {
            assert_ne!(draws(&mut seed_only, 4), draws(&mut path, 4));
        }
        let (other, other_epoch) = branched(5, &[(10, 78)]);
        other_epoch.on_step(10);
        assert_ne!(
            draws(&mut root.fork("x"), 4),
            draws(&mut other.fork("x"), 4),
            "another branch stream draws other numbers"
        );
    }

    /// A fork made before a branch point (having drawn or not) and one made after it draw
    /// the same numbers after it; so do two runs of the same path.
    #[test]
    fn forks_before_and_after_a_branch_agree() {
        let (root, epoch) = branched(8, &[(4, 9), (6, 1)]);
        let mut early = root.fork("storage");
        let mut early_drawn = root.fork("storage");
        let mut early_sub = root.substream(Substream::new(2));
        draws(&mut early_drawn, 3);
        epoch.on_step(4);
        let after = draws(&mut root.fork("storage"), 5);
        assert_eq!(draws(&mut early, 5), after);
        assert_eq!(draws(&mut early_drawn, 5), after);
        assert_eq!(
            draws(&mut early_sub, 2),
            draws(&mut root.substream(Substream::new(2)), 2)
        );
        epoch.on_step(6);
        let second = draws(&mut root.fork("storage"), 5);
        assert_ne!(second, after, "the second branch switches again");
        assert_eq!(draws(&mut early, 5), second);
        let (again, again_epoch) = branched(8, &[(4, 9), (6, 1)]);
        again_epoch.on_step(6);
        assert_eq!(draws(&mut again.fork("storage"), 5), second);
    }

    #[test]
    fn helpers_stay_in_bounds() {
        let mut rng = DeterministicRng::new(3);
        for _ in 0..2000 {
            assert!(rng.below(10) < 10);
            assert!((5..=9).contains(&rng.range_inclusive(5, 9)));
            let x = rng.f64_in(-1.0, 1.0);
            assert!((-1.0..1.0).contains(&x));
        }
        assert!(!rng.bool_with(0.0));
        assert!(rng.bool_with(1.0));
        assert_eq!(rng.choose::<u8>(&[]), None);
        assert_eq!(rng.weighted_index(&[0, 0]), None);
        assert_eq!(rng.bytes(33).len(), 33);
    }

    #[test]
    fn weighted_choice_follows_weights() {
        let mut rng = DeterministicRng::new(11);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[rng.weighted_index(&[1, 0, 3]).unwrap()] += 1;
        }
        assert_eq!(counts[1], 0, "zero weight is never chosen");
        // Expected 7,500 and 22,500; six standard deviations is about 450.
        assert!((7_050..=7_950).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn shuffle_is_a_permutation_and_deterministic() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        DeterministicRng::new(5).shuffle(&mut a);
        DeterministicRng::new(5).shuffle(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
        a.sort_unstable();
        assert_eq!(a, (0..50).collect::<Vec<_>>());
    }
}
