//! Per-thread memos of what SimLLM and SimNetwork compute again and again from the same
//! large inputs: the SHA-256 digests of a request (SimLLM's canonical request hash,
//! SimNetwork's hash of a URL and body), and a long message text's token estimate and
//! routing words.
//!
//! A sweep hands the simulators the same long inputs over and over: a retry resends its
//! conversation, a fallback sends it to the next model, and a scenario's workload writes
//! the same long message in seed after seed (router_fallback_chain's 145 KB transcript,
//! hashed twice and estimated once per attempt). Each memo maps an input's exact bytes to
//! what a pure function computes from them. An entry is found by a 64-bit XXH3 of the
//! input and used only when its stored input is, byte for byte, the one asked about, so
//! every answer is the one the function would compute, whatever ran on this thread
//! before. That is why a memo may outlive a seed (the house rule on per-worker caches):
//! nothing a seed sees depends on what is in it, only how long the seed takes; it holds
//! no state of any run, only inputs and their functions' values.
//!
//! Inputs under [`MEMO_INPUT_BYTES_MIN`] are computed directly: storing and comparing
//! them would cost about what computing them does. An input is stored the second time
//! it is seen (a growing conversation, never sent twice, costs one XXH3 pass and no
//! copy), and each memo keeps at most its `*_BYTES_MAX` of inputs, evicting the oldest
//! first. All threads' memos together keep at most [`PROCESS_MEMO_BYTES_MAX`]: `dst
//! serve` runs a simulation thread per concurrent request (up to 64), and 40 MiB each
//! would be 2.5 GiB. A thread that finds the process's budget spent evicts its own
//! oldest inputs to make room, or does not store; which inputs are stored never changes
//! an answer, only how long it takes, so a budget shared between threads is no state a
//! seed can see.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};
use umi_core::llm::tokens::estimate_text_tokens;
use xxhash_rust::xxh3::{Xxh3Default, xxh3_64};

/// Inputs shorter than this are computed, not memoised.
pub(crate) const MEMO_INPUT_BYTES_MIN: usize = 4 * 1024;

/// Bytes of hashed inputs one thread's digest memo keeps (a 145 KB conversation's
/// SimLLM request and its wire body in each format and model of a chain fit many times).
const DIGEST_MEMO_BYTES_MAX: usize = 32 * 1024 * 1024;

/// Bytes of message texts one thread's text memo keeps.
const TEXT_MEMO_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Bytes of inputs all threads' memos keep together: a sweep worker's one thread keeps
/// its 40 MiB; `dst serve`'s simulation threads share this.
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
}

/// Keys of inputs seen once that one memo remembers (an input is stored the second
/// time it is seen, so one seen only once is never copied).
const SEEN_KEYS_MAX: usize = 4096;

/// Inputs (the concatenation of their parts) and a value computed from each.
struct Memo<V> {
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
}

impl<V> Drop for Memo<V> {
    fn drop(&mut self) {
        release(self.shared, self.bytes);
    }
}

impl<V: Copy> Memo<V> {
    const fn new(bytes_max: usize) -> Self {
        Self::sharing(bytes_max, &PROCESS_MEMO_BYTES, PROCESS_MEMO_BYTES_MAX)
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
    fn get_or_compute(&mut self, parts: &[&[u8]], compute: impl FnOnce() -> V) -> V {
        let key = key_of(parts);
        if let Some(entry) = self.entries.get(&key) {
            if holds(&entry.input, parts) {
                return entry.value;
            }
            // Another input with the same key (odds near 2⁻⁶⁴): not memoised.
            return compute();
        }
        let value = compute();
        if self.seen_before(key) {
            self.insert(key, parts, value);
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
        if input.len() > self.bytes_max {
            return;
        }
        while self.bytes + input.len() > self.bytes_max && self.evict_oldest() {}
        // The process's budget: this thread's own oldest inputs make room, or the input
        // is not stored.
        while !reserve(self.shared, self.shared_bytes_max, input.len()) {
            if !self.evict_oldest() {
                return;
            }
        }
        self.bytes += input.len();
        self.order.push_back(key);
        if let Some(replaced) = self.entries.insert(key, Entry { input, value }) {
            // Only a colliding key is stored again (a hit never reaches here).
            self.bytes -= replaced.input.len();
            release(self.shared, replaced.input.len());
        }
    }

    /// Evicts the oldest stored input, giving its bytes back; false when none is stored.
    fn evict_oldest(&mut self) -> bool {
        let Some(oldest) = self.order.pop_front() else {
            return false;
        };
        if let Some(evicted) = self.entries.remove(&oldest) {
            self.bytes -= evicted.input.len();
            release(self.shared, evicted.input.len());
        }
        true
    }
}

fn key_of(parts: &[&[u8]]) -> u64 {
    match parts {
        [one] => xxh3_64(one),
        _ => {
            let mut hasher = Xxh3Default::new();
            for part in parts {
                hasher.update(part);
            }
            hasher.digest()
        }
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
}

/// SHA-256 of `parts` concatenated: the same digest as hashing them in order.
pub(crate) fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let digest = || {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part);
        }
        hasher.finalize().into()
    };
    let bytes: usize = parts.iter().map(|part| part.len()).sum();
    if bytes < MEMO_INPUT_BYTES_MIN {
        return digest();
    }
    // During the thread's teardown the memo is gone: computed directly.
    DIGESTS
        .try_with(|memo| memo.borrow_mut().get_or_compute(parts, digest))
        .unwrap_or_else(|_| digest())
}

/// SHA-256 of an input given as a walk over its bytes: `walk(feed)` feeds the input to
/// `feed` in order, the same bytes on every call. The same digest as hashing what the
/// walk feeds; a long input is memoised without being copied out first: walked once into
/// XXH3 for its key, once against the stored input, and, only when it is not there, into
/// SHA-256 and the stored copy.
pub(crate) fn sha256_walk(walk: impl Fn(&mut dyn FnMut(&[u8]))) -> [u8; 32] {
    let mut key = Xxh3Default::new();
    let mut bytes = 0;
    walk(&mut |part| {
        key.update(part);
        bytes += part.len();
    });
    let digest_of = |stored: Option<&mut Vec<u8>>| {
        let mut hasher = Sha256::new();
        match stored {
            Some(stored) => walk(&mut |part| {
                hasher.update(part);
                stored.extend_from_slice(part);
            }),
            None => walk(&mut |part| hasher.update(part)),
        }
        <[u8; 32]>::from(hasher.finalize())
    };
    if bytes < MEMO_INPUT_BYTES_MIN {
        return digest_of(None);
    }
    let key = key.digest();
    // During the thread's teardown the memo is gone: computed directly. A walk must not
    // use the memo itself (it runs while the memo is borrowed).
    let memoised = DIGESTS.try_with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(entry) = memo.entries.get(&key) {
            if walks_to(&walk, &entry.input) {
                return entry.value;
            }
            return digest_of(None);
        }
        if !memo.seen_before(key) || bytes > memo.bytes_max {
            return digest_of(None);
        }
        let mut stored = Vec::with_capacity(bytes);
        let digest = digest_of(Some(&mut stored));
        memo.insert_owned(key, stored.into_boxed_slice(), digest);
        digest
    });
    memoised.unwrap_or_else(|_| digest_of(None))
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
mod tests {
    use super::*;

    fn long(word: &str) -> String {
        format!("{} {word}", "the full transcript follows. ".repeat(400))
    }

    #[test]
    fn a_memoised_digest_is_the_digest_of_the_concatenation() {
        let body = long("body");
        let parts: [&[u8]; 2] = [b"https://x.sim/v1/chat", body.as_bytes()];
        let expected: [u8; 32] = Sha256::digest(parts.concat()).into();
        // Computed, then found; the same either way.
        assert_eq!(sha256(&parts), expected);
        assert_eq!(sha256(&parts), expected);
        // A different split of the same bytes is the same input.
        let joined = parts.concat();
        let (a, b) = joined.split_at(7);
        assert_eq!(sha256(&[a, b]), expected);
        // One byte more is another input.
        let other = format!("{body}!");
        assert_ne!(sha256(&[parts[0], other.as_bytes()]), expected);
        assert_eq!(
            sha256(&[b"short"]),
            <[u8; 32]>::from(Sha256::digest(b"short"))
        );
    }

    #[test]
    fn a_walked_digest_is_the_digest_of_what_was_walked() {
        let text = long("walked");
        let walk = |feed: &mut dyn FnMut(&[u8])| {
            feed(b"head");
            feed(text.as_bytes());
            feed(b"");
            feed(b"tail");
        };
        let expected: [u8; 32] = Sha256::digest(format!("head{text}tail")).into();
        assert_eq!(sha256_walk(walk), expected);
        assert_eq!(sha256_walk(walk), expected);
        // The same bytes fed otherwise are the same input; others are not.
        assert_eq!(
            sha256_walk(|feed| feed(format!("head{text}tail").as_bytes())),
            expected
        );
        let shorter = |feed: &mut dyn FnMut(&[u8])| feed(format!("head{text}tai").as_bytes());
        assert_ne!(sha256_walk(shorter), expected);
        let longer = |feed: &mut dyn FnMut(&[u8])| feed(format!("head{text}tail!").as_bytes());
        assert_ne!(sha256_walk(longer), expected);
        assert_eq!(
            sha256_walk(|feed| feed(b"x")),
            <[u8; 32]>::from(Sha256::digest(b"x"))
        );
    }

    #[test]
    fn request_tokens_are_the_shared_estimate() {
        use umi_core::llm::{CompletionRequest, Message};
        let request =
            CompletionRequest::new(vec![Message::system("be brief"), Message::user(long("q"))]);
        for _ in 0..3 {
            assert_eq!(
                request_tokens(&request),
                umi_core::llm::tokens::estimate_request_tokens(&request)
            );
        }
    }

    #[test]
    fn text_facts_are_what_the_functions_compute() {
        for text in [
            long("Please EXTRACT the Entities"),
            long("rewrite the query"),
            long("DETECT evolution"),
            long("nothing"),
            "Extract entities, short".to_owned(),
        ] {
            // The third is a memo hit (an input is stored the second time it is seen).
            for _ in 0..3 {
                let facts = text_facts(&text);
                assert_eq!(facts.tokens, estimate_text_tokens(&text));
                let lower = text.to_lowercase();
                for (index, word) in ROUTE_WORDS.iter().enumerate() {
                    assert_eq!(facts.words.has(index), lower.contains(word), "{word}");
                }
            }
        }
    }

    /// A hit needs the stored bytes to be the input, not only its key: an entry planted
    /// under an input's key with other bytes (a key collision) is never answered.
    #[test]
    fn a_hit_compares_the_whole_input_not_its_key() {
        let mut memo: Memo<u32> = Memo::new(1 << 20);
        memo.insert_owned(key_of(&[b"aaaa"]), b"zzzz".to_vec().into_boxed_slice(), 9);
        assert_eq!(memo.get_or_compute(&[b"aaaa"], || 1), 1);
        // The same bytes split otherwise are the same input; other bytes of the same
        // length under the key are not.
        memo.insert_owned(
            key_of(&[b"ab", b"cd"]),
            b"abcd".to_vec().into_boxed_slice(),
            5,
        );
        assert_eq!(memo.get_or_compute(&[b"ab", b"cd"], || 1), 5);
        assert!(holds(b"abcd", &[b"a", b"bcd"]));
        assert!(!holds(b"abce", &[b"ab", b"cd"]));
        // SHA-256 of a long input: a planted digest under its key, with other bytes
        // stored, is not returned.
        let long = vec![b'x'; MEMO_INPUT_BYTES_MIN * 2];
        let expected: [u8; 32] = Sha256::digest(&long).into();
        DIGESTS.with(|memo| {
            let mut other = long.clone();
            other[0] = b'y';
            memo.borrow_mut()
                .insert_owned(key_of(&[&long]), other.into_boxed_slice(), [7; 32]);
        });
        assert_eq!(sha256(&[&long]), expected);
        assert_eq!(sha256_walk(|feed| feed(&long)), expected);
    }

    #[test]
    fn the_memo_keeps_at_most_its_bytes_and_evicts_the_oldest() {
        let mut memo: Memo<u32> = Memo::new(10);
        let mut computed = 0;
        // Each seen twice is stored; "aaaa" is evicted by "cccc", so computed again.
        for input in [
            b"aaaa", b"aaaa", b"bbbb", b"bbbb", b"cccc", b"cccc", b"aaaa",
        ] {
            memo.get_or_compute(&[input], || {
                computed += 1;
                1
            });
            assert!(memo.bytes <= 10);
        }
        assert_eq!(computed, 7);
        memo.get_or_compute(&[b"cccc"], || unreachable!("memoised"));
        memo.get_or_compute(&[b"aaaa"], || unreachable!("memoised"));
        // An input seen once is computed and not kept; one over the limit neither.
        memo.get_or_compute(&[b"dddd"], || 2);
        assert!(!memo.entries.contains_key(&key_of(&[b"dddd"])));
        memo.get_or_compute(&[b"0123456789ab"], || 2);
        memo.get_or_compute(&[b"0123456789ab"], || 2);
        assert!(memo.bytes <= 10);
    }

    /// Every thread's memos together keep at most the process's budget: a memo that finds
    /// it spent evicts its own oldest inputs, or stores nothing (and still answers), and
    /// a memo gives its bytes back when it is dropped (its thread ends).
    #[test]
    fn all_memos_together_keep_at_most_the_process_budget() {
        static SHARED: AtomicUsize = AtomicUsize::new(0);
        let mut first: Memo<u32> = Memo::sharing(100, &SHARED, 10);
        let mut second: Memo<u32> = Memo::sharing(100, &SHARED, 10);
        for _ in 0..2 {
            first.get_or_compute(&[b"aaaa"], || 1);
            first.get_or_compute(&[b"bbbb"], || 2);
        }
        assert_eq!(SHARED.load(Ordering::Relaxed), 8);
        // The second memo holds nothing to evict: it answers and does not store.
        for _ in 0..3 {
            assert_eq!(second.get_or_compute(&[b"cccc"], || 3), 3);
        }
        assert!(second.entries.is_empty());
        assert_eq!(SHARED.load(Ordering::Relaxed), 8);
        // The first makes room by evicting its own oldest.
        for _ in 0..2 {
            first.get_or_compute(&[b"dddd"], || 4);
        }
        assert_eq!(first.bytes, 8);
        assert!(!first.entries.contains_key(&key_of(&[b"aaaa"])));
        assert_eq!(SHARED.load(Ordering::Relaxed), 8);
        // Dropped, it gives its bytes back; the second can then store.
        drop(first);
        assert_eq!(SHARED.load(Ordering::Relaxed), 0);
        assert_eq!(second.get_or_compute(&[b"cccc"], || 3), 3);
        assert_eq!(SHARED.load(Ordering::Relaxed), 4);
        second.get_or_compute(&[b"cccc"], || unreachable!("stored"));
    }

    #[test]
    fn the_budget_refuses_what_does_not_fit() {
        let used = AtomicUsize::new(6);
        assert!(!reserve(&used, 10, 5));
        assert_eq!(used.load(Ordering::Relaxed), 6);
        assert!(reserve(&used, 10, 4));
        assert!(!reserve(&used, usize::MAX, usize::MAX));
        release(&used, 10);
        assert_eq!(used.load(Ordering::Relaxed), 0);
    }
}
