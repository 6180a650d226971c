//! The walk over a run's trace events that makes its spans (the table of what becomes
//! what is in the module docs of [`super`]).
//!
//! The trace is one flat sequence, so spans are paired from what the harness guarantees
//! about it: SimLLM traces a call's `llm.call`, the faults decided for it and its
//! `llm.answer` (or `llm.refuse`) without yielding in between, except for a timeout's
//! stall, whose `llm.refuse` names its call (`call`); a tool call's fault is decided just
//! before its `tool.call`; a model endpoint's `net.request` comes just before the
//! `llm.call` it carries, and its `net.refuse` just after the refusal. MCP requests are
//! paired with their `net.request` first in, first out (concurrent MCP requests may swap
//! their start times; nothing else is shared).

use std::collections::VecDeque;
use std::time::Duration;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

use super::semconv as sc;
use super::spans::{CallError, Fault, McpCall, ModelCall, SpanIndex, SpanSpec, Spans, ToolCall};
use crate::trace::{
    CassetteEvent, ClockEvent, FaultEvent, LlmEvent, McpEvent, NetEvent, RunEvent, StorageEvent,
    ToolEvent, TraceEvent, TraceKind,
};

/// The most model calls open at once (traced, not yet answered); past it the oldest is
/// closed as unfinished.
pub const OPEN_CALLS_MAX: usize = 1_024;

/// The most events waiting for their span (MCP requests' starts, tool and MCP faults);
/// past it the oldest goes to the root span (a fault) or is forgotten (a start).
pub const PENDING_MAX: usize = 1_024;

/// The profile name SimNetwork's MCP server traces its requests under.
const MCP_SERVED_BY: &str = "mcp";

/// A model call traced by `llm.call`, not yet answered.
struct OpenCall {
    /// Its `llm.call` key (request hash prefix, occurrence).
    key: ([u8; 4], u64),
    call: ModelCall,
    /// Whether it came over HTTP (a model endpoint's `net.request` just before).
    http: bool,
}

/// The walk's state.
pub(super) struct Walk {
    spans: Spans,
    root: Option<SpanIndex>,
    open: Vec<OpenCall>,
    /// The last call answered or refused, kept until the next one so that what follows
    /// it (its `net.refuse`, a `network.body` fault) lands on it; with whether it came
    /// over HTTP.
    last: Option<(ModelCall, bool)>,
    /// A model endpoint's request not yet taken by a call: when, and the endpoint's
    /// profile.
    http_request: Option<(Duration, &'static str)>,
    mcp_starts: VecDeque<Duration>,
    tool_faults: VecDeque<Fault>,
    mcp_faults: VecDeque<Fault>,
    /// The latest time seen.
    end: Duration,
}

impl Walk {
    /// A walk adding spans to `spans`, under `root`.
    pub(super) fn new(spans: Spans, root: Option<SpanIndex>) -> Self {
        Self {
            spans,
            root,
            open: Vec::new(),
            last: None,
            http_request: None,
            mcp_starts: VecDeque::new(),
            tool_faults: VecDeque::new(),
            mcp_faults: VecDeque::new(),
            end: Duration::ZERO,
        }
    }

    /// Takes one event.
    pub(super) fn event(&mut self, event: &TraceEvent) {
        let at = event.at;
        self.end = self.end.max(at);
        match &event.record {
            TraceKind::Llm(llm) => self.llm(at, llm),
            TraceKind::Net(net) => self.net(at, net),
            TraceKind::Fault(FaultEvent::Injected {
                kind,
                operation,
                rule,
                ordinal,
            }) => self.fault(Fault {
                kind: (*kind).to_owned(),
                operation: operation.clone(),
                at,
                rule: Some(*rule),
                ordinal: Some(*ordinal),
            }),
            TraceKind::Tool(tool) => self.tool(at, tool),
            TraceKind::Mcp(mcp) => self.mcp(at, mcp),
            // No span of their own (a new event says here whether it becomes one).
            TraceKind::Run(
                RunEvent::Start { .. }
                | RunEvent::FaultRule { .. }
                | RunEvent::Swarm { .. }
                | RunEvent::Yield { .. }
                | RunEvent::Cover { .. }
                | RunEvent::Foreign { .. },
            )
            | TraceKind::Clock(ClockEvent::Jump { .. } | ClockEvent::Sleep { .. })
            | TraceKind::Fault(FaultEvent::Heal)
            | TraceKind::Storage(
                StorageEvent::Reopen { .. } | StorageEvent::Slow { .. } | StorageEvent::Rot { .. },
            )
            | TraceKind::Cassette(
                CassetteEvent::Fault { .. }
                | CassetteEvent::Replay { .. }
                | CassetteEvent::Miss { .. }
                | CassetteEvent::Cut { .. },
            )
            | TraceKind::Named { .. } => {}
        }
    }

    /// SimLLM's events: a call opens a span, its answer or refusal closes it.
    fn llm(&mut self, at: Duration, event: &LlmEvent) {
        match event {
            LlmEvent::Call { .. } => self.llm_call(at, event),
            LlmEvent::Answer { .. } => self.llm_answer(at, event),
            LlmEvent::Refuse { .. } => self.llm_refuse(at, event),
            // Said of the call's answer, which its `llm.answer` carries.
            LlmEvent::NearMiss { .. }
            | LlmEvent::Corrupt { .. }
            | LlmEvent::Filter { .. }
            | LlmEvent::Untagged { .. } => {}
        }
    }

    /// The network's events: a model endpoint's request starts the call it carries, a
    /// refusal gives the refused call its status, an embeddings request is a span.
    fn net(&mut self, at: Duration, event: &NetEvent) {
        match event {
            NetEvent::Request { served_by, .. } => self.net_request(at, served_by),
            NetEvent::Refuse { status, .. } => {
                // The refusal's answer over HTTP: the status of the call just refused.
                if let Some((last, true)) = self.last.as_mut()
                    && last.error.is_some()
                {
                    last.status_code = Some(*status);
                }
            }
            NetEvent::Embed { model, .. } => self.embeddings(at, model),
            NetEvent::BadRequest { .. }
            | NetEvent::ModelNotFound { .. }
            | NetEvent::Proxy { .. }
            | NetEvent::Cut { .. }
            | NetEvent::Down { .. }
            | NetEvent::EmbedFault { .. } => {}
        }
    }

    /// Closes what is still open at `run_end` and gives back the spans and the end of
    /// the latest span.
    pub(super) fn finish(mut self, run_end: Duration) -> (Spans, Duration) {
        self.flush_last();
        let end = run_end.max(self.end);
        for open in std::mem::take(&mut self.open) {
            let mut call = open.call;
            call.end = end;
            call.extra.push(sc::boolean(sc::UMI_CALL_UNFINISHED, true));
            self.spans.model_call(self.root, call);
        }
        let leftover: Vec<Fault> = self
            .tool_faults
            .drain(..)
            .chain(self.mcp_faults.drain(..))
            .collect();
        for fault in leftover {
            self.root_fault(&fault);
        }
        (self.spans, end)
    }

    fn llm_call(&mut self, at: Duration, record: &LlmEvent) {
        let LlmEvent::Call {
            model,
            route,
            operation,
            request,
            occurrence,
            prompt_tokens,
        } = record
        else {
            return;
        };
        self.flush_last();
        let mut call = model_call(sc::OPERATION_CHAT, model, at);
        call.input_tokens = Some(u64::from(*prompt_tokens));
        call.extra = vec![
            sc::string(sc::UMI_LLM_ROUTE, route.clone()),
            sc::string(sc::UMI_LLM_OPERATION, operation.clone()),
        ];
        let http = self.http_request.take().is_some();
        if self.open.len() >= OPEN_CALLS_MAX {
            let oldest = self.open.remove(0);
            let mut unfinished = oldest.call;
            unfinished.end = at;
            unfinished
                .extra
                .push(sc::boolean(sc::UMI_CALL_UNFINISHED, true));
            self.spans.model_call(self.root, unfinished);
        }
        self.open.push(OpenCall {
            key: (*request, *occurrence),
            call,
            http,
        });
    }

    fn llm_answer(&mut self, at: Duration, record: &LlmEvent) {
        let LlmEvent::Answer {
            model,
            finish,
            prompt_tokens,
            completion_tokens,
            latency,
            cut,
        } = record
        else {
            return;
        };
        // The answer follows its call without a yield: it is the latest open one.
        let (mut call, http) = match self.open.pop() {
            Some(open) => (open.call, open.http),
            None => (model_call(sc::OPERATION_CHAT, model, at), false),
        };
        if http {
            call.status_code = Some(200);
        }
        call.end = at + *latency;
        call.response_model = Some(split_model(model).1.to_owned());
        call.input_tokens = Some(u64::from(*prompt_tokens));
        call.output_tokens = Some(u64::from(*completion_tokens));
        call.finish_reasons = vec![finish.clone()];
        if let Some((how, after)) = cut {
            call.extra
                .push(sc::string(sc::UMI_LLM_STREAM_CUT, format!("{how}@{after}")));
            call.error = Some(CallError {
                error_type: "stream_cut".to_owned(),
                message: format!("the stream was cut ({how}) after event {after}"),
            });
        }
        self.end = self.end.max(call.end);
        self.flush_last();
        self.last = Some((call, http));
    }

    fn llm_refuse(&mut self, at: Duration, record: &LlmEvent) {
        let LlmEvent::Refuse {
            model,
            error,
            error_kind,
            call,
        } = record
        else {
            return;
        };
        let open = call.and_then(|key| self.open.iter().position(|open| open.key == key));
        let (mut refused, http) = match open {
            Some(index) => {
                let open = self.open.remove(index);
                (open.call, open.http)
            }
            // Refused before it was traced (an invalid request).
            None => (
                model_call(sc::OPERATION_CHAT, model, at),
                self.http_request.take().is_some(),
            ),
        };
        refused.end = at;
        refused.error = Some(CallError {
            error_type: (*error_kind).to_owned(),
            message: error.clone(),
        });
        self.flush_last();
        self.last = Some((refused, http));
    }

    fn net_request(&mut self, at: Duration, served_by: &'static str) {
        if served_by == MCP_SERVED_BY {
            if self.mcp_starts.len() >= PENDING_MAX {
                self.mcp_starts.pop_front();
            }
            self.mcp_starts.push_back(at);
        } else {
            self.http_request = Some((at, served_by));
        }
    }

    fn embeddings(&mut self, at: Duration, model: &str) {
        let profile = self.http_request.take().map(|(_, profile)| profile);
        let call = ModelCall {
            operation: sc::OPERATION_EMBEDDINGS.to_owned(),
            provider: profile.unwrap_or(PROVIDER_UNKNOWN).to_owned(),
            request_model: model.to_owned(),
            start: at,
            end: at,
            status_code: profile.map(|_| 200),
            ..ModelCall::default()
        };
        self.spans.model_call(self.root, call);
    }

    /// A fault, on the span of the operation it hit (the root when none is known).
    fn fault(&mut self, fault: Fault) {
        let operation = fault.operation.as_str();
        if operation.starts_with("llm.call") {
            // Decided between the call's `llm.call` and its answer, at its instant.
            match self.open.last_mut() {
                Some(open) if open.call.start == fault.at => open.call.faults.push(fault),
                _ => self.root_fault(&fault),
            }
        } else if operation.starts_with("tool.call") {
            push_bounded(&mut self.tool_faults, fault, &mut self.spans, self.root);
        } else if operation.starts_with("tool.mcp.") || operation.starts_with("mcp.") {
            // `tool.mcp.initialize`, `tool.mcp.request.<method>`: decided as the request
            // arrives, before its answer's `mcp.*` event.
            push_bounded(&mut self.mcp_faults, fault, &mut self.spans, self.root);
        } else if operation.starts_with("network.body")
            && let Some((last, true)) = self.last.as_mut()
        {
            // A body fault wraps the answer just served.
            last.faults.push(fault);
        } else {
            self.root_fault(&fault);
        }
    }

    fn tool(&mut self, at: Duration, record: &ToolEvent) {
        let call = match record {
            ToolEvent::Call {
                name,
                call_id,
                outcome,
                latency_ms,
                ran,
            } => ToolCall {
                name: name.clone(),
                call_id: call_id.clone(),
                start: at,
                end: at + Duration::from_millis(*latency_ms),
                error: tool_error(outcome),
                extra: vec![
                    sc::string(sc::UMI_TOOL_OUTCOME, outcome.clone()),
                    sc::boolean(sc::UMI_TOOL_RAN, *ran),
                ],
                ..ToolCall::default()
            },
            ToolEvent::InvalidParams {
                tool,
                call_id,
                path,
                reason,
            } => ToolCall {
                name: tool.clone(),
                call_id: call_id.clone(),
                start: at,
                end: at,
                error: Some(CallError {
                    error_type: "invalid_params".to_owned(),
                    message: format!("{path}: {reason}"),
                }),
                ..ToolCall::default()
            },
        };
        let qualified = format!("tool.call.{}", call.name);
        let (faults, rest): (Vec<Fault>, Vec<Fault>) = self
            .tool_faults
            .drain(..)
            .partition(|fault| fault.operation == qualified || fault.operation == "tool.call");
        self.tool_faults.extend(rest);
        self.end = self.end.max(call.end);
        self.spans.tool_call(self.root, ToolCall { faults, ..call });
    }

    /// The MCP server's events: an answered or refused request is a span, from its
    /// `net.request`, with the faults decided for it.
    fn mcp(&mut self, at: Duration, record: &McpEvent) {
        match record {
            McpEvent::Initialize {
                session, version, ..
            } => {
                let (start, faults) = self.mcp_pending(at);
                let call = McpCall {
                    method: "initialize".to_owned(),
                    session: Some(session.clone()),
                    start,
                    end: at,
                    extra: vec![sc::string(sc::MCP_PROTOCOL_VERSION, *version)],
                    faults,
                    ..McpCall::default()
                };
                self.spans.mcp_call(self.root, call);
            }
            McpEvent::Request {
                session,
                method,
                id,
                reply,
            } => {
                let (start, faults) = self.mcp_pending(at);
                let call = McpCall {
                    method: method.clone(),
                    session: Some(session.clone()),
                    request_id: Some(id.clone()),
                    start,
                    end: at,
                    error: (*reply != "result").then(|| CallError {
                        error_type: (*reply).to_owned(),
                        message: format!("the MCP server's reply: {reply}"),
                    }),
                    extra: vec![sc::string(sc::UMI_MCP_REPLY, *reply)],
                    faults,
                    ..McpCall::default()
                };
                self.spans.mcp_call(self.root, call);
            }
            McpEvent::Refused { method, status } => {
                let (start, faults) = self.mcp_pending(at);
                self.mcp_refused(start, at, method, *status, faults);
            }
            // No span of their own.
            McpEvent::SessionExpired { .. } | McpEvent::SessionEnd { .. } => {}
        }
    }

    /// The start of the MCP request answered at `at` (its `net.request`, first in,
    /// first out) and the faults decided for it.
    fn mcp_pending(&mut self, at: Duration) -> (Duration, Vec<Fault>) {
        let start = self.mcp_starts.pop_front().unwrap_or(at).min(at);
        (start, self.mcp_faults.drain(..).collect())
    }

    /// An MCP request refused at the HTTP level (no JSON-RPC method known): a CLIENT
    /// span named after the HTTP method, as the HTTP conventions name one.
    fn mcp_refused(
        &mut self,
        start: Duration,
        at: Duration,
        method: &str,
        status: u16,
        faults: Vec<Fault>,
    ) {
        let attributes: Vec<KeyValue> = vec![
            sc::string("http.request.method", method),
            sc::int(sc::HTTP_RESPONSE_STATUS_CODE, status),
        ];
        self.spans.span(SpanSpec {
            parent: self.root,
            name: method.to_owned(),
            kind: SpanKind::Client,
            start,
            end: at,
            attributes,
            error: Some(CallError {
                error_type: status.to_string(),
                message: format!("the MCP server refused the request with {status}"),
            }),
            faults,
        });
    }

    /// Adds the last answered call's span.
    fn flush_last(&mut self) {
        if let Some((last, _)) = self.last.take() {
            self.spans.model_call(self.root, last);
        }
    }

    fn root_fault(&mut self, fault: &Fault) {
        if let Some(root) = self.root {
            self.spans.fault(root, fault);
        }
    }
}

/// The provider name when nothing says which (`gen_ai.provider.name` is required).
const PROVIDER_UNKNOWN: &str = "umi.sim";

/// A model call of `model` (`provider/model`) opened at `at`.
fn model_call(operation: &str, model: &str, at: Duration) -> ModelCall {
    let (provider, name) = split_model(model);
    ModelCall {
        operation: operation.to_owned(),
        provider: provider.to_owned(),
        request_model: name.to_owned(),
        start: at,
        end: at,
        ..ModelCall::default()
    }
}

/// `provider/model` as (provider, model); a name without a provider is the model's.
fn split_model(model: &str) -> (&str, &str) {
    model.split_once('/').unwrap_or((PROVIDER_UNKNOWN, model))
}

/// A tool call's failure from its outcome (`Debug` of `tools::Outcome`): `None` when it
/// answered (late or empty included).
fn tool_error(outcome: &str) -> Option<CallError> {
    let (error_type, message) = match outcome {
        "ErrorResult" => ("tool_error", "the tool failed (an error result)"),
        "TransportError" => ("transport_error", "the call never reached the tool"),
        "Stall" => ("stall", "the tool did not answer"),
        "Malformed" => ("malformed_result", "the tool's result breaks its schema"),
        _ => return None,
    };
    Some(CallError {
        error_type: error_type.to_owned(),
        message: message.to_owned(),
    })
}

/// Queues `fault` for its span; past `PENDING_MAX` the oldest goes to the root span.
fn push_bounded(
    queue: &mut VecDeque<Fault>,
    fault: Fault,
    spans: &mut Spans,
    root: Option<SpanIndex>,
) {
    if queue.len() >= PENDING_MAX
        && let (Some(oldest), Some(root)) = (queue.pop_front(), root)
    {
        spans.fault(root, &oldest);
    }
    queue.push_back(fault);
}
