//! The token estimator: one deterministic count used wherever tokens are counted.
//!
//! Real tokenizers differ by model, and a test harness must not depend on any of them.
//! What matters is that every part of the workspace (the agent loop trimming context,
//! SimLLM deciding a context overflow, usage reports) counts the same way, so an
//! overflow the loop expects is the overflow the simulator produces. The estimate
//! follows the usual shape of BPE tokenizers:
//! - a run of ASCII letters and digits costs one token per
//!   `TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN` bytes, rounded up;
//! - ASCII whitespace is free (it attaches to the next word);
//! - every other ASCII character (punctuation, symbols) costs one token;
//! - every non-ASCII character costs one token (CJK is about one token per character).
//!
//! A message adds `TOKEN_ESTIMATE_MESSAGE_OVERHEAD`, a request
//! `TOKEN_ESTIMATE_REPLY_PRIMING`, and tool definitions count as their JSON text.

use super::message::{Message, ToolDefinition};
use super::request::CompletionRequest;
use crate::constants::{
    TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN, TOKEN_ESTIMATE_MESSAGE_OVERHEAD,
    TOKEN_ESTIMATE_REPLY_PRIMING,
};

/// What a byte is to the estimator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteClass {
    /// ASCII letter or digit: part of a word.
    Word,
    /// ASCII whitespace: free.
    Space,
    /// Other ASCII: one token.
    Symbol,
    /// The first byte of a multi-byte character: one token.
    Lead,
    /// A continuation byte of a multi-byte character.
    Continuation,
}

const BYTE_CLASSES: [ByteClass; 256] = {
    let mut table = [ByteClass::Symbol; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = if b.is_ascii_alphanumeric() {
            ByteClass::Word
        } else if b.is_ascii_whitespace() {
            ByteClass::Space
        } else if b < 0x80 {
            ByteClass::Symbol
        } else if b & 0xC0 == 0x80 {
            ByteClass::Continuation
        } else {
            ByteClass::Lead
        };
        byte += 1;
    }
    table
};

/// Estimated tokens of `text`.
///
/// One pass over the bytes with a class table; the same count as walking the characters
/// (a multi-byte character is one token at its lead byte).
pub fn estimate_text_tokens(text: &str) -> u32 {
    let mut counter = TokenCounter::default();
    counter.feed(text.as_bytes());
    counter.total()
}

/// Estimated tokens of `value`'s compact JSON text (what `value.to_string()` gives),
/// counted as it is written rather than from a copy of the text.
pub fn estimate_json_tokens(value: &serde_json::Value) -> u32 {
    let mut counter = TokenCounter::default();
    // A `Value` always serializes, and the counter never fails a write.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.total()
}

/// The estimate of a text fed in pieces: the same count as the pieces joined.
#[derive(Default)]
struct TokenCounter {
    tokens: u64,
    /// Bytes of the run of word bytes the text ends in so far.
    word_bytes: usize,
}

impl TokenCounter {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match BYTE_CLASSES[byte as usize] {
                ByteClass::Word => self.word_bytes += 1,
                ByteClass::Continuation => {}
                class @ ByteClass::Space | class @ ByteClass::Symbol | class @ ByteClass::Lead => {
                    self.tokens += self
                        .word_bytes
                        .div_ceil(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN)
                        as u64;
                    self.word_bytes = 0;
                    self.tokens += u64::from(class != ByteClass::Space);
                }
            }
        }
    }

    fn total(&self) -> u32 {
        let tokens = self.tokens
            + self
                .word_bytes
                .div_ceil(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN) as u64;
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }
}

impl std::io::Write for TokenCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.feed(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Estimated tokens of one message, with its overhead and tool calls.
pub fn estimate_message_tokens(message: &Message) -> u32 {
    estimate_message_tokens_with(message, &mut estimate_text_tokens)
}

/// [`estimate_message_tokens`], with the message's text counted by `text_tokens`, which
/// must give what [`estimate_text_tokens`] gives (a caller that sees the same long texts
/// again, SimLLM, passes a memo of it).
pub fn estimate_message_tokens_with(
    message: &Message,
    text_tokens: &mut dyn FnMut(&str) -> u32,
) -> u32 {
    let mut tokens = TOKEN_ESTIMATE_MESSAGE_OVERHEAD.saturating_add(text_tokens(message.text()));
    for call in message.tool_calls() {
        tokens = tokens
            .saturating_add(estimate_text_tokens(&call.name))
            .saturating_add(estimate_json_tokens(&call.arguments));
    }
    if let Message::Tool { tool_call_id, .. } = message {
        tokens = tokens.saturating_add(estimate_text_tokens(tool_call_id));
    }
    tokens
}

/// Estimated tokens of one tool definition as offered to the model.
pub fn estimate_tool_tokens(tool: &ToolDefinition) -> u32 {
    estimate_text_tokens(&tool.name)
        .saturating_add(estimate_text_tokens(&tool.description))
        .saturating_add(estimate_json_tokens(&tool.parameters))
}

/// Estimated prompt tokens of a whole request.
pub fn estimate_request_tokens(request: &CompletionRequest) -> u32 {
    estimate_request_tokens_with(request, &mut estimate_text_tokens)
}

/// [`estimate_request_tokens`], with each message's text counted by `text_tokens` (as
/// [`estimate_message_tokens_with`]). `text_tokens` is called exactly once per message,
/// with that message's text, and for nothing else: a caller may read each text there
/// (umi-dst's SimLLM takes a long message's routing words from that read, and asserts it).
pub fn estimate_request_tokens_with(
    request: &CompletionRequest,
    text_tokens: &mut dyn FnMut(&str) -> u32,
) -> u32 {
    let messages = request
        .messages
        .iter()
        .map(|message| estimate_message_tokens_with(message, text_tokens));
    let tools = request.tools.iter().map(estimate_tool_tokens);
    messages
        .chain(tools)
        .fold(TOKEN_ESTIMATE_REPLY_PRIMING, u32::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_estimates_follow_the_documented_rules() {
        assert_eq!(estimate_text_tokens(""), 0);
        assert_eq!(estimate_text_tokens("cat"), 1);
        assert_eq!(estimate_text_tokens("cats"), 1);
        assert_eq!(estimate_text_tokens("catsup"), 2);
        assert_eq!(estimate_text_tokens("a b  c"), 3);
        assert_eq!(estimate_text_tokens("hi, you!"), 4);
        assert_eq!(estimate_text_tokens("東京"), 2);
        assert_eq!(estimate_text_tokens("{\"a\":1}"), 7);
    }

    /// The documented rules, by characters: the byte-table version must agree.
    fn reference_estimate(text: &str) -> u32 {
        let mut tokens = 0u32;
        let mut word = 0usize;
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                word += 1;
                continue;
            }
            tokens += word.div_ceil(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN) as u32;
            word = 0;
            if !c.is_ascii_whitespace() {
                tokens += 1;
            }
        }
        tokens + word.div_ceil(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN) as u32
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x70C3),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        #[test]
        fn byte_table_matches_the_character_rules(text in "\\PC{0,200}") {
            proptest::prop_assert_eq!(estimate_text_tokens(&text), reference_estimate(&text));
        }
    }

    #[test]
    fn a_text_fed_in_pieces_counts_as_it_whole() {
        let text = "catsup, 東京 and more words{\"a\":1}  x";
        for cut in 0..=text.len() {
            let mut counter = TokenCounter::default();
            counter.feed(&text.as_bytes()[..cut]);
            counter.feed(&text.as_bytes()[cut..]);
            assert_eq!(counter.total(), estimate_text_tokens(text), "cut at {cut}");
        }
    }

    #[test]
    fn json_is_counted_as_its_text() {
        let values = [
            serde_json::json!({"type": "object", "properties": {"q": {"type": "string",
                "description": "what to look up, in 東京 or anywhere"}}, "required": ["q"]}),
            serde_json::json!({"a": [1, 2.5, -3, null, true], "longwordlongword": "x\"y\\z\n"}),
            serde_json::json!("just text"),
            serde_json::json!({}),
        ];
        for value in values {
            assert_eq!(
                estimate_json_tokens(&value),
                estimate_text_tokens(&value.to_string()),
                "{value}"
            );
        }
    }

    #[test]
    fn estimates_grow_with_the_request() {
        let small = CompletionRequest::new(vec![Message::user("hello")]);
        let large =
            CompletionRequest::new(vec![Message::system("be brief"), Message::user("hello")]);
        assert_eq!(estimate_request_tokens(&small), 3 + 4 + 2);
        assert!(estimate_request_tokens(&large) > estimate_request_tokens(&small));
    }
}
