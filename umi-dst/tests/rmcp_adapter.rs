//! rmcp (the official Rust MCP SDK), unmodified, over SimNetwork's simulated MCP server
//! through `umi_dst::adapters::rmcp`: its client connects, lists and calls tools, gets
//! protocol errors as its own typed errors, meets the seed's MCP faults as typed errors
//! (never a panic or a hang), and replays by seed.
//!
//! Built with the `rmcp` feature only, in the same build as the `rig` adapter's tests
//! (`cargo test -p umi-dst --features rig,rmcp --test main`, which `make test` runs).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ErrorCode, JsonObject};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use serde_json::{Value, json};
use umi_core::env::EnvironmentExt;
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use umi_dst::adapters::rmcp::{SimMcpHttpError, transport};
use umi_dst::mcp::SimMcpServer;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{
    FaultConfig, FaultKind, SimConfig, SimEnvironment, SimNetwork, Simulation, Violation, ensure,
};

const MCP_URL: &str = "http://tools.sim/mcp";

/// How long (simulated) a client may take before a test calls it a hang: far past
/// rmcp's own 5 s recovery and cleanup timeouts.
const HANG: Duration = Duration::from_secs(120);

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "celsius": {"type": "integer", "minimum": -60, "maximum": 60},
            "summary": {"type": "string", "enum": ["sunny", "cloudy", "rain"]},
        },
        "required": ["celsius", "summary"],
        "additionalProperties": false,
    })
}

fn weather_server(sim: &SimEnvironment) -> SimMcpServer {
    let tools = SimTools::new(sim).with(
        SimTool::new(
            "get_weather",
            "The current weather in a city",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }),
        )
        .with_output_schema(output_schema()),
    );
    SimMcpServer::new("weather", tools)
}

/// One request and its answer's head, as the client sent and got them.
#[derive(Debug, Clone)]
struct Seen {
    method: &'static str,
    headers: Vec<(String, String)>,
    status: Option<u16>,
    content_type: Option<String>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// SimNetwork, with what crossed it kept (MCP exchanges are not in SimNetwork's own
/// capture).
#[derive(Debug)]
struct Recording {
    network: SimNetwork,
    seen: Mutex<Vec<Seen>>,
}

#[async_trait::async_trait]
impl Transport for Recording {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let mut seen = Seen {
            method: request.method,
            headers: request.headers.clone(),
            status: None,
            content_type: None,
        };
        let response = self.network.send(request).await;
        if let Ok(response) = &response {
            seen.status = Some(response.status);
            seen.content_type = response.header("content-type").map(str::to_owned);
        }
        self.seen.lock().unwrap().push(seen);
        response
    }
}

fn recording(sim: &SimEnvironment) -> Arc<Recording> {
    Arc::new(Recording {
        network: SimNetwork::new(sim).with_mcp(MCP_URL, weather_server(sim)),
        seen: Mutex::new(Vec::new()),
    })
}

fn violation(error: impl std::fmt::Display) -> Violation {
    Violation::new(error.to_string())
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

async fn connect(
    network: Arc<Recording>,
) -> Result<RunningService<RoleClient, ()>, ClientInitializeError> {
    ().serve(transport(network, MCP_URL)).await
}

/// The adapter's error inside rmcp's, if that is what `error` carries.
fn transport_error(error: &ServiceError) -> Option<&StreamableHttpError<SimMcpHttpError>> {
    let ServiceError::TransportSend(error) = error else {
        return None;
    };
    error.error.downcast_ref()
}

/// Pins the happy path end to end, for servers that answer with JSON and with SSE (the
/// seed draws which): rmcp's `initialize` is answered (the server negotiates 2025-11-25,
/// rmcp's newest handshake version, down from the 2026-07-28 it asks), every later
/// request carries the session and `MCP-Protocol-Version` with both media types
/// accepted, `tools/list` shows the tool with its output schema, `tools/call` returns
/// structured content valid under it, and closing the client DELETEs the session.
#[test]
fn rmcp_lists_and_calls_tools_on_a_simulated_server() {
    let modes = Mutex::new(BTreeSet::new());
    Simulation::new(SimConfig::new(0))
        .with_seeds(1..=8)
        .try_run(|sim| {
            let modes = &modes;
            async move {
                let network = recording(&sim);
                let env = sim.env();
                env.timeout(HANG, async {
                    let mut client = connect(network.clone()).await.map_err(violation)?;
                    let info = client
                        .peer_info()
                        .ok_or_else(|| violation("no server info after initialize"))?;
                    ensure!(
                        info.protocol_version.as_str() == "2025-11-25",
                        "negotiated {:?}",
                        info.protocol_version
                    );
                    ensure!(
                        info.server_info.as_ref().map(|i| i.name.as_str()) == Some("weather"),
                        "{info:?}"
                    );
                    let tools = client.list_all_tools().await.map_err(violation)?;
                    ensure!(
                        tools.len() == 1 && tools[0].name == "get_weather",
                        "{tools:?}"
                    );
                    let schema = tools[0]
                        .output_schema
                        .as_ref()
                        .map(|s| Value::Object((**s).clone()))
                        .ok_or_else(|| violation("no output schema listed"))?;
                    ensure!(schema == output_schema(), "listed schema {schema}");
                    for city in ["Oslo", "Lima"] {
                        let result = client
                            .call_tool(
                                CallToolRequestParams::new("get_weather")
                                    .with_arguments(arguments(json!({"city": city}))),
                            )
                            .await
                            .map_err(violation)?;
                        ensure!(result.is_error != Some(true), "{result:?}");
                        let structured = result.structured_content.as_ref().ok_or_else(|| {
                            violation(format!("no structured content: {result:?}"))
                        })?;
                        ensure!(
                            jsonschema::is_valid(&schema, structured),
                            "{structured} is not valid under {schema}"
                        );
                    }
                    client.close().await.map_err(violation)?;
                    Ok::<(), Violation>(())
                })
                .await
                .map_err(|_| violation("the client hung"))??;

                let seen = network.seen.lock().unwrap().clone();
                let posts: Vec<&Seen> = seen.iter().filter(|s| s.method == "POST").collect();
                ensure!(
                    posts.len() >= 5,
                    "initialize, initialized, list, 2 calls: {seen:?}"
                );
                for post in &posts {
                    ensure!(
                        post.header("accept") == Some("application/json, text/event-stream")
                            && post.header("content-type") == Some("application/json"),
                        "{post:?}"
                    );
                }
                for post in &posts[1..] {
                    ensure!(
                        post.header("mcp-session-id").is_some()
                            && post.header("mcp-protocol-version") == Some("2025-11-25"),
                        "after initialize: {post:?}"
                    );
                }
                ensure!(
                    seen.iter()
                        .any(|s| s.method == "GET" && s.status == Some(405)),
                    "rmcp asked for the server's stream and was told 405: {seen:?}"
                );
                ensure!(
                    seen.iter()
                        .any(|s| s.method == "DELETE" && s.status == Some(200)),
                    "closing ends the session: {seen:?}"
                );
                // The server's way of answering, as its `initialize` answer shows it.
                let mode = posts[0].content_type.clone().unwrap_or_default();
                modes.lock().unwrap().insert(mode);
                Ok(())
            }
        })
        .unwrap();
    let modes = modes.into_inner().unwrap();
    assert!(
        modes.contains("text/event-stream") && modes.contains("application/json"),
        "8 seeds drew both kinds of server: {modes:?}"
    );
}

/// Pins that a protocol error reaches the caller as rmcp's own typed error, code
/// intact: an unknown tool is MCP's -32602 (2025-11-25, tools, error handling), which
/// rmcp surfaces as `ServiceError::McpError`, and the session goes on working.
#[test]
fn an_unknown_tool_is_rmcps_invalid_params_error() {
    Simulation::new(SimConfig::new(0))
        .with_seeds(1..=4)
        .try_run(async |sim| {
            let env = sim.env();
            env.timeout(HANG, async {
                let client = connect(recording(&sim)).await.map_err(violation)?;
                let error = client
                    .call_tool(CallToolRequestParams::new("no_such_tool"))
                    .await
                    .expect_err("an unknown tool fails");
                let ServiceError::McpError(error) = &error else {
                    return Err(violation(format!("not a JSON-RPC error: {error:?}")));
                };
                ensure!(error.code == ErrorCode::INVALID_PARAMS, "{error:?}");
                ensure!(error.code.0 == -32602, "{error:?}");
                ensure!(error.message.contains("no_such_tool"), "{error:?}");
                ensure!(
                    client.list_all_tools().await.map_err(violation)?.len() == 1,
                    "the session still works"
                );
                Ok(())
            })
            .await
            .map_err(|_| violation("the client hung"))?
        })
        .unwrap();
}

/// A few calls under random MCP faults; what the client got, as text.
async fn workload(sim: SimEnvironment, texts: &Mutex<Vec<(u64, String)>>) -> Result<(), Violation> {
    let env = sim.env();
    let text = env
        .timeout(HANG, async {
            let mut text = String::new();
            let client = match connect(recording(&sim)).await {
                Ok(client) => client,
                Err(error) => return format!("initialize: {error}"),
            };
            for city in ["Oslo", "Lima", "Pune"] {
                let called = client
                    .call_tool(
                        CallToolRequestParams::new("get_weather")
                            .with_arguments(arguments(json!({"city": city}))),
                    )
                    .await;
                match called {
                    Ok(result) => text.push_str(&format!("{:?};", result.structured_content)),
                    Err(error) => text.push_str(&format!("error {};", error_kind(&error))),
                }
            }
            text
        })
        .await
        .map_err(|_| violation("the client hung"))?;
    texts.lock().unwrap().push((sim.seed(), text));
    Ok(())
}

/// A stable name for an error (rmcp's texts of some carry process-local details).
fn error_kind(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(error) => format!("mcp {}", error.code.0),
        ServiceError::TransportSend(_) => "transport".to_owned(),
        other => format!("{other}"),
    }
}

/// Pins replay: the same seeds give the same trace hashes (checked by the runner within
/// a run, and across two runs), with rmcp's worker, its spawned stream tasks and its
/// timers all on the simulation's runtime; different seeds give different traces and
/// answers.
#[test]
fn rmcp_replays_by_seed() {
    let faults = [
        FaultConfig::chance(FaultKind::McpInternalError, 0.2),
        FaultConfig::chance(FaultKind::McpStreamCut, 0.1),
        FaultConfig::chance(FaultKind::McpSessionExpired, 0.1),
    ];
    let texts = Mutex::new(Vec::new());
    let run = || {
        Simulation::new(SimConfig::new(0))
            .with_faults(faults.clone())
            .with_seeds(1..=6)
            .with_determinism_check(true)
            .try_run(|sim| workload(sim, &texts))
            .unwrap()
    };
    let first = run();
    let second = run();
    let hashes = |summary: &umi_dst::RunSummary| {
        summary
            .seeds
            .iter()
            .map(|s| s.trace_hash)
            .collect::<Vec<_>>()
    };
    assert_eq!(hashes(&first), hashes(&second), "same seeds, same traces");
    let distinct: BTreeSet<_> = hashes(&first).into_iter().collect();
    assert_eq!(distinct.len(), 6, "six seeds, six traces");
    let texts: BTreeSet<(u64, String)> = texts.into_inner().unwrap().into_iter().collect();
    assert_eq!(
        texts.len(),
        6,
        "one outcome per seed across runs: {texts:?}"
    );
}

/// Pins that the adapter tells the run rmcp is there, so a determinism failure names
/// rmcp's own clock and randomness where they fit.
#[test]
fn the_adapter_notes_rmcp_in_the_run() {
    let texts = Mutex::new(Vec::new());
    let run = Simulation::new(SimConfig::new(1)).run_seed(1, &|sim| workload(sim, &texts));
    assert!(run.passed(), "{:?}", run.failure);
    let noted: Vec<&str> = run.foreign.iter().map(|c| c.name).collect();
    assert_eq!(noted, ["rmcp 3.11"]);
    assert!(
        !run.foreign[0].hazards.is_empty(),
        "rmcp's audit found hazards"
    );
}

/// Pins MCP's session expiry through rmcp: every request is answered 404 `Session not
/// found`; rmcp initializes again and retries once (its `reinit_on_expired_session`),
/// meets the 404 again and hands the caller its typed `SessionExpired`, well inside
/// simulated time, never a panic or a hang.
#[test]
fn an_expired_session_is_rmcps_typed_error() {
    Simulation::new(
        SimConfig::new(0).with_fault(FaultConfig::always(FaultKind::McpSessionExpired)),
    )
    .with_seeds(1..=4)
    .try_run(async |sim| {
        let env = sim.env();
        let network = recording(&sim);
        env.timeout(HANG, async {
            let client = connect(network.clone()).await.map_err(violation)?;
            let error = client
                .list_tools(None)
                .await
                .expect_err("every request's session has expired");
            ensure!(
                matches!(
                    transport_error(&error),
                    Some(StreamableHttpError::SessionExpired)
                ),
                "{error:?}"
            );
            Ok(())
        })
        .await
        .map_err(|_| violation("the client hung"))??;
        let seen = network.seen.lock().unwrap().clone();
        let initializes = seen
            .iter()
            .filter(|s| s.method == "POST" && s.header("mcp-session-id").is_none())
            .count();
        ensure!(initializes == 2, "rmcp initialized again once: {seen:?}");
        ensure!(
            seen.iter().filter(|s| s.status == Some(404)).count() >= 2,
            "the request and its retry were both refused: {seen:?}"
        );
        Ok(())
    })
    .unwrap();
}

/// Pins a stream cut through rmcp, on JSON and SSE servers: a `tools/call` whose
/// response breaks off is a typed error (the adapter's `Transport` error when a JSON
/// body breaks, rmcp's `TransportClosed` when an SSE stream ends before its response),
/// and a cut `initialize` fails `serve` with rmcp's typed `ClientInitializeError`;
/// never a panic, never a hang.
#[test]
fn a_cut_stream_is_rmcps_typed_error() {
    let kinds = Mutex::new(BTreeSet::new());
    let on_call = FaultConfig::always(FaultKind::McpStreamCut)
        .on_operation("tool.mcp.request.tools/call")
        .unwrap();
    Simulation::new(SimConfig::new(0).with_fault(on_call))
        .with_seeds(1..=8)
        .try_run(|sim: umi_dst::SimEnvironment| {
            let kinds = &kinds;
            async move {
                let env = sim.env();
                env.timeout(HANG, async {
                    let client = connect(recording(&sim)).await.map_err(violation)?;
                    let error = client
                        .call_tool(
                            CallToolRequestParams::new("get_weather")
                                .with_arguments(arguments(json!({"city": "Oslo"}))),
                        )
                        .await
                        .expect_err("the response was cut");
                    let kind = match (&error, transport_error(&error)) {
                        (ServiceError::TransportClosed, _) => "closed",
                        (_, Some(StreamableHttpError::Client(SimMcpHttpError::Transport(_)))) => {
                            "transport"
                        }
                        _ => return Err(violation(format!("untyped: {error:?}"))),
                    };
                    kinds.lock().unwrap().insert(kind);
                    Ok(())
                })
                .await
                .map_err(|_| violation("the client hung"))?
            }
        })
        .unwrap();
    let kinds = kinds.into_inner().unwrap();
    assert_eq!(
        kinds,
        BTreeSet::from(["closed", "transport"]),
        "both kinds of server cut a call"
    );

    Simulation::new(SimConfig::new(0).with_fault(FaultConfig::always(FaultKind::McpStreamCut)))
        .with_seeds(1..=4)
        .try_run(async |sim| {
            let env = sim.env();
            let connected = env
                .timeout(HANG, connect(recording(&sim)))
                .await
                .map_err(|_| violation("serve hung"))?;
            ensure!(connected.is_err(), "a cut initialize cannot connect");
            Ok(())
        })
        .unwrap();
}
