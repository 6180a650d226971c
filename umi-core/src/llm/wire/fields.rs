//! Reading a stream event's few fields without a `Value` tree: `Scalar` (a field as a
//! decoder reads it), walkers that read the rest of an array or object as `Value` does
//! while keeping nothing, and `fields_visitor!`, which declares a visitor that reads an
//! object's named fields into a struct. The Responses decoder's `EventHead` and the
//! Messages decoder's `DeltaEvent` are built from them (issue 41); they live here, beside
//! `ErrorTag`, so that neither decoder imports the other's module. "As `Value`" has
//! `ErrorTag`'s meaning: serde_json without `raw_value` or `arbitrary_precision`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::llm::wire::tag::ErrorTag;

/// A field as the decoder reads it: a string, an unsigned integer, or anything else.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Scalar<'a> {
    /// A string.
    Str(Cow<'a, str>),
    /// An integer that fits a `u64` (what `Value::as_u64` gives).
    U64(u64),
    /// Anything else (a negative or fractional number, a boolean, `null`, an array or
    /// an object), read and checked as `Value` reads it.
    #[default]
    Other,
}

impl Scalar<'_> {
    /// The text, or `""` for anything that is not a string (`text_of`).
    pub(crate) fn text(&self) -> &str {
        match self {
            Self::Str(text) => text,
            Self::U64(_) | Self::Other => "",
        }
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_i64<E>(self, number: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(number).map_or(Scalar::Other, Scalar::U64))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Self::Value, E> {
        Ok(Scalar::U64(number))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(text)))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Scalar::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        walk_seq(seq).map(|()| Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        walk_map(map).map(|()| Scalar::Other)
    }
}

/// Reads the rest of an array as `Value` would, keeping nothing.
pub(crate) fn walk_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<ErrorTag>()?.is_some() {}
    Ok(())
}

/// Reads the rest of an object as `Value` would, keeping nothing.
pub(crate) fn walk_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<ErrorTag>()?.is_some() {
        map.next_value::<ErrorTag>()?;
    }
    Ok(())
}

/// Declares a visitor that reads an object's named fields into a struct (the last of
/// a repeated key wins) and walks everything else; a value that is not an object is
/// walked and gives the struct with every field absent.
macro_rules! fields_visitor {
    ($visitor:ident, $out:ident, {
        $($key:literal => $field:ident: $ty:ty $(as $wrap:path)?),* $(,)?
    }) => {
        struct $visitor;

        impl<'de> Visitor<'de> for $visitor {
            type Value = $out<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("any valid JSON value")
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok($out::default())
            }

            fn visit_some<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<Self::Value, D::Error> {
                $out::deserialize(deserializer)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                walk_seq(seq).map(|()| $out::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = $out::default();
                // Keys are strings, borrowed when they hold no escape.
                while let Some(key) = map.next_key::<Scalar<'de>>()? {
                    match key.text() {
                        $($key => out.$field = $($wrap)?(map.next_value::<$ty>()?),)*
                        _ => {
                            map.next_value::<ErrorTag>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
    };
}
pub(crate) use fields_visitor;
