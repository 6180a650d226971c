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
//! A batch (a JSON array of messages) is admitted in a session that negotiated
//! 2025-03-26, whose transport takes "an array batching one or more requests and/or
//! notifications" and whose base protocol says servers "MUST support receiving JSON-RPC
//! batches" (`docs/specification/2025-03-26/basic/transports.mdx`, sending messages,
//! rule 3; `basic/index.mdx`, Batching). In a session of another version it is 400 with
//! -32600 Invalid Request: 2024-11-05 had no batches, 2025-06-18 removed them, and
//! 2025-11-25 says "the body of the POST request MUST be a single JSON-RPC request,
//! notification, or response" and "if the server cannot accept the input, it MUST
//! return an HTTP error status code (e.g., 400 Bad Request)". `initialize` is never in
//! a batch (2025-03-26, lifecycle: "The initialization request MUST NOT be part of a
//! JSON-RPC batch"), so a batch always has a session to be judged by.
//!
//! A request whose `Origin` header is present and not allowed is 403 (2025-11-25,
//! transports, security warning: "Servers MUST validate the `Origin` header on all
//! incoming connections to prevent DNS rebinding attacks. If the `Origin` header is
//! present and invalid, servers MUST respond with HTTP 403 Forbidden. The HTTP response
//! body MAY comprise a JSON-RPC error response that has no `id`"): a local origin
//! (`localhost`, `127.0.0.1`, `[::1]`, any port) is allowed, others only when named
//! ([`origin_allowed`]; `dst serve --allow-origin`). This is checked where a real HTTP
//! request arrives (`dst serve`'s `/mcp`); a simulated client on SimNetwork sends none.
//!
//! This file decides; [`super::host`] runs the request and turns the decision into bytes.

use serde_json::Value;
use umi_core::llm::transport::HttpRequest;

use super::jsonrpc::{
    self, Body, INVALID_REQUEST, Incoming, PARSE_ERROR, SERVER_ERROR, SESSION_NOT_FOUND,
};
use super::session::Sessions;
use super::{BATCH_PROTOCOL_VERSIONS, PROTOCOL_VERSIONS};

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
    /// A batch in the session (2025-03-26 only), its messages in order: none of them
    /// `initialize`.
    Batch {
        session: String,
        messages: Vec<Incoming>,
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
    // Valid JSON that is no JSON-RPC message is -32600 (JSON-RPC 2.0 §5.1).
    let body = jsonrpc::classify_body(&value)
        .map_err(|reason| invalid_request(&format!("Invalid JSON-RPC message: {reason}")))?;
    let message = match body {
        Body::Single(message) => message,
        Body::Batch(messages) => return admit_batch(request, sessions, messages),
    };
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

/// A 400 with -32600 Invalid Request.
fn invalid_request(reason: &str) -> Refusal {
    Refusal::new(400, INVALID_REQUEST, &format!("Invalid Request: {reason}"))
}

/// A batch: admitted in a session that negotiated a version with batches, else 400.
fn admit_batch(
    request: &HttpRequest,
    sessions: &Sessions,
    messages: Vec<Incoming>,
) -> Result<Admitted, Refusal> {
    let initialize = messages
        .iter()
        .any(|m| matches!(m, Incoming::Request { method, .. } if method == "initialize"));
    if initialize {
        return Err(invalid_request(
            "initialize must not be part of a JSON-RPC batch",
        ));
    }
    let session = known_session(request, sessions)?;
    check_version_header(request)?;
    let version = sessions
        .get(&session)
        .map(|s| s.protocol_version.as_str())
        .unwrap_or_default();
    if !BATCH_PROTOCOL_VERSIONS.contains(&version) {
        return Err(invalid_request(&format!(
            "JSON-RPC batches are not part of MCP {version} (only of {}); send one message per POST",
            BATCH_PROTOCOL_VERSIONS.join(", ")
        )));
    }
    Ok(Admitted::Batch { session, messages })
}

/// Whether a request with `origin` (its `Origin` header) may reach the server: none sent
/// (a client that is no browser sends none), a local one (`http` or `https` to
/// `localhost`, `127.0.0.1` or `[::1]`, any port), or one of `allowed` (origins compared
/// without case or a trailing `/`; `*` allows every origin).
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    is_local_origin(&origin)
        || allowed.iter().any(|entry| {
            entry == "*" || entry.trim().trim_end_matches('/').to_ascii_lowercase() == origin
        })
}

/// Whether a lowercase origin is `http(s)://` a loopback name, with a port or none, and
/// nothing after (`http://localhost.evil.example` is not local).
fn is_local_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, rest)) => (host, rest),
            None => return false,
        },
        None => authority.split_at(authority.find(':').unwrap_or(authority.len())),
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    port_ok && matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// The 403 of an origin that is not allowed, naming it and the flag that allows it.
#[cfg(any(feature = "serve", test))]
pub(crate) fn forbidden_origin(origin: &str) -> Refusal {
    Refusal::new(
        403,
        SERVER_ERROR,
        &format!(
            "Forbidden: Invalid Origin header: {origin} (only local origins are allowed; `dst serve --allow-origin {origin}` allows it)"
        ),
    )
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
        assert_eq!(status(&post("[]", &[])), Err(400), "an empty batch");
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

    /// What a refusal says: its status, JSON-RPC code and message.
    fn refused(request: &HttpRequest, sessions: &Sessions) -> (u16, i64, String) {
        let refusal = admit(request, sessions).unwrap_err();
        let body = refusal.body.unwrap();
        assert_eq!(body["id"], serde_json::Value::Null, "{body}");
        (
            refusal.status,
            body["error"]["code"].as_i64().unwrap(),
            body["error"]["message"].as_str().unwrap().to_owned(),
        )
    }

    /// JSON that is no JSON-RPC message is -32600 Invalid Request (JSON-RPC 2.0 §5.1),
    /// only text that is not JSON -32700 (both were -32700).
    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        let sessions = Sessions::default();
        for body in [
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            "7",
            r#""ping""#,
            "[]",
            "[1]",
        ] {
            let (status, code, message) = refused(&post(body, &[]), &sessions);
            assert_eq!((status, code), (400, -32_600), "{body}: {message}");
            assert!(message.starts_with("Invalid Request: "), "{message}");
        }
        assert_eq!(refused(&post("{not json", &[]), &sessions).1, -32_700);
    }

    /// A batch is admitted in a 2025-03-26 session only; in a session of a later (or
    /// earlier) version, and with `initialize` in it, it is 400 -32600 naming why.
    #[test]
    fn batches_are_admitted_where_the_negotiated_version_has_them() {
        let mut sessions = Sessions::default();
        sessions.begin("old".into(), "2025-03-26".into());
        sessions.begin("new".into(), "2025-06-18".into());
        sessions.begin("first".into(), "2024-11-05".into());
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
        match admit(&post(batch, &[("mcp-session-id", "old")]), &sessions) {
            Ok(Admitted::Batch { session, messages }) => {
                assert_eq!(session, "old");
                assert_eq!(messages.len(), 3);
            }
            other => panic!("{other:?}"),
        }
        for (session, version) in [("new", "2025-06-18"), ("first", "2024-11-05")] {
            let (status, code, message) =
                refused(&post(batch, &[("mcp-session-id", session)]), &sessions);
            assert_eq!((status, code), (400, -32_600), "{message}");
            assert!(
                message.contains(&format!("not part of MCP {version}")),
                "{message}"
            );
        }
        let with_init = r#"[{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}]"#;
        let (status, code, message) = refused(&post(with_init, &[]), &sessions);
        assert_eq!((status, code), (400, -32_600));
        assert!(message.contains("initialize must not be part of a JSON-RPC batch"));
        // A batch still needs its session.
        assert_eq!(refused(&post(batch, &[]), &sessions).0, 400);
        assert_eq!(
            refused(&post(batch, &[("mcp-session-id", "gone")]), &sessions).0,
            404
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

    /// Local origins pass, others only when named (or `*`), and no Origin at all passes;
    /// look-alikes of a local name do not.
    #[test]
    fn origins_are_local_or_named() {
        let none: &[String] = &[];
        for local in [
            "http://localhost",
            "http://localhost:5173",
            "https://127.0.0.1:8443/",
            "http://[::1]:80",
            "HTTP://LocalHost:3000",
        ] {
            assert!(origin_allowed(Some(local), none), "{local}");
        }
        for foreign in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://localhost:80x",
            "http://localhost:",
            "http://[::1",
            "null",
            "file://",
            "ws://localhost",
            "",
        ] {
            assert!(!origin_allowed(Some(foreign), none), "{foreign}");
        }
        assert!(origin_allowed(None, none), "no Origin: not a browser");
        let named = vec!["https://app.example/".to_owned()];
        assert!(origin_allowed(Some("https://APP.example"), &named));
        assert!(!origin_allowed(Some("https://app.example:8443"), &named));
        assert!(origin_allowed(
            Some("https://any.example"),
            &["*".to_owned()]
        ));
        let refusal = forbidden_origin("https://evil.example");
        assert_eq!(refusal.status, 403);
        let body = refusal.body.unwrap();
        assert_eq!(body["id"], serde_json::Value::Null);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--allow-origin")
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
