//! What a simulated MCP server does with one request in a session: `ping`,
//! `tools/list` (paginated) and `tools/call` (through the simulated tools, with their
//! faults and effects); every other method is not found, as for a server that declares
//! only the `tools` capability.
//!
//! Shapes are MCP 2025-11-25's (`docs/specification/2025-11-25/server/tools.mdx` and
//! `server/utilities/pagination.mdx` in modelcontextprotocol/modelcontextprotocol):
//! a tool is listed as `{name, description, inputSchema, outputSchema?, annotations?}`;
//! a call's result is `{content: [{type: "text", text}], structuredContent?, isError}`;
//! an unknown tool is the protocol error -32602 `Unknown tool: <name>` (the spec's own
//! example); arguments its input schema refuses are a tool execution error
//! (`isError: true`), as the spec files "input validation errors" and as both official
//! SDKs answer them (the TypeScript SDK's `McpServer` says `Input validation error:
//! Invalid arguments for tool <name>: ...`, in `packages/server/src/server/mcp.ts`).

use serde_json::{Map, Value, json};
use umi_core::agent::ToolInvocation;

use super::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
use super::session::McpSession;
use super::{CALL_ID_META_KEY, SimMcpServer};
use crate::rng::DeterministicRng;
use crate::tools::Called;

/// How a request's answer leaves the server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// The JSON-RPC response.
    Message(Value),
    /// The connection breaks before the response (the request may have run): the
    /// response that was lost.
    Cut(Value),
    /// No response ever comes.
    Silence,
    /// The connection is reset before any response headers.
    Reset,
}

impl Reply {
    /// A name for the trace.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Message(message) if message.get("error").is_some() => "error",
            Self::Message(message) if message["result"]["isError"] == json!(true) => "is_error",
            Self::Message(_) => "result",
            Self::Cut(_) => "cut",
            Self::Silence => "silence",
            Self::Reset => "reset",
        }
    }
}

/// A request's answer: notifications sent ahead of it (on an SSE stream), then the reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answered {
    pub(crate) before: Vec<Value>,
    pub(crate) reply: Reply,
}

impl Answered {
    fn message(message: Value) -> Self {
        Self {
            before: Vec::new(),
            reply: Reply::Message(message),
        }
    }
}

/// What the faults decided for this request, before it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RequestFaults {
    pub(crate) internal_error: bool,
    pub(crate) tools_changed: bool,
    pub(crate) cut: bool,
    pub(crate) silence: bool,
}

/// Answers request `id` (`method`, `params`) in the session `session_id`.
pub(crate) async fn request(
    server: &SimMcpServer,
    (session_id, session): (&str, &mut McpSession),
    (id, method, params): (&Value, &str, &Map<String, Value>),
    faults: RequestFaults,
    rng: &mut DeterministicRng,
) -> Answered {
    if faults.silence {
        return Answered {
            before: Vec::new(),
            reply: Reply::Silence,
        };
    }
    if faults.internal_error {
        return Answered::message(jsonrpc::error(Some(id), INTERNAL_ERROR, "Internal error"));
    }
    let mut before = Vec::new();
    if faults.tools_changed {
        change_tools(server, session, rng);
        before.push(jsonrpc::notification("notifications/tools/list_changed"));
    }
    let mut answered = match method {
        "ping" => Answered::message(jsonrpc::result(id, json!({}))),
        "tools/list" => Answered::message(list(server, session, id, params)),
        "tools/call" => call(server, (session_id, session), id, params).await,
        other => Answered::message(jsonrpc::error(
            Some(id),
            METHOD_NOT_FOUND,
            &format!("Method not found: {other}"),
        )),
    };
    before.append(&mut answered.before);
    answered.before = before;
    if let (true, Reply::Message(message)) = (faults.cut, &answered.reply) {
        answered.reply = Reply::Cut(message.clone());
    }
    answered
}

/// Hides a tool drawn under the seed, or shows the hidden one again.
fn change_tools(server: &SimMcpServer, session: &mut McpSession, rng: &mut DeterministicRng) {
    let names: Vec<&str> = server
        .tools
        .tools()
        .map(|t| t.definition().name.as_str())
        .collect();
    session.hidden_tool = match session.hidden_tool.take() {
        Some(_) => None,
        None if names.is_empty() => None,
        None => Some(names[rng.index(names.len())].to_owned()),
    };
}

/// One page of the tools the session sees, and the cursor of the next.
fn list(
    server: &SimMcpServer,
    session: &McpSession,
    id: &Value,
    params: &Map<String, Value>,
) -> Value {
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => match parse_cursor(cursor) {
            Some(offset) => offset,
            None => return jsonrpc::error(Some(id), INVALID_PARAMS, "Invalid cursor"),
        },
        Some(_) => return jsonrpc::error(Some(id), INVALID_PARAMS, "Invalid cursor"),
    };
    let visible: Vec<Value> = server
        .tools
        .tools()
        .filter(|tool| session.hidden_tool.as_deref() != Some(tool.definition().name.as_str()))
        .map(listed)
        .collect();
    if offset > visible.len() {
        return jsonrpc::error(Some(id), INVALID_PARAMS, "Invalid cursor");
    }
    let page = server.page_size.unwrap_or(visible.len().max(1));
    let end = (offset + page).min(visible.len());
    let mut result = json!({"tools": visible[offset..end]});
    if end < visible.len() {
        result["nextCursor"] = Value::String(cursor_for(end));
    }
    jsonrpc::result(id, result)
}

/// An opaque cursor for the page starting at `offset`.
fn cursor_for(offset: usize) -> String {
    format!("umi-page-{offset}")
}

/// The offset a cursor of ours names.
fn parse_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("umi-page-")?.parse().ok()
}

/// A tool as `tools/list` shows it.
fn listed(tool: &crate::tools::SimTool) -> Value {
    let definition = tool.definition();
    let mut entry = json!({
        "name": definition.name,
        "description": definition.description,
        "inputSchema": definition.parameters,
    });
    if let Some(schema) = &tool.output_schema {
        entry["outputSchema"] = schema.clone();
    }
    if tool.side_effects {
        // Tool annotations (2025-03-26 on): hints a client may show, never trust.
        entry["annotations"] = json!({
            "readOnlyHint": false,
            "idempotentHint": tool.idempotency_field.is_some(),
        });
    }
    entry
}

/// Runs `tools/call`.
async fn call(
    server: &SimMcpServer,
    (session_id, session): (&str, &McpSession),
    id: &Value,
    params: &Map<String, Value>,
) -> Answered {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Answered::message(jsonrpc::error(
            Some(id),
            INVALID_PARAMS,
            "Invalid params: `name` must be a string",
        ));
    };
    let handler = server
        .tools
        .handler(name)
        .filter(|_| session.hidden_tool.as_deref() != Some(name));
    let Some(handler) = handler else {
        return Answered::message(jsonrpc::error(
            Some(id),
            INVALID_PARAMS,
            &format!("Unknown tool: {name}"),
        ));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => {
            return Answered::message(jsonrpc::error(
                Some(id),
                INVALID_PARAMS,
                "Invalid params: `arguments` must be an object",
            ));
        }
    };
    let call_id = params
        .get("_meta")
        .and_then(|meta| meta.get(CALL_ID_META_KEY))
        .and_then(Value::as_str)
        .map_or_else(|| fallback_call_id(session_id, id), str::to_owned);
    let invocation = ToolInvocation {
        call_id,
        name: name.to_owned(),
        arguments,
    };
    let called = handler.run(&invocation).await;
    let has_output_schema = handler.tool().output_schema.is_some();
    let reply = match called {
        Called::Answered { text, value } => Reply::Message(jsonrpc::result(
            id,
            answered(text, value, has_output_schema),
        )),
        Called::ErrorResult(text) => Reply::Message(jsonrpc::result(id, error_result(&text))),
        Called::InvalidParams { path, reason } => Reply::Message(jsonrpc::result(
            id,
            error_result(&format!(
                "Input validation error: Invalid arguments for tool {name}: {path}: {reason}"
            )),
        )),
        Called::TransportError(_) => Reply::Reset,
        Called::Stalled => Reply::Silence,
    };
    Answered {
        before: Vec::new(),
        reply,
    }
}

/// The logical call of a `tools/call` without the model's call id in `_meta`: its
/// JSON-RPC id within its session (clients number requests per session, so the id alone
/// would merge two sessions' calls).
fn fallback_call_id(session_id: &str, id: &Value) -> String {
    match id {
        Value::String(text) => format!("mcp:{session_id}:{text}"),
        other => format!("mcp:{session_id}:{other}"),
    }
}

/// A successful call's result: the text, and the structured value when the tool
/// declares an output schema (a malformed answer's parsed text, or none when it does
/// not parse: what a buggy server sends).
fn answered(text: String, value: Option<Value>, has_output_schema: bool) -> Value {
    let structured = match value {
        Some(value) => Some(value),
        None => serde_json::from_str::<Value>(&text).ok(),
    };
    let mut result = json!({"content": [{"type": "text"}], "isError": false});
    result["content"][0]["text"] = Value::String(text);
    // `structuredContent` is an object (2025-11-25 schema, `CallToolResult`): a
    // malformed answer of another type goes in the text alone.
    if let (true, Some(structured @ Value::Object(_))) = (has_output_schema, structured) {
        result["structuredContent"] = structured;
    }
    result
}

/// A tool execution error.
fn error_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        for offset in [0, 1, 49, 1_000] {
            assert_eq!(parse_cursor(&cursor_for(offset)), Some(offset));
        }
        for foreign in ["", "abc", "umi-page-", "umi-page--1", "umi-page-x"] {
            assert_eq!(parse_cursor(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn results_carry_structure_only_when_the_tool_declares_it() {
        let plain = answered("{\"c\":3}".into(), Some(json!({"c": 3})), false);
        assert!(plain.get("structuredContent").is_none());
        let typed = answered("{\"c\":3}".into(), Some(json!({"c": 3})), true);
        assert_eq!(typed["structuredContent"], json!({"c": 3}));
        assert_eq!(typed["isError"], json!(false));
        // A malformed answer: cut JSON has no structure, nor has a value of another type.
        assert!(
            answered("{\"c\":".into(), None, true)
                .get("structuredContent")
                .is_none()
        );
        assert!(
            answered("\"unexpected\"".into(), None, true)
                .get("structuredContent")
                .is_none()
        );
        assert_eq!(fallback_call_id("s1", &json!(7)), "mcp:s1:7");
        assert_eq!(fallback_call_id("s1", &json!("a")), "mcp:s1:a");
        assert_eq!(error_result("no")["isError"], json!(true));
    }
}
