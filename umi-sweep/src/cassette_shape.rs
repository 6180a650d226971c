//! The shape of a response body: which JSON paths it has and of which JSON types, with
//! `[*]` for every array index. `dst cassette diff` compares shapes, not values, so two
//! recordings of the same requests differ only when a provider changed what it sends
//! (a field renamed, added, dropped or retyped), never because the text or ids did.
//!
//! A JSON body is walked whole; a server-sent-events body event by event (umi-core's
//! own SSE decoder), each `data:` JSON walked and the paths united, each event name kept
//! as `event:NAME`; an NDJSON body line by line (umi-core's line decoder). A body that is
//! none of these has the one path `$` of type `text`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use umi_core::llm::wire::lines::LineDecoder;
use umi_core::llm::wire::sse::{SseDecoder, SseEvent};

/// Every path of a body and the JSON types seen there.
pub type Shape = BTreeMap<String, BTreeSet<&'static str>>;

/// The JSON type's name.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Adds `value`'s paths under `at` to `shape`.
pub fn walk(value: &Value, at: &str, shape: &mut Shape) {
    shape
        .entry(at.to_owned())
        .or_default()
        .insert(type_name(value));
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                walk(child, &format!("{at}.{key}"), shape);
            }
        }
        Value::Array(items) => {
            let inner = format!("{at}[*]");
            for item in items {
                walk(item, &inner, shape);
            }
        }
        _ => {}
    }
}

/// The shape of one JSON value.
pub fn json_shape(value: &Value) -> Shape {
    let mut shape = Shape::new();
    walk(value, "$", &mut shape);
    shape
}

fn text_shape() -> Shape {
    Shape::from([("$".to_owned(), BTreeSet::from(["text"]))])
}

/// The shape of a body with `content_type`.
pub fn body_shape(content_type: Option<&str>, body: &[u8]) -> Shape {
    let content_type = content_type.unwrap_or_default().to_ascii_lowercase();
    if content_type.contains("event-stream") {
        return sse_shape(body).unwrap_or_else(text_shape);
    }
    if content_type.contains("ndjson") {
        return ndjson_shape(body).unwrap_or_else(text_shape);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => json_shape(&value),
        Err(_) if body.starts_with(b"data:") || body.starts_with(b"event:") => {
            sse_shape(body).unwrap_or_else(text_shape)
        }
        Err(_) => ndjson_shape(body).unwrap_or_else(text_shape),
    }
}

fn sse_shape(body: &[u8]) -> Option<Shape> {
    let mut decoder = SseDecoder::new();
    let mut events: Vec<SseEvent> = Vec::new();
    decoder.feed(body, &mut events).ok()?;
    events.extend(decoder.finish().ok()?);
    let mut shape = Shape::new();
    for event in &events {
        if let Some(name) = &event.event {
            shape
                .entry(format!("event:{name}"))
                .or_default()
                .insert("event");
        }
        match serde_json::from_str::<Value>(&event.data) {
            Ok(value) => walk(&value, "$", &mut shape),
            Err(_) => {
                shape.entry("data:text".into()).or_default().insert("text");
            }
        }
    }
    Some(shape)
}

fn ndjson_shape(body: &[u8]) -> Option<Shape> {
    let mut decoder = LineDecoder::new();
    let mut lines = Vec::new();
    decoder.feed(body, &mut lines).ok()?;
    lines.extend(decoder.finish().ok()?);
    let mut shape = Shape::new();
    let mut any = false;
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).ok()?;
        walk(&value, "$", &mut shape);
        any = true;
    }
    any.then_some(shape)
}

/// How `b`'s shape differs from `a`'s, one line per path: `+ PATH (types)` added,
/// `- PATH (types)` removed, `~ PATH: types → types` retyped.
pub fn shape_diff(a: &Shape, b: &Shape) -> Vec<String> {
    let join = |types: &BTreeSet<&str>| types.iter().copied().collect::<Vec<_>>().join("|");
    let mut out = Vec::new();
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for path in paths {
        match (a.get(path), b.get(path)) {
            (Some(left), None) => out.push(format!("- {path} ({})", join(left))),
            (None, Some(right)) => out.push(format!("+ {path} ({})", join(right))),
            (Some(left), Some(right)) if left != right => {
                out.push(format!("~ {path}: {} → {}", join(left), join(right)));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes_differ_in_paths_and_types_never_in_values() {
        let chat = |content: Value, extra: Option<(&str, Value)>| {
            let mut v = json!({"id": "a", "choices": [{"message": {"content": content,
                "tool_calls": [{"id": "t", "function": {"name": "f"}}]}}]});
            if let Some((k, x)) = extra {
                v["choices"][0]["message"][k] = x;
            }
            v
        };
        let base = chat(json!("hi"), None);
        let table: Vec<(Value, Vec<&str>)> = vec![
            (chat(json!("a whole other text"), None), vec![]),
            (
                chat(json!("hi"), Some(("refusal", json!(null)))),
                vec!["+ $.choices[*].message.refusal (null)"],
            ),
            (
                chat(json!(["hi"]), None),
                vec![
                    "~ $.choices[*].message.content: string → array",
                    "+ $.choices[*].message.content[*] (string)",
                ],
            ),
            (
                json!({"id": "b", "choices": [{"message": {"content": "x", "toolCalls": []}}]}),
                vec![
                    "+ $.choices[*].message.toolCalls (array)",
                    "- $.choices[*].message.tool_calls (array)",
                    "- $.choices[*].message.tool_calls[*] (object)",
                    "- $.choices[*].message.tool_calls[*].function (object)",
                    "- $.choices[*].message.tool_calls[*].function.name (string)",
                    "- $.choices[*].message.tool_calls[*].id (string)",
                ],
            ),
        ];
        for (other, expected) in table {
            let got = shape_diff(&json_shape(&base), &json_shape(&other));
            assert_eq!(got, expected, "{other}");
        }
    }

    #[test]
    fn streams_are_the_union_of_their_events() {
        let sse = b"event: a\ndata: {\"x\":1}\n\nevent: b\ndata: {\"y\":\"s\"}\n\ndata: [DONE]\n\n";
        let shape = body_shape(Some("text/event-stream"), sse);
        let paths: Vec<&str> = shape.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            ["$", "$.x", "$.y", "data:text", "event:a", "event:b"]
        );
        let ndjson = b"{\"m\":{\"c\":\"a\"}}\n{\"done\":true}\n";
        let shape = body_shape(Some("application/x-ndjson"), ndjson);
        let paths: Vec<&str> = shape.keys().map(String::as_str).collect();
        assert_eq!(paths, ["$", "$.done", "$.m", "$.m.c"]);
        assert_eq!(body_shape(None, b"plain words"), text_shape());
    }
}
