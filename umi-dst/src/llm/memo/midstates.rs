//! SHA-256 resumed from the longest prefix an earlier input shared: the digest of a long
//! input that differs from one hashed before only near its end costs a comparison of the
//! shared part and the hashing of the rest.
//!
//! The digest memo (the parent module) answers an input it has stored whole (it stores
//! one the second time it sees it). A sweep also hashes many long inputs that are new but start like an
//! old one: mixed_formats' large call is an 87 KB transcript followed by "summarize call
//! N", with tools or not, streamed or not, in four formats, some 160 variants that differ
//! near their end, and a first or second sighting of one was a miss (in a run of 600 of
//! its seeds on one thread, SHA-256 was 5.1% of the samples; 2.5% with this memo). SHA-256
//! reads its input in order, keeping a state of 32 bytes and a partial block; the state
//! after a prefix depends on that prefix alone. So this memo keeps, for inputs hashed
//! before, the hasher's state after every [`SPACING_BYTES`] of them, and for a new input
//! finds a stored input it shares the most whole spacings with (compared byte for byte),
//! clones the state after those, and hashes only what follows. The digest is the one
//! hashing the whole input gives, always: a state is used only after its prefix was found
//! equal to the new input's, byte for byte.
//!
//! Like the parent's memos it holds inputs and the values a pure function computes from
//! them, never state of a run: what is stored changes how long a digest takes, never what
//! it is. An input is stored (copied) only when it has a whole spacing past what a stored
//! input already shares with it (a run of inputs that differ only after their last whole
//! spacing keeps one); a lookup compares at most [`CANDIDATES_MAX`] stored inputs; the
//! oldest is evicted first, within [`MIDSTATE_MEMO_BYTES_MAX`] per thread and the
//! process's budget shared with the other memos.

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;

use sha2::{Digest, Sha256};
use xxhash_rust::xxh3::Xxh3Default;

use super::{release, reserve};

/// Bytes between two kept states: an input resumes at a multiple of this.
pub(super) const SPACING_BYTES: usize = 4 * 1024;

/// Bytes of inputs (and their states) one thread's memo keeps.
const MIDSTATE_MEMO_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Inputs one thread's memo keeps (each lookup scans their first spacing's keys).
const INPUTS_MAX: usize = 256;

/// Stored inputs starting as the new one does that a lookup compares with, newest first:
/// inputs that differ inside their last whole spacing are each stored, and comparing
/// with every one of them would read the whole input again and again.
const CANDIDATES_MAX: usize = 4;

/// A hashed input and the hasher's states along it.
struct Stored {
    /// XXH3 of the input's first spacing: only an input starting the same is compared.
    head: u64,
    input: Box<[u8]>,
    /// `states[i]` is the state after the input's first `(i + 1) × SPACING_BYTES` bytes.
    states: Vec<Sha256>,
}

impl Stored {
    /// What the entry holds against the memo's budget.
    fn bytes(&self) -> usize {
        self.input.len() + self.states.len() * std::mem::size_of::<Sha256>()
    }
}

/// One thread's stored inputs, oldest first.
pub(super) struct Midstates {
    stored: VecDeque<Stored>,
    bytes: usize,
    bytes_max: usize,
    shared: &'static AtomicUsize,
    shared_bytes_max: usize,
}

impl Drop for Midstates {
    fn drop(&mut self) {
        release(self.shared, self.bytes);
    }
}

impl Midstates {
    /// A memo of at most `bytes_max` whose entries also count against `shared` (at most
    /// `shared_bytes_max` for every memo using it).
    pub(super) const fn sharing(
        bytes_max: usize,
        shared: &'static AtomicUsize,
        shared_bytes_max: usize,
    ) -> Self {
        Self {
            stored: VecDeque::new(),
            bytes: 0,
            bytes_max,
            shared,
            shared_bytes_max,
        }
    }

    /// The memo of the thread's digests, within the process's budget.
    pub(super) const fn new() -> Self {
        Self::sharing(
            MIDSTATE_MEMO_BYTES_MAX,
            &super::PROCESS_MEMO_BYTES,
            super::PROCESS_MEMO_BYTES_MAX,
        )
    }

    /// SHA-256 of `input`, resumed from the longest stored prefix it shares (see the
    /// module docs); `input` is stored when it would add a state. `input` is read in
    /// place, piece by piece: it is copied only to be stored.
    pub(super) fn digest(&mut self, input: &(impl Pieces + ?Sized)) -> [u8; 32] {
        let bytes = input.bytes();
        let spacings = bytes / SPACING_BYTES;
        if spacings == 0 {
            let mut hasher = Sha256::new();
            input.each(&mut |piece| hasher.update(piece));
            return hasher.finalize().into();
        }
        let head = head_of(input);
        let (from, shared) = self.longest_shared(head, input, spacings);
        assert!(
            shared <= spacings,
            "resumed after {shared} of {spacings} spacings"
        );
        let mut hasher = match from {
            Some(index) => self.stored[index].states[shared - 1].clone(),
            None => Sha256::new(),
        };
        let skip = shared * SPACING_BYTES;
        let stored_bytes = bytes + spacings * std::mem::size_of::<Sha256>();
        if shared == spacings || self.bytes_max < stored_bytes {
            // Nothing to keep: no state past what is stored already (or no room ever).
            each_after(input, skip, &mut |piece| hasher.update(piece));
            return hasher.finalize().into();
        }
        let mut states = Vec::with_capacity(spacings);
        if let Some(index) = from {
            states.extend_from_slice(&self.stored[index].states[..shared]);
        }
        // The hasher's state is taken each time the bytes hashed reach a spacing's end.
        let mut hashed = skip;
        each_after(input, skip, &mut |mut piece| {
            while !piece.is_empty() {
                let to_edge = SPACING_BYTES - hashed % SPACING_BYTES;
                let (now, rest) = piece.split_at(to_edge.min(piece.len()));
                hasher.update(now);
                hashed += now.len();
                if hashed.is_multiple_of(SPACING_BYTES) && states.len() < spacings {
                    states.push(hasher.clone());
                }
                piece = rest;
            }
        });
        assert_eq!(hashed, bytes, "every byte after the shared prefix hashed");
        assert_eq!(states.len(), spacings, "a state after every whole spacing");
        let digest = hasher.finalize().into();
        let mut copy = Vec::with_capacity(bytes);
        input.each(&mut |piece| copy.extend_from_slice(piece));
        self.store(Stored {
            head,
            input: copy.into_boxed_slice(),
            states,
        });
        digest
    }

    /// Of the [`CANDIDATES_MAX`] newest stored inputs starting as `input` does, the one
    /// sharing the most whole spacings with it (at most `spacings`), newest first among
    /// equals, and how many it shares; `(None, 0)` when none shares one.
    fn longest_shared(
        &self,
        head: u64,
        input: &(impl Pieces + ?Sized),
        spacings: usize,
    ) -> (Option<usize>, usize) {
        let mut best = (None, 0);
        let candidates = self
            .stored
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, stored)| stored.head == head)
            .take(CANDIDATES_MAX);
        for (index, stored) in candidates {
            if stored.states.len() <= best.1 {
                continue;
            }
            let shared = shared_spacings(&stored.input, input, stored.states.len().min(spacings));
            if shared > best.1 {
                best = (Some(index), shared);
                if shared == spacings {
                    break;
                }
            }
        }
        best
    }

    /// Keeps `entry`, evicting the oldest to make room; not kept when the process's
    /// budget has no room even then.
    fn store(&mut self, entry: Stored) {
        let bytes = entry.bytes();
        if bytes > self.bytes_max {
            return;
        }
        while (self.bytes + bytes > self.bytes_max || self.stored.len() >= INPUTS_MAX)
            && self.evict_oldest()
        {}
        while !reserve(self.shared, self.shared_bytes_max, bytes) {
            if !self.evict_oldest() {
                return;
            }
        }
        self.bytes += bytes;
        self.stored.push_back(entry);
    }

    /// Evicts the oldest entry, giving its bytes back; false when none is stored.
    fn evict_oldest(&mut self) -> bool {
        let Some(evicted) = self.stored.pop_front() else {
            return false;
        };
        let bytes = evicted.bytes();
        self.bytes -= bytes;
        release(self.shared, bytes);
        true
    }
}

/// An input read in place: its bytes are what `each` feeds, in order, the same on every
/// call (a request's parts, or a walk over a request that is never written out).
pub(super) trait Pieces {
    /// How many bytes `each` feeds.
    fn bytes(&self) -> usize;
    /// Feeds the input to `feed`, piece by piece, in order.
    fn each(&self, feed: &mut dyn FnMut(&[u8]));
}

impl Pieces for [u8] {
    fn bytes(&self) -> usize {
        self.len()
    }
    fn each(&self, feed: &mut dyn FnMut(&[u8])) {
        feed(self);
    }
}

impl Pieces for [&[u8]] {
    fn bytes(&self) -> usize {
        self.iter().map(|part| part.len()).sum()
    }
    fn each(&self, feed: &mut dyn FnMut(&[u8])) {
        for part in self {
            feed(part);
        }
    }
}

/// Feeds `input`'s bytes from offset `skip` on to `feed`.
fn each_after(input: &(impl Pieces + ?Sized), skip: usize, feed: &mut dyn FnMut(&[u8])) {
    let mut offset = 0;
    input.each(&mut |piece| {
        let start = skip.saturating_sub(offset).min(piece.len());
        offset += piece.len();
        if start < piece.len() {
            feed(&piece[start..]);
        }
    });
}

/// XXH3 of `input`'s first spacing (`input` holds at least one).
fn head_of(input: &(impl Pieces + ?Sized)) -> u64 {
    let mut head = Xxh3Default::new();
    let mut taken = 0;
    input.each(&mut |piece| {
        let take = (SPACING_BYTES - taken).min(piece.len());
        head.update(&piece[..take]);
        taken += take;
    });
    assert_eq!(taken, SPACING_BYTES, "a head is a whole spacing");
    head.digest()
}

/// How many of the first `spacings_max` whole spacings `stored` and `input` have in
/// common, byte for byte (`stored` holds at least that many).
fn shared_spacings(stored: &[u8], input: &(impl Pieces + ?Sized), spacings_max: usize) -> usize {
    let compared_max = spacings_max * SPACING_BYTES;
    let mut same = 0;
    let mut differs = false;
    input.each(&mut |piece| {
        if differs || same >= compared_max {
            return;
        }
        let length = piece.len().min(compared_max - same);
        let (piece, theirs) = (&piece[..length], &stored[same..same + length]);
        if piece == theirs {
            same += length;
        } else {
            same += piece.iter().zip(theirs).take_while(|(a, b)| a == b).count();
            differs = true;
        }
    });
    same / SPACING_BYTES
}

#[cfg(test)]
mod tests;
