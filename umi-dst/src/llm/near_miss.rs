//! Near misses: a structured answer that is almost right, the way models get schemas
//! wrong, for an `llm.invalid_response` fault on a request with an output schema.
//!
//! The kinds: a required field missing, a value of the wrong type, a property the schema
//! forbids (`additionalProperties: false`), a value out of its bounds, and a document cut
//! short. Each seed picks one among those the schema and the answer allow, at a seeded
//! place; the kind and the JSON path go into the trace (`llm.near_miss`), so a replay says
//! which miss the user's validate-and-repair code met.

use serde_json::{Value, json};
use umi_core::llm::structured::keywords::{merged, number_bound, resolve, types_of};

use crate::rng::DeterministicRng;

/// Nesting the search for places follows.
const DEPTH_MAX: usize = 16;

/// One way a structured answer misses its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NearMissKind {
    /// A required property removed.
    MissingRequired,
    /// A value replaced by one of another type.
    WrongType,
    /// A property added where `additionalProperties` is false.
    ExtraProperty,
    /// A number past its minimum or maximum, or a string or array past its length.
    OutOfRange,
    /// The JSON text cut before its end.
    Truncated,
}

impl NearMissKind {
    /// The kind's name in the trace.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::MissingRequired => "missing_required",
            Self::WrongType => "wrong_type",
            Self::ExtraProperty => "extra_property",
            Self::OutOfRange => "out_of_range",
            Self::Truncated => "truncated",
        }
    }
}

/// A miss applied: its kind and where (`$.steps[0].minutes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NearMiss {
    /// The kind.
    pub kind: NearMissKind,
    /// The path it was made at.
    pub path: String,
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn path_text(steps: &[Step]) -> String {
    let mut out = "$".to_owned();
    for step in steps {
        match step {
            Step::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// A place a miss can be made, and how.
#[derive(Debug, Clone)]
struct Site {
    kind: NearMissKind,
    steps: Vec<Step>,
    /// The new value (or, for `MissingRequired`, the key to remove; for `ExtraProperty`,
    /// the key to add).
    change: Change,
}

#[derive(Debug, Clone)]
enum Change {
    Remove(String),
    Add(String),
    Replace(Value),
}

/// Collects the places `value` (valid under `schema`) can be made to miss it.
fn sites(
    root: &Value,
    schema: &Value,
    value: &Value,
    steps: &mut Vec<Step>,
    out: &mut Vec<Site>,
    depth: usize,
) {
    if depth > DEPTH_MAX {
        return;
    }
    let Ok(schema) = resolve(root, schema) else {
        return;
    };
    let Ok(schema) = merged(root, schema) else {
        return;
    };
    if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() {
        // Which branch a value breaks is not well defined: no miss inside a choice.
        return;
    }
    let mut here = Vec::new();
    if let Some(other) = wrong_type(&schema) {
        here.push((NearMissKind::WrongType, Change::Replace(other)));
    }
    if let Some(past) = out_of_range(&schema, value) {
        here.push((NearMissKind::OutOfRange, Change::Replace(past)));
    }
    if let Value::Object(object) = value {
        here.extend(object_misses(&schema, object));
    }
    out.extend(here.into_iter().map(|(kind, change)| Site {
        kind,
        steps: steps.clone(),
        change,
    }));
    descend(root, &schema, value, steps, out, depth);
}

/// A value of another type than `schema` allows, if it names a type (and neither an
/// enum nor a constant, whose misses are not type errors).
fn wrong_type(schema: &Value) -> Option<Value> {
    if schema.get("type").is_none() || schema.get("enum").is_some() || schema.get("const").is_some()
    {
        return None;
    }
    let types = types_of(schema);
    let other = if types.contains(&"string") {
        json!(42)
    } else {
        json!("not the right type")
    };
    let allowed = types.iter().any(|t| match *t {
        "integer" | "number" => other.is_number(),
        "string" => other.is_string(),
        _ => false,
    });
    (!allowed).then_some(other)
}

/// `value` pushed just past a bound of `schema`: a number one past its maximum (or
/// below its minimum), a string one character past its `maxLength`.
fn out_of_range(schema: &Value, value: &Value) -> Option<Value> {
    if value.is_number() {
        let (max, _) = number_bound(schema, "maximum", "exclusiveMaximum");
        let (min, _) = number_bound(schema, "minimum", "exclusiveMinimum");
        let past = max.map(|m| m + 1.0).or_else(|| min.map(|m| m - 1.0))?;
        return Some(if value.is_i64() || value.is_u64() {
            json!(past.round() as i64)
        } else {
            json!(past)
        });
    }
    let (text, max) = (
        value.as_str()?,
        schema.get("maxLength").and_then(Value::as_u64)?,
    );
    let mut longer = text.to_owned();
    while (longer.chars().count() as u64) <= max {
        longer.push('x');
    }
    Some(json!(longer))
}

/// The misses of an object: each required property it has, removed; a property
/// `additionalProperties: false` refuses, added.
fn object_misses(
    schema: &Value,
    object: &serde_json::Map<String, Value>,
) -> Vec<(NearMissKind, Change)> {
    let mut misses: Vec<(NearMissKind, Change)> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| object.contains_key(*name))
        .map(|name| {
            (
                NearMissKind::MissingRequired,
                Change::Remove(name.to_owned()),
            )
        })
        .collect();
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        misses.push((
            NearMissKind::ExtraProperty,
            Change::Add("unexpected_field".to_owned()),
        ));
    }
    misses
}

/// The sites inside `value`: each property `schema` describes (in key order), each item.
fn descend(
    root: &Value,
    schema: &Value,
    value: &Value,
    steps: &mut Vec<Step>,
    out: &mut Vec<Site>,
    depth: usize,
) {
    match value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in umi_core::canonical_json::sorted_keys(object) {
                if let Some(property) = properties.and_then(|p| p.get(name)) {
                    steps.push(Step::Key(name.clone()));
                    sites(root, property, &object[name], steps, out, depth + 1);
                    steps.pop();
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    steps.push(Step::Index(index));
                    sites(root, item_schema, item, steps, out, depth + 1);
                    steps.pop();
                }
            }
        }
        _ => {}
    }
}

fn apply(value: &mut Value, steps: &[Step], change: &Change) {
    let mut target = value;
    for step in steps {
        target = match (step, target) {
            (Step::Key(key), Value::Object(object)) => match object.get_mut(key) {
                Some(next) => next,
                None => return,
            },
            (Step::Index(index), Value::Array(items)) => match items.get_mut(*index) {
                Some(next) => next,
                None => return,
            },
            _ => return,
        };
    }
    match change {
        Change::Remove(key) => {
            if let Value::Object(object) = target {
                object.remove(key);
            }
        }
        Change::Add(key) => {
            if let Value::Object(object) = target {
                object.insert(key.clone(), json!("not in the schema"));
            }
        }
        Change::Replace(new) => *target = new.clone(),
    }
}

/// Makes `text` (JSON valid under `schema`) miss it, by a kind and at a place `rng`
/// picks among those possible; returns the new text and the miss.
pub(super) fn near_miss(
    text: &str,
    schema: &Value,
    rng: &mut DeterministicRng,
) -> (String, NearMiss) {
    let truncate = |rng: &mut DeterministicRng| {
        let boundaries: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .filter(|&i| i > 0)
            .collect();
        // Any proper prefix of a JSON object or array is not JSON.
        let cut = boundaries
            .get(rng.index(boundaries.len().max(1)))
            .copied()
            .unwrap_or(0);
        (
            text[..cut].to_owned(),
            NearMiss {
                kind: NearMissKind::Truncated,
                path: "$".to_owned(),
            },
        )
    };
    let Ok(mut value) = serde_json::from_str::<Value>(text) else {
        return truncate(rng);
    };
    let mut found = Vec::new();
    sites(schema, schema, &value, &mut Vec::new(), &mut found, 0);
    // Every kind that has a place is as likely as the others; truncation always has one.
    let mut kinds: Vec<NearMissKind> = found.iter().map(|s| s.kind).collect();
    kinds.sort_by_key(|k| k.name());
    kinds.dedup();
    kinds.push(NearMissKind::Truncated);
    let kind = kinds[rng.index(kinds.len())];
    if kind == NearMissKind::Truncated || !(value.is_object() || value.is_array()) {
        return truncate(rng);
    }
    let candidates: Vec<&Site> = found.iter().filter(|s| s.kind == kind).collect();
    let site = candidates[rng.index(candidates.len())];
    apply(&mut value, &site.steps, &site.change);
    let mut path = path_text(&site.steps);
    match &site.change {
        Change::Remove(key) | Change::Add(key) => {
            path.push('.');
            path.push_str(key);
        }
        Change::Replace(_) => {}
    }
    (
        umi_core::canonical_json::to_string(&value),
        NearMiss { kind, path },
    )
}
