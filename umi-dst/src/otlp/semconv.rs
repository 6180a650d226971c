//! The attribute names the export writes, and OTLP attribute values.
//!
//! The `gen_ai.*` names, the span names and kinds follow the OpenTelemetry semantic
//! conventions for generative AI, version 1.37.0 ("Semantic conventions for generative
//! client AI spans", <https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/>:
//! the inference span `{gen_ai.operation.name} {gen_ai.request.model}`, kind CLIENT; the
//! execute-tool span `execute_tool {gen_ai.tool.name}`, kind INTERNAL). 1.37.0 is the
//! version that renamed `gen_ai.system` to `gen_ai.provider.name`; the export writes
//! both, so backends that read either (Phoenix, Langfuse, older Jaeger UIs) show the
//! provider. The MCP names follow the same conventions' MCP page
//! (<https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/>): `mcp.method.name`,
//! `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`. `error.type`,
//! `http.response.status_code` and `service.name` are the general conventions'. The
//! `umi.*` names are Umi's own.

use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};

/// The schema of the conventions the export follows (`ScopeSpans.schema_url`).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

/// `gen_ai.operation.name`: `chat`, `embeddings`, `execute_tool`.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name` (1.37.0; `gen_ai.system` before).
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.system`: the provider under its pre-1.37.0 name.
pub const GEN_AI_SYSTEM: &str = "gen_ai.system";
/// `gen_ai.request.model`.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.usage.input_tokens`.
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.response.finish_reasons` (a string array).
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.tool.name`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `error.type`: a low-cardinality name of what failed.
pub const ERROR_TYPE: &str = "error.type";
/// `http.response.status_code` (an int).
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// `mcp.method.name`.
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// `mcp.session.id`.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// `mcp.protocol.version`.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `jsonrpc.request.id`.
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// `service.name` (a resource attribute).
pub const SERVICE_NAME: &str = "service.name";

/// The operation of a model call (SimLLM answers chat completions).
pub const OPERATION_CHAT: &str = "chat";
/// The operation of an embeddings call.
pub const OPERATION_EMBEDDINGS: &str = "embeddings";
/// The operation of a tool call.
pub const OPERATION_EXECUTE_TOOL: &str = "execute_tool";

/// `umi.seed` (resource and root span; a decimal string: a u64 seed does not fit an
/// OTLP int, which is an i64).
pub const UMI_SEED: &str = "umi.seed";
/// `umi.scenario` (resource and root span of a replay).
pub const UMI_SCENARIO: &str = "umi.scenario";
/// `umi.scope` (resource of `dst serve`'s export).
pub const UMI_SCOPE: &str = "umi.scope";
/// `umi.path`: the run's path, when it has branch points.
pub const UMI_PATH: &str = "umi.path";
/// `umi.run.outcome`: `passed` or `failed`.
pub const UMI_RUN_OUTCOME: &str = "umi.run.outcome";
/// `umi.failure.class`: the failure's class (`correctness`, `liveness`, ...).
pub const UMI_FAILURE_CLASS: &str = "umi.failure.class";
/// `umi.trace.hash`: the run's trace hash (its determinism evidence).
pub const UMI_TRACE_HASH: &str = "umi.trace.hash";
/// `umi.trace.events`: how many events the run's trace holds.
pub const UMI_TRACE_EVENTS: &str = "umi.trace.events";
/// `umi.spans.dropped`: spans past `SPANS_PER_EXPORT_MAX`, not exported.
pub const UMI_SPANS_DROPPED: &str = "umi.spans.dropped";
/// `umi.fault`: the name of an injected fault's span event.
pub const UMI_FAULT_EVENT: &str = "umi.fault";
/// `umi.fault.kind`: the fault kind (`llm.rate_limit`).
pub const UMI_FAULT_KIND: &str = "umi.fault.kind";
/// `umi.fault.operation`: the operation it hit (`llm.call`, `tool.call.search`).
pub const UMI_FAULT_OPERATION: &str = "umi.fault.operation";
/// `umi.fault.rule`: the rule's index in the run's fault configs.
pub const UMI_FAULT_RULE: &str = "umi.fault.rule";
/// `umi.fault.ordinal`: which of the rule's matching operations (1-based).
pub const UMI_FAULT_ORDINAL: &str = "umi.fault.ordinal";
/// `umi.llm.route`: the SimLLM route that answered.
pub const UMI_LLM_ROUTE: &str = "umi.llm.route";
/// `umi.llm.operation`: the SimLLM operation (`llm.call`, or with the request's task).
pub const UMI_LLM_OPERATION: &str = "umi.llm.operation";
/// `umi.llm.stream_cut`: where a stream-cut fault cut the answer (`server_error@2`).
pub const UMI_LLM_STREAM_CUT: &str = "umi.llm.stream_cut";
/// `umi.tool.outcome`: what the simulated tool did (`Answer`, `Stall`, ...).
pub const UMI_TOOL_OUTCOME: &str = "umi.tool.outcome";
/// `umi.tool.ran`: whether the tool's effect ran.
pub const UMI_TOOL_RAN: &str = "umi.tool.ran";
/// `umi.mcp.reply`: how the MCP server replied (`result`, `error`, `cut`, ...).
pub const UMI_MCP_REPLY: &str = "umi.mcp.reply";
/// `umi.call.unfinished`: the run ended before the call did.
pub const UMI_CALL_UNFINISHED: &str = "umi.call.unfinished";

/// A string attribute.
pub fn string(key: &str, value: impl Into<String>) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.into()))
}

/// An int attribute (OTLP ints are i64; a larger value saturates).
pub fn int(key: &str, value: impl TryInto<i64>) -> KeyValue {
    attribute(
        key,
        any_value::Value::IntValue(value.try_into().unwrap_or(i64::MAX)),
    )
}

/// A bool attribute.
pub fn boolean(key: &str, value: bool) -> KeyValue {
    attribute(key, any_value::Value::BoolValue(value))
}

/// A string-array attribute.
pub fn strings(key: &str, values: &[String]) -> KeyValue {
    let values = values
        .iter()
        .map(|value| AnyValue {
            value: Some(any_value::Value::StringValue(value.clone())),
        })
        .collect();
    attribute(key, any_value::Value::ArrayValue(ArrayValue { values }))
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}
