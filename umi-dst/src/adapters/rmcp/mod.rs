//! rmcp (the official Rust MCP SDK) inside a simulation: an HTTP client for rmcp's
//! Streamable HTTP client transport
//! (`rmcp::transport::streamable_http_client::StreamableHttpClient`) that sends its
//! requests through a [`Transport`](umi_core::llm::transport::Transport) (usually [`crate::SimNetwork`] with an MCP server on
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
//! [`TransportError`](umi_core::llm::transport::TransportError)
//! ([`SimMcpHttpError::Transport`]); cut in an SSE stream, rmcp reads
//! it as the stream's end before the response and fails the request with
//! `ServiceError::TransportClosed`.
//!
//! What rmcp does with time and randomness, and what the determinism check says of it,
//! is in `hazards.rs` ([`CLIENT`]).
//!
//! Limits: rmcp's `max_json_response_size` and `max_error_response_size` are enforced
//! on the bytes read; `max_sse_event_size` on each event's data once parsed (rmcp's own
//! byte-level limiter is private to it), ending the stream with
//! [`SimMcpHttpError::SseEventTooLarge`]. Authorization (`auth_header`) is sent as a
//! bearer token; SimNetwork's MCP servers ignore it.
//!
//! The files: `client.rs` the client and the transports over it, `requests.rs` its POST,
//! GET and DELETE, `response.rs` how each answer is read, `headers.rs` what each request
//! carries, `error.rs` the adapter's errors, `hazards.rs` what rmcp does with time and
//! randomness.

mod client;
mod error;
mod hazards;
mod headers;
mod requests;
mod response;

pub use client::{SimMcpHttpClient, transport, with_config};
pub use error::SimMcpHttpError;
pub use hazards::CLIENT;
