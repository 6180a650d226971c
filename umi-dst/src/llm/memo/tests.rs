//! The memos answer exactly what their functions compute, whatever they hold, and keep
//! to their budgets.

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

#[test]
fn a_weighed_value_counts_against_both_budgets() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    {
        let mut memo: Memo<Vec<u8>> = Memo::sharing(250, &SHARED, 1_000);
        memo.value_bytes = Vec::len;
        for _ in 0..2 {
            memo.get_or_compute(&[b"aaaa"], || vec![0; 100]);
        }
        assert_eq!(memo.bytes, 104, "the input and its value");
        assert_eq!(SHARED.load(Ordering::Relaxed), 104);
        // A second entry of 104 fits beside it (208 of 250); a third evicts the oldest.
        for _ in 0..2 {
            memo.get_or_compute(&[b"bbbb"], || vec![0; 100]);
        }
        assert_eq!(memo.bytes, 208);
        for _ in 0..2 {
            memo.get_or_compute(&[b"cccc"], || vec![0; 100]);
        }
        assert_eq!(memo.bytes, 208);
        assert!(!memo.entries.contains_key(&key_of(&[b"aaaa"])));
        // A value heavier than the whole memo is never stored.
        for _ in 0..2 {
            assert_eq!(memo.get_or_compute(&[b"dddd"], || vec![0; 300]).len(), 300);
        }
        assert!(!memo.entries.contains_key(&key_of(&[b"dddd"])));
        assert_eq!(SHARED.load(Ordering::Relaxed), memo.bytes);
    }
    assert_eq!(
        SHARED.load(Ordering::Relaxed),
        0,
        "a dropped memo gives it all back"
    );
}
