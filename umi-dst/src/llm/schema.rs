//! Tool arguments from a tool's JSON Schema, with seeded variation.
//!
//! [`generate`] produces a value valid under the schema for the subset tool schemas use:
//! `type` (one or a list), `enum`, `const`, `minimum`/`maximum` and their exclusive forms
//! (draft 4 booleans and draft 6+ numbers), `multipleOf`, `minLength`/`maxLength` (in
//! characters), common `format`s (date-time, date, time, email, uri, uuid, ipv4, ipv6,
//! hostname), arrays with `items`, `minItems`/`maxItems` and `uniqueItems`, objects with
//! `properties`, `required` (optional properties appear half the time) and
//! `additionalProperties`, `anyOf`, `oneOf` (a value matching exactly one branch),
//! `allOf` (merged), local `$ref`s (`#/$defs/..`, `#/definitions/..`) and OpenAPI's
//! `nullable`. `pattern` is not supported: a schema with one is refused, so the caller
//! never sends arguments it cannot vouch for.
//!
//! Strings sometimes contain quotes, backslashes, newlines, accents, CJK and emoji, so
//! the arguments exercise JSON escaping when they are streamed in fragments.
//!
//! Object keys are visited in sorted order, so the output does not depend on serde_json's
//! map type. [`conforms`] checks a value against the same subset (used for `oneOf`, and by
//! SimLLM's debug assertions); the tests check every output with the `jsonschema` crate.

use serde_json::{Map, Number, Value, json};

use crate::rng::DeterministicRng;

/// Nesting depth the generator follows (`$ref` cycles end here).
pub const SCHEMA_DEPTH_MAX: usize = 8;

/// Items an array gets at most, whatever `maxItems` says.
pub const SCHEMA_ARRAY_ITEMS_MAX: u64 = 6;

/// Characters a string gets at most, whatever `maxLength` says.
pub const SCHEMA_STRING_CHARS_MAX: u64 = 40;

/// Attempts at a `oneOf` or `uniqueItems` value before giving up.
const ATTEMPTS_MAX: usize = 16;

/// A schema the generator cannot satisfy or does not support.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schema at {path}: {reason}")]
pub struct SchemaError {
    /// JSON-pointer-like path to the offending part.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// A value valid under `schema`.
pub fn generate(schema: &Value, rng: &mut DeterministicRng) -> Result<Value, SchemaError> {
    Generator { root: schema }.value(schema, rng, "#", 0)
}

/// Whether `value` is valid under `schema` (the supported subset).
pub fn conforms(schema: &Value, value: &Value) -> bool {
    Validator { root: schema }.check(schema, value, 0)
}

const WORDS: &[&str] = &[
    "alpha", "notes", "Oslo", "meeting", "report", "query", "Acme", "garden", "delta", "budget",
    "river", "Alice", "plan", "summary", "weather", "index", "North", "draft", "review", "item",
];
const AWKWARD: &[&str] = &[
    "say \"hi\"",
    "C:\\path",
    "line\nbreak",
    "tab\there",
    "café",
    "東京",
    "😀 ok",
    "a/b",
];

fn error(path: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn resolve<'a>(root: &'a Value, schema: &'a Value, path: &str) -> Result<&'a Value, SchemaError> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return Ok(schema);
    };
    let pointer = reference.strip_prefix('#').ok_or_else(|| {
        error(
            path,
            format!("only local $refs are supported, not {reference:?}"),
        )
    })?;
    root.pointer(pointer)
        .ok_or_else(|| error(path, format!("$ref {reference:?} points nowhere")))
}

/// `allOf` merged into one schema: properties, required and the first of each keyword.
fn merged(root: &Value, schema: &Value, path: &str) -> Result<Value, SchemaError> {
    let Some(parts) = schema.get("allOf").and_then(Value::as_array) else {
        return Ok(schema.clone());
    };
    let mut out = schema.as_object().cloned().unwrap_or_default();
    out.remove("allOf");
    for part in parts {
        let part = merged(root, resolve(root, part, path)?, path)?;
        let Some(part) = part.as_object() else {
            continue;
        };
        for (key, value) in part {
            match (key.as_str(), out.get_mut(key)) {
                ("properties", Some(Value::Object(existing))) => {
                    if let Some(more) = value.as_object() {
                        for (name, property) in more {
                            existing.insert(name.clone(), property.clone());
                        }
                    }
                }
                ("required", Some(Value::Array(existing))) => {
                    for name in value.as_array().into_iter().flatten() {
                        if !existing.contains(name) {
                            existing.push(name.clone());
                        }
                    }
                }
                (_, None) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
    }
    Ok(Value::Object(out))
}

fn number_bound(schema: &Value, inclusive: &str, exclusive: &str) -> (Option<f64>, bool) {
    let plain = schema.get(inclusive).and_then(Value::as_f64);
    match schema.get(exclusive) {
        Some(Value::Number(n)) => (n.as_f64(), true),
        Some(Value::Bool(true)) => (plain, true),
        _ => (plain, false),
    }
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => {
            if schema.get("properties").is_some() || schema.get("required").is_some() {
                vec!["object"]
            } else if schema.get("items").is_some() {
                vec!["array"]
            } else {
                vec!["string", "integer", "boolean"]
            }
        }
    }
}

struct Generator<'a> {
    root: &'a Value,
}

impl Generator<'_> {
    fn value(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        if depth > SCHEMA_DEPTH_MAX {
            return Err(error(
                path,
                format!("nested deeper than {SCHEMA_DEPTH_MAX}"),
            ));
        }
        let schema = resolve(self.root, schema, path)?;
        let schema = &merged(self.root, schema, path)?;
        if let Some(constant) = schema.get("const") {
            return Ok(constant.clone());
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            return rng
                .choose(options)
                .cloned()
                .ok_or_else(|| error(path, "empty enum"));
        }
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            return self.one_of(branches, rng, path, depth);
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let branch = rng
                .choose(branches)
                .ok_or_else(|| error(path, "empty anyOf"))?;
            return self.value(branch, rng, &format!("{path}/anyOf"), depth + 1);
        }
        if schema.get("pattern").is_some() {
            return Err(error(path, "pattern is not supported"));
        }
        if schema.get("nullable") == Some(&Value::Bool(true)) && rng.bool_with(0.2) {
            return Ok(Value::Null);
        }
        let types = types_of(schema);
        let chosen = *rng
            .choose(&types)
            .ok_or_else(|| error(path, "empty type list"))?;
        match chosen {
            "null" => Ok(Value::Null),
            "boolean" => Ok(Value::Bool(rng.bool_with(0.5))),
            "integer" => self.integer(schema, rng, path),
            "number" => self.number(schema, rng, path),
            "string" => self.string(schema, rng, path),
            "array" => self.array(schema, rng, path, depth),
            "object" => self.object(schema, rng, path, depth),
            other => Err(error(path, format!("unknown type {other:?}"))),
        }
    }

    fn one_of(
        &self,
        branches: &[Value],
        rng: &mut DeterministicRng,
        path: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        let validator = Validator { root: self.root };
        for _ in 0..ATTEMPTS_MAX {
            let index = rng.index(branches.len().max(1));
            let branch = branches
                .get(index)
                .ok_or_else(|| error(path, "empty oneOf"))?;
            let candidate = self.value(branch, rng, &format!("{path}/oneOf/{index}"), depth + 1)?;
            let matching = branches
                .iter()
                .filter(|b| validator.check(b, &candidate, depth + 1))
                .count();
            if matching == 1 {
                return Ok(candidate);
            }
        }
        Err(error(
            path,
            "no value matching exactly one oneOf branch was found",
        ))
    }

    fn integer(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
    ) -> Result<Value, SchemaError> {
        let (min, min_exclusive) = number_bound(schema, "minimum", "exclusiveMinimum");
        let (max, max_exclusive) = number_bound(schema, "maximum", "exclusiveMaximum");
        let mut low = min.map_or(i64::MIN, |m| {
            if min_exclusive {
                m.floor() as i64 + 1
            } else {
                m.ceil() as i64
            }
        });
        let mut high = max.map_or(i64::MAX, |m| {
            if max_exclusive {
                m.ceil() as i64 - 1
            } else {
                m.floor() as i64
            }
        });
        match (min.is_some(), max.is_some()) {
            (false, false) => (low, high) = (-1_000, 1_000),
            (true, false) => high = low.saturating_add(1_000),
            (false, true) => low = high.saturating_sub(1_000),
            (true, true) => {}
        }
        let step = schema
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m >= 1.0 && m.fract() == 0.0)
            .map_or(1, |m| m as i64);
        let first = low.div_euclid(step) + i64::from(low.rem_euclid(step) != 0);
        let last = high.div_euclid(step);
        if first > last {
            return Err(error(
                path,
                format!("no integer in [{low}, {high}] is a multiple of {step}"),
            ));
        }
        let span = (last - first) as u64;
        let k = first + rng.range_inclusive(0, span) as i64;
        Ok(Value::Number(Number::from(k * step)))
    }

    fn number(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
    ) -> Result<Value, SchemaError> {
        if let Some(step) = schema
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m > 0.0)
        {
            // Multiples of a fractional step: pick k with k·step inside the bounds.
            let (min, min_x) = number_bound(schema, "minimum", "exclusiveMinimum");
            let (max, max_x) = number_bound(schema, "maximum", "exclusiveMaximum");
            let low = min.map_or(-1_000.0, |m| m);
            let high = max.map_or(low + 1_000.0, |m| m);
            let mut first = (low / step).ceil() as i64;
            let mut last = (high / step).floor() as i64;
            if min_x && first as f64 * step <= low {
                first += 1;
            }
            if max_x && last as f64 * step >= high {
                last -= 1;
            }
            if first > last {
                return Err(error(path, format!("no multiple of {step} in the bounds")));
            }
            let k = first + rng.range_inclusive(0, (last - first) as u64) as i64;
            let value = (k as f64 * step * 1e9).round() / 1e9;
            return Number::from_f64(value)
                .map(Value::Number)
                .ok_or_else(|| error(path, "not a finite number"));
        }
        let (min, min_exclusive) = number_bound(schema, "minimum", "exclusiveMinimum");
        let (max, max_exclusive) = number_bound(schema, "maximum", "exclusiveMaximum");
        let low = min.unwrap_or_else(|| max.map_or(-1_000.0, |m| m - 1_000.0));
        let high = max.unwrap_or(low + 1_000.0);
        if low > high || (low == high && (min_exclusive || max_exclusive)) {
            return Err(error(path, format!("empty number range [{low}, {high}]")));
        }
        // Two decimals keep numbers readable; stay strictly inside exclusive bounds.
        for _ in 0..ATTEMPTS_MAX {
            let raw = rng.f64_in(low, high.max(low));
            let value = (raw * 100.0).round() / 100.0;
            let above = if min_exclusive {
                value > low
            } else {
                value >= low
            };
            let below = if max_exclusive {
                value < high
            } else {
                value <= high
            };
            if above && below {
                return Number::from_f64(value)
                    .map(Value::Number)
                    .ok_or_else(|| error(path, "not a finite number"));
            }
        }
        let mid = low + (high - low) / 2.0;
        Number::from_f64(mid)
            .map(Value::Number)
            .ok_or_else(|| error(path, "not a finite number"))
    }

    fn string(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
    ) -> Result<Value, SchemaError> {
        let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .unwrap_or(SCHEMA_STRING_CHARS_MAX.max(min));
        if min > max {
            return Err(error(path, format!("minLength {min} > maxLength {max}")));
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str)
            && let Some(text) = formatted(format, rng)
        {
            let chars = text.chars().count() as u64;
            if (min..=max).contains(&chars) {
                return Ok(Value::String(text));
            }
        }
        let target = rng.range_inclusive(min, max.min(min.max(SCHEMA_STRING_CHARS_MAX)));
        let mut text = String::new();
        while (text.chars().count() as u64) < target {
            if !text.is_empty() {
                text.push(' ');
            }
            let piece = if rng.bool_with(0.15) {
                rng.choose(AWKWARD)
            } else {
                rng.choose(WORDS)
            };
            text.push_str(piece.copied().unwrap_or("x"));
        }
        let cut: String = text.chars().take(target as usize).collect();
        Ok(Value::String(cut))
    }

    fn array(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or(3.max(min))
            .min(min.max(SCHEMA_ARRAY_ITEMS_MAX));
        if min > max {
            return Err(error(path, format!("minItems {min} > maxItems {max}")));
        }
        let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
        let item_schema = schema.get("items").cloned().unwrap_or_else(|| json!({}));
        let count = rng.range_inclusive(min, max);
        let mut items: Vec<Value> = Vec::new();
        let mut attempts = 0;
        while (items.len() as u64) < count && attempts < ATTEMPTS_MAX * count as usize {
            attempts += 1;
            let item = self.value(&item_schema, rng, &format!("{path}/items"), depth + 1)?;
            if unique && items.contains(&item) {
                continue;
            }
            items.push(item);
        }
        if (items.len() as u64) < min {
            return Err(error(path, format!("could not find {min} unique items")));
        }
        Ok(Value::Array(items))
    }

    fn object(
        &self,
        schema: &Value,
        rng: &mut DeterministicRng,
        path: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut names: Vec<&String> = properties.map(|p| p.keys().collect()).unwrap_or_default();
        names.sort_unstable();
        let mut out = Map::new();
        for name in names {
            let property = &properties.expect("names come from properties")[name.as_str()];
            let is_required = required.contains(&name.as_str());
            if is_required || rng.bool_with(0.5) {
                out.insert(
                    name.clone(),
                    self.value(
                        property,
                        rng,
                        &format!("{path}/properties/{name}"),
                        depth + 1,
                    )?,
                );
            }
        }
        for name in required {
            if !out.contains_key(name) {
                // Required but not described: any simple value will do.
                out.insert(
                    name.to_owned(),
                    Value::String(rng.choose(WORDS).copied().unwrap_or("x").to_owned()),
                );
            }
        }
        Ok(Value::Object(out))
    }
}

fn formatted(format: &str, rng: &mut DeterministicRng) -> Option<String> {
    let (year, month, day) = (2020 + rng.below(10), 1 + rng.below(12), 1 + rng.below(28));
    let (hour, minute, second) = (rng.below(24), rng.below(60), rng.below(60));
    Some(match format {
        "date-time" => format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z"),
        "date" => format!("{year:04}-{month:02}-{day:02}"),
        "time" => format!("{hour:02}:{minute:02}:{second:02}Z"),
        "email" => format!(
            "{}{}@example.com",
            rng.choose(WORDS)?.to_lowercase(),
            rng.below(100)
        ),
        "uri" | "url" => format!(
            "https://example.com/{}/{}",
            rng.choose(WORDS)?.to_lowercase(),
            rng.below(1000)
        ),
        "uuid" => {
            let b = rng.bytes(16);
            format!(
                "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                u16::from_be_bytes([b[4], b[5]]),
                u16::from_be_bytes([b[6], b[7]]) & 0x0fff,
                u16::from_be_bytes([b[8], b[9]]) & 0x0fff,
                u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]])
            )
        }
        "ipv4" => format!(
            "10.{}.{}.{}",
            rng.below(256),
            rng.below(256),
            1 + rng.below(254)
        ),
        "ipv6" => format!("2001:db8::{:x}", rng.below(0xffff)),
        "hostname" => format!("{}.example.com", rng.choose(WORDS)?.to_lowercase()),
        _ => return None,
    })
}

struct Validator<'a> {
    root: &'a Value,
}

impl Validator<'_> {
    fn check(&self, schema: &Value, value: &Value, depth: usize) -> bool {
        if depth > SCHEMA_DEPTH_MAX * 2 {
            return false;
        }
        let Ok(schema) = resolve(self.root, schema, "#") else {
            return false;
        };
        let Ok(schema) = merged(self.root, schema, "#") else {
            return false;
        };
        if let Some(constant) = schema.get("const")
            && constant != value
        {
            return false;
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            return false;
        }
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array)
            && branches
                .iter()
                .filter(|b| self.check(b, value, depth + 1))
                .count()
                != 1
        {
            return false;
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array)
            && !branches.iter().any(|b| self.check(b, value, depth + 1))
        {
            return false;
        }
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return true;
        }
        if schema.get("type").is_some() {
            let types = types_of(&schema);
            let fits = types.iter().any(|t| match *t {
                "null" => value.is_null(),
                "boolean" => value.is_boolean(),
                "integer" => {
                    value.as_i64().is_some() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
                }
                "number" => value.is_number(),
                "string" => value.is_string(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => false,
            });
            if !fits {
                return false;
            }
        }
        if let Some(number) = value.as_f64() {
            let (min, min_x) = number_bound(&schema, "minimum", "exclusiveMinimum");
            let (max, max_x) = number_bound(&schema, "maximum", "exclusiveMaximum");
            if min.is_some_and(|m| if min_x { number <= m } else { number < m })
                || max.is_some_and(|m| if max_x { number >= m } else { number > m })
            {
                return false;
            }
            if let Some(step) = schema.get("multipleOf").and_then(Value::as_f64) {
                let ratio = number / step;
                if (ratio - ratio.round()).abs() > 1e-9 {
                    return false;
                }
            }
        }
        if let Some(text) = value.as_str() {
            let chars = text.chars().count() as u64;
            if !within(&schema, "minLength", "maxLength", chars) {
                return false;
            }
        }
        if let Some(items) = value.as_array() {
            let len = items.len() as u64;
            if !within(&schema, "minItems", "maxItems", len) {
                return false;
            }
            if let Some(item_schema) = schema.get("items")
                && !items
                    .iter()
                    .all(|item| self.check(item_schema, item, depth + 1))
            {
                return false;
            }
            if schema.get("uniqueItems") == Some(&Value::Bool(true))
                && items
                    .iter()
                    .enumerate()
                    .any(|(i, a)| items[..i].contains(a))
            {
                return false;
            }
        }
        if let Some(object) = value.as_object() {
            let required = schema.get("required").and_then(Value::as_array);
            if required
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|name| !object.contains_key(name))
            {
                return false;
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, item) in object {
                match properties.and_then(|p| p.get(name)) {
                    Some(property) if !self.check(property, item, depth + 1) => return false,
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return false;
                    }
                    _ => {}
                }
            }
        }
        true
    }
}

/// Whether `count` is within the schema's `min_key` and `max_key` (each optional).
fn within(schema: &Value, min_key: &str, max_key: &str, count: u64) -> bool {
    let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
    bound(min_key).is_none_or(|min| count >= min) && bound(max_key).is_none_or(|max| count <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_bounds_and_enums_hold() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2, "maxLength": 10},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "units": {"enum": ["metric", "imperial"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3, "uniqueItems": true}
            },
            "required": ["city", "days"],
            "additionalProperties": false
        });
        for seed in 0..200 {
            let value = generate(&schema, &mut DeterministicRng::new(seed)).unwrap();
            assert!(conforms(&schema, &value), "{value}");
            assert!(value.get("city").is_some() && value.get("days").is_some());
        }
    }

    #[test]
    fn unsatisfiable_and_unsupported_schemas_are_refused() {
        let mut rng = DeterministicRng::new(1);
        assert!(
            generate(
                &json!({"type": "integer", "minimum": 5, "maximum": 4}),
                &mut rng
            )
            .is_err()
        );
        assert!(
            generate(&json!({"type": "string", "pattern": "^a+$"}), &mut rng)
                .unwrap_err()
                .reason
                .contains("pattern")
        );
        assert!(generate(&json!({"$ref": "#/$defs/missing"}), &mut rng).is_err());
        let cyclic = json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}, "required": ["next"]}}, "$ref": "#/$defs/node"});
        assert!(
            generate(&cyclic, &mut rng)
                .unwrap_err()
                .reason
                .contains("deeper")
        );
    }
}
