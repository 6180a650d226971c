//! Structured outputs: SimLLM answers a request that carries an output schema with JSON
//! valid under it (checked with the `jsonschema` crate over 1,000 seeds per schema), and
//! under an `llm.invalid_response` fault with a seeded near miss named in the trace,
//! which umi-core's `structured::parse` reports at the same JSON path.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use umi_core::llm::structured::{StructuredError, parse};
use umi_core::llm::{CompletionRequest, LanguageModel, Message};
use umi_dst::{FaultConfig, FaultKind, SimConfig, SimLlm, SimLlmConfig, Simulation};

/// Schemas with nested objects, arrays, enums, `anyOf`, formats and bounds.
fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "plan",
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 60},
                    "steps": {"type": "array", "minItems": 1, "maxItems": 5, "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "minutes": {"type": "integer", "minimum": 1, "maximum": 240},
                            "owner": {"enum": ["me", "team", "vendor"]}
                        },
                        "required": ["name", "minutes"],
                        "additionalProperties": false
                    }}
                },
                "required": ["title", "steps"],
                "additionalProperties": false
            }),
        ),
        (
            "event",
            json!({
                "type": "object",
                "properties": {
                    "when": {"type": "string", "format": "date-time"},
                    "contact": {"type": "string", "format": "email"},
                    "site": {"type": "string", "format": "uri"},
                    "id": {"type": "string", "format": "uuid"},
                    "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 1}
                },
                "required": ["when", "contact", "id", "score"]
            }),
        ),
        (
            "answer",
            json!({
                "type": "object",
                "properties": {
                    "result": {"anyOf": [
                        {"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]},
                        {"type": "string", "maxLength": 20}
                    ]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "sources": {"type": "array", "items": {"$ref": "#/$defs/source"}, "uniqueItems": true}
                },
                "required": ["result", "confidence"],
                "$defs": {"source": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}
            }),
        ),
        (
            "labels",
            json!({"type": "array", "items": {"enum": ["bug", "feature", "question"]}, "minItems": 1, "maxItems": 3}),
        ),
    ]
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap()
}

fn request(name: &str, schema: &Value, seed: u64) -> CompletionRequest {
    CompletionRequest::new(vec![Message::user(format!(
        "seed {seed}: fill in the {name}"
    ))])
    .with_output_schema(name, schema.clone())
}

/// The answer's text and the trace's `llm.near_miss` detail, for one seed.
fn answer(seed: u64, name: &str, schema: &Value, faulted: bool) -> (String, Option<String>) {
    let mut config = SimConfig::new(seed);
    if faulted {
        config = config.with_fault(FaultConfig::always(FaultKind::LlmInvalidResponse));
    }
    let out = Mutex::new(None);
    Simulation::new(config)
        .try_run(|sim| {
            let out = &out;
            async move {
                let llm =
                    SimLlm::with_config(&sim, SimLlmConfig::default().without_latency()).unwrap();
                let response = llm.complete(&request(name, schema, seed)).await?;
                let miss = sim
                    .trace()
                    .tail()
                    .iter()
                    .find(|e| e.kind == "llm.near_miss")
                    .map(|e| e.detail.clone());
                *out.lock().unwrap() = Some((response.text, miss));
                Ok(())
            }
        })
        .unwrap();
    out.into_inner().unwrap().unwrap()
}

#[test]
fn structured_answers_validate_for_1000_seeds_per_schema() {
    for (name, schema) in schemas() {
        let check = validator(&schema);
        for seed in 0..1_000 {
            let (text, _) = answer(seed, name, &schema, false);
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: not JSON ({e}): {text}"));
            assert!(check.is_valid(&value), "{name} seed {seed}: {text}");
            parse::<Value>(&text, &schema)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: umi-core disagrees: {e}"));
        }
    }
}

#[test]
fn near_misses_fail_where_the_trace_says() {
    let kinds = Arc::new(Mutex::new(BTreeSet::new()));
    for (name, schema) in schemas() {
        let check = validator(&schema);
        for seed in 0..300 {
            let (text, miss) = answer(seed, name, &schema, true);
            let miss = miss.unwrap_or_else(|| panic!("{name} seed {seed}: no near miss traced"));
            let (kind, path) = miss.split_once(" at ").expect("kind at path");
            kinds.lock().unwrap().insert(kind.to_owned());
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                assert!(
                    !check.is_valid(&value),
                    "{name} seed {seed} ({miss}): still valid: {text}"
                );
            }
            match parse::<Value>(&text, &schema) {
                Err(StructuredError::NotJson { .. }) => assert_eq!(kind, "truncated", "{miss}"),
                Err(StructuredError::Schema { path: found, .. }) => {
                    assert_eq!(found, path, "{name} seed {seed}: {miss}: {text}");
                }
                other => panic!("{name} seed {seed} ({miss}): {other:?}"),
            }
        }
    }
    let kinds = kinds.lock().unwrap().clone();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "extra_property",
            "missing_required",
            "out_of_range",
            "truncated",
            "wrong_type"
        ],
        "every kind of miss occurs"
    );
}
