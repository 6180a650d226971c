//! The tool fields of a request body in OpenAI's two formats (chat completions and the
//! Responses API): `tools`, then `tool_choice` and `parallel_tool_calls` when the
//! request sets them. The formats differ only in how one tool and a named choice are
//! written, which the caller gives.

use serde_json::{Map, Value, json};

use crate::llm::message::ToolDefinition;
use crate::llm::request::{CompletionRequest, ToolChoice};

/// Inserts `request`'s tool fields into `body` (nothing when it offers no tools):
/// each tool as `tool` writes it, a choice of one tool as `named` writes it.
pub fn insert_tools(
    body: &mut Map<String, Value>,
    request: &CompletionRequest,
    tool: fn(&ToolDefinition) -> Value,
    named: fn(&str) -> Value,
) {
    if request.tools.is_empty() {
        return;
    }
    let tools: Vec<Value> = request.tools.iter().map(tool).collect();
    body.insert("tools".into(), Value::Array(tools));
    if let Some(choice) = &request.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => named(name),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(parallel) = request.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
}
