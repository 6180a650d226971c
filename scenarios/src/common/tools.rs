//! Tools for the agent scenarios: definitions with varied schemas, a registry whose
//! handlers check their arguments and sometimes fail or wait, and the checks of a
//! conversation's tool calls and results.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use umi_core::env::EnvironmentExt;
use umi_core::llm::{Message, ToolDefinition};
use umi_dst::SimEnvironment;

/// Tools with varied schemas for the agent scenarios.
pub fn tool_definitions() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "get_weather",
            "Weather for a city.",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 40}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                "required": ["city"], "additionalProperties": false
            }),
        ),
        ToolDefinition::new(
            "search_notes",
            "Search the notes.",
            json!({
                "type": "object",
                "properties": {"query": {"type": "string", "minLength": 2}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}, "tags": {"type": "array", "items": {"enum": ["work", "home", "travel"]}, "maxItems": 3, "uniqueItems": true}},
                "required": ["query"]
            }),
        ),
        ToolDefinition::new(
            "book",
            "Book a slot.",
            json!({
                "type": "object",
                "properties": {"start": {"type": "string", "format": "date-time"}, "minutes": {"type": "integer", "multipleOf": 15, "minimum": 15, "maximum": 240}, "room": {"type": ["string", "null"]}},
                "required": ["start", "minutes"]
            }),
        ),
    ]
}

/// One tool execution, as a scenario's handlers record it.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The tool.
    pub tool: String,
    /// The arguments it received.
    pub arguments: Value,
    /// Whether they were valid under the tool's schema.
    pub valid: bool,
}

/// A registry of [`tool_definitions`] whose handlers check their arguments against the
/// schema, log each execution, sometimes fail, and sometimes take a while (simulated).
pub fn tool_registry(
    sim: &SimEnvironment,
    log: &Arc<Mutex<Vec<Execution>>>,
    failure_rate: f64,
) -> umi_core::agent::ToolRegistry {
    let mut registry = umi_core::agent::ToolRegistry::new();
    for definition in tool_definitions() {
        let (env, log, schema, name) = (
            sim.env(),
            log.clone(),
            definition.parameters.clone(),
            definition.name.clone(),
        );
        let handler = move |arguments: Value| {
            let (env, log, schema, name) = (env.clone(), log.clone(), schema.clone(), name.clone());
            async move {
                let valid = umi_dst::llm::schema::conforms(&schema, &arguments);
                log.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Execution {
                        tool: name.clone(),
                        arguments: arguments.clone(),
                        valid,
                    });
                env.sleep(std::time::Duration::from_millis(env.random_in_range(
                    "tools.latency",
                    5,
                    3_000,
                )))
                .await;
                if env.random_chance("tools.failure", failure_rate) {
                    return Err(format!("{name} is unavailable"));
                }
                Ok(format!("{name} ok: {arguments}"))
            }
        };
        registry
            .register_fn(
                &definition.name,
                &definition.description,
                definition.parameters.clone(),
                handler,
            )
            .expect("distinct names");
    }
    registry
}

/// The first tool result whose call is not in an earlier assistant message, if any.
pub fn orphan_tool_result(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .enumerate()
        .find_map(|(index, message)| match message {
            Message::Tool { tool_call_id, .. } => {
                let called = messages[..index]
                    .iter()
                    .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id));
                (!called).then(|| tool_call_id.clone())
            }
            Message::System { .. } | Message::User { .. } | Message::Assistant { .. } => None,
        })
}

/// The first tool call in an assistant message with no result after it, if any.
pub fn unanswered_tool_call(messages: &[Message]) -> Option<String> {
    messages.iter().enumerate().find_map(|(index, message)| {
        message.tool_calls().iter().find_map(|call| {
            let answered = messages[index + 1..].iter().any(
                |m| matches!(m, Message::Tool { tool_call_id, .. } if *tool_call_id == call.id),
            );
            (!answered).then(|| call.id.clone())
        })
    })
}
