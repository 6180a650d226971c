//! The resumed digest is always SHA-256 of the whole input, whatever was stored before
//! and wherever the new input leaves the stored one; and it does resume.

use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::{Midstates, SPACING_BYTES};

/// `bytes` bytes of a fixed pseudo-random text (xorshift; no OS randomness in a test).
fn text(bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b'a' + (state % 26) as u8
        })
        .collect()
}

fn whole(input: &[u8]) -> [u8; 32] {
    Sha256::digest(input).into()
}

fn memo(bytes_max: usize, shared: &'static AtomicUsize) -> Midstates {
    Midstates::sharing(bytes_max, shared, usize::MAX)
}

#[test]
fn every_digest_is_the_whole_inputs_whatever_came_before() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = memo(64 * 1024 * 1024, &SHARED);
    let base = text(5 * SPACING_BYTES + 123, 7);
    let mut inputs = vec![
        base.clone(),
        base.clone(),
        base[..SPACING_BYTES].to_vec(),
        base[..SPACING_BYTES - 1].to_vec(),
        base[..3 * SPACING_BYTES].to_vec(),
        [base.as_slice(), b"and more".as_slice()].concat(),
        [base.as_slice(), text(3 * SPACING_BYTES, 9).as_slice()].concat(),
    ];
    // One byte changed: the first, at a spacing's edges, inside one, the last.
    for position in [
        0,
        SPACING_BYTES - 1,
        SPACING_BYTES,
        2 * SPACING_BYTES + 77,
        4 * SPACING_BYTES,
        base.len() - 1,
    ] {
        let mut changed = base.clone();
        changed[position] ^= 0x20;
        inputs.push(changed);
    }
    // A different tail after a shared prefix of each length around the spacings.
    for prefix in [
        SPACING_BYTES - 1,
        SPACING_BYTES,
        2 * SPACING_BYTES + 1,
        5 * SPACING_BYTES,
    ] {
        inputs.push([&base[..prefix], b" summarize call 3".as_slice()].concat());
        inputs.push([&base[..prefix], b" summarize call 4".as_slice()].concat());
    }
    for (index, input) in inputs.iter().enumerate() {
        assert_eq!(memo.digest(input.as_slice()), whole(input), "input {index}");
    }
    // And again, now that everything is stored.
    for (index, input) in inputs.iter().enumerate() {
        assert_eq!(
            memo.digest(input.as_slice()),
            whole(input),
            "input {index}, again"
        );
    }
}

#[test]
fn an_input_that_only_ends_differently_resumes_and_is_not_stored_again() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = memo(64 * 1024 * 1024, &SHARED);
    let transcript = text(20 * SPACING_BYTES + 500, 11);
    let call = |n: u32| {
        [
            transcript.as_slice(),
            format!(" summarize call {n}").as_bytes(),
        ]
        .concat()
    };
    assert_eq!(memo.digest(&*call(1)), whole(&call(1)));
    assert_eq!(
        memo.stored.len(),
        1,
        "the first input is stored with its states"
    );
    assert_eq!(memo.stored[0].states.len(), 20);
    assert_eq!(
        memo.longest_shared(memo.stored[0].head, call(2).as_slice(), 20),
        (Some(0), 20),
        "the second call shares every whole spacing of the first"
    );
    assert_eq!(memo.digest(&*call(2)), whole(&call(2)));
    assert_eq!(
        memo.stored.len(),
        1,
        "an input adding no state is not stored"
    );
    // A longer input that goes on past the stored one is stored, with its own states.
    let longer = [transcript.as_slice(), &text(3 * SPACING_BYTES, 13)].concat();
    assert_eq!(memo.digest(&*longer), whole(&longer));
    assert_eq!(memo.stored.len(), 2);
    assert_eq!(memo.stored[1].states.len(), longer.len() / SPACING_BYTES);
}

#[test]
fn a_stored_state_is_never_used_past_where_the_inputs_differ() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = memo(64 * 1024 * 1024, &SHARED);
    let first = text(8 * SPACING_BYTES, 17);
    memo.digest(&*first);
    let mut second = first.clone();
    second[3 * SPACING_BYTES + 5] ^= 1;
    let head = memo.stored[0].head;
    assert_eq!(
        memo.longest_shared(head, second.as_slice(), 8),
        (Some(0), 3)
    );
    assert_eq!(memo.digest(&*second), whole(&second));
    // A first spacing that differs shares nothing (the head key differs too, but the
    // comparison alone would say so).
    let mut third = first.clone();
    third[0] ^= 1;
    assert_eq!(super::shared_spacings(&first, third.as_slice(), 8), 0);
    assert_eq!(memo.digest(&*third), whole(&third));
}

#[test]
fn the_memo_keeps_to_its_budget_and_gives_it_back() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let input_bytes = 4 * SPACING_BYTES;
    {
        // Room for two inputs and their states, not three.
        let mut memo = memo(2 * input_bytes + 2048, &SHARED);
        for seed in 1..=5 {
            let input = text(input_bytes, seed);
            assert_eq!(memo.digest(&*input), whole(&input));
            assert!(
                memo.bytes <= memo.bytes_max,
                "{} > {}",
                memo.bytes,
                memo.bytes_max
            );
            assert_eq!(SHARED.load(Ordering::Relaxed), memo.bytes);
        }
        assert_eq!(memo.stored.len(), 2, "the oldest were evicted");
        // An input larger than the whole memo is hashed, never stored.
        let huge = text(3 * input_bytes, 99);
        assert_eq!(memo.digest(&*huge), whole(&huge));
        assert_eq!(memo.stored.len(), 2);
    }
    assert_eq!(
        SHARED.load(Ordering::Relaxed),
        0,
        "a dropped memo gives its bytes back"
    );
}

#[test]
fn a_spent_process_budget_stores_nothing_and_still_digests() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = Midstates::sharing(64 * 1024 * 1024, &SHARED, 1024);
    let input = text(4 * SPACING_BYTES, 3);
    assert_eq!(memo.digest(&*input), whole(&input));
    assert!(memo.stored.is_empty());
    assert_eq!(SHARED.load(Ordering::Relaxed), 0);
}

#[test]
fn an_input_in_pieces_digests_as_the_same_bytes_whole() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = memo(64 * 1024 * 1024, &SHARED);
    let base = text(6 * SPACING_BYTES + 321, 23);
    let inputs = [
        base.clone(),
        [
            &base[..5 * SPACING_BYTES + 10],
            b" summarize call 1".as_slice(),
        ]
        .concat(),
        [
            &base[..2 * SPACING_BYTES - 3],
            text(4 * SPACING_BYTES, 29).as_slice(),
        ]
        .concat(),
        [base.as_slice(), text(2 * SPACING_BYTES + 1, 31).as_slice()].concat(),
    ];
    // Pieces cut at and around the spacings' edges, tiny and larger than a spacing.
    for piece_bytes in [
        1,
        7,
        SPACING_BYTES - 1,
        SPACING_BYTES,
        SPACING_BYTES + 1,
        3 * SPACING_BYTES + 5,
    ] {
        for (index, input) in inputs.iter().enumerate() {
            let pieces: Vec<&[u8]> = input.chunks(piece_bytes).collect();
            assert_eq!(
                memo.digest(pieces.as_slice()),
                whole(input),
                "input {index} in pieces of {piece_bytes}"
            );
        }
    }
    // Pieces resumed from states stored from pieces of another size.
    assert!(
        memo.stored.len() >= 2,
        "inputs were stored: {}",
        memo.stored.len()
    );
    for stored in &memo.stored {
        let mut hasher = Sha256::new();
        for (index, chunk) in stored.input.chunks(SPACING_BYTES).enumerate() {
            if chunk.len() < SPACING_BYTES {
                break;
            }
            hasher.update(chunk);
            assert_eq!(
                stored.states[index].clone().finalize(),
                hasher.clone().finalize(),
                "state {index} is the state after its prefix"
            );
        }
    }
}

/// Pins [`super::CANDIDATES_MAX`]: a lookup compares only the newest stored inputs that
/// start as the new one does, and still digests right when an older one shared more.
#[test]
fn a_lookup_compares_only_the_newest_candidates() {
    static SHARED: AtomicUsize = AtomicUsize::new(0);
    let mut memo = memo(64 * 1024 * 1024, &SHARED);
    let base = text(10 * SPACING_BYTES, 37);
    // The oldest shares all ten spacings with `base`; each later one differs inside its
    // third spacing, so each is stored (it adds states past what the others share).
    memo.digest(base.as_slice());
    for variant in 0..super::CANDIDATES_MAX {
        let mut changed = base.clone();
        changed[2 * SPACING_BYTES + 100 + variant] ^= 0x20;
        memo.digest(changed.as_slice());
    }
    assert_eq!(memo.stored.len(), 1 + super::CANDIDATES_MAX);
    let head = memo.stored[0].head;
    assert_eq!(
        memo.longest_shared(head, base.as_slice(), 10),
        (Some(super::CANDIDATES_MAX), 2),
        "the oldest (all ten shared) is past the candidates compared"
    );
    let longer = [base.as_slice(), b"summarize call 9".as_slice()].concat();
    assert_eq!(memo.digest(longer.as_slice()), whole(&longer));
}
