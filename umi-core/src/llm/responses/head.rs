//! The fields of a Responses event that its deltas need, read without a `Value` tree.
//!
//! Most events of a stream are deltas (`response.output_text.delta` and its kin), each
//! read for its `type`, `sequence_number`, `item_id` and `delta`, plus `item` on
//! `response.output_item.added`. Reading each as a `serde_json::Value` built a map per
//! event (issue 41). [`EventHead`] keeps only those fields, borrowed from the data
//! when they hold no escape, and reads every other field with [`ErrorTag`], which walks
//! it as `Value` does: an event is accepted or refused exactly as a `Value` would be
//! (the same syntax, number ranges and nesting limit), and a repeated key's last value
//! wins, as in a `Value`'s map. A field of another type than the decoder asks for
//! (`"delta": 5`) reads as absent, as `Value::as_str` would have it. ("As `Value`"
//! has [`ErrorTag`]'s meaning: serde_json without `raw_value` or `arbitrary_precision`.)

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::llm::wire::fields::{Scalar, fields_visitor, walk_seq};
use crate::llm::wire::tag::ErrorTag;

/// The fields of an added item the decoder reads (`item` of
/// `response.output_item.added`); all absent when the item is not an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct ItemHead<'a> {
    pub id: Scalar<'a>,
    pub kind: Scalar<'a>,
    pub call_id: Scalar<'a>,
    pub name: Scalar<'a>,
    pub arguments: Scalar<'a>,
}

/// The fields of one event the decoder reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct EventHead<'a> {
    pub kind: Scalar<'a>,
    pub sequence_number: Scalar<'a>,
    pub item_id: Scalar<'a>,
    pub delta: Scalar<'a>,
    /// `Some` whenever the event has an `item` key, whatever its value (as
    /// `Value::get` finds it).
    pub item: Option<ItemHead<'a>>,
}

impl<'de> Deserialize<'de> for EventHead<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HeadVisitor)
    }
}

impl<'de> Deserialize<'de> for ItemHead<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

fields_visitor!(HeadVisitor, EventHead, {
    "type" => kind: Scalar<'de>,
    "sequence_number" => sequence_number: Scalar<'de>,
    "item_id" => item_id: Scalar<'de>,
    "delta" => delta: Scalar<'de>,
    "item" => item: ItemHead<'de> as Some,
});

fields_visitor!(ItemVisitor, ItemHead, {
    "id" => id: Scalar<'de>,
    "type" => kind: Scalar<'de>,
    "call_id" => call_id: Scalar<'de>,
    "name" => name: Scalar<'de>,
    "arguments" => arguments: Scalar<'de>,
});

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::Value;

    use super::*;

    /// What the decoder read from a `Value` before: `text_of`, `as_u64`, `as_str`.
    fn from_value(value: &Value) -> EventHead<'static> {
        let scalar = |field: Option<&Value>| match field {
            Some(Value::String(text)) => Scalar::Str(Cow::Owned(text.clone())),
            Some(number) if number.as_u64().is_some() => Scalar::U64(number.as_u64().unwrap()),
            _ => Scalar::Other,
        };
        EventHead {
            kind: scalar(value.get("type")),
            sequence_number: scalar(value.get("sequence_number")),
            item_id: scalar(value.get("item_id")),
            delta: scalar(value.get("delta")),
            item: value.get("item").map(|item| ItemHead {
                id: scalar(item.get("id")),
                kind: scalar(item.get("type")),
                call_id: scalar(item.get("call_id")),
                name: scalar(item.get("name")),
                arguments: scalar(item.get("arguments")),
            }),
        }
    }

    /// Every field the decoder reads is what a `Value` gave, and an event is refused
    /// exactly when a `Value` refuses it.
    #[test]
    fn a_head_reads_what_a_value_read() {
        let deep = |n: usize| format!(r#"{{"x": {}{}}}"#, "[".repeat(n), "]".repeat(n));
        let events = [
            r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi \"there\" \u00e9","logprobs":[]}"#.to_owned(),
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"}}"#.to_owned(),
            r#"{"type":"response.output_item.added","item":null}"#.to_owned(),
            r#"{"type":"response.output_item.added","item":[1,2]}"#.to_owned(),
            r#"{"type":"x","item":{"id":5,"type":null,"name":["a"]}}"#.to_owned(),
            r#"{"type":"a","type":"b","delta":"1","delta":2,"sequence_number":-1}"#.to_owned(),
            r#"{"sequence_number":1.0,"item_id":{"a":"b"}}"#.to_owned(),
            r#"{"sequence_number":18446744073709551615}"#.to_owned(),
            r#"{"sequence_number":18446744073709551616}"#.to_owned(),
            r#"{"type":"response.created","response":{"id":"resp_1","usage":null,"n":1e400}}"#.to_owned(),
            r#"{"type":"response.created","response":{"n":-1e308}}"#.to_owned(),
            r#"{"t\u0079pe":"escaped key","delta":"\ud83d\ude00"}"#.to_owned(),
            r#"{"delta":"\ud83d"}"#.to_owned(),
            r#"["type"]"#.to_owned(),
            r#""response.completed""#.to_owned(),
            "null".to_owned(),
            "5".to_owned(),
            "{".to_owned(),
            r#"{"type":"a",}"#.to_owned(),
            r#"{"type":"a"} x"#.to_owned(),
            "".to_owned(),
            deep(120),
            deep(140),
        ];
        for data in &events {
            let head = serde_json::from_str::<EventHead<'_>>(data);
            let value = serde_json::from_str::<Value>(data);
            match (&head, &value) {
                (Ok(head), Ok(value)) => assert_eq!(*head, from_value(value), "{data}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{data}: {head:?} against {value:?}"),
            }
        }
    }
}
