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
/// session the server never had 404, bad JSON a -32700 parse error.
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
