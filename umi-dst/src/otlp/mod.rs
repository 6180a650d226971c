//! A run as OpenTelemetry spans: OTLP protobuf and OTLP JSON made with the official
//! generated types (`opentelemetry-proto`, the opentelemetry-rust project's prost
//! messages and their serde derives), so that a simulated run can be read in the tools
//! agent owners already read (Jaeger, Tempo, Phoenix, Langfuse, an OpenTelemetry
//! Collector) next to the agent's own spans. Why it is built this way (ids, epoch,
//! conventions' version): docs/adr/0025-otlp-export.md.
//!
//! - [`Spans`]: the builder (one trace, one resource) with typed helpers for a model
//!   call, a tool call, an MCP request and an injected fault; `dst serve` builds its
//!   scope's export on it.
//! - [`export_run`]: a simulation's run (its full trace) as one trace, for `dst replay
//!   --otlp` and `dst sweep --otlp`.
//! - [`to_json`], [`to_protobuf`], [`from_json`], [`from_protobuf`]: the two encodings.
//! - [`trace_id`], [`span_id`] ([`TraceId`], [`SpanId`]): trace and span ids derived
//!   from the seed, the run's name and the span's index (never all zero); [`time`]:
//!   simulated time as Unix nanoseconds from the simulated epoch; [`semconv`]: the
//!   attribute names (GenAI conventions 1.37.0).
//!
//! # What becomes what ([`export_run`])
//!
//! Resource: `service.name = "umi.dst"`, `umi.seed` (decimal string), `umi.scenario`.
//! One scope, `umi-dst`, with the conventions' schema URL. Span 0 is the root; every
//! other span is its child.
//!
//! | trace event | OTLP |
//! | --- | --- |
//! | the run | root INTERNAL span `umi.run {scenario}` from 0 to the run's end: `umi.scenario`, `umi.seed`, `umi.run.outcome`, `umi.trace.hash`, `umi.trace.events`, `umi.path` (a path run); failed: status ERROR with the failure's message, `error.type` and `umi.failure.class` = its class; passed: status OK |
//! | `sim.start` | the epoch of every timestamp (else `SIM_EPOCH_UNIX_MS_DEFAULT`) |
//! | `llm.call` … `llm.answer` | CLIENT span `chat {model}` from the call to the call + the answer's latency: `gen_ai.operation.name = chat`, `gen_ai.provider.name` and `gen_ai.system` (the part of `provider/model` before the slash), `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons`, `umi.llm.route`, `umi.llm.operation`; a stream cut: `umi.llm.stream_cut`, status ERROR, `error.type = stream_cut` |
//! | `llm.call` … `llm.refuse` | the same span, ending at the refusal: status ERROR with the error's text, `error.type` = its kind (`rate_limit`, `timeout`, ...) |
//! | `net.request` (a model endpoint) before `llm.call` | `http.response.status_code` on the call: 200, or the status of the `net.refuse` after its refusal |
//! | `net.embed` | CLIENT span `embeddings {model}` (no duration: the trace has none) |
//! | `tool.call` | INTERNAL span `execute_tool {name}` for the call's latency: `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `umi.tool.outcome`, `umi.tool.ran`; an error result, a transport error, a stall or a malformed result: status ERROR and `error.type` |
//! | `tool.invalid_params` | the same span, no duration, `error.type = invalid_params` |
//! | `mcp.initialize`, `mcp.request` | CLIENT span named after the JSON-RPC method, from its `net.request` (first in, first out) to the answer: `mcp.method.name`, `mcp.session.id`, `jsonrpc.request.id`, `mcp.protocol.version`, `umi.mcp.reply`; a reply other than a result: status ERROR, `error.type` = the reply |
//! | `mcp.refused` | CLIENT span named after the HTTP method, `http.response.status_code`, status ERROR |
//! | `fault` | span event `umi.fault` (`umi.fault.kind`, `umi.fault.operation`, `umi.fault.rule`, `umi.fault.ordinal`) on the span of the operation it hit: an `llm.call` fault on its model call, a `tool.call.{name}` fault on that tool's next call, a `tool.mcp.*` fault on the next MCP request, a `network.body` fault on the model call it cut; any other (storage, clock, connect) on the root |
//! | the rest (`sleep`, `cover`, storage, cassette, named events) | nothing |
//!
//! A model call still open when the run ends ends with the run, `umi.call.unfinished`.

mod encode;
mod error;
pub(crate) mod ids;
mod run;
pub mod semconv;
mod served;
mod spans;
pub mod time;
mod walk;

pub use encode::{from_json, from_protobuf, to_json, to_protobuf};
pub use error::OtlpError;
pub use ids::{SpanId, TraceId, span_id, trace_id};
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
pub use run::{RunExport, SERVICE_NAME_RUN, export_run};
pub use served::{HTTP_REQUEST_METHOD, ServedRequest, URL_PATH, served_request};
pub use spans::{
    CallError, EVENTS_PER_SPAN_MAX, Fault, McpCall, ModelCall, SCOPE_NAME, SPANS_PER_EXPORT_MAX,
    SpanIndex, SpanSpec, Spans, ToolCall,
};
pub use walk::{OPEN_CALLS_MAX, PENDING_MAX};
