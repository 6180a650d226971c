//! The Responses client over SimNetwork's Responses server: the provider contract,
//! refusals typed whole and inside a stream, and the bytes in the API's grammar
//! (sequence numbers from 0, items added before their deltas, no `[DONE]`).

use std::sync::Arc;

use umi_core::llm::responses::{ResponsesClient, ResponsesConfig};
use umi_core::llm::{Connection, LanguageModel, ModelRef, StreamCollector};
use umi_dst::conformance::Conformance;

use crate::support::{answer, ask_for_a_story, fault_once, refusals, weather_tool};
use umi_dst::{
    Endpoint, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork, Simulation, Violation,
    ensure,
};

const URL: &str = "https://api.openai.sim/v1";
const KEY: &str = "sk-sim-responses-0000000000";
const MODEL: &str = "gpt-sim-5";

fn network(sim: &SimEnvironment, reasoning: bool) -> Arc<SimNetwork> {
    let mut config =
        SimLlmConfig::default().with_model(ModelRef::new("openai", MODEL, 32_768, 4_096));
    if reasoning {
        config = config.with_reasoning();
    }
    let model = Arc::new(SimLlm::with_config(sim, config).unwrap());
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::openai_responses(URL, model).with_api_key(KEY))
            .with_capture(),
    )
}

fn client_on(sim: &SimEnvironment, network: Arc<SimNetwork>, summary: bool) -> ResponsesClient {
    let mut config = ResponsesConfig::new(
        Connection::new(URL).with_api_key(KEY),
        ModelRef::new("openai", MODEL, 32_768, 4_096),
    );
    if summary {
        config.reasoning_summary = Some("auto".into());
    }
    ResponsesClient::new(config, network, sim.env())
}

#[test]
fn responses_client_over_the_wire_passes_conformance() {
    Conformance::new()
        .cases(200)
        .deterministic(true)
        .honours_stop(true)
        .check(|sim| client_on(sim, network(sim, false), false));
}

/// Model refusals: an HTTP error in OpenAI's envelope when whole; inside the 200 stream
/// (`error`, then `response.failed`) when streamed. Either way the same typed kind.
#[test]
fn refusals_are_typed_whole_and_in_the_stream() {
    for (kind, expected, status) in refusals(503) {
        for stream in [false, true] {
            fault_once(7, kind)
                .try_run(async |sim| {
                    let network = network(&sim, false);
                    let client = client_on(&sim, network.clone(), false);
                    let result = answer(&client, &ask_for_a_story(), stream).await;
                    let error = result.expect_err("the fault fired");
                    ensure!(
                        error.kind() == expected,
                        "{kind} stream={stream}: {error:?}"
                    );
                    let exchange = network.exchanges().pop().expect("an exchange");
                    let body = String::from_utf8_lossy(&exchange.body()).into_owned();
                    if stream {
                        ensure!(exchange.status == 200, "{kind}: HTTP {}", exchange.status);
                        ensure!(
                            body.contains("event: error\n")
                                && body.contains("event: response.failed\n"),
                            "{body}"
                        );
                    } else {
                        ensure!(
                            exchange.status == status,
                            "{kind}: HTTP {}",
                            exchange.status
                        );
                        ensure!(body.contains("\"error\": {"), "{body}");
                    }
                    Ok(())
                })
                .unwrap();
        }
    }
}

/// The bytes follow the API's grammar over many seeds (reasoning summaries, text, tool
/// calls, both eras).
#[test]
fn streams_follow_the_apis_event_grammar() {
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let found = std::sync::Mutex::new(Vec::new());
        Simulation::new(SimConfig::new(seed))
            .try_run(|sim| {
                let found = &found;
                async move {
                    let network = network(&sim, true);
                    let client = client_on(&sim, network.clone(), seed % 2 == 0);
                    let request = ask_for_a_story().with_tools(vec![weather_tool()]);
                    let events = client.stream(&request).await?;
                    StreamCollector::collect(MODEL, events).await?;
                    let exchange = network.exchanges().pop().expect("an exchange");
                    let body = String::from_utf8(exchange.body()).expect("UTF-8");
                    let names = check_grammar(&body)
                        .map_err(|e| Violation::new(format!("seed {seed}: {e}\n{body}")))?;
                    found.lock().unwrap().extend(names);
                    Ok(())
                }
            })
            .unwrap();
        kinds.extend(found.into_inner().unwrap());
    }
    for kind in [
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
    ] {
        assert!(kinds.contains(kind), "{kind} never sent: {kinds:?}");
    }
}

fn check_grammar(body: &str) -> Result<Vec<String>, String> {
    let fail = |what: &str| Err::<(), String>(what.to_owned());
    if body.contains("[DONE]") {
        fail("a [DONE]")?;
    }
    let mut names = Vec::new();
    let mut added = std::collections::BTreeSet::new();
    for (expected, event) in body.split("\n\n").filter(|e| !e.is_empty()).enumerate() {
        let mut lines = event.lines();
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("event: "))
            .ok_or("no event line")?;
        let data = lines
            .next()
            .and_then(|l| l.strip_prefix("data: "))
            .ok_or("no data line")?;
        let value: serde_json::Value = serde_json::from_str(data).map_err(|e| e.to_string())?;
        if value["type"] != name {
            fail("data type differs from the event name")?;
        }
        if value["sequence_number"] != expected {
            fail(&format!(
                "sequence_number {} at event {expected}",
                value["sequence_number"]
            ))?;
        }
        if name == "response.output_item.added" {
            added.insert(value["item"]["id"].as_str().unwrap_or("").to_owned());
        }
        if name.ends_with(".delta") && !added.contains(value["item_id"].as_str().unwrap_or("")) {
            fail("a delta for an item never added")?;
        }
        if name == "response.function_call_arguments.done" && value.get("name").is_some() {
            fail("arguments.done carries a name")?;
        }
        names.push(name.to_owned());
    }
    if names.first().map(String::as_str) != Some("response.created") {
        fail("response.created first")?;
    }
    let last = names.last().map(String::as_str);
    if !matches!(last, Some("response.completed" | "response.incomplete")) {
        fail("the stream does not end with the response")?;
    }
    Ok(names)
}
