//! The fields of a Messages stream's `content_block_delta` event, read without a
//! `Value` tree.
//!
//! Deltas are nearly every event of a stream; each was read as a `serde_json::Value`,
//! a map per event (issue 41). [`DeltaEvent`] keeps the event's `type`, `index` and the
//! delta's `type`, `text`, `thinking` and `partial_json`, borrowed when they hold no
//! escape, and walks every other field as `Value` does ([`Scalar`] and the walkers of
//! `llm::wire::fields`): an event is accepted or refused exactly as before, a
//! repeated key's last value wins, and a field of another type reads as absent, as
//! `Value::as_str` and `as_u64` have it. Other events (one or two per stream) are
//! still read whole.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::llm::wire::fields::{Scalar, fields_visitor, walk_seq};
use crate::llm::wire::tag::ErrorTag;

/// The fields of a delta the decoder reads; all absent when it is not an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct DeltaFields<'a> {
    pub kind: Scalar<'a>,
    pub text: Scalar<'a>,
    pub thinking: Scalar<'a>,
    pub partial_json: Scalar<'a>,
}

/// The fields of an event the decoder reads on its delta path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct DeltaEvent<'a> {
    pub kind: Scalar<'a>,
    pub index: Scalar<'a>,
    /// `Some` whenever the event has a `delta` key, whatever its value.
    pub delta: Option<DeltaFields<'a>>,
}

impl<'de> Deserialize<'de> for DeltaEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EventVisitor)
    }
}

impl<'de> Deserialize<'de> for DeltaFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FieldsVisitor)
    }
}

fields_visitor!(EventVisitor, DeltaEvent, {
    "type" => kind: Scalar<'de>,
    "index" => index: Scalar<'de>,
    "delta" => delta: DeltaFields<'de> as Some,
});

fields_visitor!(FieldsVisitor, DeltaFields, {
    "type" => kind: Scalar<'de>,
    "text" => text: Scalar<'de>,
    "thinking" => thinking: Scalar<'de>,
    "partial_json" => partial_json: Scalar<'de>,
});

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn scalar(field: Option<&Value>) -> Scalar<'static> {
        match field {
            Some(Value::String(text)) => Scalar::Str(text.clone().into()),
            Some(number) if number.as_u64().is_some() => Scalar::U64(number.as_u64().unwrap()),
            _ => Scalar::Other,
        }
    }

    /// Every field the delta path reads is what a `Value` gave, and an event is refused
    /// exactly when a `Value` refuses it.
    #[test]
    fn a_delta_reads_what_a_value_read() {
        let events = [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \"x\" \u00e9"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":2.0,"delta":null}"#,
            r#"{"type":"content_block_delta","delta":[{"text":"x"}]}"#,
            r#"{"type":"content_block_delta","delta":{"type":5,"text":{"a":1e400}}}"#,
            r#"{"type":"content_block_delta","delta":{"text":"a","text":"b"},"index":3,"index":4}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"message_start","message":{"usage":{"input_tokens":12}}}"#,
            r#"[1]"#,
            "null",
            r#"{"type":"content_block_delta","delta":{"text":"\ud800"}}"#,
            r#"{"type":"content_block_delta""#,
        ];
        for data in events {
            let head = serde_json::from_str::<DeltaEvent<'_>>(data);
            let value = serde_json::from_str::<Value>(data);
            match (&head, &value) {
                (Ok(head), Ok(value)) => {
                    let expected = DeltaEvent {
                        kind: scalar(value.get("type")),
                        index: scalar(value.get("index")),
                        delta: value.get("delta").map(|delta| DeltaFields {
                            kind: scalar(delta.get("type")),
                            text: scalar(delta.get("text")),
                            thinking: scalar(delta.get("thinking")),
                            partial_json: scalar(delta.get("partial_json")),
                        }),
                    };
                    assert_eq!(*head, expected, "{data}");
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{data}: {head:?} against {value:?}"),
            }
        }
    }
}
