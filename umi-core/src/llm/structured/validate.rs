//! A value checked against a JSON Schema, reporting the first place it fails by path.
//!
//! The subset structured outputs and tool schemas use: `type` (one or a list), `enum`,
//! `const`, numeric bounds (both drafts' exclusive forms) and `multipleOf`,
//! `minLength`/`maxLength` (in characters), `items`, `minItems`/`maxItems`,
//! `uniqueItems`, `properties`, `required`, `additionalProperties: false`, `anyOf`,
//! `oneOf`, `allOf`, local `$ref`s and OpenAPI's `nullable`. Keywords outside it
//! (`pattern`, `format`) are not checked.

use serde_json::Value;

use super::keywords::{merged, number_bound, resolve, types_of, within};
use crate::constants::SCHEMA_DEPTH_MAX;

/// Where and how a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct SchemaViolation {
    /// The path to the offending value (`$`, `$.city`, `$.tags[1]`).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// `Ok` if `value` is valid under `schema`, else the first violation found (object keys
/// are visited in sorted order, so the answer does not depend on the map's order).
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    validate_within(schema, schema, value)
}

/// As [`validate`], for a part `schema` of the document `root` (whose `$ref`s it
/// follows).
pub fn validate_within(root: &Value, schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    Checker { root }.check(schema, value, "$", 0)
}

fn fail(path: &str, reason: impl Into<String>) -> Result<(), SchemaViolation> {
    Err(SchemaViolation {
        path: path.to_owned(),
        reason: reason.into(),
    })
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(kind: &str, value: &Value) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_i64().is_some() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

struct Checker<'a> {
    root: &'a Value,
}

impl Checker<'_> {
    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if depth > SCHEMA_DEPTH_MAX {
            return fail(path, format!("nested deeper than {SCHEMA_DEPTH_MAX}"));
        }
        let schema = resolve(self.root, schema).map_err(|reason| SchemaViolation {
            path: path.to_owned(),
            reason,
        })?;
        let schema = merged(self.root, schema).map_err(|reason| SchemaViolation {
            path: path.to_owned(),
            reason,
        })?;
        if let Some(constant) = schema.get("const")
            && constant != value
        {
            return fail(path, format!("is {value}, not the constant {constant}"));
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            return fail(
                path,
                format!("{value} is not one of {}", Value::from(options.clone())),
            );
        }
        self.branches(&schema, value, path, depth)?;
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        if schema.get("type").is_some() {
            let types = types_of(&schema);
            if !types.iter().any(|t| fits(t, value)) {
                return fail(
                    path,
                    format!("is {}, not {}", type_name(value), types.join(" or ")),
                );
            }
        }
        self.scalar(&schema, value, path)?;
        if let Some(items) = value.as_array() {
            self.array(&schema, items, path, depth)?;
        }
        if let Some(object) = value.as_object() {
            self.object(&schema, object, path, depth)?;
        }
        Ok(())
    }

    fn branches(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            let matching = branches
                .iter()
                .filter(|b| self.check(b, value, path, depth + 1).is_ok())
                .count();
            if matching != 1 {
                return fail(
                    path,
                    format!(
                        "matches {matching} of the {} oneOf branches, not exactly one",
                        branches.len()
                    ),
                );
            }
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array)
            && !branches
                .iter()
                .any(|b| self.check(b, value, path, depth + 1).is_ok())
        {
            return fail(
                path,
                format!("matches none of the {} anyOf branches", branches.len()),
            );
        }
        Ok(())
    }

    fn scalar(&self, schema: &Value, value: &Value, path: &str) -> Result<(), SchemaViolation> {
        if let Some(number) = value.as_f64() {
            let (min, min_exclusive) = number_bound(schema, "minimum", "exclusiveMinimum");
            let (max, max_exclusive) = number_bound(schema, "maximum", "exclusiveMaximum");
            if let Some(min) = min
                && (number < min || (min_exclusive && number <= min))
            {
                return fail(path, format!("{value} is below the minimum {min}"));
            }
            if let Some(max) = max
                && (number > max || (max_exclusive && number >= max))
            {
                return fail(path, format!("{value} is above the maximum {max}"));
            }
            if let Some(step) = schema.get("multipleOf").and_then(Value::as_f64) {
                let ratio = number / step;
                if (ratio - ratio.round()).abs() > 1e-9 {
                    return fail(path, format!("{value} is not a multiple of {step}"));
                }
            }
        }
        if let Some(text) = value.as_str() {
            let chars = text.chars().count() as u64;
            if !within(schema, "minLength", "maxLength", chars) {
                return fail(
                    path,
                    format!("has {chars} characters, outside its length bounds"),
                );
            }
        }
        Ok(())
    }

    fn array(
        &self,
        schema: &Value,
        items: &[Value],
        path: &str,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        let len = items.len() as u64;
        if !within(schema, "minItems", "maxItems", len) {
            return fail(path, format!("has {len} items, outside its bounds"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (index, item) in items.iter().enumerate() {
                self.check(item_schema, item, &format!("{path}[{index}]"), depth + 1)?;
            }
        }
        if schema.get("uniqueItems") == Some(&Value::Bool(true))
            && let Some(index) = (0..items.len()).find(|&i| items[..i].contains(&items[i]))
        {
            return fail(&format!("{path}[{index}]"), "repeats an earlier item");
        }
        Ok(())
    }

    fn object(
        &self,
        schema: &Value,
        object: &serde_json::Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        let required = schema.get("required").and_then(Value::as_array);
        let mut missing: Vec<&str> = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|name| !object.contains_key(*name))
            .collect();
        missing.sort_unstable();
        if let Some(name) = missing.first() {
            return fail(&format!("{path}.{name}"), "is required but missing");
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in crate::canonical_json::sorted_keys(object) {
            let at = format!("{path}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.check(property, &object[name], &at, depth + 1)?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return fail(&at, "is not allowed (additionalProperties is false)");
                }
                None => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn violations_name_their_path() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true},
                "place": {"$ref": "#/$defs/place"}
            },
            "required": ["city", "days"],
            "additionalProperties": false,
            "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}
        });
        let ok = json!({"city": "Oslo", "days": 2, "tags": ["a"], "place": {"lat": 59.9}});
        assert_eq!(validate(&schema, &ok), Ok(()));
        let cases = [
            (json!({"days": 2}), "$.city", "missing"),
            (
                json!({"city": "Oslo", "days": 9}),
                "$.days",
                "above the maximum",
            ),
            (
                json!({"city": "Oslo", "days": "2"}),
                "$.days",
                "not integer",
            ),
            (
                json!({"city": "Oslo", "days": 2, "mood": 1}),
                "$.mood",
                "additionalProperties",
            ),
            (
                json!({"city": "Oslo", "days": 2, "tags": ["a", "c"]}),
                "$.tags[1]",
                "not one of",
            ),
            (
                json!({"city": "Oslo", "days": 2, "tags": ["a", "a"]}),
                "$.tags[1]",
                "repeats",
            ),
            (
                json!({"city": "Oslo", "days": 2, "place": {}}),
                "$.place.lat",
                "missing",
            ),
        ];
        for (value, path, reason) in cases {
            let violation = validate(&schema, &value).unwrap_err();
            assert_eq!(violation.path, path, "{value}");
            assert!(violation.reason.contains(reason), "{violation}");
        }
    }
}
