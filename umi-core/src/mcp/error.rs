//! What can go wrong talking to an MCP server, each case naming the server and what
//! came back.

use crate::llm::transport::TransportError;

/// An MCP client's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The request did not get through, or the connection broke before the response
    /// (a `tools/call` may have run).
    #[error("MCP server {url}: {source}")]
    Transport {
        /// The server's URL.
        url: String,
        /// What the transport said.
        #[source]
        source: TransportError,
    },
    /// The server answered with an HTTP error status.
    #[error("MCP server {url} answered {method} with HTTP {status}: {body}")]
    Http {
        /// The server's URL.
        url: String,
        /// The JSON-RPC method, or the HTTP method for a DELETE.
        method: String,
        /// The status.
        status: u16,
        /// The start of the body (at most 500 bytes).
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("MCP server {url} answered {method} with error {code}: {message}")]
    Rpc {
        /// The server's URL.
        url: String,
        /// The method.
        method: String,
        /// The JSON-RPC error code (-32602: invalid params, an unknown tool).
        code: i64,
        /// Its message.
        message: String,
    },
    /// No response came within the request timeout.
    #[error("MCP server {url}: no response to {method} within {timeout_ms} ms")]
    Timeout {
        /// The server's URL.
        url: String,
        /// The method.
        method: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The response body ended without the response.
    #[error("MCP server {url}: the response to {method} ended without it")]
    NoResponse {
        /// The server's URL.
        url: String,
        /// The method.
        method: String,
    },
    /// The server agreed a protocol version this client does not speak.
    #[error(
        "MCP server {url} answered initialize with protocol version {version:?}, which this client does not speak (it speaks {supported})"
    )]
    Version {
        /// The server's URL.
        url: String,
        /// The version it answered.
        version: String,
        /// The versions this client speaks.
        supported: String,
    },
    /// A message that is not what the protocol says.
    #[error("MCP server {url}: malformed answer to {method}: {reason}")]
    Malformed {
        /// The server's URL.
        url: String,
        /// The method.
        method: String,
        /// What is wrong, with its JSON path where there is one.
        reason: String,
    },
    /// The server forgot the session again right after a new one began.
    #[error("MCP server {url}: the session expired again after {attempts} new session(s)")]
    SessionExpired {
        /// The server's URL.
        url: String,
        /// Sessions begun again.
        attempts: u32,
    },
}

impl McpError {
    /// Whether the request may have been carried out: the cases a caller must not simply
    /// resend a call with side effects after. A broken stream, no response, an answer
    /// that could not be read, a 5xx (a gateway's, or the server's own after it ran), an
    /// internal error (-32603): the server may have done it. A refused connection, a 4xx,
    /// invalid params, an unknown method or a version refused: it did not.
    pub fn maybe_applied(&self) -> bool {
        match self {
            Self::Transport { source, .. } => !matches!(source, TransportError::Connect { .. }),
            Self::Timeout { .. } | Self::NoResponse { .. } | Self::Malformed { .. } => true,
            Self::Http { status, .. } => *status >= 500,
            Self::Rpc { code, .. } => *code == -32_603,
            Self::Version { .. } | Self::SessionExpired { .. } => false,
        }
    }
}
