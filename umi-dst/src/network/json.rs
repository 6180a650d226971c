//! JSON the way each server writes it: keys in the server's own order, and the server's
//! spacing, serialized by serde_json.
//!
//! A plain `serde_json::Value` inside is written with its keys sorted
//! (`umi_core::canonical_json`, whether or not serde_json's `preserve_order` is on),
//! which is Azure's order and nobody else's. A [`Json`] object keeps the order it was
//! built in (OpenAI writes `id, object, created,
//! model, ...`; DashScope `choices` first; llama.cpp `choices, created, id, ...`). The
//! [`Spacing`] says how the bytes look: compact (most servers), Python's `json.dumps`
//! default (`{"a": 1, "b": 2}`, vLLM's in-stream errors), or indented (OpenAI's error
//! bodies, four spaces and a final newline).

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::ser::{Formatter, PrettyFormatter};
use umi_core::canonical_json::Canonical;

/// A JSON value whose objects keep their key order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    /// Any plain value (numbers, strings, `null`, and objects written with their keys
    /// sorted).
    Value(Value),
    /// `null`, written as a `Value::Null` is (without building one).
    Null,
    /// A boolean.
    Bool(bool),
    /// An unsigned integer, written as a `Value` holding it is.
    U64(u64),
    /// A string, escaped by serde_json as a `Value::String` is.
    Str(String),
    /// An object, keys in this order.
    Object(Vec<(&'static str, Json)>),
    /// An array.
    Array(Vec<Json>),
}

impl Json {
    /// An ordered object.
    pub(crate) fn object(fields: Vec<(&'static str, Json)>) -> Self {
        Self::Object(fields)
    }

    /// `null`.
    pub(crate) fn null() -> Self {
        Self::Null
    }

    /// Whether this is `null`, in either form.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Self::Null | Self::Value(Value::Null))
    }

    /// The text of a string, in either form.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            Self::Value(Value::String(text)) => Some(text),
            Self::Value(_)
            | Self::Null
            | Self::Bool(_)
            | Self::U64(_)
            | Self::Object(_)
            | Self::Array(_) => None,
        }
    }

    /// Adds a field at the end of an object (no-op on anything else).
    pub(crate) fn push(&mut self, key: &'static str, value: impl Into<Json>) {
        if let Self::Object(fields) = self {
            fields.push((key, value.into()));
        }
    }

    /// The value of an object's field `key`, in either form of object (`None` for
    /// anything else, or a missing key).
    pub(crate) fn get(&self, key: &str) -> Option<Json> {
        match self {
            Self::Object(fields) => fields
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| value.clone()),
            Self::Value(Value::Object(map)) => map.get(key).cloned().map(Self::Value),
            Self::Value(_)
            | Self::Null
            | Self::Bool(_)
            | Self::U64(_)
            | Self::Str(_)
            | Self::Array(_) => None,
        }
    }

    /// The object with its keys sorted (Azure writes every object so).
    pub(crate) fn sorted(self) -> Self {
        match self {
            Self::Object(mut fields) => {
                fields.sort_by(|a, b| a.0.cmp(b.0));
                Self::Object(fields.into_iter().map(|(k, v)| (k, v.sorted())).collect())
            }
            Self::Array(items) => Self::Array(items.into_iter().map(Self::sorted).collect()),
            plain @ Self::Value(_)
            | plain @ Self::Null
            | plain @ Self::Bool(_)
            | plain @ Self::U64(_)
            | plain @ Self::Str(_) => plain,
        }
    }

    /// The bytes, with `spacing`.
    pub(crate) fn to_bytes(&self, spacing: Spacing) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.write_to(&mut out, spacing);
        out
    }

    /// Appends the bytes, with `spacing`, to `out` (no buffer of their own: a streamed
    /// chunk is written straight into its frame).
    pub(crate) fn write_to(&self, out: &mut Vec<u8>, spacing: Spacing) {
        write_with(self, out, spacing);
    }

    /// The text, with `spacing`.
    #[cfg(test)]
    pub(crate) fn to_text(&self, spacing: Spacing) -> String {
        String::from_utf8(self.to_bytes(spacing)).expect("serde_json writes UTF-8")
    }
}

/// Appends `value`'s bytes with `spacing` to `out`: what [`Json::write_to`] writes for a
/// tree, for any value serde writes (a streamed chunk is written without a tree).
pub(crate) fn write_with<T: serde::Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
    spacing: Spacing,
) {
    let written = match spacing {
        Spacing::Compact => value.serialize(&mut serde_json::Serializer::new(&mut *out)),
        Spacing::Python => value.serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            PythonFormatter,
        )),
        Spacing::Indented4 => {
            let formatter = PrettyFormatter::with_indent(b"    ");
            value
                .serialize(&mut serde_json::Serializer::with_formatter(
                    &mut *out, formatter,
                ))
                .map(|()| out.push(b'\n'))
        }
        Spacing::Indented2 => {
            let formatter = PrettyFormatter::with_indent(b"  ");
            value.serialize(&mut serde_json::Serializer::with_formatter(
                &mut *out, formatter,
            ))
        }
        Spacing::ColonSpace => value.serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            ColonSpaceFormatter,
        )),
    };
    // Writing to a Vec cannot fail, and every value here is valid JSON.
    written.expect("serializing JSON into memory cannot fail");
}

impl From<Value> for Json {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl From<&str> for Json {
    fn from(text: &str) -> Self {
        Self::Str(text.to_owned())
    }
}

impl From<String> for Json {
    fn from(text: String) -> Self {
        Self::Str(text)
    }
}

impl From<u64> for Json {
    fn from(number: u64) -> Self {
        Self::U64(number)
    }
}

impl From<u32> for Json {
    fn from(number: u32) -> Self {
        Self::U64(u64::from(number))
    }
}

impl From<bool> for Json {
    fn from(flag: bool) -> Self {
        Self::Bool(flag)
    }
}

impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(value: Option<T>) -> Self {
        value.map_or_else(Json::null, Into::into)
    }
}

impl From<Vec<Json>> for Json {
    fn from(items: Vec<Json>) -> Self {
        Self::Array(items)
    }
}

impl serde::Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Value(value) => Canonical(value).serialize(serializer),
            // As serde_json writes `Value::Null`, `Value::Bool`, a `Value::Number` holding
            // a u64, and `Value::String`.
            Self::Null => serializer.serialize_unit(),
            Self::Bool(flag) => serializer.serialize_bool(*flag),
            Self::U64(number) => serializer.serialize_u64(*number),
            Self::Str(text) => serializer.serialize_str(text),
            Self::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Self::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// How a server spaces its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spacing {
    /// No spaces (`{"a":1}`): serde, Go's `encoding/json`, nlohmann, Pydantic.
    Compact,
    /// Python's `json.dumps` default: `{"a": 1, "b": [1, 2]}`.
    Python,
    /// Four-space indentation and a final newline (OpenAI's error bodies).
    Indented4,
    /// Two-space indentation, no final newline (Google's front end: Gemini's bodies).
    Indented2,
    /// `": "` after keys and a bare `,` between items (`{"a": 1,"b": [1,2]}`): Google's
    /// front end writing one event per line (Gemini's SSE data).
    ColonSpace,
}

/// Google's one-line separators: `": "` after keys, `,` alone between items.
struct ColonSpaceFormatter;

impl Formatter for ColonSpaceFormatter {
    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `json.dumps`'s separators: `", "` between items and `": "` after keys.
struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every spacing a server writes in.
    const SPACINGS: [Spacing; 5] = [
        Spacing::Compact,
        Spacing::Python,
        Spacing::Indented4,
        Spacing::Indented2,
        Spacing::ColonSpace,
    ];

    #[test]
    fn scalars_write_as_their_values_do() {
        let text = "line\nbreak \"quoted\" \u{7f} é \u{1F600} \\ tab\t";
        let pairs = [
            (Json::null(), Json::Value(Value::Null)),
            (Json::from(true), Json::Value(Value::Bool(true))),
            (Json::from(false), Json::Value(Value::Bool(false))),
            (Json::from(u64::MAX), Json::Value(Value::from(u64::MAX))),
            (Json::from(0u32), Json::Value(Value::from(0u32))),
            (
                Json::from(text),
                Json::Value(Value::String(text.to_owned())),
            ),
            (
                Json::from(String::new()),
                Json::Value(Value::String(String::new())),
            ),
        ];
        for (fast, plain) in pairs {
            for spacing in SPACINGS {
                let object = |value: Json| {
                    Json::object(vec![
                        ("k", value.clone()),
                        ("l", Json::Array(vec![value.clone(), value])),
                    ])
                };
                assert_eq!(
                    object(fast.clone()).to_bytes(spacing),
                    object(plain.clone()).to_bytes(spacing),
                    "{plain:?} {spacing:?}"
                );
            }
            assert_eq!(fast.is_null(), plain.is_null());
            assert_eq!(fast.as_str(), plain.as_str());
        }
        let mut out = b"data: ".to_vec();
        Json::from(text).write_to(&mut out, Spacing::Compact);
        assert_eq!(&out[..6], b"data: ");
        assert_eq!(out[6..], Json::from(text).to_bytes(Spacing::Compact));
    }

    #[test]
    fn order_and_spacing_are_the_servers() {
        let body = Json::object(vec![
            ("id", "x".into()),
            ("object", "chunk".into()),
            (
                "choices",
                Json::Array(vec![json!({"b": 1, "a": [1, 2]}).into()]),
            ),
        ]);
        assert_eq!(
            body.to_text(Spacing::Compact),
            r#"{"id":"x","object":"chunk","choices":[{"a":[1,2],"b":1}]}"#
        );
        assert_eq!(
            body.to_text(Spacing::Python),
            r#"{"id": "x", "object": "chunk", "choices": [{"a": [1, 2], "b": 1}]}"#
        );
        assert_eq!(
            body.clone().sorted().to_text(Spacing::Compact),
            r#"{"choices":[{"a":[1,2],"b":1}],"id":"x","object":"chunk"}"#
        );
        let indented = body.to_text(Spacing::Indented4);
        assert!(
            indented.starts_with("{\n    \"id\": \"x\",\n"),
            "{indented}"
        );
        assert!(indented.ends_with("}\n"));
        assert_eq!(
            body.to_text(Spacing::ColonSpace),
            r#"{"id": "x","object": "chunk","choices": [{"a": [1,2],"b": 1}]}"#
        );
        assert!(
            body.to_text(Spacing::Indented2)
                .starts_with("{\n  \"id\": \"x\",\n")
        );
        for spacing in SPACINGS {
            let parsed: Value = serde_json::from_slice(&body.to_bytes(spacing)).unwrap();
            assert_eq!(parsed["choices"][0]["a"], json!([1, 2]));
        }
    }
}
