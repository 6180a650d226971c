//! An MCP client: an agent's tools on an MCP server, reached over the Streamable HTTP
//! transport through umi-core's [`Transport`](crate::llm::transport::Transport) seam.
//!
//! MCP (the Model Context Protocol) is how most agents reach their tools. This client
//! speaks the handshake era of the protocol (revisions 2025-03-26 to 2025-11-25,
//! `docs/specification/<revision>/basic/` in modelcontextprotocol/modelcontextprotocol):
//! `initialize` with version negotiation, `notifications/initialized`, `tools/list`
//! (every page, by `nextCursor`), `tools/call`, and the session in the `Mcp-Session-Id`
//! header, with DELETE to end it. A server may answer a request with one JSON object or
//! an SSE stream; both are read. It does, of what the spec asks of a client:
//!
//! - a 404 on a request carrying a session means the server forgot it: the client
//!   initializes again and sends the request again (once; a 404 means the request was not
//!   processed, so the resend cannot do anything twice);
//! - a server that answers `initialize` with a version this client does not speak is
//!   refused ([`McpError::Version`]), as the lifecycle says a client should disconnect;
//! - `notifications/tools/list_changed` marks the tool list stale
//!   ([`McpClient::tools_changed`]);
//! - a server that gives no session id is served without one.
//!
//! Not (yet): `notifications/cancelled` after a timeout (a SHOULD of the lifecycle),
//! resuming an SSE stream by `Last-Event-ID` (a stream that ends without the response is
//! [`McpError::NoResponse`]), and a DELETE of the session a refused version began.
//! Errors and `Debug` show the URL with credentials redacted.
//!
//! A broken stream or no response is an error, never retried here: a `tools/call` the
//! server may have run is the agent's to decide about. [`McpTools`] makes an agent's
//! [`ToolRegistry`](crate::agent::ToolRegistry) of a server's tools, passing each call's
//! id in `_meta` (`umi.dev/tool_call_id`) so a server can tell a logical call's repeats.

mod client;
mod error;
mod read;
mod tools;

pub use client::{
    HTTP_ERROR_BODY_BYTES_MAX, MCP_REQUEST_TIMEOUT_DEFAULT, McpClient, McpClientConfig, McpTool,
    ToolCallResult,
};
pub use error::McpError;
pub use tools::{McpTools, McpToolsError};

/// The protocol versions this client speaks, latest first (what it asks for).
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The `_meta` key a `tools/call` carries the model's call id under.
pub const CALL_ID_META_KEY: &str = "umi.dev/tool_call_id";

/// Pages of `tools/list` followed at most (a server whose cursors never end is refused).
pub const TOOL_PAGES_MAX: usize = 100;

/// The largest response body read, in bytes.
pub const MCP_RESPONSE_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Sessions begun again after a 404, per request, at most.
pub const REINITIALIZE_MAX: u32 = 1;
