//! OpenTelemetry export (issue 43): a simulation's run as `umi_dst::otlp` exports it,
//! judged by the official generated types (`opentelemetry-proto`'s prost messages and
//! serde derives).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::{Span, span};

use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use umi_core::agent::ToolInvocation;
use umi_core::llm::{CompletionRequest, LanguageModel, Message};
use umi_dst::otlp::{self, RunExport};
use umi_dst::simulation::SeedRun;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::trace::{LlmEvent, TraceEvent, TraceKind};
use umi_dst::{FaultConfig, FaultKind, RunPath, SimConfig, SimEnvironment, Simulation, Violation};

/// A small agent-like run: three model calls, then two calls of a tool with a 10 ms
/// latency; it fails when `fail` says so, after the calls.
async fn calls_and_tools(sim: SimEnvironment, fail: bool) -> Result<(), Violation> {
    let llm = sim.llm();
    for n in 0..3 {
        let request = CompletionRequest::new(vec![Message::user(format!("question {n}"))]);
        let _answer = llm.complete(&request).await;
    }
    let tools = SimTools::new(&sim).with(
        SimTool::new("search", "searches", serde_json::json!({"type": "object"}))
            .with_latency_ms(10, 10),
    );
    let registry = tools.registry();
    let handler = registry
        .handler("search")
        .ok_or_else(|| Violation::new("no handler"))?;
    for n in 0..2 {
        let invocation = ToolInvocation {
            call_id: format!("call_{n}"),
            name: "search".into(),
            arguments: serde_json::json!({}),
        };
        let _result = handler.invoke(invocation).await;
    }
    if fail {
        return Err(Violation::new("the planted failure"));
    }
    Ok(())
}

/// Runs `calls_and_tools` for `seed` with a full trace and `faults`.
fn run(seed: u64, faults: &[FaultConfig], fail: bool) -> SeedRun {
    let mut config = SimConfig::new(seed);
    for fault in faults {
        config = config.with_fault(fault.clone());
    }
    config.trace_full = true;
    Simulation::new(config).run_seed(seed, &move |sim| calls_and_tools(sim, fail))
}

/// The run exported.
fn export(run: &SeedRun) -> ExportTraceServiceRequest {
    otlp::export_run(&RunExport::of("calls_and_tools", run).unwrap())
}

/// The spans of the export's only resource and scope.
fn spans(request: &ExportTraceServiceRequest) -> &[Span] {
    &request.resource_spans[0].scope_spans[0].spans
}

/// A span's attribute, if set.
fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn string_attribute(span: &Span, key: &str) -> Option<String> {
    match attribute(span, key)? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

fn int_attribute(span: &Span, key: &str) -> Option<i64> {
    match attribute(span, key)? {
        any_value::Value::IntValue(n) => Some(*n),
        _ => None,
    }
}

/// The names of a span's `umi.fault` events' kinds.
fn fault_kinds(span: &Span) -> Vec<String> {
    span.events
        .iter()
        .filter(|event| event.name == "umi.fault")
        .filter_map(|event| {
            event
                .attributes
                .iter()
                .find(|kv| kv.key == "umi.fault.kind")?;
            let kv = event
                .attributes
                .iter()
                .find(|kv| kv.key == "umi.fault.kind")?;
            match kv.value.as_ref()?.value.as_ref()? {
                any_value::Value::StringValue(kind) => Some(kind.clone()),
                _ => None,
            }
        })
        .collect()
}

fn named<'a>(request: &'a ExportTraceServiceRequest, prefix: &str) -> Vec<&'a Span> {
    spans(request)
        .iter()
        .filter(|span| span.name.starts_with(prefix))
        .collect()
}

/// What the protobuf and the JSON of an export decode to, with the official types, is
/// the export; the same seed exports the same bytes twice, another seed another trace.
#[test]
#[allow(clippy::print_stdout, reason = "the export's size, for the log")]
fn an_export_round_trips_and_a_seed_exports_the_same_bytes() {
    let first = export(&run(7, &[], false));
    let again = export(&run(7, &[], false));
    let protobuf = otlp::to_protobuf(&first);
    let json = otlp::to_json(&first);
    assert_eq!(
        <ExportTraceServiceRequest as prost::Message>::decode(protobuf.as_slice()).unwrap(),
        first
    );
    assert_eq!(
        serde_json::from_slice::<ExportTraceServiceRequest>(&json).unwrap(),
        first
    );
    assert_eq!(otlp::from_json(&json).unwrap(), first);
    assert_eq!(otlp::from_protobuf(&protobuf).unwrap(), first);
    assert_eq!(otlp::to_protobuf(&again), protobuf, "protobuf bytes differ");
    assert_eq!(otlp::to_json(&again), json, "JSON bytes differ");
    let other = export(&run(8, &[], false));
    assert_ne!(spans(&other)[0].trace_id, spans(&first)[0].trace_id);
    println!(
        "seed 7: {} spans, {} protobuf bytes, {} JSON bytes",
        spans(&first).len(),
        protobuf.len(),
        json.len()
    );
}

/// Bad input names where it is wrong.
#[test]
fn bad_otlp_input_is_a_typed_error() {
    let error =
        otlp::from_json(br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":7}]}]}]}"#)
            .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("resourceSpans[0].scopeSpans[0].spans[0].spanId"),
        "{error}"
    );
    assert!(otlp::from_protobuf(&[0xff, 0xff, 0xff]).is_err());
    let mut config = SimConfig::new(1);
    config.trace_full = false;
    let run = Simulation::new(config).run_seed(1, &|sim| calls_and_tools(sim, false));
    let error = RunExport::of("calls_and_tools", &run).unwrap_err();
    assert!(error.to_string().contains("full trace"), "{error}");
}

/// The shape: a root `umi.run` span first, the others its children, in one trace, with
/// the seed and scenario on the resource; timestamps from the simulated epoch.
#[test]
fn the_run_is_a_root_span_over_its_calls() {
    let run = run(7, &[], false);
    let request = export(&run);
    let resource = request.resource_spans[0].resource.as_ref().unwrap();
    let resource_keys: Vec<&str> = resource
        .attributes
        .iter()
        .map(|kv| kv.key.as_str())
        .collect();
    assert_eq!(resource_keys, ["service.name", "umi.seed", "umi.scenario"]);
    let all = spans(&request);
    let root = &all[0];
    assert_eq!(root.name, "umi.run calls_and_tools");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(string_attribute(root, "umi.seed").as_deref(), Some("7"));
    assert_eq!(
        string_attribute(root, "umi.run.outcome").as_deref(),
        Some("passed")
    );
    assert_eq!(root.status.as_ref().unwrap().code, StatusCode::Ok as i32);
    assert_eq!(root.start_time_unix_nano, otlp::time::SIM_EPOCH_UNIX_NANOS);
    let elapsed = u64::try_from(run.sim_elapsed.as_nanos()).unwrap();
    assert_eq!(
        root.end_time_unix_nano,
        otlp::time::SIM_EPOCH_UNIX_NANOS + elapsed
    );
    assert_eq!(named(&request, "chat ").len(), 3);
    assert_eq!(named(&request, "execute_tool search").len(), 2);
    let mut span_ids = std::collections::BTreeSet::new();
    for span in all {
        assert_eq!(span.trace_id, root.trace_id);
        assert!(span_ids.insert(span.span_id.clone()), "a span id twice");
        assert!(span.span_id.iter().any(|&b| b != 0));
        assert!(
            span.start_time_unix_nano <= span.end_time_unix_nano,
            "{}",
            span.name
        );
        assert!(
            span.end_time_unix_nano <= root.end_time_unix_nano,
            "{}",
            span.name
        );
        if span.name != root.name {
            assert_eq!(span.parent_span_id, root.span_id, "{}", span.name);
        }
    }
}

/// The model spans carry the trace's model and tokens (read from its `llm.answer`
/// events, not written here), and the tool spans their name, call id and latency.
#[test]
fn gen_ai_attributes_carry_the_traces_model_and_tokens() {
    let run = run(11, &[], false);
    let request = export(&run);
    let answers: Vec<&TraceEvent> = run
        .full_trace
        .as_ref()
        .unwrap()
        .iter()
        .filter(|event| event.kind == "llm.answer")
        .collect();
    let chats = named(&request, "chat ");
    assert_eq!(chats.len(), answers.len());
    for (span, answer) in chats.iter().zip(&answers) {
        let TraceKind::Llm(LlmEvent::Answer {
            model,
            finish,
            prompt_tokens,
            completion_tokens,
            latency,
            ..
        }) = &answer.record
        else {
            unreachable!()
        };
        let (provider, name) = model.split_once('/').unwrap();
        assert_eq!(span.name, format!("chat {name}"));
        assert_eq!(span.kind, span::SpanKind::Client as i32);
        assert_eq!(
            string_attribute(span, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert_eq!(
            string_attribute(span, "gen_ai.provider.name").as_deref(),
            Some(provider)
        );
        assert_eq!(
            string_attribute(span, "gen_ai.request.model").as_deref(),
            Some(name)
        );
        assert_eq!(
            string_attribute(span, "gen_ai.response.model").as_deref(),
            Some(name)
        );
        assert_eq!(
            int_attribute(span, "gen_ai.usage.input_tokens"),
            Some(i64::from(*prompt_tokens))
        );
        assert_eq!(
            int_attribute(span, "gen_ai.usage.output_tokens"),
            Some(i64::from(*completion_tokens))
        );
        let Some(any_value::Value::ArrayValue(reasons)) =
            attribute(span, "gen_ai.response.finish_reasons")
        else {
            panic!("no finish reasons on {}", span.name)
        };
        assert_eq!(
            reasons.values[0].value,
            Some(any_value::Value::StringValue(finish.clone()))
        );
        let latency_nanos = u64::try_from(latency.as_nanos()).unwrap();
        assert_eq!(
            span.end_time_unix_nano - span.start_time_unix_nano,
            latency_nanos
        );
        assert!(span.status.is_none(), "{:?}", span.status);
    }
    let tools = named(&request, "execute_tool ");
    for (n, span) in tools.iter().enumerate() {
        assert_eq!(span.kind, span::SpanKind::Internal as i32);
        assert_eq!(
            string_attribute(span, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(
            string_attribute(span, "gen_ai.tool.name").as_deref(),
            Some("search")
        );
        assert_eq!(
            string_attribute(span, "gen_ai.tool.call.id"),
            Some(format!("call_{n}"))
        );
        let took = Duration::from_nanos(span.end_time_unix_nano - span.start_time_unix_nano);
        assert_eq!(took, Duration::from_millis(10));
    }
}

/// An injected fault is an `umi.fault` event on the span of the call it hit, and only
/// there: the second model call rate-limited (status ERROR, `error.type` its kind), the
/// first tool call failed; the other calls and the root carry none.
#[test]
fn a_fault_is_an_event_on_the_span_it_hit() {
    let faults = [
        FaultConfig::always(FaultKind::LlmRateLimit)
            .with_at_operation(2)
            .unwrap(),
        FaultConfig::always(FaultKind::ToolErrorResult)
            .with_at_operation(1)
            .unwrap(),
    ];
    let run = run(5, &faults, false);
    assert_eq!(run.injections.len(), 2, "{:?}", run.injections);
    let request = export(&run);
    let chats = named(&request, "chat ");
    let with_faults: Vec<Vec<String>> = chats.iter().map(|span| fault_kinds(span)).collect();
    assert_eq!(
        with_faults,
        [vec![], vec!["llm.rate_limit".to_owned()], vec![]]
    );
    let limited = chats[1];
    let status = limited.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(
        status.message.contains("rate limited"),
        "{}",
        status.message
    );
    assert_eq!(
        string_attribute(limited, "error.type").as_deref(),
        Some("rate_limit")
    );
    assert!(chats[0].status.is_none() && chats[2].status.is_none());
    let tools = named(&request, "execute_tool ");
    let tool_faults: Vec<Vec<String>> = tools.iter().map(|span| fault_kinds(span)).collect();
    assert_eq!(tool_faults, [vec!["tool.error_result".to_owned()], vec![]]);
    assert_eq!(
        string_attribute(tools[0], "error.type").as_deref(),
        Some("tool_error")
    );
    assert!(tools[1].status.is_none());
    assert!(
        fault_kinds(&spans(&request)[0]).is_empty(),
        "a fault on the root"
    );
    let event = &limited.events[0];
    assert!(event.time_unix_nano >= limited.start_time_unix_nano);
    assert!(event.time_unix_nano <= limited.end_time_unix_nano);
}

/// A failed run's root span: status ERROR with the failure's message, its class.
#[test]
fn a_failed_run_has_an_error_root() {
    let run = run(3, &[], true);
    let request = export(&run);
    let root = &spans(&request)[0];
    let status = root.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(
        status.message.contains("the planted failure"),
        "{}",
        status.message
    );
    assert_eq!(
        string_attribute(root, "umi.run.outcome").as_deref(),
        Some("failed")
    );
    assert_eq!(
        string_attribute(root, "umi.failure.class").as_deref(),
        Some("correctness")
    );
    assert_eq!(
        string_attribute(root, "error.type").as_deref(),
        Some("correctness")
    );
}

/// Calls that overlap: a call that stalls into a timeout, and a call made meanwhile,
/// answered first. The refusal names its call, so each span ends where its own call
/// did (hand-made events: two overlapping calls need a workload of tasks).
#[test]
fn overlapping_calls_pair_with_their_own_answers() {
    let call = |request: u8, at_ms: u64, index: u64| {
        TraceEvent::new(
            index,
            Duration::from_millis(at_ms),
            TraceKind::Llm(LlmEvent::Call {
                model: "sim/m".into(),
                route: "builtin".into(),
                operation: "llm.call".into(),
                request: [request, 0, 0, 0],
                occurrence: 0,
                prompt_tokens: 5,
            }),
        )
    };
    let events = vec![
        call(1, 0, 0),
        call(2, 100, 1),
        TraceEvent::new(
            2,
            Duration::from_millis(100),
            TraceKind::Llm(LlmEvent::Answer {
                model: "sim/m".into(),
                finish: "stop".into(),
                prompt_tokens: 5,
                completion_tokens: 3,
                latency: Duration::from_millis(50),
                cut: None,
            }),
        ),
        TraceEvent::new(
            3,
            Duration::from_millis(30_000),
            TraceKind::Llm(LlmEvent::Refuse {
                model: "sim/m".into(),
                error: "timed out after 30000 ms".into(),
                error_kind: "timeout",
                call: Some(([1, 0, 0, 0], 0)),
            }),
        ),
    ];
    let path = RunPath::from_seed(1);
    let request = otlp::export_run(&RunExport {
        scenario: "overlap",
        path: &path,
        failure: None,
        events: &events,
        sim_elapsed: Duration::from_secs(30),
        trace_hash: None,
    });
    let chats = named(&request, "chat m");
    assert_eq!(chats.len(), 2);
    let ms = |span: &Span| {
        (
            (span.start_time_unix_nano - otlp::time::SIM_EPOCH_UNIX_NANOS) / 1_000_000,
            (span.end_time_unix_nano - otlp::time::SIM_EPOCH_UNIX_NANOS) / 1_000_000,
        )
    };
    let answered = chats.iter().find(|span| span.status.is_none()).unwrap();
    let timed_out = chats.iter().find(|span| span.status.is_some()).unwrap();
    assert_eq!(ms(answered), (100, 150));
    assert_eq!(ms(timed_out), (0, 30_000));
    assert_eq!(
        string_attribute(timed_out, "error.type").as_deref(),
        Some("timeout")
    );
}

/// umi-core's MCP client against a simulated MCP server: `initialize`, `tools/list`
/// (failed by an internal-error fault) and `tools/call`.
async fn mcp_session(sim: SimEnvironment) -> Result<(), Violation> {
    use std::sync::Arc;
    use umi_core::llm::transport::Transport;
    use umi_core::mcp::{McpClient, McpClientConfig};
    use umi_dst::mcp::SimMcpServer;
    use umi_dst::network::SimNetwork;
    let url = "http://tools.sim/mcp";
    let tools = SimTools::new(&sim).with(
        SimTool::new("pay", "pays", serde_json::json!({"type": "object"})).with_latency_ms(5, 5),
    );
    let network: Arc<dyn Transport> =
        Arc::new(SimNetwork::new(&sim).with_mcp(url, SimMcpServer::new("t", tools)));
    let config = McpClientConfig::default().with_request_timeout(Duration::from_secs(5));
    let client = McpClient::new(network, sim.env(), url).with_config(config);
    let _listed = client.list_tools().await;
    let _called = client
        .call_tool("pay", serde_json::json!({}), Some("call_9"))
        .await;
    Ok(())
}

/// MCP requests are CLIENT spans named after their method, with the MCP conventions'
/// attributes; the fault decided for `tools/list` is on its span and no other, and the
/// tool that `tools/call` ran is an `execute_tool` span.
#[test]
fn mcp_requests_are_spans_and_their_faults_land_on_them() {
    let fault = FaultConfig::always(FaultKind::McpInternalError)
        .on_operation("tool.mcp.request.tools/list")
        .unwrap();
    let mut config = SimConfig::new(4).with_fault(fault);
    config.trace_full = true;
    let run = Simulation::new(config).run_seed(4, &mcp_session);
    assert!(run.passed(), "{:?}", run.failure);
    assert_eq!(run.injections.len(), 1, "{:?}", run.injections);
    let request = export(&run);
    let all = spans(&request);
    let mcp: Vec<&Span> = all
        .iter()
        .filter(|span| attribute(span, "mcp.method.name").is_some())
        .collect();
    let methods: Vec<String> = mcp
        .iter()
        .map(|span| string_attribute(span, "mcp.method.name").unwrap())
        .collect();
    for method in ["initialize", "tools/list", "tools/call"] {
        assert!(
            methods.iter().any(|m| m == method),
            "{method} in {methods:?}"
        );
    }
    for span in &mcp {
        assert_eq!(
            span.name,
            string_attribute(span, "mcp.method.name").unwrap()
        );
        assert_eq!(span.kind, span::SpanKind::Client as i32);
        assert!(
            string_attribute(span, "mcp.session.id").is_some(),
            "{}",
            span.name
        );
        let faults = fault_kinds(span);
        if span.name == "tools/list" {
            assert_eq!(faults, [FaultKind::McpInternalError.name()]);
            assert_eq!(
                string_attribute(span, "error.type").as_deref(),
                Some("error")
            );
        } else {
            assert!(faults.is_empty(), "{}: {faults:?}", span.name);
        }
    }
    let initialize = mcp.iter().find(|span| span.name == "initialize").unwrap();
    assert!(string_attribute(initialize, "mcp.protocol.version").is_some());
    let pay = named(&request, "execute_tool pay");
    assert_eq!(pay.len(), 1);
    assert_eq!(
        string_attribute(pay[0], "gen_ai.tool.call.id").as_deref(),
        Some("call_9")
    );
    assert!(fault_kinds(&all[0]).is_empty(), "a fault on the root");
}
