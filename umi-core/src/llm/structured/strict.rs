//! OpenAI's strict mode, as a rule on schemas: which schema a provider with strict
//! structured outputs accepts, and, for one it refuses, where and why in its words.
//!
//! With `strict: true`, OpenAI accepts a schema only when every object in it says
//! `"additionalProperties": false` and lists every one of its properties in `required`
//! (platform.openai.com structured-outputs guide, "Supported schemas"); otherwise the
//! request is a 400: "Invalid schema for response_format 'NAME': In context=('properties',
//! 'steps', 'items'), 'additionalProperties' is required to be supplied and to be false."
//! or "..., 'required' is required to be supplied and to be an array including every key
//! in properties. Missing 'owner'." (captures quoted in dottxt-ai/outlines #844,
//! moeru-ai/xsai #145 and #202, and in projects' notes on the AI SDK's `.optional()`
//! fields). The client asks for strict mode only for a schema that qualifies
//! ([`crate::llm::CompletionRequest::with_output_schema`]); the simulated servers refuse
//! the others as OpenAI does, so an agent whose schema would be refused in production
//! is refused in its tests.
//!
//! The walk visits an object, then its `properties`, `items`, `anyOf`, `$defs` and
//! `definitions`, keys in sorted order (so the first violation named is the same in any
//! build, whatever serde_json's key order).

use serde_json::Value;

use crate::canonical_json::sorted_keys;

/// Nesting deeper than this is not walked (a schema that deep is refused elsewhere).
const SCHEMA_DEPTH_MAX: usize = 64;

/// One step of the path to a violation, as OpenAI's message prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextPart {
    /// A key (`'properties'`, a property's name).
    Key(String),
    /// An index (`anyOf`'s).
    Index(usize),
}

/// Which rule an object breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrictRule {
    /// The root is not an object schema (an array, a union, no `type`): `got` is its
    /// `type`, or `None`.
    RootNotObject {
        /// The root's `type` as OpenAI quotes it.
        got: String,
    },
    /// It does not say `"additionalProperties": false`.
    AdditionalProperties,
    /// Its `required` leaves out this property (the first missing one, in key order).
    RequiredAll {
        /// The property left out.
        missing: String,
    },
}

/// The first object in a schema that strict mode refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictViolation {
    /// Where it is, from the schema's root.
    pub context: Vec<ContextPart>,
    /// What it breaks.
    pub rule: StrictRule,
}

impl StrictViolation {
    /// The path as OpenAI prints it: a Python tuple (`()`, `('items',)`,
    /// `('properties', 'a', 'anyOf', 0)`).
    pub fn context_text(&self) -> String {
        let parts: Vec<String> = self
            .context
            .iter()
            .map(|part| match part {
                ContextPart::Key(key) => format!("'{key}'"),
                ContextPart::Index(index) => index.to_string(),
            })
            .collect();
        match parts.as_slice() {
            [] => "()".to_owned(),
            [one] => format!("({one},)"),
            many => format!("({})", many.join(", ")),
        }
    }

    /// OpenAI's 400 message for a `response_format` (or `text.format`) named `name`.
    pub fn openai_message(&self, name: &str) -> String {
        let context = self.context_text();
        match &self.rule {
            StrictRule::RootNotObject { got } => format!(
                "Invalid schema for response_format '{name}': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
            ),
            StrictRule::AdditionalProperties => format!(
                "Invalid schema for response_format '{name}': In context={context}, 'additionalProperties' is required to be supplied and to be false."
            ),
            StrictRule::RequiredAll { missing } => format!(
                "Invalid schema for response_format '{name}': In context={context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{missing}'."
            ),
        }
    }
}

/// The first place `schema` breaks strict mode, or `None` when a strict provider takes it.
/// The root must be an object schema (OpenAI: "schema must be a JSON Schema of 'type:
/// \"object\"', got 'type: \"None\"'", quoted in projects' notes on root unions).
pub fn strict_violation(schema: &Value) -> Option<StrictViolation> {
    let root_type = schema.get("type");
    if root_type != Some(&Value::from("object")) || schema.get("anyOf").is_some() {
        let got = match root_type {
            Some(Value::String(kind)) if kind != "object" => kind.clone(),
            _ => "None".to_owned(),
        };
        return Some(StrictViolation {
            context: Vec::new(),
            rule: StrictRule::RootNotObject { got },
        });
    }
    let mut context = Vec::new();
    walk(schema, &mut context, 0)
}

fn is_object_schema(schema: &serde_json::Map<String, Value>) -> bool {
    let typed_object = match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
        _ => false,
    };
    typed_object || schema.contains_key("properties")
}

/// The rule `schema` (an object schema) itself breaks, if any.
fn own_violation(schema: &serde_json::Map<String, Value>) -> Option<StrictRule> {
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Some(StrictRule::AdditionalProperties);
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object)?;
    sorted_keys(properties)
        .into_iter()
        .find(|name| !required.contains(&name.as_str()))
        .map(|missing| StrictRule::RequiredAll {
            missing: missing.clone(),
        })
}

fn walk(schema: &Value, context: &mut Vec<ContextPart>, depth: usize) -> Option<StrictViolation> {
    let Value::Object(map) = schema else {
        return None;
    };
    if depth > SCHEMA_DEPTH_MAX {
        return None;
    }
    if is_object_schema(map)
        && let Some(rule) = own_violation(map)
    {
        return Some(StrictViolation {
            context: context.clone(),
            rule,
        });
    }
    for container in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get(container) {
            for name in sorted_keys(children) {
                let parts = [
                    ContextPart::Key(container.to_owned()),
                    ContextPart::Key(name.clone()),
                ];
                if let Some(found) = descend(&children[name.as_str()], context, &parts, depth) {
                    return Some(found);
                }
            }
        }
    }
    if let Some(items) = map.get("items")
        && let Some(found) = descend(items, context, &[ContextPart::Key("items".into())], depth)
    {
        return Some(found);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (index, branch) in branches.iter().enumerate() {
            let parts = [ContextPart::Key("anyOf".into()), ContextPart::Index(index)];
            if let Some(found) = descend(branch, context, &parts, depth) {
                return Some(found);
            }
        }
    }
    None
}

fn descend(
    child: &Value,
    context: &mut Vec<ContextPart>,
    parts: &[ContextPart],
    depth: usize,
) -> Option<StrictViolation> {
    context.extend(parts.iter().cloned());
    let found = walk(child, context, depth + 1);
    context.truncate(context.len() - parts.len());
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strict_object(properties: &Value) -> Value {
        let names: Vec<String> = properties.as_object().unwrap().keys().cloned().collect();
        json!({"type": "object", "properties": properties, "required": names, "additionalProperties": false})
    }

    #[test]
    fn strict_schemas_pass_and_others_are_named_as_openai_names_them() {
        let table = [
            (strict_object(&json!({"a": {"type": "string"}})), None),
            (
                json!({"type": "array", "items": {"type": "integer"}}),
                Some(
                    "Invalid schema for response_format 'x': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.",
                ),
            ),
            (
                json!({"anyOf": [strict_object(&json!({}))]}),
                Some(
                    "Invalid schema for response_format 'x': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.",
                ),
            ),
            // `$ref`s into closed `$defs`, and a nullable object, are fine.
            (
                json!({"type": "object", "properties": {"s": {"$ref": "#/$defs/s"}, "n": {"type": ["object", "null"], "properties": {}, "required": [], "additionalProperties": false}},
                       "required": ["n", "s"], "additionalProperties": false, "$defs": {"s": strict_object(&json!({"u": {"type": "string"}}))}}),
                None,
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
                Some(
                    "Invalid schema for response_format 'x': In context=(), 'additionalProperties' is required to be supplied and to be false.",
                ),
            ),
            (
                json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}, "required": ["b"], "additionalProperties": false}),
                Some(
                    "Invalid schema for response_format 'x': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'a'.",
                ),
            ),
            (
                strict_object(
                    &json!({"steps": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}}),
                ),
                Some(
                    "Invalid schema for response_format 'x': In context=('properties', 'steps', 'items'), 'additionalProperties' is required to be supplied and to be false.",
                ),
            ),
            (
                strict_object(
                    &json!({"r": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}}),
                ),
                Some(
                    "Invalid schema for response_format 'x': In context=('properties', 'r', 'anyOf', 1), 'additionalProperties' is required to be supplied and to be false.",
                ),
            ),
            (
                strict_object(
                    &json!({"l": {"type": "array", "items": {"type": "object", "properties": {"a": {}}}}}),
                ),
                Some(
                    "Invalid schema for response_format 'x': In context=('properties', 'l', 'items'), 'additionalProperties' is required to be supplied and to be false.",
                ),
            ),
        ];
        for (schema, expected) in table {
            let got = strict_violation(&schema).map(|v| v.openai_message("x"));
            assert_eq!(got.as_deref(), expected, "{schema}");
        }
        let one = StrictViolation {
            context: vec![ContextPart::Key("items".into())],
            rule: StrictRule::AdditionalProperties,
        };
        assert_eq!(one.context_text(), "('items',)");
    }
}
