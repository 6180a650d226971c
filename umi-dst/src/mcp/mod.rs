//! Simulated MCP servers: an agent's tools behind the Model Context Protocol, as parts
//! of the seeded world.
//!
//! MCP is how most agents reach their tools now. A [`SimMcpServer`] serves a set of
//! [`SimTools`] over MCP's Streamable HTTP transport (revision
//! 2025-11-25, and the versions before it back to 2024-11-05): `initialize` and version
//! negotiation, `notifications/initialized`, `ping`, `tools/list` with pagination,
//! `tools/call`, sessions in the `Mcp-Session-Id` header, DELETE to end one. Each call
//! runs the simulated tool (its faults at `tool.call.<name>`, its seeded latency, its
//! effects in the ledger), so an agent's MCP tools meet the same faults as its
//! in-process ones, and more that only MCP has, decided at `tool.mcp.initialize` and
//! `tool.mcp.request.<method>`:
//!
//! | kind | what the client sees |
//! | --- | --- |
//! | `tool.mcp_session_expired` | 404 `Session not found`: it must initialize again |
//! | `tool.mcp_stream_cut` | the response's stream breaks before the response (a call may have run) |
//! | `tool.mcp_internal_error` | the JSON-RPC error -32603 |
//! | `tool.mcp_version_mismatch` | `initialize` answered with `2024-11-05`, whatever it asked |
//! | `tool.mcp_tools_changed` | a tool goes away (or comes back), with `notifications/tools/list_changed` on an SSE stream |
//! | `tool.mcp_no_response` | nothing, until its own timeout fires |
//!
//! A server answers either with single JSON objects or with SSE streams, drawn once per
//! server under the seed, as real ones are configured one way or the other.
//!
//! A session that negotiated 2025-03-26 may send JSON-RPC batches, which that revision
//! requires servers to receive; later revisions removed them, and their sessions get 400
//! -32600 for one (`streamable.rs` cites the text).
//!
//! In a simulation, put a server on SimNetwork and point the client at its URL:
//!
//! ```
//! # fn demo(sim: &umi_dst::SimEnvironment) {
//! use serde_json::json;
//! use umi_dst::mcp::SimMcpServer;
//! use umi_dst::network::SimNetwork;
//! use umi_dst::tools::{SimTool, SimTools};
//!
//! let tools = SimTools::new(sim).with(SimTool::new("get_weather", "today's weather", json!({"type": "object"})));
//! let network = SimNetwork::new(sim).with_mcp("http://tools.sim/mcp", SimMcpServer::new("weather", tools));
//! # let _ = network;
//! # }
//! ```
//!
//! `dst serve` serves one at `/mcp` for agents in any language (see `crate::serve`).
//! The protocol's 2026-07-28 revision (stateless, `server/discover`) is not served: a
//! client that probes with `server/discover` gets the 400 a handshake-era server
//! answers, and falls back to `initialize`, as the official Python SDK's `auto` mode does.

mod dispatch;
pub(crate) mod host;
mod jsonrpc;
mod session;
pub(crate) mod streamable;

pub use host::{MCP_SILENCE_MS, MCP_SSE_PROBABILITY};
pub use session::{McpSession, SESSIONS_MAX, Sessions};
pub use streamable::{PROTOCOL_VERSION_HEADER, SESSION_HEADER, origin_allowed};

use crate::tools::SimTools;

/// The protocol versions served, latest first (the `initialize` negotiation answers a
/// client's version when it is here, else the first).
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The versions whose sessions may send JSON-RPC batches: 2025-03-26 alone (it added
/// them, PR #228; 2025-06-18 removed them, PR #416): the Streamable HTTP module says why.
pub const BATCH_PROTOCOL_VERSIONS: &[&str] = &["2025-03-26"];

/// The oldest version served: what `tool.mcp_version_mismatch` answers.
pub const PROTOCOL_VERSION_OLDEST: &str = "2024-11-05";

/// The `_meta` key of a `tools/call` that carries the model's tool-call id, so the
/// effect ledger knows the logical call (`_meta` keys take a `name/` prefix, MCP
/// 2025-11-25, basic, `_meta`). Without it, a call is known by its JSON-RPC id.
pub const CALL_ID_META_KEY: &str = "umi.dev/tool_call_id";

/// One simulated MCP server: its identity and the tools it serves.
#[derive(Debug, Clone)]
pub struct SimMcpServer {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) tools: SimTools,
    pub(crate) page_size: Option<usize>,
    pub(crate) instructions: Option<String>,
}

impl SimMcpServer {
    /// A server named `name` (its `serverInfo`) serving `tools`, all on one page.
    pub fn new(name: &str, tools: SimTools) -> Self {
        Self {
            name: name.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            tools,
            page_size: None,
            instructions: None,
        }
    }

    /// `tools/list` pages of at most `tools` tools (a client must follow `nextCursor`).
    ///
    /// # Panics
    /// When `tools` is 0.
    pub fn with_page_size(mut self, tools: usize) -> Self {
        assert!(tools > 0, "a page holds at least one tool");
        self.page_size = Some(tools);
        self
    }

    /// The `instructions` its `initialize` result carries.
    pub fn with_instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.to_owned());
        self
    }

    /// The tools it serves (and their effect ledger).
    pub fn tools(&self) -> &SimTools {
        &self.tools
    }
}
