//! The Anthropic client over SimNetwork's Messages server: the provider contract, every
//! error kind the API sends typed as the router needs it, the API's own refusals of a
//! malformed conversation, and the bytes in the shapes the API sends.

use std::sync::Arc;

use umi_core::llm::anthropic::{AnthropicClient, AnthropicConfig};
use umi_core::llm::{
    CompletionRequest, Connection, LanguageModel, LlmError, Message, ModelRef, StreamCollector,
    ToolCall, ToolDefinition,
};
use umi_dst::conformance::Conformance;

use crate::support::{answer, ask_for_a_story, fault_once, refusals, weather_tool};
use umi_dst::{
    Endpoint, FaultKind, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork, Simulation,
    Violation, ensure,
};

const URL: &str = "https://api.anthropic.sim";
const KEY: &str = "sk-ant-sim-0000000000000000";
const MODEL: &str = "claude-sim-4";

fn network(sim: &SimEnvironment) -> Arc<SimNetwork> {
    let config =
        SimLlmConfig::default().with_model(ModelRef::new("anthropic", MODEL, 32_768, 4_096));
    let model = Arc::new(SimLlm::with_config(sim, config).unwrap());
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::anthropic(URL, model).with_api_key(KEY))
            .with_capture(),
    )
}

fn client_on(sim: &SimEnvironment, network: Arc<SimNetwork>) -> AnthropicClient {
    let config = AnthropicConfig::new(
        Connection::new(URL).with_api_key(KEY),
        ModelRef::new("anthropic", MODEL, 32_768, 4_096),
    );
    AnthropicClient::new(config, network, sim.env())
}

fn client(sim: &SimEnvironment) -> AnthropicClient {
    client_on(sim, network(sim))
}

#[test]
fn anthropic_client_over_the_wire_passes_conformance() {
    Conformance::new()
        .cases(200)
        .deterministic(true)
        .honours_stop(true)
        .check(client);
}

/// Each model fault through the Messages server, whole and streamed, reaches the caller
/// as the kind the router acts on: 429 with its `retry-after`, 529 as the service's
/// failure, "prompt is too long" as context overflow with both counts.
#[test]
fn every_refusal_is_typed_as_the_router_needs() {
    for (kind, expected, status) in refusals(529) {
        for stream in [false, true] {
            fault_once(11, kind)
                .try_run(async |sim| {
                    let network = network(&sim);
                    let client = client_on(&sim, network.clone());
                    let result = answer(&client, &ask_for_a_story(), stream).await;
                    let error = result.expect_err("the fault fired");
                    ensure!(
                        error.kind() == expected,
                        "{kind} stream={stream}: {error:?}"
                    );
                    let exchange = network.exchanges().pop().expect("an exchange");
                    // Read in place, the log is the one `exchanges` copies.
                    ensure!(
                        network.with_exchanges(|all| {
                            all.last().map(|last| (last.status, last.reads.clone()))
                        }) == Some((exchange.status, exchange.reads.clone())),
                        "with_exchanges reads another log than exchanges"
                    );
                    ensure!(
                        exchange.status == status,
                        "{kind}: HTTP {}",
                        exchange.status
                    );
                    let body = String::from_utf8_lossy(&exchange.body()).into_owned();
                    ensure!(
                        body.starts_with(r#"{"type":"error","error":{"type":""#),
                        "{body}"
                    );
                    ensure!(
                        exchange
                            .header("request-id")
                            .is_some_and(|id| id.starts_with("req_01")),
                        "no request-id"
                    );
                    if let LlmError::ContextOverflow {
                        prompt_tokens: Some(prompt),
                        limit: Some(limit),
                    } = &error
                    {
                        ensure!(prompt > limit, "{error:?}");
                    } else if kind == FaultKind::LlmContextOverflow {
                        return Err(Violation::new(format!("the counts were lost: {error:?}")));
                    }
                    if let LlmError::RateLimit { retry_after_ms } = &error {
                        ensure!(
                            retry_after_ms.is_some() == exchange.header("retry-after").is_some(),
                            "{error:?} against {:?}",
                            exchange.header("retry-after")
                        );
                    }
                    Ok(())
                })
                .unwrap();
        }
    }
}

/// A model that does not exist is `not_found_error` `model: <id>`, typed model-not-found
/// (so a router falls back), and a wrong key is `invalid x-api-key`.
#[test]
fn a_missing_model_and_a_wrong_key_are_typed() {
    Simulation::new(SimConfig::new(3))
        .try_run(async |sim| {
            let network = network(&sim);
            let mut request = ask_for_a_story();
            request.model = "claude-retired".into();
            let missing = client_on(&sim, network.clone()).complete(&request).await;
            ensure!(
                matches!(
                    &missing,
                    Err(LlmError::ModelNotFound {
                        status: Some(404),
                        ..
                    })
                ),
                "{missing:?}"
            );
            let config = AnthropicConfig::new(
                Connection::new(URL).with_api_key("sk-ant-wrong-key-000000"),
                ModelRef::new("anthropic", MODEL, 32_768, 4_096),
            );
            let wrong = AnthropicClient::new(config, network.clone(), sim.env())
                .complete(&ask_for_a_story())
                .await;
            ensure!(
                matches!(&wrong, Err(LlmError::Auth { status: 401, .. })),
                "{wrong:?}"
            );
            let body =
                String::from_utf8_lossy(&network.exchanges().pop().unwrap().body()).into_owned();
            ensure!(
                body.contains("invalid x-api-key") && !body.contains("wrong-key"),
                "{body}"
            );
            Ok(())
        })
        .unwrap();
}

/// A request over 32 MB meets Cloudflare's 413 (`request_too_large`, no `type` at the
/// top, no `request_id`), typed a bad request (not retried). Umi's client refuses such a
/// prompt before sending it; other clients (through `dst serve`) can send one.
#[test]
fn a_request_over_32_mb_gets_cloudflares_413() {
    use futures::StreamExt;
    use umi_core::llm::transport::{HttpRequest, Transport};
    Simulation::new(SimConfig::new(4))
        .try_run(async |sim| {
            let network = network(&sim);
            let huge = "x".repeat(33 * 1024 * 1024);
            let body = serde_json::json!({"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": huge}]});
            let http = HttpRequest {
                method: "POST",
                url: format!("{URL}/v1/messages"),
                headers: vec![
                    ("anthropic-version".into(), "2023-06-01".into()),
                    ("x-api-key".into(), KEY.into()),
                ],
                body: body.to_string().into_bytes(),
            };
            let response = network.send(http).await?;
            let status = response.status;
            let bytes: Vec<u8> = response.body.filter_map(|r| async move { r.ok() }).concat().await;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            ensure!(status == 413, "HTTP {status}");
            ensure!(
                text == r#"{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
                "{text}"
            );
            let error = umi_core::llm::wire::errors::from_status(status, |_| None, &text, 0);
            ensure!(matches!(error, LlmError::BadRequest { status: Some(413), .. }), "{error:?}");
            Ok(())
        })
        .unwrap();
}

/// The API refuses a conversation whose tool call has no result in the next message
/// (the agent bug of dropping a tool result while trimming history): the simulator
/// refuses it in the API's words, as a bad request naming the message.
#[test]
fn a_tool_call_without_its_result_is_refused_as_the_api_does() {
    Simulation::new(SimConfig::new(5))
        .try_run(async |sim| {
            let call = ToolCall::new("call_1", "search", serde_json::json!({"q": "x"}));
            let request = CompletionRequest::new(vec![
                Message::user("find x"),
                Message::assistant_tool_calls("", vec![call]),
                Message::user("well?"),
            ]);
            let refused = client(&sim).complete(&request).await;
            let Err(LlmError::BadRequest { status: Some(400), message }) = &refused else {
                return Err(Violation::new(format!("{refused:?}")));
            };
            ensure!(
                message.contains("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: call_1"),
                "{message}"
            );
            Ok(())
        })
        .unwrap();
}

/// The bytes of a streamed answer follow the API's grammar: named events whose data
/// `type` is the event's name, `message_start` first, `message_stop` last, a ping, no
/// `[DONE]`, block starts and stops paired in order, the first tool delta empty.
#[test]
fn streams_follow_the_apis_event_grammar() {
    let mut layouts = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let found = std::sync::Mutex::new(Vec::new());
        Simulation::new(SimConfig::new(seed))
            .try_run(|sim| {
                let found = &found;
                async move {
                    let network = network(&sim);
                    let client = client_on(&sim, network.clone());
                    let request = ask_for_a_story().with_tools(tools());
                    let events = client.stream(&request).await?;
                    StreamCollector::collect(MODEL, events).await?;
                    let exchange = network.exchanges().pop().expect("an exchange");
                    let body = String::from_utf8(exchange.body()).expect("UTF-8");
                    check_grammar(&body)
                        .map_err(|e| Violation::new(format!("seed {seed}: {e}\n{body}")))?;
                    found.lock().unwrap().push(
                        body.contains("\"model\":") && body.find("\"model\"") < body.find("\"id\""),
                    );
                    Ok(())
                }
            })
            .unwrap();
        layouts.extend(found.into_inner().unwrap());
    }
    assert_eq!(layouts.len(), 2, "both key orders (2024 and 2025+) appear");
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        weather_tool(),
        ToolDefinition::new(
            "search_notes",
            "Search the notes \"quoted\".",
            serde_json::json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 2}}, "required": ["query"]}),
        ),
    ]
}

fn check_grammar(body: &str) -> Result<(), String> {
    ensure_that(!body.contains("[DONE]"), "a [DONE]")?;
    let mut names = Vec::new();
    let mut open: Option<u64> = None;
    let mut next_index = 0;
    let mut tool_blocks_awaiting_first_delta = std::collections::BTreeSet::new();
    for event in body.split("\n\n").filter(|e| !e.is_empty()) {
        let mut lines = event.lines();
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("event: "))
            .ok_or("no event line")?;
        let data = lines
            .next()
            .and_then(|l| l.strip_prefix("data: "))
            .ok_or("no data line")?;
        ensure_that(lines.next().is_none(), "more than one data line")?;
        let value: serde_json::Value = serde_json::from_str(data).map_err(|e| e.to_string())?;
        ensure_that(
            value["type"] == name,
            "data type differs from the event name",
        )?;
        match name {
            "ping" => ensure_that(data == r#"{"type": "ping"}"#, "ping spelled differently")?,
            "content_block_start" => {
                ensure_that(open.is_none(), "a block started inside another")?;
                ensure_that(value["index"] == next_index, "block indexes out of order")?;
                if value["content_block"]["type"] == "tool_use" {
                    tool_blocks_awaiting_first_delta.insert(next_index);
                    ensure_that(
                        value["content_block"]["id"]
                            .as_str()
                            .is_some_and(|id| id.starts_with("toolu_01")),
                        "tool id shape",
                    )?;
                }
                open = Some(next_index);
                next_index += 1;
            }
            "content_block_delta" => {
                let index = value["index"].as_u64().ok_or("delta without index")?;
                ensure_that(open == Some(index), "a delta outside its block")?;
                if tool_blocks_awaiting_first_delta.remove(&index) {
                    ensure_that(
                        value["delta"]["partial_json"] == "",
                        "first tool delta not empty",
                    )?;
                }
            }
            "content_block_stop" => {
                ensure_that(
                    open == value["index"].as_u64(),
                    "a stop for a block not open",
                )?;
                open = None;
            }
            _ => {}
        }
        names.push(name.to_owned());
    }
    ensure_that(
        names.first().map(String::as_str) == Some("message_start"),
        "message_start first",
    )?;
    ensure_that(
        names.last().map(String::as_str) == Some("message_stop"),
        "message_stop last",
    )?;
    ensure_that(names.iter().any(|n| n == "ping"), "no ping")?;
    ensure_that(open.is_none(), "a block left open")
}

fn ensure_that(holds: bool, what: &str) -> Result<(), String> {
    if holds { Ok(()) } else { Err(what.to_owned()) }
}
