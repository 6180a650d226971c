//! The headers of the adapter's requests: MCP's media types and header names, the names
//! rmcp reserves, and rmcp's custom headers sent in name order (a `HashMap`'s order is
//! the process's, not the seed's).

use http::{HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::error::Error;

/// The MIME types of MCP's Streamable HTTP transport (2025-11-25, transports,
/// "sending messages to the server").
pub(super) const JSON_MIME_TYPE: &str = "application/json";
pub(super) const EVENT_STREAM_MIME_TYPE: &str = "text/event-stream";

/// Header names, lowercase (HTTP names are case-insensitive, RFC 9110 §5.1); the spec
/// spells them `Mcp-Session-Id` and `Last-Event-ID`.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// Headers rmcp reserves for the transport (rmcp 3.11's `RESERVED_HEADERS` in
/// `src/transport/common/http_header.rs`); a custom header of one of these names is
/// refused as rmcp's clients refuse it. `MCP-Protocol-Version` is reserved too, but
/// rmcp itself passes it among the custom headers after `initialize`, so it goes through.
const RESERVED_HEADERS: &[&str] = &["accept", SESSION_HEADER, LAST_EVENT_ID_HEADER];

/// The custom headers rmcp hands a client: its `StreamableHttpClient` trait takes them as
/// a std `HashMap`, whose order is the process's; [`headers`] sorts them by name before
/// anything reads them.
#[allow(
    clippy::disallowed_types,
    reason = "rmcp's trait signature; iterated only into a Vec sorted by name"
)]
pub(super) type Headers = std::collections::HashMap<HeaderName, HeaderValue>; // determinism: allowed (rmcp's trait signature, sorted before use)

/// The headers of a request: the transport's own first, then rmcp's custom ones sorted
/// by name (a `HashMap`'s order is the process's, not the seed's). A reserved name is
/// rmcp's `ReservedHeaderConflict`.
pub(super) fn headers(
    own: Vec<(String, String)>,
    auth_header: Option<String>,
    custom_headers: Headers,
) -> Result<Vec<(String, String)>, Error> {
    let mut headers = own;
    if let Some(token) = auth_header {
        // reqwest's `bearer_auth`, as rmcp's client sends it (RFC 6750 §2.1).
        headers.push(("authorization".to_owned(), format!("Bearer {token}")));
    }
    let mut custom: Vec<(String, String)> = Vec::with_capacity(custom_headers.len());
    for (name, value) in custom_headers {
        if RESERVED_HEADERS.contains(&name.as_str()) {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        // A value that is not visible ASCII (which no MCP header is) is left out, as
        // the other adapters leave it (http_bridge::header_pairs).
        if let Ok(value) = value.to_str() {
            custom.push((name.as_str().to_owned(), value.to_owned()));
        }
    }
    custom.sort();
    headers.extend(custom);
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_headers_go_in_name_order_and_reserved_ones_are_refused() {
        let mut custom = Headers::new();
        for (name, value) in [
            ("x-b", "2"),
            ("mcp-protocol-version", "2025-11-25"),
            ("x-a", "1"),
        ] {
            custom.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let sent = headers(
            vec![("accept".into(), "*/*".into())],
            Some("t".into()),
            custom,
        )
        .expect("no reserved header");
        let names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "accept",
                "authorization",
                "mcp-protocol-version",
                "x-a",
                "x-b"
            ]
        );
        let mut reserved = Headers::new();
        reserved.insert(
            HeaderName::from_static("mcp-session-id"),
            HeaderValue::from_static("s"),
        );
        assert!(matches!(
            headers(Vec::new(), None, reserved),
            Err(StreamableHttpError::ReservedHeaderConflict(name)) if name == "mcp-session-id"
        ));
    }
}
