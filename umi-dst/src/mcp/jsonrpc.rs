//! JSON-RPC 2.0 as MCP uses it: what a message is, and the error objects a server
//! answers with.
//!
//! MCP messages are JSON-RPC 2.0 (<https://www.jsonrpc.org/specification>): a request
//! has a `method` and an `id`, a notification a `method` and no `id`, a response an `id`
//! and a `result` or an `error`. The codes are JSON-RPC's (-32700 parse error, -32600
//! invalid request, -32601 method not found, -32602 invalid params, -32603 internal
//! error), plus the server-error range the official TypeScript SDK's Streamable HTTP
//! transport uses for its HTTP-level refusals (-32000, and -32001 for an unknown session:
//! `packages/server/src/server/streamableHttp.ts`, `createJsonErrorResponse`).

use serde_json::{Map, Value, json};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32_700;
/// Not a valid JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32_600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32_601;
/// The params are wrong (an unknown tool, a malformed `tools/call`).
pub const INVALID_PARAMS: i64 = -32_602;
/// The server failed.
pub const INTERNAL_ERROR: i64 = -32_603;
/// The TypeScript SDK's code for its transport's own refusals (a missing session id, an
/// unsupported protocol version, a wrong Accept or Content-Type, a method not allowed).
pub const SERVER_ERROR: i64 = -32_000;
/// The TypeScript SDK's code for "Session not found", with HTTP 404.
pub const SESSION_NOT_FOUND: i64 = -32_001;

/// One message a client sent, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it gets a response.
    Request {
        /// Its id (a string or a number), echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// Its params (an empty object when it sent none).
        params: Map<String, Value>,
    },
    /// A notification: no response.
    Notification {
        /// The method.
        method: String,
    },
    /// A response to a request of the server's (this server sends none; accepted).
    Response,
}

/// Reads a parsed body as one JSON-RPC message; `Err` says what is wrong with it.
/// A batch (an array) is refused: MCP 2025-06-18 removed batching, and the
/// Streamable HTTP transport takes "a single JSON-RPC request, notification, or
/// response" per POST (2025-11-25, transports, sending messages, rule 3).
pub fn classify(value: &Value) -> Result<Incoming, String> {
    let Some(object) = value.as_object() else {
        return Err("a message is a JSON object (batches are not part of MCP)".into());
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("`jsonrpc` must be \"2.0\"".into());
    }
    // MCP forbids a null id (2025-11-25, basic: "the ID MUST NOT be null").
    let id = object.get("id");
    if id.is_some_and(|id| !id.is_string() && !id.is_i64() && !id.is_u64()) {
        return Err("`id` must be a string or an integer".into());
    }
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => {
            let params = match object.get("params") {
                None => Map::new(),
                Some(Value::Object(params)) => params.clone(),
                Some(_) => return Err("`params` must be an object".into()),
            };
            Ok(Incoming::Request {
                id: id.clone(),
                method: method.clone(),
                params,
            })
        }
        (Some(Value::String(method)), None) => Ok(Incoming::Notification {
            method: method.clone(),
        }),
        (Some(_), _) => Err("`method` must be a string".into()),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Ok(Incoming::Response)
        }
        (None, _) => Err("a message has a `method`, or an `id` with a `result` or `error`".into()),
    }
}

/// A response carrying `result`.
pub fn result(id: &Value, result: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id});
    message["result"] = result;
    message
}

/// A response carrying an error. `id` is `null` when the request's could not be read.
pub fn error(id: Option<&Value>, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

/// A notification from the server.
pub fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_and_bad_ones_named() {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        assert!(matches!(
            classify(&request),
            Ok(Incoming::Request { method, params, .. }) if method == "ping" && params.is_empty()
        ));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(classify(&note), Ok(Incoming::Notification { .. })));
        let answer = json!({"jsonrpc": "2.0", "id": "a", "result": {}});
        assert_eq!(classify(&answer), Ok(Incoming::Response));
        let table = [
            (json!([request]), "batches"),
            (json!({"id": 1, "method": "ping"}), "jsonrpc"),
            (
                json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
                "`id`",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}),
                "`params`",
            ),
            (json!({"jsonrpc": "2.0", "id": 1, "method": 7}), "`method`"),
            (json!({"jsonrpc": "2.0"}), "a message has"),
            (
                json!({"jsonrpc": "2.0", "id": null, "method": "tools/call"}),
                "`id`",
            ),
        ];
        for (message, named) in table {
            let error = classify(&message).unwrap_err();
            assert!(error.contains(named), "{message}: {error}");
        }
    }
}
