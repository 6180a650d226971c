//! What a trace event is, as a typed record: one variant per kind the harness records,
//! with its fields, and one for events recorded by name (umi-core's code, scenarios and
//! users record through `Environment::record`).
//!
//! A record's [`TraceKind::name`] and its `Display` text are exactly the kind and the
//! detail the trace held as strings before the records were typed, and the trace hashes
//! those bytes ([`TraceKind::name`], then the detail cut to `TRACE_DETAIL_BYTES_MAX`):
//! so every seed's trace hash, and every golden built on one, kept its meaning. A change
//! to a variant's text is a change to the hash of every run that records it.
//!
//! Fields hold names (`&'static str`) rather than the harness's own types (`FaultKind`,
//! `Profile`, …): the trace sits below every module that records into it, and a field
//! of their type would make an import circle.

use std::fmt;
use std::time::Duration;

/// One event of a run, typed. `Display` is the event's detail text.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceKind {
    /// `sim.start`: the run's seed and epoch.
    SimStart {
        /// The seed.
        seed: u64,
        /// The simulated wall clock at the start, ms since the Unix epoch.
        epoch_ms: u64,
    },
    /// `sim.fault`: one configured fault rule, as its config reads.
    SimFault {
        /// The rule's text.
        rule: String,
    },
    /// `sim.swarm`: what swarm testing drew for the run's rules.
    SimSwarm {
        /// Each draw's text.
        drawn: Vec<String>,
    },
    /// `schedule.yield`: a seeded interleaving point yielded.
    ScheduleYield {
        /// The point's label.
        label: String,
        /// How many times it yielded.
        yields: u64,
    },
    /// `clock.jump`: the wall clock jumped (the `clock.jump` fault).
    ClockJump {
        /// The jump, ms (negative: backwards).
        delta_ms: i64,
    },
    /// `sleep`: code slept on the environment's clock.
    Sleep {
        /// How long.
        duration: Duration,
    },
    /// `cover`: a coverage mark was hit.
    Cover {
        /// The mark.
        mark: &'static str,
    },
    /// `fault`: a fault was injected.
    Fault {
        /// The fault kind's name.
        kind: &'static str,
        /// The operation it hit.
        operation: String,
        /// The rule's index in the run's fault configs.
        rule: u32,
        /// Which of the rule's matching operations (1-based).
        ordinal: u64,
    },
    /// `fault.heal`: every fault off from now on.
    FaultHeal,
    /// `storage.reopen`: a simulated disk reopened its database.
    StorageReopen {
        /// Which storage.
        backend: &'static str,
    },
    /// `storage.slow`: a storage operation was delayed.
    StorageSlow {
        /// The operation.
        operation: String,
        /// The delay.
        delay: Duration,
    },
    /// `storage.rot`: a stored value's checksum was flipped.
    StorageRot {
        /// The value's key.
        key: String,
    },
    /// `llm.call`: SimLLM took a request.
    LlmCall {
        /// The model (`provider/model`).
        model: String,
        /// The route that answers.
        route: String,
        /// The operation (the request's task, or `llm.call`).
        operation: String,
        /// The first bytes of the request's hash.
        request: [u8; 4],
        /// How many times this request was seen before.
        occurrence: u64,
        /// The request's estimated prompt tokens.
        prompt_tokens: u32,
    },
    /// `llm.near_miss`: an answer bent to just miss its schema.
    LlmNearMiss {
        /// The kind of miss.
        miss: &'static str,
        /// Where, as a JSON path.
        path: String,
    },
    /// `llm.corrupt`: an answer corrupted (`llm.invalid_response`: `unparseable`;
    /// `llm.wrong_content`: `malformed`, `wrong_shape`, `empty`).
    LlmCorrupt {
        /// The corruption's name.
        corruption: &'static str,
    },
    /// `llm.filter`: an answer cut by a content filter.
    LlmFilter {
        /// The text kept.
        kept_bytes: usize,
    },
    /// `llm.answer`: SimLLM's answer.
    LlmAnswer {
        /// The model (`provider/model`).
        model: String,
        /// The finish reason.
        finish: String,
        /// Prompt tokens used.
        prompt_tokens: u32,
        /// Completion tokens used.
        completion_tokens: u32,
        /// The answer's whole latency.
        latency: Duration,
        /// Where a `llm.stream_cut` cuts the stream: how, and after which event.
        cut: Option<(&'static str, usize)>,
    },
    /// `llm.untagged`: task routes that untagged requests cannot match.
    LlmUntagged {
        /// The routes' tasks.
        tasks: Vec<String>,
    },
    /// `llm.refuse`: SimLLM refused a request.
    LlmRefuse {
        /// The model (`provider/model`).
        model: String,
        /// The error's text.
        error: String,
        /// The error's kind (`rate_limit`: umi-core's `LlmErrorKind`). Not in the text
        /// (so not in the hash): the OTLP export's `error.type`.
        error_kind: &'static str,
        /// The refused call's `llm.call` (its `request` and `occurrence`), `None` for a
        /// request refused before it was traced (an invalid one). Not in the text: what
        /// pairs the refusal with its call in the OTLP export when calls overlap.
        call: Option<([u8; 4], u64)>,
    },
    /// `net.request`: a request reached the simulated network.
    NetRequest {
        /// The HTTP method.
        method: String,
        /// The URL (a key in it masked).
        url: String,
        /// Who serves it: the endpoint's profile, or `mcp`.
        served_by: &'static str,
        /// The first bytes of the hash of what the response depends on (the URL and the
        /// body); `None` where it is not traced (MCP).
        body: Option<[u8; 4]>,
    },
    /// `net.bad_request`: a server refused a request it could not parse.
    NetBadRequest {
        /// The server's message.
        message: String,
    },
    /// `net.model_not_found`: a request named a model the endpoint does not serve.
    NetModelNotFound {
        /// The endpoint.
        base_url: String,
        /// The model asked for.
        asked: String,
        /// The model served.
        served: String,
    },
    /// `net.proxy`: a proxy's error page instead of the server's answer.
    NetProxy {
        /// The page's status.
        status: u16,
        /// The page's coverage mark.
        mark: &'static str,
    },
    /// `net.refuse`: a server answered with an error.
    NetRefuse {
        /// The endpoint's profile.
        profile: &'static str,
        /// The status.
        status: u16,
        /// The error's kind.
        error: &'static str,
    },
    /// `net.cut`: a response body cut (a `network.body` fault).
    NetCut {
        /// The fault kind's name.
        fault: &'static str,
        /// Bytes passed before the cut.
        after_bytes: u64,
    },
    /// `net.down`: a request to an endpoint that is down.
    NetDown {
        /// The endpoint.
        base_url: String,
    },
    /// `net.embed`: an embeddings request served.
    NetEmbed {
        /// The model.
        model: String,
        /// How many inputs.
        inputs: usize,
        /// The vectors' dimensions.
        dimensions: u32,
    },
    /// `net.embed_fault`: an embeddings answer bent by a fault.
    NetEmbedFault {
        /// The fault kind's name.
        fault: &'static str,
        /// Which vector.
        vector: usize,
    },
    /// `cassette.fault`: a fault replaced a recorded exchange.
    CassetteFault {
        /// The fault kind's name, if one decided it.
        fault: Option<&'static str>,
        /// The exchange's index in the cassette.
        exchange: usize,
    },
    /// `cassette.replay`: a recorded exchange replayed.
    CassetteReplay {
        /// The exchange's index in the cassette.
        exchange: usize,
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
        /// The response's status.
        status: u16,
        /// The response body's length.
        body_bytes: usize,
        /// How the recorded response ended, as its `Debug` text.
        end: String,
    },
    /// `cassette.miss`: no recorded exchange matches a request.
    CassetteMiss {
        /// The miss, as it reads.
        miss: String,
    },
    /// `cassette.cut`: a replayed body cut by a fault.
    CassetteCut {
        /// The fault kind's name.
        fault: &'static str,
        /// Bytes passed before the cut.
        after_bytes: u64,
    },
    /// `foreign`: a third-party client seen in the run.
    Foreign {
        /// The client's name.
        client: String,
    },
    /// `tool.call`: a simulated tool was called.
    ToolCall {
        /// The tool.
        name: String,
        /// The call's id.
        call_id: String,
        /// What happened, as the outcome's `Debug` text.
        outcome: String,
        /// The call's latency.
        latency_ms: u64,
        /// Whether the tool's effect ran.
        ran: bool,
    },
    /// `tool.invalid_params`: arguments the tool's schema refuses.
    ToolInvalidParams {
        /// The tool.
        tool: String,
        /// The call's id.
        call_id: String,
        /// Where, as a JSON path.
        path: String,
        /// Why.
        reason: String,
    },
    /// `mcp.refused`: the MCP server refused a request before it reached a session.
    McpRefused {
        /// The HTTP method.
        method: String,
        /// The refusal's status.
        status: u16,
    },
    /// `mcp.initialize`: an MCP session began (or its `initialize` failed).
    McpInitialize {
        /// The session id.
        session: String,
        /// The protocol version answered.
        version: &'static str,
        /// The version the client asked for.
        asked: Option<String>,
    },
    /// `mcp.request`: a request in an MCP session answered.
    McpRequest {
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
    McpSessionExpired {
        /// The session id.
        session: String,
        /// The method the expiry answered.
        method: String,
    },
    /// `mcp.session_end`: the client ended a session.
    McpSessionEnd {
        /// The session id.
        session: String,
    },
    /// An event recorded by name (`Environment::record`): umi-core's router and agent,
    /// scenarios and users.
    Named {
        /// The dotted kind.
        kind: &'static str,
        /// What happened.
        detail: String,
    },
}

impl TraceKind {
    /// The dotted kind, as the trace shows and hashes it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SimStart { .. } => "sim.start",
            Self::SimFault { .. } => "sim.fault",
            Self::SimSwarm { .. } => "sim.swarm",
            Self::ScheduleYield { .. } => "schedule.yield",
            Self::ClockJump { .. } => "clock.jump",
            Self::Sleep { .. } => "sleep",
            Self::Cover { .. } => "cover",
            Self::Fault { .. } => "fault",
            Self::FaultHeal => "fault.heal",
            Self::StorageReopen { .. } => "storage.reopen",
            Self::StorageSlow { .. } => "storage.slow",
            Self::StorageRot { .. } => "storage.rot",
            Self::LlmCall { .. } => "llm.call",
            Self::LlmNearMiss { .. } => "llm.near_miss",
            Self::LlmCorrupt { .. } => "llm.corrupt",
            Self::LlmFilter { .. } => "llm.filter",
            Self::LlmAnswer { .. } => "llm.answer",
            Self::LlmUntagged { .. } => "llm.untagged",
            Self::LlmRefuse { .. } => "llm.refuse",
            Self::NetRequest { .. } => "net.request",
            Self::NetBadRequest { .. } => "net.bad_request",
            Self::NetModelNotFound { .. } => "net.model_not_found",
            Self::NetProxy { .. } => "net.proxy",
            Self::NetRefuse { .. } => "net.refuse",
            Self::NetCut { .. } => "net.cut",
            Self::NetDown { .. } => "net.down",
            Self::NetEmbed { .. } => "net.embed",
            Self::NetEmbedFault { .. } => "net.embed_fault",
            Self::CassetteFault { .. } => "cassette.fault",
            Self::CassetteReplay { .. } => "cassette.replay",
            Self::CassetteMiss { .. } => "cassette.miss",
            Self::CassetteCut { .. } => "cassette.cut",
            Self::Foreign { .. } => "foreign",
            Self::ToolCall { .. } => "tool.call",
            Self::ToolInvalidParams { .. } => "tool.invalid_params",
            Self::McpRefused { .. } => "mcp.refused",
            Self::McpInitialize { .. } => "mcp.initialize",
            Self::McpRequest { .. } => "mcp.request",
            Self::McpSessionExpired { .. } => "mcp.session_expired",
            Self::McpSessionEnd { .. } => "mcp.session_end",
            Self::Named { kind, .. } => kind,
        }
    }

    /// The detail as plain text without formatting, where it is a field as it is (what
    /// the trace keeps without a copy through the formatter).
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::SimFault { rule: text }
            | Self::StorageRot { key: text }
            | Self::NetBadRequest { message: text }
            | Self::NetDown { base_url: text }
            | Self::CassetteMiss { miss: text }
            | Self::Foreign { client: text }
            | Self::McpSessionEnd { session: text }
            | Self::Named { detail: text, .. } => Some(text),
            Self::Cover { mark: text }
            | Self::StorageReopen { backend: text }
            | Self::LlmCorrupt { corruption: text } => Some(text),
            Self::FaultHeal => Some(FAULT_HEAL_TEXT),
            // Listed, not `_`: a new variant is a compile error here until it says
            // whether its detail is a field as it is.
            Self::SimStart { .. }
            | Self::SimSwarm { .. }
            | Self::ScheduleYield { .. }
            | Self::ClockJump { .. }
            | Self::Sleep { .. }
            | Self::Fault { .. }
            | Self::StorageSlow { .. }
            | Self::LlmCall { .. }
            | Self::LlmNearMiss { .. }
            | Self::LlmFilter { .. }
            | Self::LlmAnswer { .. }
            | Self::LlmUntagged { .. }
            | Self::LlmRefuse { .. }
            | Self::NetRequest { .. }
            | Self::NetModelNotFound { .. }
            | Self::NetProxy { .. }
            | Self::NetRefuse { .. }
            | Self::NetCut { .. }
            | Self::NetEmbed { .. }
            | Self::NetEmbedFault { .. }
            | Self::CassetteFault { .. }
            | Self::CassetteReplay { .. }
            | Self::CassetteCut { .. }
            | Self::ToolCall { .. }
            | Self::ToolInvalidParams { .. }
            | Self::McpRefused { .. }
            | Self::McpInitialize { .. }
            | Self::McpRequest { .. }
            | Self::McpSessionExpired { .. } => None,
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

/// `fault.heal`'s detail.
const FAULT_HEAL_TEXT: &str = "all faults off";

/// Four bytes as eight hex digits.
struct Hex4<'a>(&'a [u8; 4]);

impl fmt::Display for Hex4<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a:02x}{b:02x}{c:02x}{d:02x}")
    }
}

/// The event's detail, exactly as the trace shows and hashes it (before the cut).
///
/// One exhaustive `match` (no `_`): a new variant does not compile until it says what
/// it prints. Variants with many fields hand them to a function of their own.
impl fmt::Display for TraceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SimFault { rule: text }
            | Self::StorageRot { key: text }
            | Self::NetBadRequest { message: text }
            | Self::NetDown { base_url: text }
            | Self::CassetteMiss { miss: text }
            | Self::Foreign { client: text }
            | Self::McpSessionEnd { session: text }
            | Self::Named { detail: text, .. } => f.write_str(text),
            Self::Cover { mark: text }
            | Self::StorageReopen { backend: text }
            | Self::LlmCorrupt { corruption: text } => f.write_str(text),
            Self::FaultHeal => f.write_str(FAULT_HEAL_TEXT),
            Self::SimStart { seed, epoch_ms } => write!(f, "seed={seed} epoch_ms={epoch_ms}"),
            Self::SimSwarm { drawn } => f.write_str(&drawn.join(" ")),
            Self::ScheduleYield { label, yields } => write!(f, "{label} yields={yields}"),
            Self::ClockJump { delta_ms } => write!(f, "{delta_ms:+} ms"),
            Self::Sleep { duration } => write!(f, "{} ms", duration.as_millis()),
            Self::Fault {
                kind,
                operation,
                rule,
                ordinal,
            } => {
                write!(f, "{kind} on {operation} (rule {rule}:{ordinal})")
            }
            Self::StorageSlow { operation, delay } => {
                write!(f, "{operation} +{} ms", delay.as_millis())
            }
            Self::LlmCall {
                model,
                route,
                operation,
                request,
                occurrence,
                prompt_tokens,
            } => fmt_llm_call(
                f,
                model,
                route,
                operation,
                request,
                *occurrence,
                *prompt_tokens,
            ),
            Self::LlmNearMiss { miss, path } => write!(f, "{miss} at {path}"),
            Self::LlmFilter { kept_bytes } => write!(f, "kept {kept_bytes} bytes"),
            Self::LlmAnswer {
                model,
                finish,
                prompt_tokens,
                completion_tokens,
                latency,
                cut,
            } => {
                let usage = (*prompt_tokens, *completion_tokens);
                fmt_llm_answer(f, model, finish, usage, *latency, *cut)
            }
            Self::LlmUntagged { tasks } => write!(
                f,
                "routes for tasks {tasks:?} cannot match requests without a task tag (over SimNetwork none has one): use FnRoute::for_task_or"
            ),
            Self::LlmRefuse { model, error, .. } => write!(f, "{model} {error}"),
            Self::NetRequest {
                method,
                url,
                served_by,
                body,
            } => fmt_net_request(f, method, url, served_by, body.as_ref()),
            Self::NetModelNotFound {
                base_url,
                asked,
                served,
            } => {
                write!(
                    f,
                    "{base_url} asked for {asked:?}; this endpoint serves {served:?}"
                )
            }
            Self::NetProxy { status, mark } => write!(f, "{status} {mark}"),
            Self::NetRefuse {
                profile,
                status,
                error,
            } => write!(f, "{profile} {status} {error}"),
            Self::NetCut { fault, after_bytes } | Self::CassetteCut { fault, after_bytes } => {
                write!(f, "{fault} after {after_bytes} bytes")
            }
            Self::NetEmbed {
                model,
                inputs,
                dimensions,
            } => {
                write!(f, "{model} {inputs} inputs, {dimensions} dimensions")
            }
            Self::NetEmbedFault { fault, vector } => write!(f, "{fault} vector {vector}"),
            Self::CassetteFault { fault, exchange } => {
                write!(f, "{} replaces exchange {exchange}", fault.unwrap_or("-"))
            }
            Self::CassetteReplay {
                exchange,
                method,
                path,
                status,
                body_bytes,
                end,
            } => write!(
                f,
                "exchange {exchange} {method} {path} -> {status} ({body_bytes} bytes, {end})"
            ),
            Self::ToolCall {
                name,
                call_id,
                outcome,
                latency_ms,
                ran,
            } => write!(
                f,
                "{name} {call_id} outcome={outcome} latency_ms={latency_ms} ran={ran}"
            ),
            Self::ToolInvalidParams {
                tool,
                call_id,
                path,
                reason,
            } => {
                write!(f, "{tool} {call_id} at {path}: {reason}")
            }
            Self::McpRefused { method, status } => write!(f, "{method} {status}"),
            Self::McpInitialize {
                session,
                version,
                asked,
            } => {
                write!(f, "session={session} version={version} asked={asked:?}")
            }
            Self::McpRequest {
                session,
                method,
                id,
                reply,
            } => {
                write!(f, "{session} {method} id={id} reply={reply}")
            }
            Self::McpSessionExpired { session, method } => write!(f, "{session} at {method}"),
        }
    }
}

/// `llm.call`'s detail.
fn fmt_llm_call(
    f: &mut fmt::Formatter<'_>,
    model: &str,
    route: &str,
    operation: &str,
    request: &[u8; 4],
    occurrence: u64,
    prompt_tokens: u32,
) -> fmt::Result {
    write!(
        f,
        "{model} route={route} op={operation} req={} n={occurrence} prompt_tokens={prompt_tokens}",
        Hex4(request)
    )
}

/// `llm.answer`'s detail; `usage` is (prompt, completion) tokens.
fn fmt_llm_answer(
    f: &mut fmt::Formatter<'_>,
    model: &str,
    finish: &str,
    (prompt_tokens, completion_tokens): (u32, u32),
    latency: Duration,
    cut: Option<(&str, usize)>,
) -> fmt::Result {
    write!(
        f,
        "{model} finish={finish} usage={prompt_tokens}+{completion_tokens} latency_ms={}",
        latency.as_millis()
    )?;
    match cut {
        Some((how, at)) => write!(f, " cut={how}@{at}"),
        None => Ok(()),
    }
}

/// `net.request`'s detail.
fn fmt_net_request(
    f: &mut fmt::Formatter<'_>,
    method: &str,
    url: &str,
    served_by: &str,
    body: Option<&[u8; 4]>,
) -> fmt::Result {
    write!(f, "{method} {url} ({served_by})")?;
    match body {
        Some(body) => write!(f, " body={}", Hex4(body)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
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
                TraceKind::SimStart {
                    seed: 7,
                    epoch_ms: 1_700_000_000_000,
                },
                "sim.start",
                "seed=7 epoch_ms=1700000000000",
            ),
            (
                TraceKind::SimSwarm {
                    drawn: vec![s("a"), s("b")],
                },
                "sim.swarm",
                "a b",
            ),
            (
                TraceKind::ScheduleYield {
                    label: s("tool.call.start"),
                    yields: 2,
                },
                "schedule.yield",
                "tool.call.start yields=2",
            ),
            (TraceKind::ClockJump { delta_ms: 5 }, "clock.jump", "+5 ms"),
            (TraceKind::ClockJump { delta_ms: -5 }, "clock.jump", "-5 ms"),
            (
                TraceKind::Sleep {
                    duration: Duration::from_micros(1_500),
                },
                "sleep",
                "1 ms",
            ),
            (TraceKind::Cover { mark: "a.b" }, "cover", "a.b"),
            (
                TraceKind::Fault {
                    kind: "llm.rate_limit",
                    operation: s("llm.call"),
                    rule: 0,
                    ordinal: 3,
                },
                "fault",
                "llm.rate_limit on llm.call (rule 0:3)",
            ),
            (TraceKind::FaultHeal, "fault.heal", "all faults off"),
            (
                TraceKind::StorageSlow {
                    operation: s("storage.write"),
                    delay: Duration::from_millis(12),
                },
                "storage.slow",
                "storage.write +12 ms",
            ),
            (
                TraceKind::LlmCall {
                    model: s("sim/m"),
                    route: s("builtin"),
                    operation: s("llm.call"),
                    request: [0x0a, 0xbc, 0x00, 0xff],
                    occurrence: 1,
                    prompt_tokens: 42,
                },
                "llm.call",
                "sim/m route=builtin op=llm.call req=0abc00ff n=1 prompt_tokens=42",
            ),
            (
                TraceKind::LlmNearMiss {
                    miss: "wrong_type",
                    path: s("$.a"),
                },
                "llm.near_miss",
                "wrong_type at $.a",
            ),
            (
                TraceKind::LlmFilter { kept_bytes: 3 },
                "llm.filter",
                "kept 3 bytes",
            ),
            (
                TraceKind::LlmAnswer {
                    model: s("sim/m"),
                    finish: s("stop"),
                    prompt_tokens: 10,
                    completion_tokens: 4,
                    latency: Duration::from_millis(250),
                    cut: None,
                },
                "llm.answer",
                "sim/m finish=stop usage=10+4 latency_ms=250",
            ),
            (
                TraceKind::LlmAnswer {
                    model: s("sim/m"),
                    finish: s("stop"),
                    prompt_tokens: 10,
                    completion_tokens: 4,
                    latency: Duration::from_millis(250),
                    cut: Some(("server_error", 2)),
                },
                "llm.answer",
                "sim/m finish=stop usage=10+4 latency_ms=250 cut=server_error@2",
            ),
            (
                TraceKind::LlmUntagged {
                    tasks: vec![s("a"), s("b")],
                },
                "llm.untagged",
                "routes for tasks [\"a\", \"b\"] cannot match requests without a task tag (over SimNetwork none has one): use FnRoute::for_task_or",
            ),
            // The refusal's kind and call are typed fields for the OTLP export, not
            // text: the hash of a run with a refusal is what it was before they came.
            (
                TraceKind::LlmRefuse {
                    model: s("sim/m"),
                    error: s("rate limited; retry after 20 ms"),
                    error_kind: "rate_limit",
                    call: Some(([1, 2, 3, 4], 2)),
                },
                "llm.refuse",
                "sim/m rate limited; retry after 20 ms",
            ),
            (
                TraceKind::NetRequest {
                    method: s("POST"),
                    url: s("https://x.sim/v1/chat"),
                    served_by: "openai",
                    body: Some([1, 2, 3, 0xab]),
                },
                "net.request",
                "POST https://x.sim/v1/chat (openai) body=010203ab",
            ),
            (
                TraceKind::NetRequest {
                    method: s("POST"),
                    url: s("https://x.sim/mcp"),
                    served_by: "mcp",
                    body: None,
                },
                "net.request",
                "POST https://x.sim/mcp (mcp)",
            ),
            (
                TraceKind::NetModelNotFound {
                    base_url: s("https://x.sim"),
                    asked: s("a"),
                    served: s("b"),
                },
                "net.model_not_found",
                "https://x.sim asked for \"a\"; this endpoint serves \"b\"",
            ),
            (
                TraceKind::NetRefuse {
                    profile: "openai",
                    status: 429,
                    error: "rate_limit",
                },
                "net.refuse",
                "openai 429 rate_limit",
            ),
            (
                TraceKind::NetCut {
                    fault: "network.reset",
                    after_bytes: 10,
                },
                "net.cut",
                "network.reset after 10 bytes",
            ),
            (
                TraceKind::NetEmbed {
                    model: s("e"),
                    inputs: 2,
                    dimensions: 8,
                },
                "net.embed",
                "e 2 inputs, 8 dimensions",
            ),
            (
                TraceKind::CassetteFault {
                    fault: None,
                    exchange: 4,
                },
                "cassette.fault",
                "- replaces exchange 4",
            ),
            (
                TraceKind::CassetteReplay {
                    exchange: 4,
                    method: s("POST"),
                    path: s("/v1/chat"),
                    status: 200,
                    body_bytes: 99,
                    end: s("Complete"),
                },
                "cassette.replay",
                "exchange 4 POST /v1/chat -> 200 (99 bytes, Complete)",
            ),
            (
                TraceKind::ToolCall {
                    name: s("search"),
                    call_id: s("c1"),
                    outcome: s("Ok"),
                    latency_ms: 30,
                    ran: true,
                },
                "tool.call",
                "search c1 outcome=Ok latency_ms=30 ran=true",
            ),
            (
                TraceKind::ToolInvalidParams {
                    tool: s("search"),
                    call_id: s("c1"),
                    path: s("$.q"),
                    reason: s("missing"),
                },
                "tool.invalid_params",
                "search c1 at $.q: missing",
            ),
            (
                TraceKind::McpInitialize {
                    session: s("ab12"),
                    version: "2025-06-18",
                    asked: Some(s("2025-06-18")),
                },
                "mcp.initialize",
                "session=ab12 version=2025-06-18 asked=Some(\"2025-06-18\")",
            ),
            (
                TraceKind::McpInitialize {
                    session: s("ab12"),
                    version: "2024-11-05",
                    asked: None,
                },
                "mcp.initialize",
                "session=ab12 version=2024-11-05 asked=None",
            ),
            (
                TraceKind::McpRequest {
                    session: s("ab12"),
                    method: s("tools/call"),
                    id: s("\"7\""),
                    reply: "message",
                },
                "mcp.request",
                "ab12 tools/call id=\"7\" reply=message",
            ),
            (
                TraceKind::McpSessionExpired {
                    session: s("ab12"),
                    method: s("tools/list"),
                },
                "mcp.session_expired",
                "ab12 at tools/list",
            ),
            (
                TraceKind::McpRefused {
                    method: s("GET"),
                    status: 405,
                },
                "mcp.refused",
                "GET 405",
            ),
            (
                TraceKind::SimFault {
                    rule: s("llm.rate_limit p=0.1"),
                },
                "sim.fault",
                "llm.rate_limit p=0.1",
            ),
            (
                TraceKind::StorageReopen { backend: "sqlite" },
                "storage.reopen",
                "sqlite",
            ),
            (
                TraceKind::StorageRot { key: s("memory/7") },
                "storage.rot",
                "memory/7",
            ),
            (
                TraceKind::LlmCorrupt {
                    corruption: "truncated",
                },
                "llm.corrupt",
                "truncated",
            ),
            (
                TraceKind::NetBadRequest {
                    message: s("bad json"),
                },
                "net.bad_request",
                "bad json",
            ),
            (
                TraceKind::NetProxy {
                    status: 502,
                    mark: "proxy.bad_gateway",
                },
                "net.proxy",
                "502 proxy.bad_gateway",
            ),
            (
                TraceKind::NetDown {
                    base_url: s("http://a/v1"),
                },
                "net.down",
                "http://a/v1",
            ),
            (
                TraceKind::NetEmbedFault {
                    fault: "embed.nan",
                    vector: 2,
                },
                "net.embed_fault",
                "embed.nan vector 2",
            ),
            (
                TraceKind::CassetteMiss {
                    miss: s("POST /v1/chat"),
                },
                "cassette.miss",
                "POST /v1/chat",
            ),
            (
                TraceKind::CassetteCut {
                    fault: "cassette.cut",
                    after_bytes: 12,
                },
                "cassette.cut",
                "cassette.cut after 12 bytes",
            ),
            (TraceKind::Foreign { client: s("rig") }, "foreign", "rig"),
            (
                TraceKind::McpSessionEnd { session: s("ab12") },
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

    /// How many variants `TraceKind` has.
    const VARIANTS: usize = 41;

    /// Each variant's place, by an exhaustive `match`: a new variant does not compile
    /// until it has a number here, and the test above fails until it has a sample.
    fn variant_index(kind: &TraceKind) -> usize {
        match kind {
            TraceKind::SimStart { .. } => 0,
            TraceKind::SimFault { .. } => 1,
            TraceKind::SimSwarm { .. } => 2,
            TraceKind::ScheduleYield { .. } => 3,
            TraceKind::ClockJump { .. } => 4,
            TraceKind::Sleep { .. } => 5,
            TraceKind::Cover { .. } => 6,
            TraceKind::Fault { .. } => 7,
            TraceKind::FaultHeal => 8,
            TraceKind::StorageReopen { .. } => 9,
            TraceKind::StorageSlow { .. } => 10,
            TraceKind::StorageRot { .. } => 11,
            TraceKind::LlmCall { .. } => 12,
            TraceKind::LlmNearMiss { .. } => 13,
            TraceKind::LlmCorrupt { .. } => 14,
            TraceKind::LlmFilter { .. } => 15,
            TraceKind::LlmAnswer { .. } => 16,
            TraceKind::LlmUntagged { .. } => 17,
            TraceKind::LlmRefuse { .. } => 18,
            TraceKind::NetRequest { .. } => 19,
            TraceKind::NetBadRequest { .. } => 20,
            TraceKind::NetModelNotFound { .. } => 21,
            TraceKind::NetProxy { .. } => 22,
            TraceKind::NetRefuse { .. } => 23,
            TraceKind::NetCut { .. } => 24,
            TraceKind::NetDown { .. } => 25,
            TraceKind::NetEmbed { .. } => 26,
            TraceKind::NetEmbedFault { .. } => 27,
            TraceKind::CassetteFault { .. } => 28,
            TraceKind::CassetteReplay { .. } => 29,
            TraceKind::CassetteMiss { .. } => 30,
            TraceKind::CassetteCut { .. } => 31,
            TraceKind::Foreign { .. } => 32,
            TraceKind::ToolCall { .. } => 33,
            TraceKind::ToolInvalidParams { .. } => 34,
            TraceKind::McpRefused { .. } => 35,
            TraceKind::McpInitialize { .. } => 36,
            TraceKind::McpRequest { .. } => 37,
            TraceKind::McpSessionExpired { .. } => 38,
            TraceKind::McpSessionEnd { .. } => 39,
            TraceKind::Named { .. } => 40,
        }
    }
}
