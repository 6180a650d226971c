//! A JSON value read for one question only: is it the string `"error"`? Read without
//! building a `serde_json::Value`.
//!
//! A chat chunk names itself in `object` (`"chat.completion.chunk"` on every chunk of
//! every stream) and vLLM's flat error says `"object": "error"`. Reading that field as a
//! `Value` cost an allocation and a tree per chunk (issue 41). [`ErrorTag`] walks the
//! value with serde_json's own reader the way `Value` does (`deserialize_any` all the
//! way down: the same values accepted, numbers range-checked, strings' escapes and UTF-8
//! checked, the same nesting limit), so a body is accepted or refused exactly as before;
//! only the answer is kept.
//!
//! "As `Value` does" means `Value` as umi-core builds it, without serde_json's
//! `raw_value` and `arbitrary_precision` features. Another crate in the same build can
//! turn them on (rig-core turns on `raw_value` in the `rig` build of umi-dst); `Value`
//! then reads an object keyed by serde_json's private raw-value token as the string it
//! holds, where these walkers see an ordinary key. Only a body written with that
//! private token reads differently; no provider sends one. `arbitrary_precision` would
//! turn every number into a map, so no number would read as one: nothing enables it
//! today, and a build that did would need these walkers to follow.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Whether a JSON value was the string `"error"` (any other value: `false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorTag {
    /// The value was the string `"error"`.
    pub is_error: bool,
}

impl<'de> Deserialize<'de> for ErrorTag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TagVisitor)
    }
}

struct TagVisitor;

const NOT: ErrorTag = ErrorTag { is_error: false };

impl<'de> Visitor<'de> for TagVisitor {
    type Value = ErrorTag;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_i64<E>(self, _: i64) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_u64<E>(self, _: u64) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_f64<E>(self, _: f64) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_str<E>(self, text: &str) -> Result<ErrorTag, E> {
        Ok(ErrorTag {
            is_error: text == "error",
        })
    }

    fn visit_none<E>(self) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_unit<E>(self) -> Result<ErrorTag, E> {
        Ok(NOT)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<ErrorTag, D::Error> {
        ErrorTag::deserialize(deserializer).map(|_| NOT)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ErrorTag, A::Error> {
        // Every element read as `Value` reads it (bounded by the body, as `Value` is).
        while seq.next_element::<ErrorTag>()?.is_some() {}
        Ok(NOT)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ErrorTag, A::Error> {
        // Keys are strings (their escapes checked as `Value` checks them); a repeated key
        // is no error, as in `Value`.
        while map.next_key::<ErrorTag>()?.is_some() {
            map.next_value::<ErrorTag>()?;
        }
        Ok(NOT)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[derive(serde::Deserialize)]
    struct WithTag {
        #[serde(default)]
        object: Option<ErrorTag>,
    }

    #[derive(serde::Deserialize)]
    struct WithValue {
        #[serde(default)]
        object: Option<Value>,
    }

    /// Accepted and refused exactly as a `Value` in the same place is, with the same
    /// error, and `"error"` told apart from everything else.
    #[test]
    fn reads_as_a_value_reads() {
        let deep_ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let deep_bad = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let values = [
            r#""error""#,
            r#""err\u006fr""#,
            r#""chat.completion.chunk""#,
            r#""errors""#,
            "null",
            "true",
            "0",
            "-1",
            "1.5e3",
            "18446744073709551616",
            "1e400",
            "-1e400",
            r#"{"a": [1, {"b": null}], "a": "error"}"#,
            r#"["error"]"#,
            r#"{"\uD800": 1}"#,
            r#""\uDC00""#,
            r#""\x""#,
            "[1,]",
            "{\"a\" 1}",
            "nul",
            "01",
            &deep_ok,
            &deep_bad,
        ];
        for value in values {
            let body = format!(r#"{{"object": {value}, "x": 1}}"#);
            let tag = serde_json::from_str::<WithTag>(&body).map(|w| w.object);
            let plain = serde_json::from_str::<WithValue>(&body).map(|w| w.object);
            match (&tag, &plain) {
                (Ok(tag), Ok(plain)) => assert_eq!(
                    tag.is_some_and(|t| t.is_error),
                    plain.as_ref().and_then(Value::as_str) == Some("error"),
                    "{value}"
                ),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{value}"),
                _ => panic!("{value}: {tag:?} against {plain:?}"),
            }
        }
        let absent = serde_json::from_str::<WithTag>(r#"{"x": 1}"#).unwrap();
        assert_eq!(absent.object, None);
    }
}
