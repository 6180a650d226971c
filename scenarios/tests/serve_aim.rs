//! Faults aimed at one operation over `dst serve` (`umi_dst::fault::aim`'s text form): a
//! rule aimed at `tool.call.<name>` fires there and nowhere else, an ordinal rule fires
//! on the 2nd model call of a scope and no other, and a rule naming an operation the
//! server does not ask is refused with its name, by the config and by `dst serve` and
//! `dst mcp` themselves.

use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::SystemEnvironment;
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_core::mcp::McpClient;
use umi_dst::fault::aim::parse_rules;
use umi_dst::serve::{McpToolsSpec, RunningServer, ServeConfig, Server};

use crate::support::{get_text, runtime};

/// A support agent's tools: a lookup and a refund that moves money.
fn support_tools() -> McpToolsSpec {
    serde_json::from_value(json!({
        "name": "support",
        "tools": [
            {"name": "lookup_order", "description": "an order",
             "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
            {"name": "issue_refund", "description": "refunds an order", "side_effects": true,
             "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"]}}
        ]
    }))
    .unwrap()
}

fn config(faults: &str) -> ServeConfig {
    let mut config = ServeConfig::default();
    config.faults = parse_rules(faults).unwrap();
    config.mcp = support_tools();
    config
}

/// Every fault of one scope's trace, as `kind@operation`.
async fn faults_of(server: &RunningServer, scope: &str) -> Vec<String> {
    let text = get_text(&format!("{}/umi/trace?scope={scope}", server.base_url())).await;
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|entry| entry.get("faults").cloned())
        .flat_map(|faults| serde_json::from_value::<Vec<String>>(faults).unwrap())
        .collect()
}

/// A run of an MCP client: initialize, list, and every tool called twice; errors (the
/// faults) are the client's to meet, and ignored here.
async fn mcp_run(url: &str) {
    let transport: Arc<dyn Transport> = Arc::new(ReqwestTransport::new().unwrap());
    let client = McpClient::new(transport, Arc::new(SystemEnvironment::new()), url);
    if client.connect().await.is_err() {
        return;
    }
    let _ = client.list_tools().await;
    for (index, name) in [
        "lookup_order",
        "issue_refund",
        "lookup_order",
        "issue_refund",
    ]
    .into_iter()
    .enumerate()
    {
        let arguments = json!({"order_id": format!("A-{index}"), "amount": 12.5});
        let _ = client
            .call_tool(name, arguments, Some(&format!("call_{index}")))
            .await;
    }
    let _ = client.close().await;
}

/// `tool.timeout@tool.call.issue_refund=0.5` over 20 seeds: every injected fault is at
/// that operation (the lookups, `initialize` and `tools/list` never meet one), and some
/// fire. The same kind unaimed reaches the lookups too, so the test can fail.
#[test]
fn a_fault_aimed_at_one_tool_fires_only_there() {
    runtime().block_on(async {
        let aimed = Server::start(config("tool.timeout@tool.call.issue_refund=0.5"))
            .await
            .unwrap();
        let mut fired = 0;
        for seed in 0..20 {
            let scope = format!("aimed-{seed}");
            mcp_run(&format!(
                "{}/seed/{seed}/scope/{scope}/mcp",
                aimed.base_url()
            ))
            .await;
            for fault in faults_of(&aimed, &scope).await {
                assert_eq!(fault, "tool.timeout@tool.call.issue_refund", "seed {seed}");
                fired += 1;
            }
        }
        assert!(fired > 0, "the aimed rule fired on none of 20 seeds");
        aimed.shutdown().await;

        let unaimed = Server::start(config("tool.timeout=0.5")).await.unwrap();
        let mut elsewhere = 0;
        for seed in 0..20 {
            let scope = format!("unaimed-{seed}");
            mcp_run(&format!(
                "{}/seed/{seed}/scope/{scope}/mcp",
                unaimed.base_url()
            ))
            .await;
            let faults = faults_of(&unaimed, &scope).await;
            elsewhere += faults
                .iter()
                .filter(|f| f.as_str() == "tool.timeout@tool.call.lookup_order")
                .count();
        }
        assert!(elsewhere > 0, "unaimed, the kind reaches the lookups too");
        unaimed.shutdown().await;
    });
}

/// One chat request (`n` makes each one distinct).
async fn chat(server: &RunningServer, scope: &str, n: u32) -> (u16, String) {
    let transport = ReqwestTransport::new().unwrap();
    let body = json!({"model": "umi-sim", "messages": [{"role": "user", "content": format!("question {n}")}]});
    let response = transport
        .send(HttpRequest {
            method: "POST",
            url: format!(
                "{}/seed/3/scope/{scope}/v1/chat/completions",
                server.base_url()
            ),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        })
        .await
        .unwrap();
    let faults = response.header("x-umi-faults").unwrap_or("").to_owned();
    (response.status, faults)
}

/// `llm.rate_limit@llm.call#2=1`: in each scope the 2nd model request to arrive, and only
/// it, is refused with a 429, whatever it asks; a fresh scope counts again from 1.
#[test]
fn an_ordinal_rule_fires_on_the_second_model_call_of_each_scope() {
    runtime().block_on(async {
        let server = Server::start(config("llm.rate_limit@llm.call#2=1"))
            .await
            .unwrap();
        for (scope, first) in [("run-a", 0), ("run-b", 10)] {
            let mut seen = Vec::new();
            for n in first..first + 4 {
                seen.push(chat(&server, scope, n).await);
            }
            let refused: Vec<usize> = (0..seen.len()).filter(|i| seen[*i].0 == 429).collect();
            assert_eq!(refused, [1], "{scope}: {seen:?}");
            assert_eq!(seen[1].1, "llm.rate_limit@llm.call", "{scope}");
            assert!(
                seen.iter()
                    .enumerate()
                    .all(|(i, s)| i == 1 || s.1 == "none")
            );
        }
        server.shutdown().await;
    });
}

/// A rule naming an operation the server does not ask is refused with its name: a tool
/// not served, a misspelt operation (with the close one it knows), by the config and by
/// both commands, which exit with the usage code.
#[test]
fn a_rule_aimed_at_no_operation_is_refused_by_name() {
    let refused = |faults: &str| {
        let mut config = ServeConfig::default();
        config.faults = parse_rules(faults).unwrap();
        config.validate().unwrap_err().to_string()
    };
    let error = refused("tool.timeout@tool.call.issue_refund=0.5");
    assert!(
        error.starts_with("--faults \"tool.timeout@tool.call.issue_refund=0.5\": no tool \"issue_refund\" is served"),
        "{error}"
    );
    assert_eq!(
        config("tool.timeout@tool.call.issue_refund=0.5")
            .validate()
            .ok(),
        Some(()),
        "served once --mcp-tools declares it"
    );
    let error = refused("tool.mcp_stream_cut@tool.mcp.request.tools/cal=1");
    assert!(
        error.contains("did you mean tool.mcp.request.tools/call"),
        "{error}"
    );

    for (command, faults, wanted) in [
        (
            "serve",
            "tool.timeout@tool.call.issue_refund=0.5",
            "no tool \"issue_refund\" is served",
        ),
        (
            "serve",
            "llm.rate_limit@llm.complete#2=1",
            "llm.complete names no operation this server asks where llm.rate_limit can fire",
        ),
        (
            "serve",
            "llm.rate_limit@llm.call#0=1",
            "`#0`: the ordinal counts from 1",
        ),
        (
            "mcp",
            "tool.timeout@tool.call.issue_refund=1",
            "no tool \"issue_refund\" is served",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_dst"))
            .args([command, "--faults", faults])
            .args(if command == "serve" {
                &["--bind", "127.0.0.1:0"][..]
            } else {
                &[][..]
            })
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command} {faults}: {stderr}"
        );
        assert!(stderr.contains("--faults"), "{stderr}");
        assert!(stderr.contains(wanted), "{command} {faults}: {stderr}");
    }
}

/// `dst mcp` is one run: `tool.mcp_internal_error@tool.mcp.request.tools/call#2=1` fails
/// the process's 2nd `tools/call` line, and no other line.
#[test]
fn over_stdio_the_process_is_the_run_an_ordinal_counts() {
    let mut config = ServeConfig::default();
    config.faults = parse_rules("tool.mcp_internal_error@tool.mcp.request.tools/call#2=1").unwrap();
    config.validate().unwrap();
    let mut server = umi_dst::serve::StdioServer::new(config);
    let mut say = |line: &str| -> Vec<Value> {
        let reply = server.answer_line(line);
        assert_eq!(reply.died_mid_message, None);
        reply
            .lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    say(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    say(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let errors: Vec<bool> = (0..4)
        .map(|n| {
            let call = json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                "params": {"name": "get_weather", "arguments": {"city": format!("City {n}")}}});
            let replies = say(&call.to_string());
            replies.last().unwrap().get("error").is_some()
        })
        .collect();
    assert_eq!(errors, [false, true, false, false]);
}
