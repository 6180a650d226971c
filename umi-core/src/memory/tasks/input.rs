//! The input block every task prompt ends with: the data the prompt is about, as compact
//! JSON with sorted keys in a fenced block, so text with quotes or code fences in it cannot
//! confuse a model or a simulator, and the block reads back exactly.

use serde_json::Value;

use crate::llm::CompletionRequest;

pub(super) const INPUT_FENCE_OPEN: &str = "Input:\n```json\n";

pub(super) const INPUT_FENCE_CLOSE: &str = "\n```";

/// `lead`, then `data` as compact JSON (keys sorted: the prompt is part of the request a
/// simulated model hashes) in a fenced block.
pub(super) fn with_input_block(lead: &str, data: &Value) -> String {
    let data = crate::canonical_json::Canonical(data);
    format!("{lead}\n\n{INPUT_FENCE_OPEN}{data}{INPUT_FENCE_CLOSE}")
}

/// The JSON block of a prompt built by this module, if `request` carries one.
pub fn input_block(request: &CompletionRequest) -> Option<Value> {
    serde_json::from_str(input_block_text(request)?).ok()
}

/// The raw JSON of a prompt's input block.
pub(super) fn input_block_text(request: &CompletionRequest) -> Option<&str> {
    let text = request.last_user_text()?;
    let start = rfind_fence(text.as_bytes(), INPUT_FENCE_OPEN.as_bytes())? + INPUT_FENCE_OPEN.len();
    // `memmem` finds what `str::find` finds, several bytes at a time.
    let end =
        start + memchr::memmem::find(&text.as_bytes()[start..], INPUT_FENCE_CLOSE.as_bytes())?;
    // Both fences are ASCII, so both ends are character boundaries.
    text.get(start..end)
}

/// Where the last `fence` in `text` starts, as `str::rfind` finds it: at each of the
/// fence's last byte, from the end, several bytes at a time (a fence ends in a line feed,
/// which the JSON a block holds never has: in a prompt this module built, the first or
/// second line feed from the end is the one).
fn rfind_fence(text: &[u8], fence: &[u8]) -> Option<usize> {
    let (&last, _) = fence.split_last()?;
    memchr::memrchr_iter(last, text)
        .find(|&end| text[..=end].ends_with(fence))
        .map(|end| end + 1 - fence.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    #[test]
    fn the_block_reads_back_whatever_the_lead_and_data_hold() {
        let fence_in_text = format!("see {INPUT_FENCE_OPEN} and {INPUT_FENCE_CLOSE} here");
        let data = serde_json::json!({ "text": fence_in_text, "n": 1 });
        for lead in [
            "",
            "Extract.",
            &fence_in_text,
            "Input:\n```json\n{\"x\":1}\n```",
        ] {
            let request =
                CompletionRequest::new(vec![Message::user(with_input_block(lead, &data))]);
            assert_eq!(input_block(&request), Some(data.clone()), "lead {lead:?}");
        }
        let no_block = CompletionRequest::new(vec![Message::user("no block here\n```")]);
        assert_eq!(input_block_text(&no_block), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0xFE4C),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// Texts made of the fence's own pieces, so that near and whole fences overlap.
        #[test]
        fn the_last_fence_is_where_rfind_finds_it(
            text in "(Input:|\\n|```|json|Input:\\n```json\\n|x|é){0,24}",
        ) {
            proptest::prop_assert_eq!(
                rfind_fence(text.as_bytes(), INPUT_FENCE_OPEN.as_bytes()),
                text.rfind(INPUT_FENCE_OPEN)
            );
        }
    }
}
