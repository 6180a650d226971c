//! The simulated MCP server's events: sessions begun, requests answered or refused,
//! sessions expired and ended.

use std::fmt;

/// An event of the simulated MCP server (`mcp.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum McpEvent {
    /// `mcp.refused`: the MCP server refused a request before it reached a session.
    Refused {
        /// The HTTP method.
        method: String,
        /// The refusal's status.
        status: u16,
    },
    /// `mcp.initialize`: an MCP session began (or its `initialize` failed).
    Initialize {
        /// The session id.
        session: String,
        /// The protocol version answered.
        version: &'static str,
        /// The version the client asked for.
        asked: Option<String>,
    },
    /// `mcp.request`: a request in an MCP session answered.
    Request {
        /// The session id.
        session: String,
        /// The JSON-RPC method.
        method: String,
        /// The JSON-RPC id, as JSON.
        id: String,
        /// How the server replied.
        reply: &'static str,
    },
    /// `mcp.session_expired`: a session expired under a fault.
    SessionExpired {
        /// The session id.
        session: String,
        /// The method the expiry answered.
        method: String,
    },
    /// `mcp.session_end`: the client ended a session.
    SessionEnd {
        /// The session id.
        session: String,
    },
}

impl McpEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Refused { .. } => "mcp.refused",
            Self::Initialize { .. } => "mcp.initialize",
            Self::Request { .. } => "mcp.request",
            Self::SessionExpired { .. } => "mcp.session_expired",
            Self::SessionEnd { .. } => "mcp.session_end",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::SessionEnd { session } => Some(session),
            Self::Refused { .. }
            | Self::Initialize { .. }
            | Self::Request { .. }
            | Self::SessionExpired { .. } => None,
        }
    }
}

impl fmt::Display for McpEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused { method, status } => write!(f, "{method} {status}"),
            Self::Initialize {
                session,
                version,
                asked,
            } => write!(f, "session={session} version={version} asked={asked:?}"),
            Self::Request {
                session,
                method,
                id,
                reply,
            } => write!(f, "{session} {method} id={id} reply={reply}"),
            Self::SessionExpired { session, method } => write!(f, "{session} at {method}"),
            Self::SessionEnd { session } => f.write_str(session),
        }
    }
}
