//! The MCP server `dst serve` offers at `/mcp`: which tools, declared in a JSON file
//! (`--mcp-tools FILE`), or a small built-in set.
//!
//! ```json
//! {
//!   "name": "billing",
//!   "page_size": 2,
//!   "tools": [
//!     {"name": "refund", "description": "refunds an order",
//!      "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
//!      "output_schema": {"type": "object", "properties": {"refund_id": {"type": "string"}}, "required": ["refund_id"]},
//!      "side_effects": true, "idempotency_key": "request_id", "latency_ms": [20, 400]}
//!   ]
//! }
//! ```
//!
//! Every field but `tools[].name`, `description` and `input_schema` may be left out;
//! an unknown field is refused, naming where it is (a misspelled `side_efects` would
//! otherwise silently make a paying tool harmless).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ServeError;
use crate::environment::SimEnvironment;
use crate::mcp::SimMcpServer;
use crate::tools::{SimTool, SimTools};

/// Tools a file may declare at most.
pub const MCP_TOOLS_MAX: usize = 1_000;

/// The largest tools file, in bytes.
pub const MCP_TOOLS_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// What `/mcp` serves.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolsSpec {
    /// The server's name (its `serverInfo.name`).
    #[serde(default = "default_name")]
    pub name: String,
    /// Tools per `tools/list` page (none: one page).
    #[serde(default)]
    pub page_size: Option<usize>,
    /// The `instructions` of its `initialize` result.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The tools.
    pub tools: Vec<McpToolSpec>,
}

/// One declared tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema.
    pub input_schema: Value,
    /// Its results' JSON Schema: results are generated from it under the seed.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// Whether each run of it is an effect (pays, sends, books).
    #[serde(default)]
    pub side_effects: bool,
    /// The argument carrying an idempotency key it honours.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Latency per call, lowest and highest, in simulated ms.
    #[serde(default)]
    pub latency_ms: Option<[u64; 2]>,
}

fn default_name() -> String {
    "umi-sim-tools".to_owned()
}

impl Default for McpToolsSpec {
    /// A weather lookup, a document search and a payment (with side effects, no
    /// idempotency key): enough to try an MCP client against, and to see an effect.
    fn default() -> Self {
        let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
        let tool = |name: &str, description: &str, input: Value| McpToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: input,
            output_schema: None,
            side_effects: false,
            idempotency_key: None,
            latency_ms: None,
        };
        let weather_out = object(
            json!({"celsius": {"type": "integer", "minimum": -40, "maximum": 45},
                   "sky": {"enum": ["clear", "cloudy", "rain", "snow"]}}),
            &["celsius", "sky"],
        );
        let search_out = object(
            json!({"hits": {"type": "array", "maxItems": 3, "items": {"type": "string"}}}),
            &["hits"],
        );
        Self {
            name: default_name(),
            page_size: None,
            instructions: None,
            tools: vec![
                McpToolSpec {
                    output_schema: Some(weather_out),
                    ..tool(
                        "get_weather",
                        "the weather in a city",
                        object(json!({"city": {"type": "string"}}), &["city"]),
                    )
                },
                McpToolSpec {
                    output_schema: Some(search_out),
                    ..tool(
                        "search_docs",
                        "search the documentation",
                        object(json!({"query": {"type": "string"}}), &["query"]),
                    )
                },
                McpToolSpec {
                    side_effects: true,
                    latency_ms: Some([50, 800]),
                    ..tool(
                        "send_payment",
                        "pay an invoice",
                        object(
                            json!({"invoice_id": {"type": "string"},
                                   "amount_cents": {"type": "integer", "minimum": 1, "maximum": 100000}}),
                            &["invoice_id", "amount_cents"],
                        ),
                    )
                },
            ],
        }
    }
}

impl McpToolsSpec {
    /// Reads and checks the file at `path`; errors name the file and what is wrong
    /// (serde's line and column, or the tool).
    pub fn load(path: &Path) -> Result<Self, ServeError> {
        let problem = |reason: String| ServeError::Flag {
            flag: "--mcp-tools",
            value: path.display().to_string(),
            reason,
        };
        let size = std::fs::metadata(path)
            .map_err(|error| problem(format!("cannot read it: {error}")))?
            .len();
        if size > MCP_TOOLS_FILE_BYTES_MAX {
            return Err(problem(format!(
                "it is {size} bytes, over the limit of {MCP_TOOLS_FILE_BYTES_MAX}"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|error| problem(format!("cannot read it: {error}")))?;
        let spec: Self = serde_json::from_str(&text).map_err(|error| problem(error.to_string()))?;
        spec.check().map_err(problem)?;
        Ok(spec)
    }

    /// What is wrong with the declarations, if anything.
    pub fn check(&self) -> Result<(), String> {
        if self.tools.len() > MCP_TOOLS_MAX {
            return Err(format!(
                "{} tools, over the limit of {MCP_TOOLS_MAX}",
                self.tools.len()
            ));
        }
        if self.page_size == Some(0) {
            return Err("page_size: a page holds at least one tool".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for (index, tool) in self.tools.iter().enumerate() {
            let at = format!("tools[{index}] ({:?})", tool.name);
            if tool.name.is_empty() || !names.insert(tool.name.as_str()) {
                return Err(format!("{at}: a tool needs a name no other tool has"));
            }
            if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err(format!(
                    "{at}: input_schema: MCP tools take an object (\"type\": \"object\")"
                ));
            }
            if tool
                .output_schema
                .as_ref()
                .is_some_and(|schema| schema.get("type").and_then(Value::as_str) != Some("object"))
            {
                return Err(format!(
                    "{at}: output_schema: MCP structured results are objects (\"type\": \"object\")"
                ));
            }
            if let Some([low, high]) = tool.latency_ms
                && low > high
            {
                return Err(format!(
                    "{at}: latency_ms: [{low}, {high}] runs from low to high"
                ));
            }
            if tool.idempotency_key.is_some() && !tool.side_effects {
                return Err(format!(
                    "{at}: idempotency_key is for a tool with side_effects"
                ));
            }
        }
        Ok(())
    }

    /// The simulated tools, in the run `sim`.
    pub(crate) fn sim_tools(&self, sim: &SimEnvironment) -> SimTools {
        self.tools.iter().fold(SimTools::new(sim), |tools, spec| {
            let mut tool = SimTool::new(&spec.name, &spec.description, spec.input_schema.clone());
            if let Some(schema) = &spec.output_schema {
                tool = tool.with_output_schema(schema.clone());
            }
            if spec.side_effects {
                tool = tool.with_side_effects();
            }
            if let Some(field) = &spec.idempotency_key {
                tool = tool.with_idempotency_key(field);
            }
            if let Some([low, high]) = spec.latency_ms {
                tool = tool.with_latency_ms(low, high);
            }
            tools.with(tool)
        })
    }

    /// The server, in the run `sim`.
    pub(crate) fn server(&self, sim: &SimEnvironment) -> SimMcpServer {
        let mut server = SimMcpServer::new(&self.name, self.sim_tools(sim));
        if let Some(size) = self.page_size {
            server = server.with_page_size(size);
        }
        if let Some(text) = &self.instructions {
            server = server.with_instructions(text);
        }
        server
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_set_is_valid_and_bad_declarations_are_named() {
        McpToolsSpec::default().check().unwrap();
        let parse = |text: &str| serde_json::from_str::<McpToolsSpec>(text);
        let error = parse(r#"{"tools": [{"name": "a", "description": "", "input_schema": {}, "side_efects": true}]}"#)
            .unwrap_err();
        assert!(error.to_string().contains("side_efects"), "{error}");
        let table = [
            (
                r#"{"tools": [{"name": "a", "description": "", "input_schema": {"type": "string"}}]}"#,
                "tools[0]",
            ),
            (
                r#"{"tools": [{"name": "a", "description": "", "input_schema": {"type": "object"}}, {"name": "a", "description": "", "input_schema": {"type": "object"}}]}"#,
                "tools[1]",
            ),
            (r#"{"page_size": 0, "tools": []}"#, "page_size"),
            (
                r#"{"tools": [{"name": "a", "description": "", "input_schema": {"type": "object"}, "latency_ms": [9, 1]}]}"#,
                "latency_ms",
            ),
            (
                r#"{"tools": [{"name": "a", "description": "", "input_schema": {"type": "object"}, "idempotency_key": "k"}]}"#,
                "side_effects",
            ),
        ];
        for (text, named) in table {
            let error = parse(text).unwrap().check().unwrap_err();
            assert!(error.contains(named), "{text}: {error}");
        }
    }
}
