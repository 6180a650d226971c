//! rmcp (the official Rust MCP SDK) inside a simulation: an HTTP client for rmcp's
//! Streamable HTTP client transport
//! (`rmcp::transport::streamable_http_client::StreamableHttpClient`) that sends its
//! requests through a [`Transport`] (usually [`crate::SimNetwork`] with an MCP server on
//! it, [`crate::SimNetwork::with_mcp`]), so an rmcp client, unchanged, talks to a
//! simulated MCP server in simulated time under the seed's faults.
//!
//! ```no_run
//! # async fn demo(sim: &umi_dst::SimEnvironment) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use rmcp::ServiceExt;
//! use umi_dst::mcp::SimMcpServer;
//! use umi_dst::tools::{SimTool, SimTools};
//! use umi_dst::SimNetwork;
//! let tools = SimTools::new(sim).with(SimTool::new("get_weather", "today's weather", serde_json::json!({"type": "object"})));
//! let network = Arc::new(SimNetwork::new(sim).with_mcp("http://tools.sim/mcp", SimMcpServer::new("weather", tools)));
//! let client = ().serve(umi_dst::adapters::rmcp::transport(network, "http://tools.sim/mcp")).await?;
//! let tools = client.list_all_tools().await?; // an ordinary rmcp client from here on
//! # let _ = tools;
//! # Ok(())
//! # }
//! ```
//!
//! Built against rmcp 3.11 (`default-features = false`, features `client` and
//! `transport-streamable-http-client`: no reqwest, no server, no macros). What the
//! adapter does is what rmcp's own reqwest client does
//! (`src/transport/common/reqwest/streamable_http_client.rs` in rmcp 3.11.0), over
//! SimNetwork, on MCP's Streamable HTTP transport (revision 2025-11-25,
//! `docs/specification/2025-11-25/basic/transports.mdx` in
//! modelcontextprotocol/modelcontextprotocol):
//! - **POST** each JSON-RPC message (serialized by serde_json) with `Accept:
//!   application/json, text/event-stream`, `Content-Type: application/json`, the session
//!   in `Mcp-Session-Id`, and the headers rmcp hands it (`MCP-Protocol-Version` after
//!   `initialize`), in name order; 202 or 204 is *accepted*, a JSON body is one message,
//!   a `text/event-stream` body an SSE stream parsed by `sse-stream` (the parser rmcp
//!   uses); 404 with a session is rmcp's `SessionExpired` (rmcp initializes again and
//!   retries once), 429 and 5xx its `HttpStatus`, a JSON-RPC error body on another
//!   status that error, any other status its `UnexpectedServerResponse`;
//! - **GET** (the server's own stream): 405 is rmcp's `ServerDoesNotSupportSse`, as
//!   Umi's simulated servers answer;
//! - **DELETE** ends the session when rmcp closes (405 counts as done).
//!
//! 401 and 403 with a `WWW-Authenticate` challenge are rmcp's `AuthRequired` and
//! `InsufficientScope` (the challenge whole; its `scope` is not parsed out).
//!
//! A broken connection is rmcp's `StreamableHttpError::Client` carrying the simulated
//! [`TransportError`] ([`SimMcpHttpError::Transport`]); cut in an SSE stream, rmcp reads
//! it as the stream's end before the response and fails the request with
//! `ServiceError::TransportClosed`.
//!
//! What rmcp does with time and randomness (3.11, read from its source, on the client's
//! path: `serve_client`, `Peer`'s requests, the Streamable HTTP worker and its SSE
//! reader):
//! - **its timers are tokio's**: the reconnect backoff (`ExponentialBackoff`, 1 s
//!   doubling, no jitter), the 5 s control-request, session-recovery and session-cleanup
//!   timeouts, the 50 ms drain after a response all use `tokio::time`, which a simulation
//!   pauses: they are simulated time, and deterministic;
//! - **request ids** count from 0 per connection (`AtomicU32RequestIdProvider`), so
//!   they are the same in every run; no UUIDs or `rand` on the client path (the
//!   features that bring them are off);
//! - **unbiased selects**: its service loop, its HTTP worker loop and its SSE readers
//!   use `tokio::select!` without `biased;`, so when two of their events are ready at
//!   once the order comes from tokio's per-runtime RNG, which tokio seeds from OS
//!   randomness. A sequential client rarely has two ready together; a run with many
//!   requests in flight may order their handling differently run to run;
//! - **the wall clock** measures the client's response cache TTLs
//!   (`std::time::Instant::now` in `Peer::cached_response` and `list_all_*`): nothing is
//!   cached unless the server sends `ttlMs` (Umi's does not) or the client sets a
//!   default TTL, but with either, whether a repeated list reaches the server depends on
//!   real time;
//! - **hash order**: rmcp keeps custom headers in a `HashMap` (the adapter sends them
//!   sorted by name, so the bytes do not change) and the requests awaiting a stream
//!   response in a `HashSet`, whose order decides which request hears of a session's
//!   re-initialization first.
//!
//! Limits: rmcp's `max_json_response_size` and `max_error_response_size` are enforced
//! on the bytes read; `max_sse_event_size` on each event's data once parsed (rmcp's own
//! byte-level limiter is private to it), ending the stream with
//! [`SimMcpHttpError::SseEventTooLarge`]. Authorization (`auth_header`) is sent as a
//! bearer token; SimNetwork's MCP servers ignore it.

use std::borrow::Cow;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, SseError, StreamableHttpClient, StreamableHttpClientTransport,
    StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use umi_core::llm::secrets::redact_url;
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};

mod response;

use response::{
    auth_error, json_post_response, media_type_is, post_failure, retry_after, sse_events,
};

/// The MIME types of MCP's Streamable HTTP transport (2025-11-25, transports,
/// "sending messages to the server").
const JSON_MIME_TYPE: &str = "application/json";
const EVENT_STREAM_MIME_TYPE: &str = "text/event-stream";

/// Header names, lowercase (HTTP names are case-insensitive, RFC 9110 §5.1); the spec
/// spells them `Mcp-Session-Id` and `Last-Event-ID`.
const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// Headers rmcp reserves for the transport (rmcp 3.11's `RESERVED_HEADERS` in
/// `src/transport/common/http_header.rs`); a custom header of one of these names is
/// refused as rmcp's clients refuse it. `MCP-Protocol-Version` is reserved too, but
/// rmcp itself passes it among the custom headers after `initialize`, so it goes through.
const RESERVED_HEADERS: &[&str] = &["accept", SESSION_HEADER, LAST_EVENT_ID_HEADER];

/// The longest `Retry-After` value kept (rmcp's `MAX_RETRY_AFTER_BYTES`).
const RETRY_AFTER_BYTES_MAX: usize = 128;

/// What the adapter itself cannot do; rmcp reports it as
/// `StreamableHttpError::Client`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimMcpHttpError {
    /// The connection failed or broke (a simulated network fault, a reset by the server).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// rmcp's message could not be serialized as JSON.
    #[error("the JSON-RPC message could not be serialized: {reason}")]
    Serialize {
        /// serde_json's reason.
        reason: String,
    },
    /// An SSE event's data was larger than the transport's `max_sse_event_size`.
    #[error("an SSE event of {bytes} bytes is over the limit of {max_size} bytes")]
    SseEventTooLarge {
        /// The event's data, in bytes.
        bytes: usize,
        /// The limit.
        max_size: usize,
    },
}

/// rmcp as the determinism check knows it (see the module docs): a client built over
/// this adapter notes it in the run, and a divergence names these hazards where they fit.
pub static CLIENT: crate::foreign::ForeignClient = crate::foreign::ForeignClient {
    name: "rmcp 3.11",
    hazards: &[
        crate::foreign::Hazard {
            source: "tokio::select! without `biased;` in rmcp's service loop, its Streamable \
                     HTTP worker and its SSE readers: two events ready at once are taken in \
                     an order from tokio's runtime RNG, seeded from OS randomness",
            effect: crate::foreign::Effect::Order,
        },
        crate::foreign::Hazard {
            source: "the requests awaiting a stream response are kept in a hash set: after a session \
                     is re-initialized, rmcp fails them in hash order",
            effect: crate::foreign::Effect::Order,
        },
        crate::foreign::Hazard {
            source: "the client's response cache (Peer::cached_response, list_all_*) measures \
                     TTLs with std::time::Instant::now: with a server ttlMs or a default TTL, \
                     whether a repeated list reaches the server depends on the wall clock",
            effect: crate::foreign::Effect::Timing,
        },
    ],
};

/// rmcp's Streamable HTTP client over `transport`: give it to
/// `StreamableHttpClientTransport::with_client`, or use [`transport`].
#[derive(Clone, Debug)]
pub struct SimMcpHttpClient {
    transport: Arc<dyn Transport>,
}

impl SimMcpHttpClient {
    /// A client sending through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        crate::foreign::note(&CLIENT);
        Self { transport }
    }
}

/// rmcp's Streamable HTTP client transport to the MCP server at `url`, its requests sent
/// through `transport` (`Arc<SimNetwork>` works as is), with rmcp's default
/// configuration. Hand it to rmcp: `().serve(transport(network, url)).await`.
///
/// It spawns rmcp's worker on the current tokio runtime, so call it inside a simulation.
pub fn transport(
    transport: Arc<dyn Transport>,
    url: &str,
) -> StreamableHttpClientTransport<SimMcpHttpClient> {
    with_config(
        transport,
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    )
}

/// Like [`transport`], with rmcp's `config` (its URI, timeouts, limits, whether to
/// initialize again on an expired session).
pub fn with_config(
    transport: Arc<dyn Transport>,
    config: StreamableHttpClientTransportConfig,
) -> StreamableHttpClientTransport<SimMcpHttpClient> {
    StreamableHttpClientTransport::with_client(SimMcpHttpClient::new(transport), config)
}

type Error = StreamableHttpError<SimMcpHttpError>;

/// The custom headers rmcp hands a client: its `StreamableHttpClient` trait takes them as
/// a std `HashMap`, whose order is the process's; [`headers`] sorts them by name before
/// anything reads them.
#[allow(
    clippy::disallowed_types,
    reason = "rmcp's trait signature; iterated only into a Vec sorted by name"
)]
type Headers = std::collections::HashMap<HeaderName, HeaderValue>; // determinism: allowed (rmcp's trait signature, sorted before use)

fn client_error(error: impl Into<SimMcpHttpError>) -> Error {
    StreamableHttpError::Client(error.into())
}

/// The headers of a request: the transport's own first, then rmcp's custom ones sorted
/// by name (a `HashMap`'s order is the process's, not the seed's). A reserved name is
/// rmcp's `ReservedHeaderConflict`.
fn headers(
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

impl SimMcpHttpClient {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error> {
        self.transport.send(request).await.map_err(client_error)
    }
}

impl StreamableHttpClient for SimMcpHttpClient {
    type Error = SimMcpHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message).map_err(|error| {
            client_error(SimMcpHttpError::Serialize {
                reason: error.to_string(),
            })
        })?;
        // 2025-11-25, transports, "sending messages to the server": the client MUST
        // accept both JSON and SSE, and sends the session id it was given.
        let mut own = vec![
            (
                "accept".to_owned(),
                format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}"),
            ),
            ("content-type".to_owned(), JSON_MIME_TYPE.to_owned()),
        ];
        let session_was_attached = session_id.is_some();
        if let Some(session) = &session_id {
            own.push((SESSION_HEADER.to_owned(), session.to_string()));
        }
        let request = HttpRequest {
            method: "POST",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body,
        };
        let response = self.send(request).await?;
        if let Some(error) = auth_error(&response) {
            return Err(error);
        }
        let status = response.status;
        if status == 202 || status == 204 {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        // 2025-11-25, transports, session management: 404 to a request with a session
        // id means the session is gone; the client must initialize again.
        if status == 404 && session_was_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !(200..300).contains(&status) {
            return post_failure(&message, session_was_attached, response, limits).await;
        }
        let new_session = response.header(SESSION_HEADER).map(str::to_owned);
        let content_type = response.header("content-type").map(str::to_owned);
        // A notification or response awaits no reply: whatever 2xx body comes is ignored
        // (rmcp's reqwest client treats it as accepted too).
        let awaits_no_response = !matches!(message, JsonRpcMessage::Request(_));
        match content_type.as_deref() {
            Some(ct) if media_type_is(ct, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(
                    sse_events(response.body, limits.max_sse_event_size),
                    new_session,
                ))
            }
            Some(ct) if media_type_is(ct, JSON_MIME_TYPE) => {
                json_post_response(response.body, &limits, new_session, awaits_no_response).await
            }
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), Error> {
        // 2025-11-25, transports, session management: DELETE with the session id ends
        // it; a server that does not allow it answers 405.
        let own = vec![(SESSION_HEADER.to_owned(), session_id.to_string())];
        let request = HttpRequest {
            method: "DELETE",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body: Vec::new(),
        };
        let response = self.send(request).await?;
        match response.status {
            200..=299 | 405 => Ok(()),
            status => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to DELETE {}", redact_url(&uri)),
            ))),
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        // 2025-11-25, transports, "listening for messages from the server": a GET that
        // accepts SSE; the server answers with a stream or 405.
        let mut own = vec![(
            "accept".to_owned(),
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        )];
        if let Some(session) = &session_id {
            own.push((SESSION_HEADER.to_owned(), session.to_string()));
        }
        if let Some(id) = last_event_id {
            own.push((LAST_EVENT_ID_HEADER.to_owned(), id));
        }
        let request = HttpRequest {
            method: "GET",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body: Vec::new(),
        };
        let response = self.send(request).await?;
        if response.status == 405 {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(error) = auth_error(&response) {
            return Err(error);
        }
        let status = response.status;
        if status == 429 || (500..600).contains(&status) {
            return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(
                status,
                retry_after(&response),
            )));
        }
        if !(200..300).contains(&status) {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to GET {}", redact_url(&uri)),
            )));
        }
        match response.header("content-type") {
            Some(ct)
                if media_type_is(ct, EVENT_STREAM_MIME_TYPE)
                    || media_type_is(ct, JSON_MIME_TYPE) =>
            {
                Ok(sse_events(response.body, max_sse_event_size))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_owned),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_match_by_essence() {
        assert!(media_type_is("application/json", JSON_MIME_TYPE));
        assert!(media_type_is(
            " Text/Event-Stream ; charset=utf-8",
            EVENT_STREAM_MIME_TYPE
        ));
        assert!(!media_type_is("application/json-seq", JSON_MIME_TYPE));
        assert!(!media_type_is("", JSON_MIME_TYPE));
    }

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
