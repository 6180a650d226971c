//! Per-thread memos of what SimLLM and SimNetwork compute again and again from the same
//! large inputs: the SHA-256 digests of a request (SimLLM's canonical request hash,
//! SimNetwork's hash of a URL and body), SHA-256's states along long inputs (to resume a
//! digest from a shared prefix), and a long message text's token estimate, routing words
//! and conversation facts.
//!
//! A sweep hands the simulators the same long inputs over and over: a retry resends its
//! conversation, a fallback sends it to the next model, and a scenario's workload writes
//! the same long message in seed after seed (router_fallback_chain's 145 KB transcript,
//! hashed twice and estimated once per attempt). Each memo maps an input's exact bytes to
//! what a pure function computes from them. An entry is found by a 64-bit XXH3 of a
//! sample of the input ([`key`]) and used only when its stored input is, byte for byte,
//! the one asked about, so every answer is the one the function would compute, whatever
//! ran on this thread before. That is why a memo may outlive a seed (the house rule on
//! per-worker caches): nothing a seed sees depends on what is in it, only how long the
//! seed takes; it holds no state of any run, only inputs and their functions' values.
//!
//! A long input the digest memo does not hold whole is hashed from the longest prefix it
//! shares with an input hashed before ([`midstates`]): a long text sent again with a
//! different ending, or a wire body that grew by a turn (SimNetwork's hash of the URL and
//! body), costs a comparison of what it shares and the hashing of the rest. (SimLLM's
//! canonical request starts with the model and the number of messages, so a conversation
//! that grew, or went to another model, shares no prefix there.)
//!
//! Inputs under [`MEMO_INPUT_BYTES_MIN`] are computed directly: storing and comparing
//! them would cost about what computing them does. An input is stored whole the second
//! time it is seen (the midstates memo copies a long input the first time, when it adds a
//! state), and each memo keeps at most its `*_BYTES_MAX` of inputs and values, evicting
//! the oldest first. All threads' memos together keep at most [`PROCESS_MEMO_BYTES_MAX`]:
//! `dst serve` runs its simulations on a thread per core (up to 64), and 50 MiB each
//! would be 3.1 GiB. A thread that finds the process's budget spent evicts its own
//! oldest inputs to make room, or does not store; which inputs are stored never changes
//! an answer, only how long it takes, so a budget shared between threads is no state a
//! seed can see.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};
use umi_core::llm::tokens::estimate_text_tokens;

use self::key::{KeySampler, key_of};
use self::midstates::{Midstates, Pieces};

mod key;
mod midstates;

/// Inputs shorter than this are computed, not memoised.
pub(crate) const MEMO_INPUT_BYTES_MIN: usize = 4 * 1024;

/// Bytes of hashed inputs one thread's digest memo keeps (a 145 KB conversation's
/// SimLLM request and its wire body in each format and model of a chain fit many times).
const DIGEST_MEMO_BYTES_MAX: usize = 32 * 1024 * 1024;

/// Bytes of message texts one thread's text memo keeps.
const TEXT_MEMO_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Bytes of inputs all threads' memos keep together: a sweep worker's one thread keeps
/// its 50 MiB (digests 32, texts 8, midstates 8, facts 2); `dst serve`'s simulation
/// threads share this.
pub(crate) const PROCESS_MEMO_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Bytes of inputs stored in every thread's memos now (each memo gives back what it holds
/// when its thread ends).
static PROCESS_MEMO_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Takes `bytes` of the process's memo budget from `used` (at most `bytes_max` in all);
/// false, taking nothing, when they do not fit.
fn reserve(used: &AtomicUsize, bytes_max: usize, bytes: usize) -> bool {
    used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        now.checked_add(bytes).filter(|total| *total <= bytes_max)
    })
    .is_ok()
}

/// Gives `bytes` taken by [`reserve`] back to `used`.
fn release(used: &AtomicUsize, bytes: usize) {
    let before = used.fetch_sub(bytes, Ordering::Relaxed);
    assert!(before >= bytes, "memo budget released {bytes} of {before}");
}

/// The words SimLLM's keyword routing looks for in an untagged prompt, lowercased
/// (`route::Builtin::for_request`); [`Words`] has one bit per word, in this order.
pub(crate) const ROUTE_WORDS: [&str; 6] = [
    "extract",
    "entit",
    "rewrite",
    "query",
    "detect",
    "evolution",
];

/// Which of [`ROUTE_WORDS`] a text holds once ASCII-lowercased: bit `i` for word `i`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Words(u8);

impl Words {
    /// The words `lowercase` (already ASCII-lowercased) holds.
    pub(crate) fn in_lowercase(lowercase: &str) -> Self {
        let mut bits = 0;
        for (index, word) in ROUTE_WORDS.iter().enumerate() {
            if lowercase.contains(word) {
                bits |= 1 << index;
            }
        }
        Self(bits)
    }

    /// Whether word `index` of [`ROUTE_WORDS`] is held.
    pub(crate) fn has(self, index: usize) -> bool {
        self.0 & (1 << index) != 0
    }

    /// The words either holds.
    pub(crate) fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// What SimLLM reads from one message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextFacts {
    /// `estimate_text_tokens(text)`.
    pub(crate) tokens: u32,
    /// The routing words the text holds.
    pub(crate) words: Words,
}

impl TextFacts {
    fn of(text: &str) -> Self {
        Self {
            tokens: estimate_text_tokens(text),
            words: Words::in_lowercase(&text.to_ascii_lowercase()),
        }
    }
}

struct Entry<V> {
    input: Box<[u8]>,
    value: V,
    /// What the entry holds against the budgets: its input and its value's weight.
    bytes: usize,
}

/// Keys of inputs seen once that one memo remembers (an input is stored the second
/// time it is seen, so one seen only once is never copied).
const SEEN_KEYS_MAX: usize = 4096;

/// Inputs (the concatenation of their parts) and a value computed from each: the memo
/// each of this module's functions keeps per thread, and one a simulator module may keep
/// for a pure function of its own (its values weighed with [`Memo::weighing`]).
pub(crate) struct Memo<V> {
    entries: BTreeMap<u64, Entry<V>>,
    /// Keys in the order they were added: the oldest is evicted first.
    order: VecDeque<u64>,
    bytes: usize,
    bytes_max: usize,
    /// Keys of inputs seen once and not stored, oldest first.
    seen: VecDeque<u64>,
    seen_keys: BTreeSet<u64>,
    /// The budget shared with the other threads' memos, and its size.
    shared: &'static AtomicUsize,
    shared_bytes_max: usize,
    /// The bytes a value holds beyond its input (0 for a value stored inline).
    value_bytes: fn(&V) -> usize,
}

impl<V> Drop for Memo<V> {
    fn drop(&mut self) {
        release(self.shared, self.bytes);
    }
}

impl<V: Clone> Memo<V> {
    const fn new(bytes_max: usize) -> Self {
        Self::sharing(bytes_max, &PROCESS_MEMO_BYTES, PROCESS_MEMO_BYTES_MAX)
    }

    /// A memo of at most `bytes_max` whose values hold `value_bytes(value)` beyond their
    /// inputs, counted against its budgets with them (and the process's, as every memo).
    pub(crate) const fn weighing(bytes_max: usize, value_bytes: fn(&V) -> usize) -> Self {
        let mut memo = Self::new(bytes_max);
        memo.value_bytes = value_bytes;
        memo
    }

    /// A memo of at most `bytes_max` whose inputs also count against `shared` (at most
    /// `shared_bytes_max` for every memo using it).
    const fn sharing(
        bytes_max: usize,
        shared: &'static AtomicUsize,
        shared_bytes_max: usize,
    ) -> Self {
        Self {
            entries: BTreeMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            bytes_max,
            seen: VecDeque::new(),
            seen_keys: BTreeSet::new(),
            shared,
            shared_bytes_max,
            value_bytes: |_| 0,
        }
    }

    /// Whether the input keyed `key` was seen before (and so is worth storing); if not,
    /// it is remembered as seen. A conversation sent once is hashed, not copied; one sent
    /// again (a retry, a fallback, the next seed's same workload) is stored.
    fn seen_before(&mut self, key: u64) -> bool {
        if self.seen_keys.contains(&key) {
            return true;
        }
        if self.seen.len() >= SEEN_KEYS_MAX
            && let Some(oldest) = self.seen.pop_front()
        {
            self.seen_keys.remove(&oldest);
        }
        self.seen.push_back(key);
        self.seen_keys.insert(key);
        false
    }

    /// The value for the input `parts` (concatenated): memoised, or `compute`d.
    pub(crate) fn get_or_compute(&mut self, parts: &[&[u8]], compute: impl FnOnce() -> V) -> V {
        let key = key_of(parts);
        if let Some(entry) = self.entries.get(&key) {
            if holds(&entry.input, parts) {
                return entry.value.clone();
            }
            // Another input under the same key (alike in every byte the key reads,
            // `key`): not memoised.
            return compute();
        }
        let value = compute();
        if self.seen_before(key) {
            self.insert(key, parts, value.clone());
        }
        value
    }

    fn insert(&mut self, key: u64, parts: &[&[u8]], value: V) {
        let bytes: usize = parts.iter().map(|part| part.len()).sum();
        if bytes > self.bytes_max {
            return; // Never stored: not copied either.
        }
        self.insert_owned(key, parts.concat().into_boxed_slice(), value);
    }

    fn insert_owned(&mut self, key: u64, input: Box<[u8]>, value: V) {
        let bytes = input.len() + (self.value_bytes)(&value);
        if bytes > self.bytes_max {
            return;
        }
        while self.bytes + bytes > self.bytes_max && self.evict_oldest() {}
        // The process's budget: this thread's own oldest inputs make room, or the input
        // is not stored.
        while !reserve(self.shared, self.shared_bytes_max, bytes) {
            if !self.evict_oldest() {
                return;
            }
        }
        self.bytes += bytes;
        self.order.push_back(key);
        let entry = Entry {
            input,
            value,
            bytes,
        };
        if let Some(replaced) = self.entries.insert(key, entry) {
            // No caller stores under a key that holds an entry (each looks its key up
            // first, and a key taken by another input is not stored again); were one to,
            // the replaced entry gives its bytes back.
            self.bytes -= replaced.bytes;
            release(self.shared, replaced.bytes);
        }
    }

    /// Evicts the oldest stored input, giving its bytes back; false when none is stored.
    fn evict_oldest(&mut self) -> bool {
        let Some(oldest) = self.order.pop_front() else {
            return false;
        };
        if let Some(evicted) = self.entries.remove(&oldest) {
            self.bytes -= evicted.bytes;
            release(self.shared, evicted.bytes);
        }
        true
    }
}

/// Whether `stored` is the concatenation of `parts`.
fn holds(stored: &[u8], parts: &[&[u8]]) -> bool {
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if stored.len() != total {
        return false;
    }
    let mut rest = stored;
    for part in parts {
        let (head, tail) = rest.split_at(part.len());
        if head != *part {
            return false;
        }
        rest = tail;
    }
    true
}

thread_local! {
    static DIGESTS: RefCell<Memo<[u8; 32]>> = const { RefCell::new(Memo::new(DIGEST_MEMO_BYTES_MAX)) };
    static TEXTS: RefCell<Memo<TextFacts>> = const { RefCell::new(Memo::new(TEXT_MEMO_BYTES_MAX)) };
    static MIDSTATES: RefCell<Midstates> = const { RefCell::new(Midstates::new()) };
}

/// SHA-256 of a long `input` the whole-input memo does not hold: resumed from the
/// longest prefix it shares with an input hashed before ([`midstates`]).
fn resumed_sha256(input: &(impl Pieces + ?Sized)) -> [u8; 32] {
    // During the thread's teardown the memo is gone: hashed whole.
    MIDSTATES
        .try_with(|memo| memo.borrow_mut().digest(input))
        .unwrap_or_else(|_| {
            let mut hasher = Sha256::new();
            input.each(&mut |piece| hasher.update(piece));
            hasher.finalize().into()
        })
}

/// A walk over an input (see [`sha256_walk`]) as [`Pieces`].
struct Walk<'w, W> {
    walk: &'w W,
    bytes: usize,
}

impl<W: Fn(&mut dyn FnMut(&[u8]))> Pieces for Walk<'_, W> {
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn each(&self, feed: &mut dyn FnMut(&[u8])) {
        (self.walk)(feed);
    }
}

/// SHA-256 of `parts` concatenated: the same digest as hashing them in order.
pub(crate) fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let bytes: usize = parts.iter().map(|part| part.len()).sum();
    if bytes < MEMO_INPUT_BYTES_MIN {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part);
        }
        return hasher.finalize().into();
    }
    let digest = || resumed_sha256(parts);
    // During the thread's teardown the memo is gone: computed directly.
    DIGESTS
        .try_with(|memo| memo.borrow_mut().get_or_compute(parts, digest))
        .unwrap_or_else(|_| digest())
}

/// SHA-256 of an input given as a walk over its bytes: `walk(feed)` feeds the input to
/// `feed` in order, the same bytes on every call. The same digest as hashing what the
/// walk feeds; a long input is memoised without being copied out first: walked once for
/// its key (a sample of its bytes, [`key`]), once against the stored input, and, only
/// when it is not there, hashed from the longest prefix it shares with an input hashed
/// before (`midstates`), and copied out when it is stored.
pub(crate) fn sha256_walk(walk: impl Fn(&mut dyn FnMut(&[u8]))) -> [u8; 32] {
    let mut key = KeySampler::new();
    let mut bytes = 0;
    walk(&mut |part| {
        key.feed(part);
        bytes += part.len();
    });
    if bytes < MEMO_INPUT_BYTES_MIN {
        let mut hasher = Sha256::new();
        walk(&mut |part| hasher.update(part));
        return hasher.finalize().into();
    }
    // A long input not memoised whole is hashed from the longest prefix it shares with
    // one hashed before.
    let input = Walk { walk: &walk, bytes };
    let key = key.finish();
    // During the thread's teardown the memo is gone: computed directly. A walk must not
    // use the memo itself (it runs while the memo is borrowed).
    let memoised = DIGESTS.try_with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(entry) = memo.entries.get(&key) {
            if walks_to(&walk, &entry.input) {
                return entry.value;
            }
            return resumed_sha256(&input);
        }
        let digest = resumed_sha256(&input);
        if memo.seen_before(key) && bytes <= memo.bytes_max {
            let mut stored = Vec::with_capacity(bytes);
            walk(&mut |part| stored.extend_from_slice(part));
            memo.insert_owned(key, stored.into_boxed_slice(), digest);
        }
        digest
    });
    memoised.unwrap_or_else(|_| resumed_sha256(&input))
}

/// Whether `walk` feeds exactly `stored`.
fn walks_to(walk: &impl Fn(&mut dyn FnMut(&[u8])), stored: &[u8]) -> bool {
    let mut rest = stored;
    let mut same = true;
    walk(&mut |part| {
        if !same {
            return;
        }
        match rest.split_at_checked(part.len()) {
            Some((head, tail)) if head == part => rest = tail,
            _ => same = false,
        }
    });
    same && rest.is_empty()
}

/// What SimLLM reads from `text`.
pub(crate) fn text_facts(text: &str) -> TextFacts {
    if text.len() < MEMO_INPUT_BYTES_MIN {
        return TextFacts::of(text);
    }
    // During the thread's teardown the memo is gone: computed directly.
    TEXTS
        .try_with(|memo| {
            memo.borrow_mut()
                .get_or_compute(&[text.as_bytes()], || TextFacts::of(text))
        })
        .unwrap_or_else(|_| TextFacts::of(text))
}

/// `umi_core`'s `estimate_request_tokens(request)`, with each long message's count from
/// the memo: what SimNetwork's servers report as a request's prompt size.
pub(crate) fn request_tokens(request: &umi_core::llm::CompletionRequest) -> u32 {
    umi_core::llm::tokens::estimate_request_tokens_with(request, &mut |text| {
        if text.len() < MEMO_INPUT_BYTES_MIN {
            estimate_text_tokens(text)
        } else {
            text_facts(text).tokens
        }
    })
}

#[cfg(test)]
mod tests;
