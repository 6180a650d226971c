//! MCP's Streamable HTTP transport, server side: one endpoint URL, a POST per client
//! message, the answer as one JSON object or an SSE stream, the session in the
//! `Mcp-Session-Id` header.
//!
//! The rules are MCP 2025-11-25's (`docs/specification/2025-11-25/basic/transports.mdx`):
//! a notification or response is answered 202 with no body; a request without a session
//! id (other than `initialize`) is 400; a session the server no longer has is 404, and
//! the client must initialize again; an unsupported `MCP-Protocol-Version` is 400; a GET
//! is 405 when the server offers no stream of its own, as this one; a DELETE ends the
//! session. Bodies and headers of the refusals are the official TypeScript SDK's
//! (`packages/server/src/server/streamableHttp.ts`: `createJsonErrorResponse` writes
//! `{"jsonrpc":"2.0","error":{"code","message"},"id":null}`; SSE events are
//! `event: message\ndata: <json>\n\n` with `Cache-Control: no-cache, no-transform`).
//!
//! This file decides; [`super::host`] runs the request and turns the decision into bytes.

use serde_json::Value;
use umi_core::llm::transport::HttpRequest;

use super::PROTOCOL_VERSIONS;
use super::jsonrpc::{self, Incoming, PARSE_ERROR, SERVER_ERROR, SESSION_NOT_FOUND};
use super::session::Sessions;

/// The session header (names are case-insensitive; the spec spells it `MCP-Session-Id`).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The protocol version header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// A refusal written before anything runs: a status and a JSON-RPC error with no id.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Option<Value>,
    pub(crate) allow: Option<&'static str>,
}

impl Refusal {
    fn new(status: u16, code: i64, message: &str) -> Self {
        Self {
            status,
            body: Some(jsonrpc::error(None, code, message)),
            allow: None,
        }
    }
}

/// What an admitted request is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Admitted {
    /// `initialize`: begins a session.
    Initialize {
        id: Value,
        params: serde_json::Map<String, Value>,
    },
    /// A request in the session `session`.
    Request {
        session: String,
        id: Value,
        method: String,
        params: serde_json::Map<String, Value>,
    },
    /// A notification (or a response) in the session: 202.
    Notification {
        session: String,
        method: Option<String>,
    },
    /// DELETE: the client ends the session.
    End { session: String },
}

/// Decides what `request` is, or refuses it the way the TypeScript SDK's server does.
pub(crate) fn admit(request: &HttpRequest, sessions: &Sessions) -> Result<Admitted, Refusal> {
    match request.method {
        "POST" => {}
        "DELETE" => {
            let session = known_session(request, sessions)?;
            check_version_header(request)?;
            return Ok(Admitted::End { session });
        }
        // A server that offers no SSE stream of its own answers GET with 405 (rule 3 of
        // "listening for messages from the server").
        _ => {
            let mut refusal = Refusal::new(405, SERVER_ERROR, "Method not allowed.");
            refusal.allow = Some("POST, DELETE");
            return Err(refusal);
        }
    }
    let accept = request.header("accept").unwrap_or("");
    if !accept.contains("application/json") || !accept.contains("text/event-stream") {
        return Err(Refusal::new(
            406,
            SERVER_ERROR,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    let content_type = request.header("content-type").unwrap_or("");
    if !content_type.contains("application/json") {
        return Err(Refusal::new(
            415,
            SERVER_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    let Ok(value) = serde_json::from_slice::<Value>(&request.body) else {
        return Err(Refusal::new(400, PARSE_ERROR, "Parse error: Invalid JSON"));
    };
    let message = jsonrpc::classify(&value).map_err(|reason| {
        Refusal::new(
            400,
            PARSE_ERROR,
            &format!("Parse error: Invalid JSON-RPC message: {reason}"),
        )
    })?;
    if let Incoming::Request { id, method, params } = &message
        && method == "initialize"
    {
        return Ok(Admitted::Initialize {
            id: id.clone(),
            params: params.clone(),
        });
    }
    let session = known_session(request, sessions)?;
    check_version_header(request)?;
    Ok(match message {
        Incoming::Request { id, method, params } => Admitted::Request {
            session,
            id,
            method,
            params,
        },
        Incoming::Notification { method } => Admitted::Notification {
            session,
            method: Some(method),
        },
        Incoming::Response => Admitted::Notification {
            session,
            method: None,
        },
    })
}

/// The request's session id, when the server has that session: 400 without one, 404
/// for one it does not have.
fn known_session(request: &HttpRequest, sessions: &Sessions) -> Result<String, Refusal> {
    let Some(id) = request.header(SESSION_HEADER) else {
        return Err(Refusal::new(
            400,
            SERVER_ERROR,
            "Bad Request: Mcp-Session-Id header is required",
        ));
    };
    if sessions.get(id).is_none() {
        return Err(session_not_found());
    }
    Ok(id.to_owned())
}

/// The 404 for a session the server does not have.
pub(crate) fn session_not_found() -> Refusal {
    Refusal::new(404, SESSION_NOT_FOUND, "Session not found")
}

/// 400 for an `MCP-Protocol-Version` the server does not support; none is fine (the
/// server assumes the one negotiated, or 2025-03-26).
fn check_version_header(request: &HttpRequest) -> Result<(), Refusal> {
    match request.header(PROTOCOL_VERSION_HEADER) {
        Some(version) if !PROTOCOL_VERSIONS.contains(&version) => Err(Refusal::new(
            400,
            SERVER_ERROR,
            &format!(
                "Bad Request: Unsupported protocol version: {version} (supported versions: {})",
                PROTOCOL_VERSIONS.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

/// The version a server answers `initialize` with: the client's when supported, else
/// its latest (2025-11-25, lifecycle, version negotiation).
pub(crate) fn negotiated_version(requested: Option<&str>) -> &'static str {
    PROTOCOL_VERSIONS
        .iter()
        .find(|supported| Some(**supported) == requested)
        .copied()
        .unwrap_or(PROTOCOL_VERSIONS[0])
}

/// One SSE event carrying `message`.
pub(crate) fn sse_event(message: &Value) -> Vec<u8> {
    format!(
        "event: message\ndata: {}\n\n",
        umi_core::canonical_json::to_string(message)
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &str, headers: &[(&str, &str)]) -> HttpRequest {
        let mut all = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        all.extend(
            headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        HttpRequest {
            method: "POST",
            url: "http://tools.sim/mcp".into(),
            headers: all,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn refusals_come_with_the_status_the_spec_and_the_sdk_give() {
        let mut sessions = Sessions::default();
        sessions.begin("s1".into(), "2025-11-25".into());
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let status = |request: &HttpRequest| admit(request, &sessions).map_err(|r| r.status);
        assert_eq!(status(&post(ping, &[])), Err(400), "no session id");
        assert_eq!(status(&post(ping, &[("Mcp-Session-Id", "gone")])), Err(404));
        assert_eq!(
            status(&post(
                ping,
                &[
                    ("mcp-session-id", "s1"),
                    ("MCP-Protocol-Version", "1999-01-01")
                ]
            )),
            Err(400)
        );
        assert_eq!(status(&post("{not json", &[])), Err(400));
        assert_eq!(status(&post("[]", &[])), Err(400), "a batch");
        let mut wrong_accept = post(ping, &[("mcp-session-id", "s1")]);
        wrong_accept.headers[0].1 = "application/json".into();
        assert_eq!(status(&wrong_accept), Err(406));
        let mut wrong_type = post(ping, &[("mcp-session-id", "s1")]);
        wrong_type.headers[1].1 = "text/plain".into();
        assert_eq!(status(&wrong_type), Err(415));
        let get = HttpRequest {
            method: "GET",
            ..post("", &[("mcp-session-id", "s1")])
        };
        let refusal = admit(&get, &sessions).unwrap_err();
        assert_eq!((refusal.status, refusal.allow), (405, Some("POST, DELETE")));
        assert_eq!(
            refusal.body.unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Method not allowed."}})
        );
    }

    #[test]
    fn admitted_messages_are_what_they_say() {
        let mut sessions = Sessions::default();
        sessions.begin("s1".into(), "2025-11-25".into());
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
        assert!(matches!(
            admit(&post(init, &[]), &sessions),
            Ok(Admitted::Initialize { .. })
        ));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(matches!(
            admit(&post(note, &[("mcp-session-id", "s1")]), &sessions),
            Ok(Admitted::Notification { method: Some(m), .. }) if m == "notifications/initialized"
        ));
        let delete = HttpRequest {
            method: "DELETE",
            ..post("", &[("mcp-session-id", "s1")])
        };
        assert_eq!(
            admit(&delete, &sessions),
            Ok(Admitted::End {
                session: "s1".into()
            })
        );
    }

    #[test]
    fn versions_are_negotiated_down_to_the_latest_supported() {
        assert_eq!(negotiated_version(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiated_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiated_version(Some("2031-01-01")), "2025-11-25");
        assert_eq!(negotiated_version(None), "2025-11-25");
    }
}
