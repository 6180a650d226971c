//! The model a request's body names (its top-level `"model"` string), read in one pass
//! over the bytes without building the body's JSON tree: the tree was most of what
//! reading `model` cost a request of `dst serve` (issue 41).
//!
//! It says exactly what `serde_json::from_slice::<Value>(body)?.get("model")?.as_str()`
//! says, since the model is part of an answer (its name is in the bytes served and in
//! the trace): a body a `Value` would refuse (not JSON, a number out of range, a string
//! that is not UTF-8 or has a bad escape, nesting past serde_json's limit, bytes after
//! the value) names none; a body that is not an object names none; of two `model` keys
//! the last wins (a `Value`'s map keeps the last); a `model` that is not a string names
//! none. So every value is read as `Value` reads it (`deserialize_any`: numbers parsed
//! in full, strings checked, keys as strings), into nothing; only the `model` string is
//! kept, borrowed from the body when it has no escapes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};

/// The model `body` names, as a `Value`'s `get("model")?.as_str()` would read it.
pub(crate) fn named_model(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<Named<'_>>(body)
        .ok()?
        .0
        .map(Cow::into_owned)
}

/// A JSON value read for its top-level `model` string.
struct Named<'de>(Option<Cow<'de, str>>);

/// Any JSON value, checked as a `Value` would be and kept as nothing.
struct Checked;

/// A key of an object: whether it is `model`.
struct Key(bool);

/// A `model` key's value: `Some` when it is a string.
struct Model<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for Named<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NamedVisitor)
    }
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // As `Value` reads a key: as a string.
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Model<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ModelVisitor)
    }
}

/// Reads every scalar as accepted and every array or object to its end, entries checked;
/// `Self::Value` is what a visit of anything but a string (or, for [`NamedVisitor`], an
/// object) comes to.
macro_rules! accept_scalars {
    ($value:expr) => {
        fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Checked>()?.is_some() {}
            Ok($value)
        }
    };
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    accept_scalars!(Checked);

    fn visit_str<E: Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Key, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<Key, E> {
        Ok(Key(key == "model"))
    }
}

struct ModelVisitor;

impl<'de> Visitor<'de> for ModelVisitor {
    type Value = Model<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    accept_scalars!(Model(None));

    fn visit_borrowed_str<E: Error>(self, model: &'de str) -> Result<Self::Value, E> {
        Ok(Model(Some(Cow::Borrowed(model))))
    }

    fn visit_str<E: Error>(self, model: &str) -> Result<Self::Value, E> {
        Ok(Model(Some(Cow::Owned(model.to_owned()))))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<Key, Checked>()?.is_some() {}
        Ok(Model(None))
    }
}

struct NamedVisitor;

impl<'de> Visitor<'de> for NamedVisitor {
    type Value = Named<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    accept_scalars!(Named(None));

    fn visit_str<E: Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Named(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut model = None;
        while let Some(Key(is_model)) = map.next_key::<Key>()? {
            if is_model {
                model = map.next_value::<Model<'de>>()?.0;
            } else {
                map.next_value::<Checked>()?;
            }
        }
        Ok(Named(model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the tree read says: the reading this one must match.
    fn by_tree(body: &[u8]) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        value.get("model")?.as_str().map(str::to_owned)
    }

    #[test]
    fn it_names_what_the_tree_names_for_every_body() {
        let deep = |depth: usize| {
            format!(
                r#"{{"model":"m","x":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
            .into_bytes()
        };
        let bodies: Vec<Vec<u8>> = [
            &br#"{"model":"umi-sim","messages":[{"role":"user","content":"hi"}]}"#[..],
            br#"{"messages":[],"model":"gpt-4o"}"#,
            br#"{"model":"a","model":"b"}"#,
            br#"{"model":"a","model":7}"#,
            br#"{"model":7,"model":"b"}"#,
            br#"{"model":null}"#,
            br#"{"model":{"model":"inner"}}"#,
            br#"{"x":{"model":"inner"}}"#,
            br#"{"mod\u0065l":"escaped-key"}"#,
            br#"{"model":"esc\"aped\n\u00e9"}"#,
            br#"["model","a"]"#,
            br#""model""#,
            b"42",
            b"null",
            br#"{"model":"a","n":1e400}"#,
            br#"{"model":"a","n":-1e400}"#,
            br#"{"model":"a","n":18446744073709551616}"#,
            br#"{"model":"a","s":"bad \x escape"}"#,
            b"{\"model\":\"a\",\"s\":\"\xff\xfe\"}",
            b"{\"model\":\"a\",\"s\":\"raw\ncontrol\"}",
            br#"{"model":"a"} trailing"#,
            br#"{"model":"a"}   "#,
            br#"{"model":"a",}"#,
            br#"{"model":"a""#,
            b"",
            b"not json",
            br#"{"model":"a","k":[1,2.5,true,false,null,{"z":[]}]}"#,
        ]
        .iter()
        .map(|body| body.to_vec())
        .chain([deep(100), deep(126), deep(127), deep(128), deep(200)])
        .collect();
        for body in &bodies {
            assert_eq!(
                named_model(body),
                by_tree(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // The cases above cover both answers and each reason for none.
        assert_eq!(
            named_model(br#"{"model":"a","model":"b"}"#).as_deref(),
            Some("b")
        );
        assert_eq!(named_model(br#"{"model":"a","n":1e400}"#), None);
        assert_eq!(named_model(&deep(126)).as_deref(), Some("m"));
        assert_eq!(named_model(&deep(200)), None);
    }
}
