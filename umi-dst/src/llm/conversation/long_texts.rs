//! The facts of a long text, read once per thread: a sweep sends the same long message in
//! call after call (mixed_formats' 87 KB transcript, router_fallback_chain's 145 KB one),
//! and reading its first 8,192 characters word by word cost about 5% of mixed_formats.
//!
//! What `read_text` finds in a text alone is a pure function of the text, so it is kept
//! in a per-thread memo (`memo::Memo`, the house's memo of inputs and their functions'
//! values: an entry is used only for the same bytes, so nothing a seed sees depends on
//! what is stored). The facts count against the memo's budget with their text.

use std::cell::RefCell;
use std::sync::Arc;

use super::Fact;
use crate::llm::memo::{MEMO_INPUT_BYTES_MIN, Memo};

/// Bytes of message texts, and of their facts, one thread's memo keeps (a text is read up
/// to 8,192 characters).
const FACTS_MEMO_BYTES_MAX: usize = 2 * 1024 * 1024;

thread_local! {
    static FACTS: RefCell<Memo<Arc<[Fact]>>> = const {
        RefCell::new(Memo::weighing(FACTS_MEMO_BYTES_MAX, facts_bytes))
    };
}

/// What `facts` hold on the heap, about: each fact and the strings it owns.
fn facts_bytes(facts: &Arc<[Fact]>) -> usize {
    facts
        .iter()
        .map(|fact| {
            let value = match &fact.value {
                serde_json::Value::String(text) => text.capacity(),
                _ => 0,
            };
            let hints: usize = fact.hints.iter().map(String::capacity).sum();
            let key = fact.key.as_ref().map_or(0, String::capacity);
            std::mem::size_of::<Fact>() + value + hints + key
        })
        .sum()
}

/// The facts `read_text` finds in `text` onto no others: memoised for a long text.
pub(super) fn facts_alone(text: &str) -> Arc<[Fact]> {
    let compute = || {
        let mut alone = Vec::new();
        super::read_text(text, &mut alone);
        Arc::from(alone)
    };
    if text.len() < MEMO_INPUT_BYTES_MIN {
        return compute();
    }
    // During the thread's teardown the memo is gone: computed directly.
    FACTS
        .try_with(|memo| {
            memo.borrow_mut()
                .get_or_compute(&[text.as_bytes()], compute)
        })
        .unwrap_or_else(|_| compute())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_texts_facts_weigh_what_they_hold() {
        let text = format!(
            "{} order 1234 for Alice Smith",
            "the full transcript follows. ".repeat(200)
        );
        let facts = facts_alone(&text);
        assert!(!facts.is_empty());
        let bytes = facts_bytes(&facts);
        assert!(
            bytes >= facts.len() * std::mem::size_of::<Fact>() + "Alice Smith".len(),
            "{bytes} bytes for {} facts",
            facts.len()
        );
        for _ in 0..2 {
            assert_eq!(facts_alone(&text), facts, "the same facts from the memo");
        }
    }
}
