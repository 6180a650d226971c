//! The canonical hash of a request: what makes SimLLM's answers independent of call
//! order.
//!
//! Each call draws from a stream forked from (run seed, this hash, how many times this
//! same request was already made in the run). Two requests that mean the same get the
//! same hash; any difference a model could see changes it.
//!
//! Limits on the answer are not part of it: `max_tokens` and stop sequences end an
//! answer the model would otherwise have written on (as they do for a real model at a
//! fixed seed), and formats carry them differently (Anthropic's API requires
//! `max_tokens`, so its client always sends one; the Responses API takes no stop
//! sequences, so its client applies them). Nor are tool-call ids and a tool result's
//! error flag: they are bookkeeping some formats do not carry (Ollama's native API
//! matches a result to its call by the tool's name, the Responses API has no error
//! flag), and a provider names calls its own way (`toolu_…`); which result answers which
//! call is in their order, and a failure in the result's text. Leaving these out is what
//! lets one seed give one answer in every wire format (v2; v1 hashed them all).
//!
//! The hash walks the request field by field with length prefixes and writes JSON
//! objects with their keys sorted, so it does not depend on serde_json's map type
//! (`preserve_order` changes iteration order, and a dependency may switch it on in some
//! builds and not others).

use std::hash::{BuildHasher, Hasher};

use serde_json::Value;
use sha2::{Digest, Sha256};
use umi_core::llm::{CompletionRequest, Message};

/// What the canonical walk writes its bytes to: SHA-256 for the request hash (part of
/// what a seed means), a fast keyed hasher for the conversation key (used only to tell
/// equal conversations apart).
pub(crate) trait Sink {
    /// Adds `bytes`.
    fn update(&mut self, bytes: impl AsRef<[u8]>);
}

impl Sink for Sha256 {
    fn update(&mut self, bytes: impl AsRef<[u8]>) {
        Digest::update(self, bytes);
    }
}

impl Sink for ahash::AHasher {
    fn update(&mut self, bytes: impl AsRef<[u8]>) {
        Hasher::write(self, bytes.as_ref());
    }
}

/// The fixed keys of the conversation-key hasher (any fixed values do: the key is
/// compared, never stored or shown).
const CONVERSATION_KEY_SEEDS: [u64; 4] = [
    0x756d_6920_636f_6e76,
    0x6572_7361_7469_6f6e,
    0x6b65_7920_6f6e_6500,
    0x0000_0000_0000_0001,
];

/// The bytes of a walk handed on to a feed ([`super::memo::sha256_walk`]).
struct Feed<'a>(&'a mut dyn FnMut(&[u8]));

impl Sink for Feed<'_> {
    fn update(&mut self, bytes: impl AsRef<[u8]>) {
        (self.0)(bytes.as_ref());
    }
}

/// SHA-256 of `request` in canonical form, through SimLLM's per-thread digest memo:
/// the same digest, found again without hashing when a
/// retry, a fallback or a later seed makes the same long request.
pub fn request_hash(request: &CompletionRequest) -> [u8; 32] {
    fn walk(sink: &mut impl Sink, request: &CompletionRequest) {
        sink.update(b"umi.simllm.request.v2");
        str_field(sink, &request.model);
        hash_body(sink, request);
    }
    if request.prompt_bytes() < super::memo::MEMO_INPUT_BYTES_MIN {
        // Short: hashed at once (the memo would walk it twice to save little).
        let mut hasher = Sha256::new();
        walk(&mut hasher, request);
        return hasher.finalize().into();
    }
    super::memo::sha256_walk(|feed| walk(&mut Feed(feed), request))
}

/// A 64-bit key of `request` in canonical form without its model: the conversation,
/// which a retry sends again to the same model and a fallback to another
/// ([`crate::usage::UsageLedger::call`]). The same walk as [`request_hash`] into a
/// fixed-key aHash hasher instead of SHA-256 (a fifth of the cost per call, measured by
/// `benches/usage.rs`): the key is only compared for equality within a run, so its
/// value may differ between platforms while every comparison comes out the same (two
/// of a run's at most `USAGE_CONVERSATIONS_MAX` conversations share a key with odds
/// below 10⁻¹², and then the same way on every replay).
pub fn conversation_hash(request: &CompletionRequest) -> u64 {
    let [a, b, c, d] = CONVERSATION_KEY_SEEDS;
    let mut hasher = ahash::RandomState::with_seeds(a, b, c, d).build_hasher();
    hash_body(&mut hasher, request);
    hasher.finish()
}

/// Everything [`request_hash`] hashes after the model.
fn hash_body(hasher: &mut impl Sink, request: &CompletionRequest) {
    hasher.update((request.messages.len() as u64).to_le_bytes());
    for message in &request.messages {
        str_field(hasher, message.role());
        str_field(hasher, message.text());
        if let Message::Assistant { tool_calls, .. } = message {
            hasher.update((tool_calls.len() as u64).to_le_bytes());
            for call in tool_calls {
                str_field(hasher, &call.name);
                value(hasher, &call.arguments);
            }
        }
    }
    hasher.update((request.tools.len() as u64).to_le_bytes());
    for tool in &request.tools {
        str_field(hasher, &tool.name);
        str_field(hasher, &tool.description);
        value(hasher, &tool.parameters);
    }
    option_u64(hasher, request.temperature.map(|t| u64::from(t.to_bits())));
    hasher.update([u8::from(request.json_output)]);
    option_u64(hasher, request.seed);
    match &request.task {
        Some(task) => {
            hasher.update([1]);
            str_field(hasher, task);
        }
        None => hasher.update([0]),
    }
}

fn str_field(hasher: &mut impl Sink, text: &str) {
    hasher.update((text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

fn option_u64(hasher: &mut impl Sink, field: Option<u64>) {
    match field {
        Some(number) => {
            hasher.update([1]);
            hasher.update(number.to_le_bytes());
        }
        None => hasher.update([0]),
    }
}

pub(crate) fn value(hasher: &mut impl Sink, json: &Value) {
    match json {
        Value::Null => hasher.update([b'n']),
        Value::Bool(flag) => hasher.update([b'b', u8::from(*flag)]),
        Value::Number(number) => {
            hasher.update([b'#']);
            str_field(hasher, &number.to_string());
        }
        Value::String(text) => {
            hasher.update([b's']);
            str_field(hasher, text);
        }
        Value::Array(items) => {
            hasher.update([b'[']);
            hasher.update((items.len() as u64).to_le_bytes());
            for item in items {
                value(hasher, item);
            }
        }
        Value::Object(map) => {
            hasher.update([b'{']);
            hasher.update((map.len() as u64).to_le_bytes());
            // Keys sorted, whatever the map type. The default build's map iterates sorted
            // already: walked as it is, without a sorted copy and a lookup per key.
            if map.keys().is_sorted() {
                for (key, item) in map {
                    str_field(hasher, key);
                    value(hasher, item);
                }
            } else {
                for (key, item) in umi_core::canonical_json::sorted_entries(map) {
                    str_field(hasher, key);
                    value(hasher, item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use umi_core::llm::ToolDefinition;

    fn request(text: &str) -> CompletionRequest {
        CompletionRequest::new(vec![Message::user(text)])
    }

    #[test]
    fn any_visible_difference_changes_the_hash() {
        let base = request("hello");
        let variants = [
            request("hello!"),
            base.clone().with_task("t"),
            base.clone().with_json_output(),
            base.clone().with_temperature(0.5),
            CompletionRequest::new(vec![Message::assistant("hello")]),
        ];
        for variant in &variants {
            assert_ne!(request_hash(&base), request_hash(variant), "{variant:?}");
        }
        assert_eq!(request_hash(&base), request_hash(&request("hello")));
    }

    /// A long request goes through the per-thread digest memo: its hash is the SHA-256
    /// of its canonical walk, the first time, when stored (the second) and when found
    /// again (the third).
    #[test]
    fn a_long_request_hashes_as_its_walk() {
        let long = "the full transcript follows. ".repeat(500);
        let request = CompletionRequest::new(vec![Message::system("s"), Message::user(&long)])
            .with_model("m");
        let mut walked = Sha256::new();
        Digest::update(&mut walked, b"umi.simllm.request.v2");
        str_field(&mut walked, &request.model);
        hash_body(&mut walked, &request);
        let expected: [u8; 32] = walked.finalize().into();
        for _ in 0..3 {
            assert_eq!(request_hash(&request), expected);
        }
        let other = request.clone().with_model("n");
        assert_ne!(request_hash(&other), expected);
    }

    /// Limits cut an answer short; they do not change what the model writes.
    #[test]
    fn limits_on_the_answer_do_not_change_the_hash() {
        let base = request("hello");
        for limited in [
            base.clone().with_max_tokens(5),
            base.clone().with_stop(vec!["x".into()]),
        ] {
            assert_eq!(request_hash(&base), request_hash(&limited), "{limited:?}");
        }
    }

    #[test]
    fn object_key_order_does_not_matter() {
        let mut forward = serde_json::Map::new();
        forward.insert("a".into(), json!(1));
        forward.insert("b".into(), json!(2));
        let mut backward = serde_json::Map::new();
        backward.insert("b".into(), json!(2));
        backward.insert("a".into(), json!(1));
        let tool = |params| {
            request("q").with_tools(vec![ToolDefinition::new("t", "", Value::Object(params))])
        };
        assert_eq!(request_hash(&tool(forward)), request_hash(&tool(backward)));
    }

    /// The walk writes what a walk over sorted keys with a lookup per key writes (how it
    /// was written before it walked a sorted map as it is).
    #[test]
    fn objects_are_walked_in_sorted_key_order() {
        fn reference(hasher: &mut Sha256, json: &Value) {
            match json {
                Value::Object(map) => {
                    Sink::update(hasher, [b'{']);
                    Sink::update(hasher, (map.len() as u64).to_le_bytes());
                    for key in umi_core::canonical_json::sorted_keys(map) {
                        str_field(hasher, key);
                        reference(hasher, &map[key]);
                    }
                }
                Value::Array(items) => {
                    Sink::update(hasher, [b'[']);
                    Sink::update(hasher, (items.len() as u64).to_le_bytes());
                    for item in items {
                        reference(hasher, item);
                    }
                }
                scalar => value(hasher, scalar),
            }
        }
        let mut reversed = serde_json::Map::new();
        for key in ["zeta", "Beta", "alpha", "é", "a"] {
            reversed.insert(
                key.into(),
                json!({"y": [1, {"q": null, "b": 2.5}], "x": "s"}),
            );
        }
        for json in [
            Value::Object(reversed),
            json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}),
            json!([{"k": true}, {}, []]),
        ] {
            let (mut walked, mut expected) = (Sha256::new(), Sha256::new());
            value(&mut walked, &json);
            reference(&mut expected, &json);
            assert_eq!(walked.finalize(), expected.finalize(), "{json}");
        }
    }
}
