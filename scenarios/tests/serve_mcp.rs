//! `dst serve`'s simulated MCP server (`/mcp`) over real HTTP, with umi-core's MCP client
//! on the real reqwest transport as its user: the tools listed and called, a rerun under
//! a fresh scope (on a used server and a fresh one) getting the same results, MCP's
//! faults reaching the client as its typed errors, and the transport's refusals.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::SystemEnvironment;
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_core::mcp::{McpClient, McpError, ToolCallResult};
use umi_dst::fault::{FaultConfig, FaultKind};
use umi_dst::serve::{McpToolsSpec, ServeConfig, Server};

use crate::support::runtime;

fn client(url: &str) -> McpClient {
    let transport: Arc<dyn Transport> = Arc::new(ReqwestTransport::new().unwrap());
    McpClient::new(transport, Arc::new(SystemEnvironment::new()), url)
}

/// What a session saw: the version, the tools, and three calls' results.
async fn session(url: &str) -> (String, Vec<String>, Vec<ToolCallResult>) {
    let client = client(url);
    client.connect().await.expect("initialize");
    let tools = client.list_tools().await.expect("tools/list");
    let mut results = Vec::new();
    for (name, arguments) in [
        ("get_weather", json!({"city": "Oslo"})),
        (
            "send_payment",
            json!({"invoice_id": "INV-1", "amount_cents": 100}),
        ),
        ("send_payment", json!({"invoice_id": "INV-1"})),
    ] {
        let result = client.call_tool(name, arguments, Some("call_1")).await;
        results.push(result.expect("tools/call"));
    }
    client.close().await.expect("DELETE");
    let names = tools.into_iter().map(|tool| tool.name).collect();
    (
        client.protocol_version().unwrap_or_default(),
        names,
        results,
    )
}

/// The MCP server answers umi-core's client over real HTTP: the default tools, a result
/// valid under its output schema, a payment, and bad arguments as a tool execution
/// error; and the same seed under a fresh scope gets the same, on the used server and on
/// a fresh one, while another seed gets other results.
#[test]
fn the_mcp_server_answers_and_a_rerun_under_a_fresh_scope_is_a_rerun() {
    runtime().block_on(async {
        let used = Server::start(ServeConfig::default()).await.unwrap();
        let url = |server: &umi_dst::serve::RunningServer, seed: u64, scope: &str| {
            format!("{}/seed/{seed}/scope/{scope}/mcp", server.base_url())
        };
        let first = session(&url(&used, 5, "a")).await;
        let (version, tools, results) = &first;
        assert_eq!(version, "2025-11-25");
        assert_eq!(tools, &["get_weather", "search_docs", "send_payment"]);
        let weather = results[0].structured.as_ref().expect("structured content");
        assert!(
            weather["celsius"].is_i64() && weather["sky"].is_string(),
            "{weather}"
        );
        assert!(!results[1].is_error, "{:?}", results[1]);
        assert!(results[2].is_error && results[2].text.contains("amount_cents"));
        assert_eq!(
            session(&url(&used, 5, "b")).await,
            first,
            "a rerun on the used server"
        );
        let fresh = Server::start(ServeConfig::default()).await.unwrap();
        assert_eq!(
            session(&url(&fresh, 5, "c")).await,
            first,
            "a rerun on a fresh server"
        );
        let other = session(&url(&used, 6, "d")).await;
        assert_eq!(other.1, first.1);
        assert_ne!(other.2, first.2, "another seed, other results");
        used.shutdown().await;
        fresh.shutdown().await;
    });
}

/// Whether an error is the one a case expects.
type Expected = fn(&McpError) -> bool;

/// MCP's faults, always on, reach the client as its typed errors: a session the server
/// keeps forgetting ends in `SessionExpired` after one new session, a version the client
/// does not speak in `Version`, an internal error as the JSON-RPC error -32603.
#[test]
fn mcp_faults_reach_the_client_as_typed_errors() {
    runtime().block_on(async {
        let cases: [(FaultKind, Expected); 3] = [
            (FaultKind::McpSessionExpired, |e| {
                matches!(e, McpError::SessionExpired { attempts: 1, .. })
            }),
            (
                FaultKind::McpVersionMismatch,
                |e| matches!(e, McpError::Version { version, .. } if version == "2024-11-05"),
            ),
            (FaultKind::McpInternalError, |e| {
                matches!(e, McpError::Rpc { code: -32603, .. })
            }),
        ];
        for (kind, expected) in cases {
            let mut config = ServeConfig::default();
            config.faults = vec![FaultConfig::chance(kind, 1.0)];
            let server = Server::start(config).await.unwrap();
            let client = client(&format!("{}/mcp", server.base_url()));
            let error = client
                .list_tools()
                .await
                .expect_err("every request faulted");
            assert!(expected(&error), "{kind}: {error:?}");
            server.shutdown().await;
        }
    });
}

async fn raw(
    method: &'static str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Option<String>, Value) {
    let response = ReqwestTransport::new()
        .unwrap()
        .send(HttpRequest {
            method,
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
        })
        .await
        .expect("the server answers");
    let allow = response.header("allow").map(str::to_owned);
    let status = response.status;
    let bytes: Vec<u8> = futures::StreamExt::collect::<Vec<_>>(response.body)
        .await
        .into_iter()
        .filter_map(Result::ok)
        .flatten()
        .collect();
    (
        status,
        allow,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The transport's refusals, as MCP 2025-11-25 and the TypeScript SDK's server give them:
/// GET is 405 (no stream of the server's own), a request without a session 400, a
/// session the server never had 404, bad JSON a -32700 parse error, JSON that is no
/// JSON-RPC message -32600 Invalid Request (JSON-RPC 2.0 §5.1; it was -32700).
#[test]
fn the_transport_refuses_as_the_spec_says() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/mcp", server.base_url());
        let both = ("accept", "application/json, text/event-stream");
        let json_type = ("content-type", "application/json");
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let (status, allow, _) = raw("GET", &url, &[("accept", "text/event-stream")], "").await;
        assert_eq!((status, allow.as_deref()), (405, Some("POST, DELETE")));
        let (status, _, body) = raw("POST", &url, &[both, json_type], ping).await;
        assert_eq!(status, 400);
        assert_eq!(
            body["error"]["message"],
            "Bad Request: Mcp-Session-Id header is required"
        );
        let (status, _, body) = raw(
            "POST",
            &url,
            &[both, json_type, ("mcp-session-id", "nope")],
            ping,
        )
        .await;
        assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)));
        let (status, _, body) = raw("POST", &url, &[both, json_type], "{not json").await;
        assert_eq!(
            (status, &body["error"]["code"], &body["id"]),
            (400, &json!(-32700), &Value::Null)
        );
        for not_rpc in [r#"{"id":1,"method":"ping"}"#, "[]", "42"] {
            let (status, _, body) = raw("POST", &url, &[both, json_type], not_rpc).await;
            assert_eq!(
                (status, &body["error"]["code"], &body["id"]),
                (400, &json!(-32600), &Value::Null),
                "{not_rpc}: {body}"
            );
        }
        server.shutdown().await;
    });
}

/// A response's status, headers and body text.
async fn exchange(
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut all = vec![
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    all.extend(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let response = ReqwestTransport::new()
        .unwrap()
        .send(HttpRequest {
            method: "POST",
            url: url.to_owned(),
            headers: all,
            body: body.as_bytes().to_vec(),
        })
        .await
        .expect("the server answers");
    let (status, headers) = (response.status, response.headers);
    let bytes: Vec<u8> = futures::StreamExt::collect::<Vec<_>>(response.body)
        .await
        .into_iter()
        .filter_map(Result::ok)
        .flatten()
        .collect();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The JSON-RPC messages of a body: its JSON (an array's elements each), or each SSE
/// event's data.
fn messages_of(text: &str) -> Vec<Value> {
    let values: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(value) => vec![value],
        Err(_) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect(),
    };
    values
        .into_iter()
        .flat_map(|value| match value {
            Value::Array(items) => items,
            one => vec![one],
        })
        .collect()
}

/// A session at `url` that negotiated `version`: its id.
async fn session_at(url: &str, version: &str) -> String {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let (status, headers, body) = exchange(url, &[], &init).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(messages_of(&body)[0]["result"]["protocolVersion"], version);
    headers
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, value)| value)
        .expect("a session id")
}

/// MCP 2025-03-26: "MUST support receiving JSON-RPC batches". A session that
/// negotiated it sends one and gets a response per request, in order (one JSON array,
/// or an SSE event each, as the seed's server answers), and a batch of notifications
/// gets 202; a session of 2025-06-18 or 2025-11-25, where batches were removed, gets
/// 400 -32600 naming why. Before, every batch was a -32700 parse error.
#[test]
fn a_2025_03_26_session_sends_batches_and_later_ones_are_refused() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}},{"jsonrpc":"2.0","id":"three","method":"tools/list"}]"#;
        for seed in 1..=4 {
            let url = format!("{}/seed/{seed}/scope/batch/mcp", server.base_url());
            let session = session_at(&url, "2025-03-26").await;
            let (status, _, body) = exchange(&url, &[("mcp-session-id", &session)], batch).await;
            assert_eq!(status, 200, "seed {seed}: {body}");
            let answered = messages_of(&body);
            let ids: Vec<&Value> = answered.iter().map(|m| &m["id"]).collect();
            assert_eq!(ids, [&json!(1), &json!(2), &json!("three")], "seed {seed}: {body}");
            assert_eq!(answered[0]["result"], json!({}));
            assert!(answered[1]["result"]["structuredContent"]["celsius"].is_i64());
            assert_eq!(answered[2]["result"]["tools"].as_array().unwrap().len(), 3);
            let notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
            let (status, _, body) = exchange(&url, &[("mcp-session-id", &session)], notes).await;
            assert_eq!((status, body.as_str()), (202, ""));
        }
        let url = format!("{}/mcp", server.base_url());
        for version in ["2025-06-18", "2025-11-25"] {
            let session = session_at(&url, version).await;
            let (status, _, body) = exchange(&url, &[("mcp-session-id", &session)], batch).await;
            let refusal: Value = serde_json::from_str(&body).unwrap();
            assert_eq!((status, &refusal["error"]["code"]), (400, &json!(-32600)));
            let message = refusal["error"]["message"].as_str().unwrap();
            assert!(message.contains(&format!("not part of MCP {version}")), "{message}");
        }
        server.shutdown().await;
    });
}

/// MCP 2025-11-25: "If the `Origin` header is present and invalid, servers MUST respond
/// with HTTP 403 Forbidden". A page on another origin is refused, a local one and a
/// client that sends none are served, and `allowed_origins` (`--allow-origin`) lets a
/// named one in. Before, every origin was served.
#[test]
fn an_origin_that_is_not_local_is_forbidden_unless_allowed() {
    runtime().block_on(async {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/mcp", server.base_url());
        let (status, _, body) = exchange(&url, &[("origin", "https://evil.example")], init).await;
        let refusal: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((status, &refusal["id"]), (403, &Value::Null), "{body}");
        assert!(body.contains("--allow-origin"), "{body}");
        for fine in [Some("http://localhost:5173"), Some("http://127.0.0.1:8080"), None] {
            let headers: Vec<(&str, &str)> = fine.iter().map(|o| ("origin", *o)).collect();
            assert_eq!(exchange(&url, &headers, init).await.0, 200, "{fine:?}");
        }
        server.shutdown().await;
        let mut config = ServeConfig::default();
        config.allowed_origins = vec!["https://app.example".into()];
        let server = Server::start(config).await.unwrap();
        let url = format!("{}/mcp", server.base_url());
        assert_eq!(exchange(&url, &[("origin", "https://app.example")], init).await.0, 200);
        assert_eq!(exchange(&url, &[("origin", "https://evil.example")], init).await.0, 403);
        server.shutdown().await;
    });
}

/// `tool.mcp_no_response`: the status and headers the trace records reach the client
/// when the simulation sent them, the stall after. On a seed whose server answers with
/// SSE the trace says 200 and the client has its 200 well before the stall ends (it
/// once got no status line until the stall was over); on a JSON one the trace says no
/// status and the client gets none.
#[test]
fn a_stalled_mcp_answer_sends_the_head_the_trace_records() {
    // 0.005: the stall (600 s simulated) ends 3 s after the request.
    const TIME_SCALE: f64 = 0.005;
    const HEAD_WAIT_MS: u64 = 1_500;
    const SEEDS_MAX: u64 = 12;
    runtime().block_on(async {
        let mut config = ServeConfig::default();
        config.faults = vec![FaultConfig::chance(FaultKind::McpNoResponse, 1.0)];
        config.time_scale = TIME_SCALE;
        let server = Server::start(config).await.unwrap();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let mut heads_seen = 0;
        for seed in 1..=SEEDS_MAX {
            let scope = format!("stall-{seed}");
            let url = format!("{}/seed/{seed}/scope/{scope}/mcp", server.base_url());
            let request = HttpRequest {
                method: "POST",
                url,
                headers: vec![
                    ("accept".into(), "application/json, text/event-stream".into()),
                    ("content-type".into(), "application/json".into()),
                ],
                body: init.as_bytes().to_vec(),
            };
            let transport = ReqwestTransport::new().unwrap();
            // Real time: a real server's head against a real deadline.
            #[allow(clippy::disallowed_methods)]
            let head = tokio::time::timeout(
                std::time::Duration::from_millis(HEAD_WAIT_MS),
                transport.send(request),
            )
            .await;
            let seen = match head {
                Ok(Ok(response)) => Some(response.status),
                Ok(Err(_)) | Err(_) => None,
            };
            let trace = ReqwestTransport::new()
                .unwrap()
                .send(HttpRequest {
                    method: "GET",
                    url: format!("{}/umi/trace?scope={scope}", server.base_url()),
                    headers: Vec::new(),
                    body: Vec::new(),
                })
                .await
                .unwrap();
            let bytes: Vec<u8> = futures::StreamExt::collect::<Vec<_>>(trace.body)
                .await
                .into_iter()
                .filter_map(Result::ok)
                .flatten()
                .collect();
            let entry: Value = String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|line| line.get("request_hash").is_some())
                .expect("the request is in the trace");
            let recorded = entry["status"].as_u64().map(|s| s as u16);
            assert_eq!(seen, recorded, "seed {seed}: the client saw {seen:?}, the trace says {entry}");
            if seen.is_some() {
                heads_seen += 1;
                break;
            }
        }
        assert_eq!(heads_seen, 1, "no seed in 1..={SEEDS_MAX} answers with SSE");
        server.shutdown().await;
    });
}

/// A tools file with a misspelled field is refused, naming the flag, the file and the
/// field (a paying tool silently harmless is worse than no start).
#[test]
fn a_tools_file_with_a_typo_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("umi-mcp-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tools.json");
    std::fs::write(
        &path,
        r#"{"tools": [{"name": "pay", "description": "", "input_schema": {"type": "object"}, "side_efects": true}]}"#,
    )
    .unwrap();
    let error = McpToolsSpec::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("--mcp-tools")
            && error.contains("tools.json")
            && error.contains("side_efects"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
