//! JSON Schema keywords read the same way by the validator here and by umi-dst's
//! generator: local `$ref`s, `allOf` merged, numeric bounds in both drafts' forms, and
//! the types a schema allows.

use serde_json::Value;

/// The schema `schema` refers to with a local `$ref` (`#/$defs/x`), or itself; `Err` is
/// the reason a reference cannot be followed.
pub fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Result<&'a Value, String> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return Ok(schema);
    };
    let pointer = reference
        .strip_prefix('#')
        .ok_or_else(|| format!("only local $refs are supported, not {reference:?}"))?;
    root.pointer(pointer)
        .ok_or_else(|| format!("$ref {reference:?} points nowhere"))
}

/// `allOf` merged into one schema: properties, required, and the first of each other
/// keyword.
pub fn merged(root: &Value, schema: &Value) -> Result<Value, String> {
    let Some(parts) = schema.get("allOf").and_then(Value::as_array) else {
        return Ok(schema.clone());
    };
    let mut out = schema.as_object().cloned().unwrap_or_default();
    out.remove("allOf");
    for part in parts {
        let part = merged(root, resolve(root, part)?)?;
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

/// A numeric bound and whether it is exclusive: `minimum` with draft 4's boolean
/// `exclusiveMinimum`, or draft 6's numeric `exclusiveMinimum`.
pub fn number_bound(schema: &Value, inclusive: &str, exclusive: &str) -> (Option<f64>, bool) {
    let plain = schema.get(inclusive).and_then(Value::as_f64);
    match schema.get(exclusive) {
        Some(Value::Number(n)) => (n.as_f64(), true),
        Some(Value::Bool(true)) => (plain, true),
        _ => (plain, false),
    }
}

/// The types `schema` allows: its `type`, or what its keywords imply.
pub fn types_of(schema: &Value) -> Vec<&str> {
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

/// Whether `count` is within `min_key` and `max_key` of `schema` (each optional).
pub fn within(schema: &Value, min_key: &str, max_key: &str, count: u64) -> bool {
    let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
    bound(min_key).is_none_or(|min| count >= min) && bound(max_key).is_none_or(|max| count <= max)
}
