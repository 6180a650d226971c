//! [`Spans`]: the builder every export goes through. It holds one trace (one trace id,
//! one resource) and collects spans in the order they are given (span ids from that
//! order), with typed helpers for what the harness knows how to map: a model call
//! ([`ModelCall`]), a tool call ([`ToolCall`]), an MCP request ([`McpCall`]), and an
//! injected fault ([`Fault`], an `umi.fault` span event). [`Spans::finish`] makes the
//! `ExportTraceServiceRequest`; [`Spans::resource_spans`] gives the one `ResourceSpans`
//! to put beside others (`dst serve` adds the agent's own spans, kept as received).
//!
//! Times are simulated: offsets from the run's simulated epoch (the builder's
//! `epoch_unix_ms`), written as Unix nanoseconds (see [`super::time`]).

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use super::ids::{self, TraceId};
use super::semconv as sc;
use super::time::unix_nanos;

/// The most spans one export holds; past it spans are counted, not kept (the root span,
/// if any, gets `umi.spans.dropped`). A run's full trace holds at most
/// `TRACE_EVENTS_FULL_MAX` events, and no event makes more than one span.
pub const SPANS_PER_EXPORT_MAX: usize = crate::constants::TRACE_EVENTS_FULL_MAX + 1;

/// The most span events (faults) one span holds; past it they are counted in the span's
/// `dropped_events_count`, as OTLP has it.
pub const EVENTS_PER_SPAN_MAX: usize = 128;

/// The instrumentation scope's name (`ScopeSpans.scope.name`).
pub const SCOPE_NAME: &str = "umi-dst";

/// A span of a [`Spans`], by its position (0 for the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpanIndex(pub usize);

/// What failed, for a span's status and `error.type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// `error.type`: low-cardinality (`rate_limit`, `invalid_params`).
    pub error_type: String,
    /// The status message: what happened, as the harness says it.
    pub message: String,
}

/// An injected fault: an `umi.fault` span event on the span of the operation it hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The fault kind (`llm.rate_limit`).
    pub kind: String,
    /// The operation it hit (`llm.call`, `tool.call.search`).
    pub operation: String,
    /// When, since the epoch.
    pub at: Duration,
    /// The rule's index in the run's fault configs, when known.
    pub rule: Option<u32>,
    /// Which of the rule's matching operations (1-based), when known.
    pub ordinal: Option<u64>,
}

/// One span, generic: what the typed helpers make.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanSpec {
    /// The parent span (`None`: a root).
    pub parent: Option<SpanIndex>,
    /// The span's name.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Start, since the epoch.
    pub start: Duration,
    /// End, since the epoch (a value before `start` is taken as `start`).
    pub end: Duration,
    /// Its attributes.
    pub attributes: Vec<KeyValue>,
    /// `Some`: status ERROR with the message, and `error.type`.
    pub error: Option<CallError>,
    /// Faults injected into it.
    pub faults: Vec<Fault>,
}

/// A call to a model: a CLIENT span `{operation} {request_model}` with the GenAI
/// conventions' attributes (what is `None` is left out).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelCall {
    /// `gen_ai.operation.name`: `chat` or `embeddings`.
    pub operation: String,
    /// `gen_ai.provider.name` (and `gen_ai.system`).
    pub provider: String,
    /// `gen_ai.request.model`.
    pub request_model: String,
    /// `gen_ai.response.model`.
    pub response_model: Option<String>,
    /// Start, since the epoch.
    pub start: Duration,
    /// End, since the epoch.
    pub end: Duration,
    /// `gen_ai.usage.input_tokens`.
    pub input_tokens: Option<u64>,
    /// `gen_ai.usage.output_tokens`.
    pub output_tokens: Option<u64>,
    /// `gen_ai.response.finish_reasons`.
    pub finish_reasons: Vec<String>,
    /// `http.response.status_code`, when the call went over HTTP.
    pub status_code: Option<u16>,
    /// The failure, if it failed.
    pub error: Option<CallError>,
    /// Further attributes (`umi.*`).
    pub extra: Vec<KeyValue>,
    /// Faults injected into the call.
    pub faults: Vec<Fault>,
}

/// A tool call: an INTERNAL span `execute_tool {name}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    /// `gen_ai.tool.name`.
    pub name: String,
    /// `gen_ai.tool.call.id`.
    pub call_id: String,
    /// Start, since the epoch.
    pub start: Duration,
    /// End, since the epoch.
    pub end: Duration,
    /// The failure, if it failed.
    pub error: Option<CallError>,
    /// Further attributes (`umi.*`).
    pub extra: Vec<KeyValue>,
    /// Faults injected into the call.
    pub faults: Vec<Fault>,
}

/// An MCP request as its client saw it: a CLIENT span named after its JSON-RPC method.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpCall {
    /// `mcp.method.name` (`tools/call`).
    pub method: String,
    /// `mcp.session.id`.
    pub session: Option<String>,
    /// `jsonrpc.request.id`.
    pub request_id: Option<String>,
    /// Start, since the epoch.
    pub start: Duration,
    /// End, since the epoch.
    pub end: Duration,
    /// `http.response.status_code`, when the server refused at the HTTP level.
    pub status_code: Option<u16>,
    /// The failure, if it failed.
    pub error: Option<CallError>,
    /// Further attributes (`mcp.protocol.version`, `umi.*`).
    pub extra: Vec<KeyValue>,
    /// Faults injected into the request.
    pub faults: Vec<Fault>,
}

/// One trace under one resource, built span by span.
#[derive(Debug, Clone)]
pub struct Spans {
    trace_id: TraceId,
    epoch_unix_ms: u64,
    resource: Vec<KeyValue>,
    spans: Vec<Span>,
    dropped: u64,
}

impl Spans {
    /// A trace `trace_id` whose times count from `epoch_unix_ms`, under a resource with
    /// `resource` attributes.
    pub fn new(trace_id: TraceId, epoch_unix_ms: u64, resource: Vec<KeyValue>) -> Self {
        Self {
            trace_id,
            epoch_unix_ms,
            resource,
            spans: Vec::new(),
            dropped: 0,
        }
    }

    /// The trace id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// How many spans were kept.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no span was kept.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// How many spans were past `SPANS_PER_EXPORT_MAX` (not kept).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Adds a span; `None` when the export is full (the span is counted as dropped).
    pub fn span(&mut self, spec: SpanSpec) -> Option<SpanIndex> {
        if self.spans.len() >= SPANS_PER_EXPORT_MAX {
            self.dropped += 1;
            return None;
        }
        let index = self.spans.len();
        let parent_span_id = spec
            .parent
            .and_then(|parent| self.spans.get(parent.0))
            .map(|parent| parent.span_id.clone())
            .unwrap_or_default();
        let start = unix_nanos(self.epoch_unix_ms, spec.start);
        let end = unix_nanos(self.epoch_unix_ms, spec.end.max(spec.start));
        let mut attributes = spec.attributes;
        let status = match spec.error {
            Some(error) => {
                attributes.push(sc::string(sc::ERROR_TYPE, error.error_type));
                Some(Status {
                    message: error.message,
                    code: StatusCode::Error as i32,
                })
            }
            None => None,
        };
        let mut span = Span {
            trace_id: self.trace_id.to_vec(),
            span_id: ids::span_id(&self.trace_id, index as u64).to_vec(),
            parent_span_id,
            name: spec.name,
            kind: spec.kind as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            status,
            ..Span::default()
        };
        for fault in &spec.faults {
            push_event(&mut span, fault_event(self.epoch_unix_ms, fault));
        }
        self.spans.push(span);
        Some(SpanIndex(index))
    }

    /// Adds a model call (see [`ModelCall`]) under `parent`.
    pub fn model_call(&mut self, parent: Option<SpanIndex>, call: ModelCall) -> Option<SpanIndex> {
        let mut attributes = vec![
            sc::string(sc::GEN_AI_OPERATION_NAME, call.operation.clone()),
            sc::string(sc::GEN_AI_PROVIDER_NAME, call.provider.clone()),
            sc::string(sc::GEN_AI_SYSTEM, call.provider),
            sc::string(sc::GEN_AI_REQUEST_MODEL, call.request_model.clone()),
        ];
        if let Some(model) = call.response_model {
            attributes.push(sc::string(sc::GEN_AI_RESPONSE_MODEL, model));
        }
        if let Some(tokens) = call.input_tokens {
            attributes.push(sc::int(sc::GEN_AI_USAGE_INPUT_TOKENS, tokens));
        }
        if let Some(tokens) = call.output_tokens {
            attributes.push(sc::int(sc::GEN_AI_USAGE_OUTPUT_TOKENS, tokens));
        }
        if !call.finish_reasons.is_empty() {
            attributes.push(sc::strings(
                sc::GEN_AI_RESPONSE_FINISH_REASONS,
                &call.finish_reasons,
            ));
        }
        if let Some(status) = call.status_code {
            attributes.push(sc::int(sc::HTTP_RESPONSE_STATUS_CODE, status));
        }
        attributes.extend(call.extra);
        self.span(SpanSpec {
            parent,
            name: format!("{} {}", call.operation, call.request_model),
            kind: SpanKind::Client,
            start: call.start,
            end: call.end,
            attributes,
            error: call.error,
            faults: call.faults,
        })
    }

    /// Adds a tool call (see [`ToolCall`]) under `parent`.
    pub fn tool_call(&mut self, parent: Option<SpanIndex>, call: ToolCall) -> Option<SpanIndex> {
        let mut attributes = vec![
            sc::string(sc::GEN_AI_OPERATION_NAME, sc::OPERATION_EXECUTE_TOOL),
            sc::string(sc::GEN_AI_TOOL_NAME, call.name.clone()),
            sc::string(sc::GEN_AI_TOOL_CALL_ID, call.call_id),
        ];
        attributes.extend(call.extra);
        self.span(SpanSpec {
            parent,
            name: format!("{} {}", sc::OPERATION_EXECUTE_TOOL, call.name),
            kind: SpanKind::Internal,
            start: call.start,
            end: call.end,
            attributes,
            error: call.error,
            faults: call.faults,
        })
    }

    /// Adds an MCP request (see [`McpCall`]) under `parent`.
    pub fn mcp_call(&mut self, parent: Option<SpanIndex>, call: McpCall) -> Option<SpanIndex> {
        let mut attributes = vec![sc::string(sc::MCP_METHOD_NAME, call.method.clone())];
        if let Some(session) = call.session {
            attributes.push(sc::string(sc::MCP_SESSION_ID, session));
        }
        if let Some(id) = call.request_id {
            attributes.push(sc::string(sc::JSONRPC_REQUEST_ID, id));
        }
        if let Some(status) = call.status_code {
            attributes.push(sc::int(sc::HTTP_RESPONSE_STATUS_CODE, status));
        }
        attributes.extend(call.extra);
        self.span(SpanSpec {
            parent,
            name: call.method,
            kind: SpanKind::Client,
            start: call.start,
            end: call.end,
            attributes,
            error: call.error,
            faults: call.faults,
        })
    }

    /// Adds `fault` as an `umi.fault` event of span `span` (nothing if it was dropped).
    pub fn fault(&mut self, span: SpanIndex, fault: &Fault) {
        let event = fault_event(self.epoch_unix_ms, fault);
        if let Some(span) = self.spans.get_mut(span.0) {
            push_event(span, event);
        }
    }

    /// Sets span `span`'s end (a value before its start is taken as its start).
    pub fn set_end(&mut self, span: SpanIndex, end: Duration) {
        let end = unix_nanos(self.epoch_unix_ms, end);
        if let Some(span) = self.spans.get_mut(span.0) {
            span.end_time_unix_nano = end.max(span.start_time_unix_nano);
        }
    }

    /// Adds `attribute` to span `span`.
    pub fn add_attribute(&mut self, span: SpanIndex, attribute: KeyValue) {
        if let Some(span) = self.spans.get_mut(span.0) {
            span.attributes.push(attribute);
        }
    }

    /// Sets span `span`'s status (`message` only with ERROR, as the spec has it).
    pub fn set_status(&mut self, span: SpanIndex, code: StatusCode, message: &str) {
        if let Some(span) = self.spans.get_mut(span.0) {
            span.status = Some(Status {
                message: if code == StatusCode::Error {
                    message.to_owned()
                } else {
                    String::new()
                },
                code: code as i32,
            });
        }
    }

    /// The spans as one `ResourceSpans` (one scope, `umi-dst`, with the conventions'
    /// schema URL).
    pub fn resource_spans(self) -> ResourceSpans {
        ResourceSpans {
            resource: Some(Resource {
                attributes: self.resource,
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE_NAME.to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..InstrumentationScope::default()
                }),
                spans: self.spans,
                schema_url: sc::SCHEMA_URL.to_owned(),
            }],
            schema_url: sc::SCHEMA_URL.to_owned(),
        }
    }

    /// The request that exports these spans.
    pub fn finish(self) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![self.resource_spans()],
        }
    }
}

/// A fault as an `umi.fault` span event.
fn fault_event(epoch_unix_ms: u64, fault: &Fault) -> Event {
    let mut attributes = vec![
        sc::string(sc::UMI_FAULT_KIND, fault.kind.clone()),
        sc::string(sc::UMI_FAULT_OPERATION, fault.operation.clone()),
    ];
    if let Some(rule) = fault.rule {
        attributes.push(sc::int(sc::UMI_FAULT_RULE, rule));
    }
    if let Some(ordinal) = fault.ordinal {
        attributes.push(sc::int(sc::UMI_FAULT_ORDINAL, ordinal));
    }
    Event {
        time_unix_nano: unix_nanos(epoch_unix_ms, fault.at),
        name: sc::UMI_FAULT_EVENT.to_owned(),
        attributes,
        ..Event::default()
    }
}

/// Adds `event` to `span`, or counts it past `EVENTS_PER_SPAN_MAX`.
fn push_event(span: &mut Span, event: Event) {
    if span.events.len() < EVENTS_PER_SPAN_MAX {
        span.events.push(event);
    } else {
        span.dropped_events_count = span.dropped_events_count.saturating_add(1);
    }
}
