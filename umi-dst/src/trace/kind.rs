//! What a trace event is, as a typed record: one variant per concern of the harness (the
//! run, the clocks, the fault injector, storage, SimLLM, the network, cassettes, tools,
//! MCP), each an enum of that concern's events with their fields, and one for events
//! recorded by name (umi-core's code, scenarios and users record through
//! `Environment::record`).
//!
//! A record's [`TraceKind::name`] and its `Display` text are exactly the kind and the
//! detail the trace held as strings before the records were typed, and the trace hashes
//! those bytes ([`TraceKind::name`], then the detail cut to `TRACE_DETAIL_BYTES_MAX`):
//! so every seed's trace hash, and every golden built on one, kept its meaning. A change
//! to a variant's text is a change to the hash of every run that records it.
//!
//! Each concern's enum has its own exhaustive `name`, text and `Display` (no `_`): a new
//! event does not compile until it says what it is called and what it prints, and no
//! `match` is longer than its concern. [`TraceKind`]'s own are a line per concern.
//!
//! Fields hold names (`&'static str`) rather than the harness's own types (`FaultKind`,
//! `Profile`, …): the trace sits below every module that records into it, and a field
//! of their type would make an import circle.

use std::fmt;

mod cassette;
mod clock;
mod fault;
mod llm;
mod mcp;
mod net;
mod run;
mod storage;
mod tool;

pub use cassette::CassetteEvent;
pub use clock::ClockEvent;
pub use fault::FaultEvent;
pub use llm::LlmEvent;
pub use mcp::McpEvent;
pub use net::NetEvent;
pub use run::RunEvent;
pub use storage::StorageEvent;
pub use tool::ToolEvent;

/// One event of a run, typed, by concern. `Display` is the event's detail text.
///
/// A recorder passes its concern's event (`trace.emit(LlmEvent::Call { .. })`): each
/// converts into a `TraceKind`.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceKind {
    /// The run's own events (`sim.*`, `schedule.yield`, `cover`, `foreign`).
    Run(RunEvent),
    /// The clocks' (`clock.jump`, `sleep`).
    Clock(ClockEvent),
    /// The fault injector's (`fault`, `fault.heal`).
    Fault(FaultEvent),
    /// Simulated storage's (`storage.*`).
    Storage(StorageEvent),
    /// SimLLM's (`llm.*`).
    Llm(LlmEvent),
    /// The simulated network's (`net.*`).
    Net(NetEvent),
    /// Cassette replay's (`cassette.*`).
    Cassette(CassetteEvent),
    /// Simulated tools' (`tool.*`).
    Tool(ToolEvent),
    /// The simulated MCP server's (`mcp.*`).
    Mcp(McpEvent),
    /// An event recorded by name (`Environment::record`): umi-core's router and agent,
    /// scenarios and users.
    Named {
        /// The dotted kind.
        kind: &'static str,
        /// What happened.
        detail: String,
    },
}

/// `From<Event> for TraceKind`, for each concern's event.
macro_rules! from_events {
    ($($variant:ident($event:ident),)*) => {
        $(
            impl From<$event> for TraceKind {
                fn from(event: $event) -> Self {
                    Self::$variant(event)
                }
            }
        )*
    };
}

from_events! {
    Run(RunEvent),
    Clock(ClockEvent),
    Fault(FaultEvent),
    Storage(StorageEvent),
    Llm(LlmEvent),
    Net(NetEvent),
    Cassette(CassetteEvent),
    Tool(ToolEvent),
    Mcp(McpEvent),
}

impl TraceKind {
    /// The dotted kind, as the trace shows and hashes it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Run(event) => event.name(),
            Self::Clock(event) => event.name(),
            Self::Fault(event) => event.name(),
            Self::Storage(event) => event.name(),
            Self::Llm(event) => event.name(),
            Self::Net(event) => event.name(),
            Self::Cassette(event) => event.name(),
            Self::Tool(event) => event.name(),
            Self::Mcp(event) => event.name(),
            Self::Named { kind, .. } => kind,
        }
    }

    /// The detail as plain text without formatting, where it is a field as it is (what
    /// the trace keeps without a copy through the formatter).
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::Run(event) => event.text(),
            Self::Fault(event) => event.text(),
            Self::Storage(event) => event.text(),
            Self::Llm(event) => event.text(),
            Self::Net(event) => event.text(),
            Self::Cassette(event) => event.text(),
            Self::Mcp(event) => event.text(),
            Self::Named { detail, .. } => Some(detail),
            // No event of theirs is a field as it is.
            Self::Clock(_) | Self::Tool(_) => None,
        }
    }

    /// The detail text (what `Display` writes), before the trace cuts it.
    pub fn detail(&self) -> String {
        match self.text() {
            Some(text) => text.to_owned(),
            None => self.to_string(),
        }
    }
}

/// Four bytes as eight hex digits.
struct Hex4<'a>(&'a [u8; 4]);

impl fmt::Display for Hex4<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a:02x}{b:02x}{c:02x}{d:02x}")
    }
}

/// The event's detail, exactly as the trace shows and hashes it (before the cut): each
/// concern's `Display`, exhaustive over its events.
impl fmt::Display for TraceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Run(event) => event.fmt(f),
            Self::Clock(event) => event.fmt(f),
            Self::Fault(event) => event.fmt(f),
            Self::Storage(event) => event.fmt(f),
            Self::Llm(event) => event.fmt(f),
            Self::Net(event) => event.fmt(f),
            Self::Cassette(event) => event.fmt(f),
            Self::Tool(event) => event.fmt(f),
            Self::Mcp(event) => event.fmt(f),
            Self::Named { detail, .. } => f.write_str(detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn s(text: &str) -> String {
        text.to_owned()
    }

    /// Each record's kind and text are what the trace held (and hashed) when events were
    /// strings: the texts here are the old `format!`s' output, so a change to any
    /// variant's `Display` (which would change every hash of a run recording it) fails
    /// here first.
    #[test]
    fn records_read_as_the_strings_they_replaced() {
        let cases = [
            (
                TraceKind::Run(RunEvent::Start {
                    seed: 7,
                    epoch_ms: 1_700_000_000_000,
                }),
                "sim.start",
                "seed=7 epoch_ms=1700000000000",
            ),
            (
                TraceKind::Run(RunEvent::Swarm {
                    drawn: vec![s("a"), s("b")],
                }),
                "sim.swarm",
                "a b",
            ),
            (
                TraceKind::Run(RunEvent::Yield {
                    label: s("tool.call.start"),
                    yields: 2,
                }),
                "schedule.yield",
                "tool.call.start yields=2",
            ),
            (
                TraceKind::Clock(ClockEvent::Jump { delta_ms: 5 }),
                "clock.jump",
                "+5 ms",
            ),
            (
                TraceKind::Clock(ClockEvent::Jump { delta_ms: -5 }),
                "clock.jump",
                "-5 ms",
            ),
            (
                TraceKind::Clock(ClockEvent::Sleep {
                    duration: Duration::from_micros(1_500),
                }),
                "sleep",
                "1 ms",
            ),
            (
                TraceKind::Run(RunEvent::Cover { mark: "a.b" }),
                "cover",
                "a.b",
            ),
            (
                TraceKind::Fault(FaultEvent::Injected {
                    kind: "llm.rate_limit",
                    operation: s("llm.call"),
                    rule: 0,
                    ordinal: 3,
                }),
                "fault",
                "llm.rate_limit on llm.call (rule 0:3)",
            ),
            (
                TraceKind::Fault(FaultEvent::Heal),
                "fault.heal",
                "all faults off",
            ),
            (
                TraceKind::Storage(StorageEvent::Slow {
                    operation: s("storage.write"),
                    delay: Duration::from_millis(12),
                }),
                "storage.slow",
                "storage.write +12 ms",
            ),
            (
                TraceKind::Llm(LlmEvent::Call {
                    model: s("sim/m"),
                    route: s("builtin"),
                    operation: s("llm.call"),
                    request: [0x0a, 0xbc, 0x00, 0xff],
                    occurrence: 1,
                    prompt_tokens: 42,
                }),
                "llm.call",
                "sim/m route=builtin op=llm.call req=0abc00ff n=1 prompt_tokens=42",
            ),
            (
                TraceKind::Llm(LlmEvent::NearMiss {
                    miss: "wrong_type",
                    path: s("$.a"),
                }),
                "llm.near_miss",
                "wrong_type at $.a",
            ),
            (
                TraceKind::Llm(LlmEvent::Filter { kept_bytes: 3 }),
                "llm.filter",
                "kept 3 bytes",
            ),
            (
                TraceKind::Llm(LlmEvent::Answer {
                    model: s("sim/m"),
                    finish: s("stop"),
                    prompt_tokens: 10,
                    completion_tokens: 4,
                    latency: Duration::from_millis(250),
                    cut: None,
                }),
                "llm.answer",
                "sim/m finish=stop usage=10+4 latency_ms=250",
            ),
            (
                TraceKind::Llm(LlmEvent::Answer {
                    model: s("sim/m"),
                    finish: s("stop"),
                    prompt_tokens: 10,
                    completion_tokens: 4,
                    latency: Duration::from_millis(250),
                    cut: Some(("server_error", 2)),
                }),
                "llm.answer",
                "sim/m finish=stop usage=10+4 latency_ms=250 cut=server_error@2",
            ),
            (
                TraceKind::Llm(LlmEvent::Untagged {
                    tasks: vec![s("a"), s("b")],
                }),
                "llm.untagged",
                "routes for tasks [\"a\", \"b\"] cannot match requests without a task tag (over SimNetwork none has one): use FnRoute::for_task_or",
            ),
            // The refusal's kind and call are typed fields for the OTLP export, not
            // text: the hash of a run with a refusal is what it was before they came.
            (
                TraceKind::Llm(LlmEvent::Refuse {
                    model: s("sim/m"),
                    error: s("rate limited; retry after 20 ms"),
                    error_kind: "rate_limit",
                    call: Some(([1, 2, 3, 4], 2)),
                }),
                "llm.refuse",
                "sim/m rate limited; retry after 20 ms",
            ),
            (
                TraceKind::Net(NetEvent::Request {
                    method: s("POST"),
                    url: s("https://x.sim/v1/chat"),
                    served_by: "openai",
                    body: Some([1, 2, 3, 0xab]),
                }),
                "net.request",
                "POST https://x.sim/v1/chat (openai) body=010203ab",
            ),
            (
                TraceKind::Net(NetEvent::Request {
                    method: s("POST"),
                    url: s("https://x.sim/mcp"),
                    served_by: "mcp",
                    body: None,
                }),
                "net.request",
                "POST https://x.sim/mcp (mcp)",
            ),
            (
                TraceKind::Net(NetEvent::ModelNotFound {
                    base_url: s("https://x.sim"),
                    asked: s("a"),
                    served: s("b"),
                }),
                "net.model_not_found",
                "https://x.sim asked for \"a\"; this endpoint serves \"b\"",
            ),
            (
                TraceKind::Net(NetEvent::Refuse {
                    profile: "openai",
                    status: 429,
                    error: "rate_limit",
                }),
                "net.refuse",
                "openai 429 rate_limit",
            ),
            (
                TraceKind::Net(NetEvent::Cut {
                    fault: "network.reset",
                    after_bytes: 10,
                }),
                "net.cut",
                "network.reset after 10 bytes",
            ),
            (
                TraceKind::Net(NetEvent::Embed {
                    model: s("e"),
                    inputs: 2,
                    dimensions: 8,
                }),
                "net.embed",
                "e 2 inputs, 8 dimensions",
            ),
            (
                TraceKind::Cassette(CassetteEvent::Fault {
                    fault: None,
                    exchange: 4,
                }),
                "cassette.fault",
                "- replaces exchange 4",
            ),
            (
                TraceKind::Cassette(CassetteEvent::Replay {
                    exchange: 4,
                    method: s("POST"),
                    path: s("/v1/chat"),
                    status: 200,
                    body_bytes: 99,
                    end: s("Complete"),
                }),
                "cassette.replay",
                "exchange 4 POST /v1/chat -> 200 (99 bytes, Complete)",
            ),
            (
                TraceKind::Tool(ToolEvent::Call {
                    name: s("search"),
                    call_id: s("c1"),
                    outcome: s("Ok"),
                    latency_ms: 30,
                    ran: true,
                }),
                "tool.call",
                "search c1 outcome=Ok latency_ms=30 ran=true",
            ),
            (
                TraceKind::Tool(ToolEvent::InvalidParams {
                    tool: s("search"),
                    call_id: s("c1"),
                    path: s("$.q"),
                    reason: s("missing"),
                }),
                "tool.invalid_params",
                "search c1 at $.q: missing",
            ),
            (
                TraceKind::Mcp(McpEvent::Initialize {
                    session: s("ab12"),
                    version: "2025-06-18",
                    asked: Some(s("2025-06-18")),
                }),
                "mcp.initialize",
                "session=ab12 version=2025-06-18 asked=Some(\"2025-06-18\")",
            ),
            (
                TraceKind::Mcp(McpEvent::Initialize {
                    session: s("ab12"),
                    version: "2024-11-05",
                    asked: None,
                }),
                "mcp.initialize",
                "session=ab12 version=2024-11-05 asked=None",
            ),
            (
                TraceKind::Mcp(McpEvent::Request {
                    session: s("ab12"),
                    method: s("tools/call"),
                    id: s("\"7\""),
                    reply: "message",
                }),
                "mcp.request",
                "ab12 tools/call id=\"7\" reply=message",
            ),
            (
                TraceKind::Mcp(McpEvent::SessionExpired {
                    session: s("ab12"),
                    method: s("tools/list"),
                }),
                "mcp.session_expired",
                "ab12 at tools/list",
            ),
            (
                TraceKind::Mcp(McpEvent::Refused {
                    method: s("GET"),
                    status: 405,
                }),
                "mcp.refused",
                "GET 405",
            ),
            (
                TraceKind::Run(RunEvent::FaultRule {
                    rule: s("llm.rate_limit p=0.1"),
                }),
                "sim.fault",
                "llm.rate_limit p=0.1",
            ),
            (
                TraceKind::Storage(StorageEvent::Reopen { backend: "sqlite" }),
                "storage.reopen",
                "sqlite",
            ),
            (
                TraceKind::Storage(StorageEvent::Rot { key: s("memory/7") }),
                "storage.rot",
                "memory/7",
            ),
            (
                TraceKind::Llm(LlmEvent::Corrupt {
                    corruption: "truncated",
                }),
                "llm.corrupt",
                "truncated",
            ),
            (
                TraceKind::Net(NetEvent::BadRequest {
                    message: s("bad json"),
                }),
                "net.bad_request",
                "bad json",
            ),
            (
                TraceKind::Net(NetEvent::Proxy {
                    status: 502,
                    mark: "proxy.bad_gateway",
                }),
                "net.proxy",
                "502 proxy.bad_gateway",
            ),
            (
                TraceKind::Net(NetEvent::Down {
                    base_url: s("http://a/v1"),
                }),
                "net.down",
                "http://a/v1",
            ),
            (
                TraceKind::Net(NetEvent::EmbedFault {
                    fault: "embed.nan",
                    vector: 2,
                }),
                "net.embed_fault",
                "embed.nan vector 2",
            ),
            (
                TraceKind::Cassette(CassetteEvent::Miss {
                    miss: s("POST /v1/chat"),
                }),
                "cassette.miss",
                "POST /v1/chat",
            ),
            (
                TraceKind::Cassette(CassetteEvent::Cut {
                    fault: "cassette.cut",
                    after_bytes: 12,
                }),
                "cassette.cut",
                "cassette.cut after 12 bytes",
            ),
            (
                TraceKind::Run(RunEvent::Foreign { client: s("rig") }),
                "foreign",
                "rig",
            ),
            (
                TraceKind::Mcp(McpEvent::SessionEnd { session: s("ab12") }),
                "mcp.session_end",
                "ab12",
            ),
            (
                TraceKind::Named {
                    kind: "agent.end",
                    detail: s("max_iterations 3"),
                },
                "agent.end",
                "max_iterations 3",
            ),
        ];
        let mut sampled = [false; VARIANTS];
        for (record, kind, text) in cases {
            sampled[variant_index(&record)] = true;
            assert_eq!(record.name(), kind);
            assert_eq!(record.to_string(), text, "{kind}");
            assert_eq!(record.detail(), text, "{kind}");
        }
        let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !sampled[i]).collect();
        assert!(missing.is_empty(), "variants without a sample: {missing:?}");
    }

    /// How many events `TraceKind` has, over its concerns.
    const VARIANTS: usize = 41;

    /// Each variant's place, by an exhaustive `match`: a new variant does not compile
    /// until it has a number here, and the test above fails until it has a sample.
    fn variant_index(kind: &TraceKind) -> usize {
        match kind {
            TraceKind::Run(RunEvent::Start { .. }) => 0,
            TraceKind::Run(RunEvent::FaultRule { .. }) => 1,
            TraceKind::Run(RunEvent::Swarm { .. }) => 2,
            TraceKind::Run(RunEvent::Yield { .. }) => 3,
            TraceKind::Clock(ClockEvent::Jump { .. }) => 4,
            TraceKind::Clock(ClockEvent::Sleep { .. }) => 5,
            TraceKind::Run(RunEvent::Cover { .. }) => 6,
            TraceKind::Fault(FaultEvent::Injected { .. }) => 7,
            TraceKind::Fault(FaultEvent::Heal) => 8,
            TraceKind::Storage(StorageEvent::Reopen { .. }) => 9,
            TraceKind::Storage(StorageEvent::Slow { .. }) => 10,
            TraceKind::Storage(StorageEvent::Rot { .. }) => 11,
            TraceKind::Llm(LlmEvent::Call { .. }) => 12,
            TraceKind::Llm(LlmEvent::NearMiss { .. }) => 13,
            TraceKind::Llm(LlmEvent::Corrupt { .. }) => 14,
            TraceKind::Llm(LlmEvent::Filter { .. }) => 15,
            TraceKind::Llm(LlmEvent::Answer { .. }) => 16,
            TraceKind::Llm(LlmEvent::Untagged { .. }) => 17,
            TraceKind::Llm(LlmEvent::Refuse { .. }) => 18,
            TraceKind::Net(NetEvent::Request { .. }) => 19,
            TraceKind::Net(NetEvent::BadRequest { .. }) => 20,
            TraceKind::Net(NetEvent::ModelNotFound { .. }) => 21,
            TraceKind::Net(NetEvent::Proxy { .. }) => 22,
            TraceKind::Net(NetEvent::Refuse { .. }) => 23,
            TraceKind::Net(NetEvent::Cut { .. }) => 24,
            TraceKind::Net(NetEvent::Down { .. }) => 25,
            TraceKind::Net(NetEvent::Embed { .. }) => 26,
            TraceKind::Net(NetEvent::EmbedFault { .. }) => 27,
            TraceKind::Cassette(CassetteEvent::Fault { .. }) => 28,
            TraceKind::Cassette(CassetteEvent::Replay { .. }) => 29,
            TraceKind::Cassette(CassetteEvent::Miss { .. }) => 30,
            TraceKind::Cassette(CassetteEvent::Cut { .. }) => 31,
            TraceKind::Run(RunEvent::Foreign { .. }) => 32,
            TraceKind::Tool(ToolEvent::Call { .. }) => 33,
            TraceKind::Tool(ToolEvent::InvalidParams { .. }) => 34,
            TraceKind::Mcp(McpEvent::Refused { .. }) => 35,
            TraceKind::Mcp(McpEvent::Initialize { .. }) => 36,
            TraceKind::Mcp(McpEvent::Request { .. }) => 37,
            TraceKind::Mcp(McpEvent::SessionExpired { .. }) => 38,
            TraceKind::Mcp(McpEvent::SessionEnd { .. }) => 39,
            TraceKind::Named { .. } => 40,
        }
    }
}
