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
//!
//! JSON-RPC 2.0 §5.1 tells the two refusals of a body apart: -32700 "Invalid JSON was
//! received", -32600 "The JSON sent is not a valid Request object". So a body that is
//! JSON but no JSON-RPC message is -32600 (the TypeScript SDK answers both with -32700;
//! the specification wins).
//!
//! A body may also be a batch (JSON-RPC 2.0 §6: an array of messages), which MCP
//! 2025-03-26 alone has: "MCP implementations MAY support sending JSON-RPC batches, but
//! MUST support receiving JSON-RPC batches" (`docs/specification/2025-03-26/basic/
//! index.mdx`, Batching); 2025-06-18 removed them (its changelog: "Remove support for
//! JSON-RPC batching", PR #416), and 2025-11-25's transport takes "a single JSON-RPC
//! request, notification, or response" per POST. [`classify_body`] reads either;
//! whether a batch is accepted depends on the session's version
//! (`streamable.rs`).

use serde_json::{Map, Value, json};

/// Invalid JSON.
pub(super) const PARSE_ERROR: i64 = -32_700;
/// Not a valid JSON-RPC message.
pub(super) const INVALID_REQUEST: i64 = -32_600;
/// No such method.
pub(super) const METHOD_NOT_FOUND: i64 = -32_601;
/// The params are wrong (an unknown tool, a malformed `tools/call`).
pub(super) const INVALID_PARAMS: i64 = -32_602;
/// The server failed.
pub(super) const INTERNAL_ERROR: i64 = -32_603;
/// The TypeScript SDK's code for its transport's own refusals (a missing session id, an
/// unsupported protocol version, a wrong Accept or Content-Type, a method not allowed).
pub(super) const SERVER_ERROR: i64 = -32_000;
/// The TypeScript SDK's code for "Session not found", with HTTP 404.
pub(super) const SESSION_NOT_FOUND: i64 = -32_001;

/// One message a client sent, classified.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
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

/// Messages one batch may hold at most; a longer one is refused as a whole (JSON-RPC
/// sets no limit; a server must, or one POST runs without bound).
pub(super) const BATCH_MESSAGES_MAX: usize = 100;

/// A body: one message, or a batch of them.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Body {
    /// One message.
    Single(Incoming),
    /// A JSON-RPC batch (an array of one or more messages), in order.
    Batch(Vec<Incoming>),
}

/// Reads a parsed body as one JSON-RPC message or a batch of them; `Err` says what is
/// wrong (for a batch, which element). An empty array is not a batch (JSON-RPC 2.0 §6:
/// "an Array with at least one value").
pub(super) fn classify_body(value: &Value) -> Result<Body, String> {
    let Some(items) = value.as_array() else {
        return classify(value).map(Body::Single);
    };
    if items.is_empty() {
        return Err("an empty batch (a batch holds at least one message)".into());
    }
    if items.len() > BATCH_MESSAGES_MAX {
        return Err(format!(
            "a batch of {} messages (at most {BATCH_MESSAGES_MAX})",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            classify(item).map_err(|reason| format!("batch element {index}: {reason}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Body::Batch)
}

/// Reads a parsed value as one JSON-RPC message; `Err` says what is wrong with it.
pub(super) fn classify(value: &Value) -> Result<Incoming, String> {
    let Some(object) = value.as_object() else {
        return Err("a message is a JSON object".into());
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
pub(super) fn result(id: &Value, result: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id});
    message["result"] = result;
    message
}

/// A response carrying an error. `id` is `null` when the request's could not be read.
pub(super) fn error(id: Option<&Value>, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

/// A notification from the server.
pub(super) fn notification(method: &str) -> Value {
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
        assert_eq!(
            classify_body(&json!([request, note])),
            Ok(Body::Batch(vec![
                classify(&request).unwrap(),
                classify(&note).unwrap()
            ]))
        );
        assert!(matches!(classify_body(&request), Ok(Body::Single(_))));
        let too_many = Value::Array(vec![request.clone(); BATCH_MESSAGES_MAX + 1]);
        for (body, named) in [
            (json!([]), "an empty batch"),
            (
                json!([request, 7]),
                "batch element 1: a message is a JSON object",
            ),
            (too_many, "at most"),
        ] {
            let error = classify_body(&body).unwrap_err();
            assert!(error.contains(named), "{body}: {error}");
        }
        let table = [
            (json!([request]), "a JSON object"),
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
