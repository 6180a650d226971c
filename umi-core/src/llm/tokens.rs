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
/// One pass over the bytes, eight at a time where they are ASCII (a `TokenCounter`); the
/// same count as walking the characters (a multi-byte character is one token at its lead
/// byte).
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

/// Bytes the counter classifies at once: one `u64`, one bit of [`WORD_RUN_TOKENS`]'
/// index per byte.
const CHUNK_BYTES: usize = 8;

/// Every byte of a chunk set to one; the high bit of every byte.
const BYTE_ONES: u64 = 0x0101_0101_0101_0101;
const BYTE_HIGHS: u64 = 0x8080_8080_8080_8080;

/// Multiplying a chunk's byte flags (bit 0 of each byte, after `>> 7`) by this gathers
/// byte `i`'s flag into bit `56 + i`.
const GATHER_FLAGS: u64 = 0x0102_0408_1020_4080;

const _: () = assert!(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN == 4);
/// A word's positions modulo [`TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN`] (a power of two).
const WORD_POSITION_MASK: u8 = 3;

/// For each word position before a chunk (see [`TokenCounter`]) and each pattern of
/// word bytes in the chunk (bit `i` set when byte `i` is a letter or digit): the tokens
/// those word bytes start. Built by walking the eight bits the way
/// [`TokenCounter::feed_bytes`] walks bytes.
const WORD_RUN_TOKENS: [[u8; 256]; 4] = {
    let mut table = [[0u8; 256]; 4];
    let mut position_before = 0;
    while position_before < 4 {
        let mut pattern = 0;
        while pattern < 256 {
            let mut position = position_before as u8;
            let mut tokens = 0u8;
            let mut bit = 0;
            while bit < CHUNK_BYTES {
                if pattern & (1 << bit) != 0 {
                    tokens += (position == 0) as u8;
                    position = (position + 1) & WORD_POSITION_MASK;
                } else {
                    position = 0;
                }
                bit += 1;
            }
            table[position_before][pattern] = tokens;
            pattern += 1;
        }
        position_before += 1;
    }
    table
};

/// For each pattern of word bytes in a chunk but the full one: the word position after
/// it, which only the word bytes it ends in decide. (After a chunk of eight word bytes
/// the position is the one before it: eight is a multiple of four.) A table rather than
/// a lookup in [`WORD_RUN_TOKENS`] by the position before, so that one chunk's position
/// waits on the last one's by a compare, not a load.
const WORD_POSITION_AFTER: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut pattern = 0;
    while pattern < 256 {
        table[pattern] = ((pattern as u8).leading_ones() as u8) & WORD_POSITION_MASK;
        pattern += 1;
    }
    table
};

/// The chunk pattern whose eight bytes are all word bytes.
const ALL_WORD_BYTES: usize = 0xFF;

/// The high bit of each byte of `chunk` (every byte ASCII) that is at least `least`
/// (1 to 128): adding `128 - least` carries into a byte's high bit exactly then, and
/// never out of the byte.
const fn bytes_at_least(chunk: u64, least: u64) -> u64 {
    chunk.wrapping_add((128 - least) * BYTE_ONES) & BYTE_HIGHS
}

/// The high bit of each byte of `chunk` (every byte ASCII) in `low..=high`
/// (`high` under 128).
const fn bytes_in(chunk: u64, low: u64, high: u64) -> u64 {
    bytes_at_least(chunk, low) & !bytes_at_least(chunk, high + 1)
}

/// How many bytes of a chunk have their high bit set in `flags` (which has no other bit).
const fn flag_count(flags: u64) -> u64 {
    (flags >> 7).wrapping_mul(BYTE_ONES) >> 56
}

/// The estimate of a text fed in pieces: the same count as the pieces joined.
///
/// A run of word bytes costs one token per `TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN` bytes,
/// rounded up: one token at each of its bytes whose position in the run is a multiple of
/// four. So the counter counts a word's tokens as its bytes arrive and carries only the
/// position the next word byte would take (0 also when no word is open). A chunk of eight
/// printable ASCII bytes adds its tokens from [`WORD_RUN_TOKENS`] and moves the position
/// by [`WORD_POSITION_AFTER`].
#[derive(Default)]
struct TokenCounter {
    tokens: u64,
    /// The position, modulo four, the next word byte takes in its run (0: a new run).
    word_position: u8,
}

impl TokenCounter {
    fn feed(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(CHUNK_BYTES);
        for chunk in &mut chunks {
            let chunk_bytes: [u8; CHUNK_BYTES] = chunk.try_into().expect("an exact chunk");
            let packed = u64::from_le_bytes(chunk_bytes);
            // Below 0x20 are the control bytes, tab, line feed, form feed and carriage
            // return among them: the byte walk classifies those.
            let below_space = BYTE_HIGHS & !bytes_at_least(packed, 0x20);
            if packed & BYTE_HIGHS == 0 && below_space == 0 {
                self.feed_printable_ascii(packed);
            } else {
                self.feed_bytes(chunk);
            }
        }
        self.feed_bytes(chunks.remainder());
    }

    /// Eight printable ASCII bytes (0x20 to 0x7F), byte `i` of the text in byte `i` of
    /// `chunk` (little-endian).
    fn feed_printable_ascii(&mut self, chunk: u64) {
        // `| 0x20` lowercases the letters and moves no other byte into `a..=z`.
        let letters = bytes_in(chunk | (0x20 * BYTE_ONES), u64::from(b'a'), u64::from(b'z'));
        let digits = bytes_in(chunk, u64::from(b'0'), u64::from(b'9'));
        let words = letters | digits;
        // Of the printable bytes, only the space is below 0x21.
        let spaces = BYTE_HIGHS & !bytes_at_least(chunk, 0x21);
        let symbols = BYTE_HIGHS & !(words | spaces);
        let pattern = ((words >> 7).wrapping_mul(GATHER_FLAGS) >> 56) as usize;
        let position = self.word_position;
        self.tokens +=
            u64::from(WORD_RUN_TOKENS[usize::from(position)][pattern]) + flag_count(symbols);
        self.word_position = if pattern == ALL_WORD_BYTES {
            position
        } else {
            WORD_POSITION_AFTER[pattern]
        };
    }

    fn feed_bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match BYTE_CLASSES[byte as usize] {
                ByteClass::Word => {
                    self.tokens += u64::from(self.word_position == 0);
                    self.word_position = (self.word_position + 1) & WORD_POSITION_MASK;
                }
                ByteClass::Continuation => {}
                class @ ByteClass::Space | class @ ByteClass::Symbol | class @ ByteClass::Lead => {
                    self.word_position = 0;
                    self.tokens += u64::from(class != ByteClass::Space);
                }
            }
        }
    }

    fn total(&self) -> u32 {
        u32::try_from(self.tokens).unwrap_or(u32::MAX)
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

        /// Mostly ASCII, as prompts are: long runs of eight ASCII bytes take the chunked
        /// path, with every class of byte (each whitespace byte, symbols, the bytes around
        /// the letter and digit ranges, multi-byte characters) falling anywhere in a chunk.
        #[test]
        fn chunks_match_the_character_rules(
            text in "([a-zA-Z0-9]{1,11}|[ \t\n\x0B\x0C\r]|[@\\[`{/:\"\\\\,.!\x00\x7F]|é|東){0,120}",
            cut in proptest::num::usize::ANY,
        ) {
            proptest::prop_assert_eq!(estimate_text_tokens(&text), reference_estimate(&text));
            // Anywhere in the text, inside a character too (JSON is counted as written).
            let cut = cut % (text.len() + 1);
            let mut counter = TokenCounter::default();
            counter.feed(&text.as_bytes()[..cut]);
            counter.feed(&text.as_bytes()[cut..]);
            proptest::prop_assert_eq!(counter.total(), reference_estimate(&text));
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
