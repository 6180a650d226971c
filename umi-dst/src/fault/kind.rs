//! The fault catalog: every kind of fault the harness can inject, by domain.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a fault can happen. A fault fires only on operations of its own domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FaultDomain {
    /// Calls to a language model (SimLLM).
    Llm,
    /// Reads and writes of durable state (SimStorage).
    Storage,
    /// Bytes on the wire between a client and a model server (SimNetwork).
    Network,
    /// The wall clock (monotonic time never jumps).
    Clock,
    /// Calls of an agent's tools (SimTools): what real tools and MCP servers do.
    Tool,
}

impl FaultDomain {
    /// The domain's name, which is also the prefix of its operation names.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Llm => "llm",
            Self::Storage => "storage",
            Self::Network => "network",
            Self::Clock => "clock",
            Self::Tool => "tool",
        }
    }
}

impl fmt::Display for FaultDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A [`FaultKind`] as its domain's own enum: what a simulator matches on, so that its
/// `match` lists every kind of its domain (a new one fails to compile there until the
/// simulator decides about it) and names the other domains as a whole, where a `_` would
/// also swallow a kind added to its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByDomain {
    Llm(LlmKind),
    Storage(StorageKind),
    Network(NetworkKind),
    Clock(ClockKind),
    Tool(ToolKind),
}

/// The kinds of [`FaultDomain::Llm`] (calls and embeddings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LlmKind {
    Timeout,
    RateLimit,
    ContextOverflow,
    InvalidResponse,
    ServiceUnavailable,
    StreamCut,
    ContentFilter,
    ModelNotFound,
    EmbeddingWrongDimensions,
    EmbeddingTruncated,
    EmbeddingMissing,
    WrongContent,
}

/// The kinds of [`FaultDomain::Storage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StorageKind {
    WriteFail,
    ReadFail,
    DeleteFail,
    Corruption,
    DiskFull,
    Latency,
}

/// The kinds of [`FaultDomain::Network`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetworkKind {
    ConnectionRefused,
    Reset,
    Timeout,
    PartialWrite,
    SlowFirstByte,
    ProxyError,
}

/// The kinds of [`FaultDomain::Clock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClockKind {
    Jump,
}

/// The kinds of [`FaultDomain::Tool`] (SimTools' calls and the MCP server's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    Timeout,
    ErrorResult,
    TransportError,
    MalformedResult,
    Slow,
    EmptyResult,
    McpSessionExpired,
    McpStreamCut,
    McpInternalError,
    McpVersionMismatch,
    McpToolsChanged,
    McpNoResponse,
}

/// `Domain::Short` as a [`ByDomain`] value (the catalog below names each kind so).
macro_rules! by_domain {
    (Llm :: $short:ident) => {
        ByDomain::Llm(LlmKind::$short)
    };
    (Storage :: $short:ident) => {
        ByDomain::Storage(StorageKind::$short)
    };
    (Network :: $short:ident) => {
        ByDomain::Network(NetworkKind::$short)
    };
    (Clock :: $short:ident) => {
        ByDomain::Clock(ClockKind::$short)
    };
    (Tool :: $short:ident) => {
        ByDomain::Tool(ToolKind::$short)
    };
}

impl FaultKind {
    /// The kind if it is an LLM one (`None`: another domain's).
    pub(crate) const fn llm(self) -> Option<LlmKind> {
        match self.by_domain() {
            ByDomain::Llm(kind) => Some(kind),
            ByDomain::Storage(_)
            | ByDomain::Network(_)
            | ByDomain::Clock(_)
            | ByDomain::Tool(_) => None,
        }
    }

    /// The kind if it is a storage one (`None`: another domain's).
    pub(crate) const fn storage(self) -> Option<StorageKind> {
        match self.by_domain() {
            ByDomain::Storage(kind) => Some(kind),
            ByDomain::Llm(_) | ByDomain::Network(_) | ByDomain::Clock(_) | ByDomain::Tool(_) => {
                None
            }
        }
    }

    /// The kind if it is a tool one (`None`: another domain's).
    pub(crate) const fn tool(self) -> Option<ToolKind> {
        match self.by_domain() {
            ByDomain::Tool(kind) => Some(kind),
            ByDomain::Llm(_) | ByDomain::Storage(_) | ByDomain::Network(_) | ByDomain::Clock(_) => {
                None
            }
        }
    }

    /// The kind if it is a network one (`None`: another domain's).
    pub(crate) const fn network(self) -> Option<NetworkKind> {
        match self.by_domain() {
            ByDomain::Network(kind) => Some(kind),
            ByDomain::Llm(_) | ByDomain::Storage(_) | ByDomain::Clock(_) | ByDomain::Tool(_) => {
                None
            }
        }
    }
}

macro_rules! fault_kinds {
    ($( $(#[$doc:meta])* $variant:ident => ($domain:ident :: $short:ident, $name:literal), )*) => {
        /// One kind of fault. Its name (`llm.timeout`) is how configs, reports and the
        /// trace refer to it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum FaultKind {
            $( $(#[$doc])* $variant, )*
        }

        impl FaultKind {
            /// Every kind, in catalog order.
            pub const ALL: &'static [FaultKind] = &[ $( FaultKind::$variant, )* ];

            /// The domain whose operations this kind can fire on.
            pub const fn domain(self) -> FaultDomain {
                match self { $( FaultKind::$variant => FaultDomain::$domain, )* }
            }

            /// The kind's dotted name, e.g. `storage.write_fail`.
            pub const fn name(self) -> &'static str {
                match self { $( FaultKind::$variant => $name, )* }
            }

            /// The kind as its domain's own enum (see [`ByDomain`]).
            pub(crate) const fn by_domain(self) -> ByDomain {
                match self { $( FaultKind::$variant => by_domain!($domain :: $short), )* }
            }
        }
    };
}

fault_kinds! {
    /// The model does not answer within the caller's deadline (SimLLM stalls in simulated
    /// time, so the caller's own timeout code fires).
    LlmTimeout => (Llm::Timeout, "llm.timeout"),
    /// HTTP 429 with a Retry-After.
    LlmRateLimit => (Llm::RateLimit, "llm.rate_limit"),
    /// The provider rejects the prompt as longer than the context window.
    LlmContextOverflow => (Llm::ContextOverflow, "llm.context_overflow"),
    /// A 200 whose body the client cannot parse: a whole body cut mid-JSON, or a stream
    /// whose next frame breaks off mid-JSON and ends (the provider's own shape, cut).
    LlmInvalidResponse => (Llm::InvalidResponse, "llm.invalid_response"),
    /// HTTP 5xx: the provider is overloaded or down.
    LlmServiceUnavailable => (Llm::ServiceUnavailable, "llm.service_unavailable"),
    /// A stream that ends early: a broken connection, a server error after the 200, or
    /// an end without Done.
    LlmStreamCut => (Llm::StreamCut, "llm.stream_cut"),
    /// The provider's content filter stops the answer part-way (finish reason
    /// `content_filter`).
    LlmContentFilter => (Llm::ContentFilter, "llm.content_filter"),
    /// The provider does not serve the model asked for (it was retired, or the key
    /// cannot see it).
    LlmModelNotFound => (Llm::ModelNotFound, "llm.model_not_found"),
    /// A write is refused and nothing is stored.
    StorageWriteFail => (Storage::WriteFail, "storage.write_fail"),
    /// A read fails.
    StorageReadFail => (Storage::ReadFail, "storage.read_fail"),
    /// A delete fails and the record stays.
    StorageDeleteFail => (Storage::DeleteFail, "storage.delete_fail"),
    /// Stored bytes rot; a checksum must catch it on read.
    StorageCorruption => (Storage::Corruption, "storage.corruption"),
    /// The disk is full: writes fail until space frees.
    StorageDiskFull => (Storage::DiskFull, "storage.disk_full"),
    /// The operation succeeds, late (simulated time).
    StorageLatency => (Storage::Latency, "storage.latency"),
    /// Nothing listens at the endpoint.
    NetworkConnectionRefused => (Network::ConnectionRefused, "network.connection_refused"),
    /// The connection drops in the middle of a body.
    NetworkReset => (Network::Reset, "network.reset"),
    /// The server never answers, or stops sending mid-body: a hang past the client's
    /// timeout (or idle timeout).
    NetworkTimeout => (Network::Timeout, "network.timeout"),
    /// Only part of the body arrives before the connection closes cleanly.
    NetworkPartialWrite => (Network::PartialWrite, "network.partial_write"),
    /// The first byte comes late, then the rest at normal speed.
    NetworkSlowFirstByte => (Network::SlowFirstByte, "network.slow_first_byte"),
    /// A CDN or reverse proxy in front of the server answers 502/504 with its own page
    /// (Cloudflare's JSON or HTML, nginx's HTML).
    NetworkProxyError => (Network::ProxyError, "network.proxy_error"),
    /// The wall clock jumps forwards or backwards (monotonic time does not).
    ClockJump => (Clock::Jump, "clock.jump"),
    /// The tool never answers in time: the call stalls in simulated time, so the agent's
    /// own tool timeout fires. A tool with side effects may have applied them first.
    ToolTimeout => (Tool::Timeout, "tool.timeout"),
    /// The tool answers with an error result (MCP's `isError: true`): it ran and failed.
    ToolErrorResult => (Tool::ErrorResult, "tool.error_result"),
    /// The call never reaches the tool (a connection refused or reset on the way).
    ToolTransportError => (Tool::TransportError, "tool.transport_error"),
    /// The tool answers with a result that is not what its output schema says: broken
    /// JSON, or a value of the wrong type.
    ToolMalformedResult => (Tool::MalformedResult, "tool.malformed_result"),
    /// The tool answers correctly, late.
    ToolSlow => (Tool::Slow, "tool.slow"),
    /// The tool answers with a valid but empty result (`[]`, `{}`, `""`).
    ToolEmptyResult => (Tool::EmptyResult, "tool.empty_result"),
    /// An MCP server has forgotten the session (it expired, or the server restarted): a
    /// request carrying its id gets 404, and the client must initialize again (MCP
    /// 2025-11-25, transports, session management, rules 3 and 4).
    McpSessionExpired => (Tool::McpSessionExpired, "tool.mcp_session_expired"),
    /// An MCP response is cut before it is whole (an SSE stream before its response, a
    /// JSON body halfway): the answer is lost, and a `tools/call` may have run, so a
    /// client that sends it again may do it twice.
    McpStreamCut => (Tool::McpStreamCut, "tool.mcp_stream_cut"),
    /// The MCP server answers with a JSON-RPC error: -32603, internal error.
    McpInternalError => (Tool::McpInternalError, "tool.mcp_internal_error"),
    /// `initialize` is answered with a protocol version the client did not ask for: the
    /// server's oldest, `2024-11-05`, as a server on an old SDK answers (lifecycle,
    /// version negotiation). The client decides whether it can go on.
    McpVersionMismatch => (Tool::McpVersionMismatch, "tool.mcp_version_mismatch"),
    /// The server's tool list changes at this request: a tool goes away (or comes back),
    /// and `notifications/tools/list_changed` is sent on the response's SSE stream.
    McpToolsChanged => (Tool::McpToolsChanged, "tool.mcp_tools_changed"),
    /// The MCP server never answers the request: the client's own timeout must fire.
    McpNoResponse => (Tool::McpNoResponse, "tool.mcp_no_response"),
    /// An embeddings answer with one vector of the wrong length: one number more or fewer
    /// than the others, or than the request asked for.
    LlmEmbeddingWrongDimensions => (Llm::EmbeddingWrongDimensions, "llm.embedding_wrong_dimensions"),
    /// An embeddings answer with one vector cut short part-way.
    LlmEmbeddingTruncated => (Llm::EmbeddingTruncated, "llm.embedding_truncated"),
    /// An embeddings answer with fewer vectors than the request had inputs.
    LlmEmbeddingMissing => (Llm::EmbeddingMissing, "llm.embedding_missing"),
    /// A well-formed response whose content is plausible but wrong: for a structured
    /// request a near miss of its schema; else text that is not what was asked (cut JSON,
    /// JSON of the wrong shape), a call of a tool that was not offered or with cut
    /// arguments, or nothing at all (finish reason `stop`). The client parses it; only
    /// the agent can tell.
    LlmWrongContent => (Llm::WrongContent, "llm.wrong_content"),
}

impl FaultKind {
    /// The kinds of one domain, in catalog order.
    pub fn in_domain(domain: FaultDomain) -> impl Iterator<Item = FaultKind> {
        Self::ALL
            .iter()
            .copied()
            .filter(move |kind| kind.domain() == domain)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault name that is not in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fault kind {name:?}; known kinds: {}", known_names())]
pub struct UnknownFaultKind {
    /// The name that was given.
    pub name: String,
}

fn known_names() -> String {
    FaultKind::ALL
        .iter()
        .map(|kind| kind.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for FaultKind {
    type Err = UnknownFaultKind;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| UnknownFaultKind {
                name: name.to_owned(),
            })
    }
}

impl Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FaultKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_start_with_their_domain_and_round_trip() {
        for kind in FaultKind::ALL {
            let prefix = format!("{}.", kind.domain());
            assert!(kind.name().starts_with(&prefix), "{kind}");
            assert_eq!(kind.name().parse::<FaultKind>(), Ok(*kind));
        }
        let names: std::collections::BTreeSet<&str> =
            FaultKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), FaultKind::ALL.len(), "names are unique");
    }

    #[test]
    fn unknown_names_list_the_catalog() {
        let error = "llm.explode".parse::<FaultKind>().unwrap_err();
        assert!(error.to_string().contains("llm.explode"));
        assert!(error.to_string().contains("storage.disk_full"));
    }

    /// Every domain has kinds to inject, and the domains split the catalog: each kind is
    /// in exactly the domain its name starts with.
    #[test]
    fn the_domains_split_the_catalog_and_none_is_empty() {
        let domains = [
            FaultDomain::Llm,
            FaultDomain::Storage,
            FaultDomain::Network,
            FaultDomain::Clock,
            FaultDomain::Tool,
        ];
        // A new domain must join the list above (this match stops compiling otherwise).
        for domain in domains {
            match domain {
                FaultDomain::Llm
                | FaultDomain::Storage
                | FaultDomain::Network
                | FaultDomain::Clock
                | FaultDomain::Tool => {}
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for domain in domains {
            let kinds: Vec<FaultKind> = FaultKind::in_domain(domain).collect();
            assert!(!kinds.is_empty(), "{domain} has no fault kinds");
            for kind in kinds {
                assert!(
                    kind.name().starts_with(&format!("{domain}.")),
                    "{kind} in {domain}"
                );
                assert!(seen.insert(kind), "{kind} is in two domains");
            }
        }
        assert_eq!(seen.len(), FaultKind::ALL.len(), "a kind is in no domain");
    }
}
