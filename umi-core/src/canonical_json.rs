//! JSON with every object's keys in sorted order, whatever serde_json's map type is.
//!
//! serde_json's `Map` is a `BTreeMap` (keys sorted) unless some crate in the build turns
//! on its `preserve_order` feature, which makes it an `IndexMap` (keys in insertion or
//! source order). Cargo unifies features across a build, so one dependency of the agent
//! code under test (rig-core, for one) changes how *every* `Map` in the process iterates
//! and serializes. Code on a seeded path (what a simulated model answers, the bodies the
//! clients send and the simulated servers return, anything hashed into a stream or
//! written to a trace) must not let that change what a seed means, so it goes through
//! this module:
//!
//! - [`to_string`] / [`to_vec`] / [`Canonical`] serialize a [`Value`] with its objects'
//!   keys sorted, at every depth, instead of `value.to_string()`,
//!   `serde_json::to_string(&value)` or `serde_json::to_vec(&value)`;
//! - [`serialize`] does the same for a `Value` field of a derived `Serialize` type
//!   (`#[serde(serialize_with = "umi_core::canonical_json::serialize")]`);
//! - [`sorted_keys`] / [`sorted_entries`] iterate a [`Map`] in sorted key order instead
//!   of `map.keys()` / `map.iter()`.
//!
//! Sorted is the order of the default build (a `BTreeMap` of `String`s compares keys as
//! bytes), so in that build all of these give exactly what serde_json gives; with
//! `preserve_order` on they give the same bytes again. A derived `Serialize` struct writes
//! its fields in declaration order in both builds and needs nothing from here.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// `map`'s keys, sorted.
pub fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_unstable();
    keys
}

/// `map`'s entries, sorted by key.
pub fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

/// `value` as compact JSON text with its objects' keys sorted.
pub fn to_string(value: &Value) -> String {
    // What `Canonical(value).to_string()` gives, without copying the text again; a
    // `Value` always serializes (its keys are strings and its numbers finite).
    serde_json::to_string(&Canonical(value))
        .unwrap_or_else(|error| panic!("a JSON value did not serialize: {error}"))
}

/// `value` as compact JSON bytes with its objects' keys sorted.
///
/// Written into a buffer sized for the text up front, directly for a long value: the
/// bytes `serde_json::to_vec(&Canonical(value))` gives, with a long request body's text
/// copied instead of scanned byte by byte when it holds nothing to escape.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let hint = size_hint(value);
    let mut bytes = Vec::with_capacity(hint);
    if hint < DIRECT_WRITE_BYTES_MIN {
        // Short: serde_json writes it all (the direct writer would save nothing).
        // A `Value` always serializes, and a `Vec` never fails a write.
        let _ = serde_json::to_writer(&mut bytes, &Canonical(value));
    } else {
        write(&mut bytes, value);
    }
    bytes
}

/// Values whose text is about this long or longer are written by [`write`].
const DIRECT_WRITE_BYTES_MIN: usize = 4 * 1024;

/// Writes `value` as compact JSON with its objects' keys sorted: the structure's
/// brackets, commas and colons here; scalars by serde_json; a string by serde_json
/// unless it holds no byte JSON escapes ([`is_plain`]), when its escaped form is the
/// string itself between quotes (RFC 8259 §7, and serde_json's escape table: it escapes
/// exactly the control characters, `"` and `\`).
fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            let mut entry = |index: usize, key: &str, item: &Value| {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write(out, item);
            };
            if map.keys().is_sorted() {
                for (index, (key, item)) in map.iter().enumerate() {
                    entry(index, key, item);
                }
            } else {
                for (index, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                    entry(index, key, item);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write(out, item);
            }
            out.push(b']');
        }
        Value::String(text) => write_str(out, text),
        scalar @ (Value::Null | Value::Bool(_) | Value::Number(_)) => {
            // A scalar always serializes, and a `Vec` never fails a write.
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// Strings at least this long are checked for bytes to escape before serde_json scans
/// them (shorter ones go to serde_json at once).
const PLAIN_CHECK_BYTES_MIN: usize = 256;

fn write_str(out: &mut Vec<u8>, text: &str) {
    if text.len() >= PLAIN_CHECK_BYTES_MIN && is_plain(text.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        // A `Vec` never fails a write.
        let _ = serde_json::to_writer(&mut *out, text);
    }
}

/// Whether `bytes` holds no byte JSON escapes: no control character, `"` or `\`. In
/// blocks without an early exit, so the compiler checks each block in a few vector
/// instructions.
fn is_plain(bytes: &[u8]) -> bool {
    bytes.chunks(64).all(|block| {
        block.iter().fold(true, |plain, &byte| {
            plain & (byte >= 0x20) & (byte != b'"') & (byte != b'\\')
        })
    })
}

/// About the length of `value`'s compact JSON text: its strings and keys as they are
/// (escapes make the text only a little longer), quotes, separators and a short number.
fn size_hint(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| size_hint(item) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(key, item)| key.len() + 4 + size_hint(item))
                .sum::<usize>()
        }
    }
}

/// A `serialize_with` function for a `Value` field: the value with its objects' keys
/// sorted.
///
/// # Errors
///
/// Whatever `serializer` returns.
pub fn serialize<S: Serializer>(value: &Value, serializer: S) -> Result<S::Ok, S::Error> {
    Canonical(value).serialize(serializer)
}

/// A [`Value`] that serializes (and displays) with its objects' keys sorted at every
/// depth: `Canonical(&value)` wherever a `&Value` would be serialized.
#[derive(Debug, Clone, Copy)]
pub struct Canonical<'a>(pub &'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                if map.keys().is_sorted() {
                    // Always so in the default build (a `BTreeMap`): no sorted copy.
                    for (key, value) in map {
                        out.serialize_entry(key, &Canonical(value))?;
                    }
                } else {
                    for (key, value) in sorted_entries(map) {
                        out.serialize_entry(key, &Canonical(value))?;
                    }
                }
                out.end()
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(Canonical)),
            scalar => scalar.serialize(serializer),
        }
    }
}

impl fmt::Display for Canonical<'_> {
    /// Compact JSON (`{:#}`: pretty-printed), keys sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if f.alternate() {
            serde_json::to_string_pretty(self)
        } else {
            serde_json::to_string(self)
        };
        // A `Value` always serializes: its keys are strings and its numbers finite.
        f.write_str(&text.map_err(|_| fmt::Error)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The direct writer gives serde_json's bytes: long strings with and without bytes
    /// to escape (each escaped byte in turn), short ones, numbers, nesting, any key order.
    #[test]
    fn to_vec_writes_what_serde_json_writes() {
        // Long enough for the direct writer (`DIRECT_WRITE_BYTES_MIN`).
        let plain = "the full transcript follows, in 東京 & elsewhere/ok. ".repeat(100);
        let mut values = vec![
            reversed(),
            json!({"messages": [{"role": "user", "content": plain.clone()}], "stream": true}),
            json!([
                [],
                {},
                null,
                false,
                1,
                -2.5,
                1e300,
                18446744073709551615u64,
                "",
                "é",
                plain.clone()
            ]),
            json!({"b": {"y": [1, {"q": null}]}, "a": plain.clone()}),
        ];
        for byte in (0u8..0x20).chain([b'"', b'\\', 0x7f]) {
            let mut text = plain.clone();
            text.insert(text.len() / 2, char::from(byte));
            values.push(json!({"content": text, "short": format!("a{}b", char::from(byte))}));
        }
        for value in values {
            let expected = serde_json::to_vec(&Canonical(&value)).unwrap();
            assert_eq!(to_vec(&value), expected, "{value}");
        }
    }

    /// A map built in reverse order: with `preserve_order` its natural order differs
    /// from the sorted one.
    fn reversed() -> Value {
        let mut inner = Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!([{"y": 1, "b": 2}]));
        let mut outer = Map::new();
        outer.insert("zeta".into(), Value::Object(inner));
        outer.insert("Alpha".into(), json!(null));
        outer.insert("alpha".into(), json!("x"));
        Value::Object(outer)
    }

    #[test]
    fn keys_are_sorted_at_every_depth() {
        assert_eq!(
            to_string(&reversed()),
            r#"{"Alpha":null,"alpha":"x","zeta":{"a":[{"b":2,"y":1}],"z":1}}"#
        );
        assert_eq!(to_vec(&reversed()), to_string(&reversed()).into_bytes());
    }

    #[test]
    fn the_default_build_order_is_kept() {
        // Parsing sorts in the default build; the canonical text must equal that order
        // (byte order of the keys), so it changes nothing there.
        let text = r#"{"b":1,"B":2,"é":3,"a":{"d":4,"c":5}}"#;
        let parsed: Value = serde_json::from_str(text).unwrap();
        let mut sorted = parsed.clone();
        sorted.sort_all_objects();
        assert_eq!(to_string(&parsed), serde_json::to_string(&sorted).unwrap());
        assert_eq!(
            to_string(&parsed),
            r#"{"B":2,"a":{"c":5,"d":4},"b":1,"é":3}"#
        );
    }

    #[test]
    fn iteration_helpers_sort() {
        let value = reversed();
        let map = value.as_object().unwrap();
        assert_eq!(sorted_keys(map), ["Alpha", "alpha", "zeta"]);
        let keys: Vec<&String> = sorted_entries(map).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["Alpha", "alpha", "zeta"]);
    }

    #[test]
    fn a_field_serializes_sorted_and_display_matches() {
        #[derive(serde::Serialize)]
        struct Wrapper {
            #[serde(serialize_with = "serialize")]
            value: Value,
        }
        let value = reversed();
        let wrapper = Wrapper {
            value: value.clone(),
        };
        let text = serde_json::to_string(&wrapper).unwrap();
        assert_eq!(text, format!(r#"{{"value":{}}}"#, to_string(&value)));
        assert_eq!(Canonical(&value).to_string(), to_string(&value));
        assert!(format!("{:#}", Canonical(&value)).starts_with("{\n  \"Alpha\": null"));
    }
}
