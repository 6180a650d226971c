//! Every fault kind, fired by an always-on rule through the real simulators, does what
//! its catalog entry says. A kind that is counted and traced as injected must change
//! what the code under test sees; this test is where a new kind, or a simulator that
//! stops implementing one, shows up.
//!
//! The match in `effect` lists every kind without a catch-all, so adding a kind to the
//! catalog does not compile until its effect is checked here.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use umi_core::env::EnvironmentExt;
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::{CompletionRequest, FinishReason, LanguageModel, LlmError, Message};
use umi_core::storage::EntityType;
use umi_core::storage::{Entity, Note, Storage, StorageError, WriteBatch};
use umi_dst::network::{Endpoint, SimNetwork};
use umi_dst::{
    FaultConfig, FaultKind, SimConfig, SimEnvironment, SimStorage, Simulation, Violation, ensure,
};

const URL: &str = "https://api.openai.example/v1";

fn request() -> CompletionRequest {
    let words = "one two three four five six seven eight nine ten ".repeat(20);
    CompletionRequest::new(vec![Message::user(format!("Write about: {words}"))])
}

fn entity(id: &str) -> Entity {
    Entity {
        id: id.into(),
        name: "Maria".into(),
        entity_type: EntityType::Person,
        content: "met Chen in Berlin".into(),
        confidence: 0.9,
        note_id: None,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn write(id: &str) -> WriteBatch {
    WriteBatch {
        notes: vec![Note {
            id: format!("note-{id}"),
            text: "Maria met Chen in Berlin".into(),
            created_at_ms: 0,
        }],
        entities: vec![entity(id)],
        ..WriteBatch::default()
    }
}

/// What a chat completion over SimNetwork delivered: status, body bytes, and whether
/// the body ended in an error, within `wait` of simulated time.
async fn over_the_wire(
    sim: &SimEnvironment,
    wait: Duration,
) -> Result<(u16, Vec<u8>, bool), String> {
    let network = SimNetwork::new(sim).with_endpoint(Endpoint::openai(URL, sim.llm()));
    let body = serde_json::json!({
        "model": "sim-large",
        "stream": true,
        "messages": [{"role": "user", "content": "Write a long answer about Berlin."}],
    });
    let http = HttpRequest {
        method: "POST",
        url: format!("{URL}/chat/completions"),
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap(),
    };
    let env = sim.env();
    let exchange = async {
        let response = network.send(http).await.map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        let mut broke = false;
        let mut stream = response.body;
        while let Some(piece) = stream.next().await {
            match piece {
                Ok(piece) => bytes.extend_from_slice(&piece),
                Err(_) => {
                    broke = true;
                    break;
                }
            }
        }
        Ok::<_, String>((response.status, bytes, broke))
    };
    env.timeout(wait, exchange)
        .await
        .map_err(|_| format!("nothing within {wait:?}"))?
}

/// What seed `seed` gives with no fault: SimLLM's answer to [`request`] and the body of
/// the exchange over the wire, for comparison.
struct Clean {
    answer: String,
    body: Vec<u8>,
}

fn clean(seed: u64) -> Clean {
    let out = Arc::new(std::sync::Mutex::new(None));
    let slot = out.clone();
    let run = Simulation::new(SimConfig::new(seed)).run_seed(
        seed,
        &move |sim: umi_dst::SimEnvironment| {
            let slot = slot.clone();
            async move {
                let response = sim.llm().complete(&request()).await?;
                let (_, body, _) = over_the_wire(&sim, Duration::from_secs(600))
                    .await
                    .map_err(Violation::new)?;
                *slot.lock().unwrap() = Some(Clean {
                    answer: response.text,
                    body,
                });
                Ok(())
            }
        },
    );
    assert!(run.passed(), "{:?}", run.failure);
    out.lock()
        .unwrap()
        .take()
        .expect("the clean run filled its slot")
}

/// Checks that `kind`, always on, had its effect.
async fn effect(kind: FaultKind, sim: SimEnvironment, clean: Arc<Clean>) -> Result<(), Violation> {
    let llm = sim.llm();
    let storage = SimStorage::new(&sim);
    let wire = || over_the_wire(&sim, Duration::from_secs(120));
    match kind {
        FaultKind::LlmTimeout => {
            let outcome = sim
                .env()
                .timeout(Duration::from_secs(30), llm.complete(&request()))
                .await;
            ensure!(
                matches!(outcome, Err(_) | Ok(Err(LlmError::Timeout { .. }))),
                "a timeout answered: {outcome:?}"
            );
        }
        FaultKind::LlmRateLimit => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(
                    outcome,
                    Err(LlmError::RateLimit {
                        retry_after_ms: Some(_)
                    })
                ),
                "{outcome:?}"
            );
        }
        FaultKind::LlmContextOverflow => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(outcome, Err(LlmError::ContextOverflow { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::LlmInvalidResponse => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(outcome, Err(LlmError::InvalidResponse { .. })),
                "{outcome:?}"
            );
            // On the wire: a 200 whose stream has a data line that does not parse.
            let (status, body, _) = wire().await.map_err(Violation::new)?;
            let text = String::from_utf8_lossy(&body);
            let broken = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .filter(|data| *data != "[DONE]")
                .any(|data| serde_json::from_str::<serde_json::Value>(data).is_err());
            ensure!(status == 200 && broken, "every part parses: {text}");
        }
        FaultKind::LlmWrongContent => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                outcome.as_ref().is_ok_and(|r| r.text != clean.answer),
                "a wrong answer is not well formed, or equals the clean one: {outcome:?}"
            );
        }
        FaultKind::LlmServiceUnavailable => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(outcome, Err(LlmError::ServiceUnavailable { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::LlmStreamCut => {
            let outcome = llm.complete(&request()).await;
            ensure!(outcome.is_err(), "a cut stream completed: {outcome:?}");
        }
        FaultKind::LlmContentFilter => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(&outcome, Ok(r) if r.finish_reason == FinishReason::ContentFilter),
                "{outcome:?}"
            );
        }
        FaultKind::LlmModelNotFound => {
            let outcome = llm.complete(&request()).await;
            ensure!(
                matches!(outcome, Err(LlmError::ModelNotFound { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::StorageWriteFail => {
            let outcome = storage.apply(write("a")).await;
            ensure!(
                matches!(outcome, Err(StorageError::WriteFailed { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::StorageReadFail => {
            storage.apply(write("a")).await?;
            let outcome = storage.get_entity("a").await;
            ensure!(
                matches!(outcome, Err(StorageError::ReadFailed { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::StorageDeleteFail => {
            let delete = WriteBatch {
                delete_entities: vec!["a".into()],
                ..WriteBatch::default()
            };
            let outcome = storage.apply(delete).await;
            ensure!(
                matches!(outcome, Err(StorageError::DeleteFailed { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::StorageCorruption => {
            storage.apply(write("a")).await?;
            let outcome = storage.get_entity("a").await;
            ensure!(
                matches!(outcome, Err(StorageError::Corruption { .. })),
                "{outcome:?}"
            );
        }
        FaultKind::StorageDiskFull => {
            let outcome = storage.apply(write("a")).await;
            ensure!(
                matches!(outcome, Err(StorageError::DiskFull)),
                "{outcome:?}"
            );
        }
        FaultKind::StorageLatency => {
            let before = sim.env().elapsed();
            storage.apply(write("a")).await?;
            ensure!(sim.env().elapsed() > before, "a slow write took no time");
        }
        FaultKind::NetworkConnectionRefused => {
            let outcome = wire().await;
            ensure!(
                matches!(&outcome, Err(e) if e.contains("refused")),
                "{outcome:?}"
            );
        }
        FaultKind::NetworkReset => {
            let outcome = wire().await;
            ensure!(
                matches!(outcome, Ok((200, _, true))),
                "no reset: {outcome:?}"
            );
        }
        FaultKind::NetworkTimeout => {
            let outcome = wire().await;
            ensure!(outcome.is_err(), "a timed-out exchange ended: {outcome:?}");
        }
        FaultKind::NetworkPartialWrite => {
            let outcome = wire().await.map_err(Violation::new)?;
            ensure!(
                outcome.0 == 200 && !outcome.2 && outcome.1.len() < clean.body.len(),
                "a partial write delivered {} of {} bytes",
                outcome.1.len(),
                clean.body.len()
            );
        }
        FaultKind::NetworkSlowFirstByte => {
            let before = sim.env().elapsed();
            wire().await.map_err(Violation::new)?;
            ensure!(
                sim.env().elapsed() - before >= Duration::from_secs(1),
                "the first byte was not late: {:?}",
                sim.env().elapsed() - before
            );
        }
        FaultKind::NetworkProxyError => {
            let outcome = wire().await.map_err(Violation::new)?;
            ensure!(matches!(outcome.0, 502 | 504), "status {}", outcome.0);
        }
        FaultKind::ClockJump => {
            let expected = sim.config().epoch_unix_ms + sim.env().elapsed().as_millis() as u64;
            let read = sim.env().unix_time_ms();
            ensure!(read != expected, "the wall clock did not jump");
        }
        FaultKind::ToolTimeout
        | FaultKind::ToolErrorResult
        | FaultKind::ToolTransportError
        | FaultKind::ToolMalformedResult
        | FaultKind::ToolSlow
        | FaultKind::ToolEmptyResult => tool_effect(kind, &sim).await?,
        FaultKind::McpSessionExpired
        | FaultKind::McpStreamCut
        | FaultKind::McpInternalError
        | FaultKind::McpVersionMismatch
        | FaultKind::McpToolsChanged
        | FaultKind::McpNoResponse => mcp_effect(kind, &sim).await?,
        FaultKind::LlmEmbeddingWrongDimensions
        | FaultKind::LlmEmbeddingTruncated
        | FaultKind::LlmEmbeddingMissing => embed_effect(kind, &sim).await?,
        // FaultKind is non_exhaustive: a kind added to the catalog fails here until it
        // has an effect check (the test runs every kind of FaultKind::ALL).
        other => {
            return Err(Violation::new(format!(
                "{other} has no effect check in fault_kinds.rs"
            )));
        }
    }
    Ok(())
}

/// umi-core's OpenAI embedding client at a simulated server under `kind` always on: an
/// answer of the wrong shape, caught as an invalid response.
async fn embed_effect(kind: FaultKind, sim: &SimEnvironment) -> Result<(), Violation> {
    use umi_core::llm::embed::{EmbedClient, Embedder, EmbeddingRequest, OpenAiEmbedConfig};
    let network: Arc<dyn Transport> =
        Arc::new(SimNetwork::new(sim).with_endpoint(Endpoint::openai(URL, sim.llm())));
    let client = EmbedClient::new(OpenAiEmbedConfig::new(URL, "sim-embed"), network, sim.env());
    let inputs = vec!["one".into(), "two three".into()];
    let outcome = client
        .embed(&EmbeddingRequest::new("", inputs).with_dimensions(8))
        .await;
    ensure!(
        matches!(outcome, Err(LlmError::InvalidResponse { .. })),
        "{kind}: {outcome:?}"
    );
    Ok(())
}

/// umi-core's MCP client against a simulated MCP server serving one tool, under `kind`
/// always on: what `initialize` and `tools/list` come to.
async fn mcp_effect(kind: FaultKind, sim: &SimEnvironment) -> Result<(), Violation> {
    use serde_json::json;
    use umi_core::mcp::{McpClient, McpClientConfig, McpError};
    use umi_dst::mcp::SimMcpServer;
    use umi_dst::tools::{SimTool, SimTools};
    let url = "http://tools.sim/mcp";
    let tools = SimTools::new(sim).with(SimTool::new("pay", "pays", json!({"type": "object"})));
    let network: Arc<dyn Transport> =
        Arc::new(SimNetwork::new(sim).with_mcp(url, SimMcpServer::new("t", tools)));
    let config = McpClientConfig::default().with_request_timeout(Duration::from_secs(5));
    let client = McpClient::new(network, sim.env(), url).with_config(config);
    let listed = client.list_tools().await;
    match kind {
        FaultKind::McpSessionExpired => ensure!(
            matches!(listed, Err(McpError::SessionExpired { attempts: 1, .. })),
            "{listed:?}"
        ),
        FaultKind::McpStreamCut => ensure!(
            matches!(&listed, Err(e @ McpError::Transport { .. }) if e.maybe_applied()),
            "{listed:?}"
        ),
        FaultKind::McpInternalError => ensure!(
            matches!(listed, Err(McpError::Rpc { code: -32603, .. })),
            "{listed:?}"
        ),
        FaultKind::McpVersionMismatch => ensure!(
            matches!(&listed, Err(McpError::Version { version, .. }) if version == "2024-11-05"),
            "{listed:?}"
        ),
        FaultKind::McpToolsChanged => ensure!(
            listed.as_ref().is_ok_and(Vec::is_empty),
            "the one tool was still listed: {listed:?}"
        ),
        FaultKind::McpNoResponse => ensure!(
            matches!(
                listed,
                Err(McpError::Timeout {
                    timeout_ms: 5_000,
                    ..
                })
            ),
            "{listed:?}"
        ),
        other => unreachable!("{other} is not an MCP fault"),
    }
    Ok(())
}

/// One call of a simulated tool with side effects and an output schema, under `kind`
/// always on: what the agent gets, how long it took, whether the effect was done.
async fn tool_effect(kind: FaultKind, sim: &SimEnvironment) -> Result<(), Violation> {
    use serde_json::json;
    use umi_core::agent::ToolInvocation;
    use umi_dst::tools::{SimTool, SimTools, TOOL_SLOW_EXTRA_MS, TOOL_STALL_MS};
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let tools = SimTools::new(sim).with(
        SimTool::new("pay", "pays", json!({"type": "object"}))
            .with_output_schema(schema.clone())
            .with_side_effects()
            .with_latency_ms(10, 10),
    );
    let registry = tools.registry();
    let handler = registry.handler("pay").expect("registered");
    let before = sim.env().elapsed();
    let invocation = ToolInvocation {
        call_id: "call_1".into(),
        name: "pay".into(),
        arguments: json!({}),
    };
    let outcome = handler.invoke(invocation).await;
    let took = sim.env().elapsed() - before;
    let effects = tools.ledger().effects().len();
    let valid = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|value| umi_core::llm::structured::validate(&schema, &value).is_ok())
    };
    match kind {
        FaultKind::ToolTimeout => ensure!(
            outcome.is_err() && took >= Duration::from_millis(TOOL_STALL_MS),
            "a stall answered {outcome:?} after {took:?}"
        ),
        FaultKind::ToolErrorResult | FaultKind::ToolTransportError => ensure!(
            outcome.is_err() && effects == 0,
            "{outcome:?} with {effects} effect(s)"
        ),
        FaultKind::ToolMalformedResult => ensure!(
            outcome.as_deref().is_ok_and(|text| !valid(text)) && effects == 1,
            "{outcome:?}"
        ),
        FaultKind::ToolSlow => ensure!(
            outcome.as_deref().is_ok_and(valid)
                && took >= Duration::from_millis(TOOL_SLOW_EXTRA_MS.0),
            "{outcome:?} after {took:?}"
        ),
        FaultKind::ToolEmptyResult => ensure!(
            outcome.as_deref() == Ok("{}") && effects == 1,
            "{outcome:?}"
        ),
        other => unreachable!("{other} is not a tool fault"),
    }
    Ok(())
}

#[test]
fn every_fault_kind_fires_and_has_its_effect() {
    let cleans: Vec<Arc<Clean>> = (1..=3).map(|seed| Arc::new(clean(seed))).collect();
    for &kind in FaultKind::ALL {
        for seed in 1..=3u64 {
            let config = SimConfig::new(seed).with_fault(FaultConfig::always(kind));
            let clean = cleans[seed as usize - 1].clone();
            let run = Simulation::new(config)
                .run_seed(seed, &move |sim| effect(kind, sim, clean.clone()));
            assert!(run.passed(), "{kind} seed {seed}: {:?}", run.failure);
            assert!(
                run.fault_stats
                    .injected_by_kind
                    .get(&kind)
                    .is_some_and(|n| *n > 0),
                "{kind} seed {seed}: never injected"
            );
        }
    }
}

/// `storage.corruption` is only decided for a batch with a record that can rot: on a
/// batch of deletes alone it was once counted and traced as injected and changed nothing.
#[test]
fn corruption_is_never_counted_where_nothing_can_rot() {
    let config = SimConfig::new(1).with_fault(FaultConfig::always(FaultKind::StorageCorruption));
    let run = Simulation::new(config).run_seed(1, &async |sim| {
        let storage = SimStorage::new(&sim);
        let deletes_only = WriteBatch {
            delete_entities: vec!["nobody".into()],
            ..WriteBatch::default()
        };
        storage.apply(deletes_only).await?;
        let counted = sim.faults().stats().injected_total();
        ensure!(
            counted == 0,
            "a corruption was counted on a batch with nothing to rot"
        );
        storage.apply(write("a")).await?;
        ensure!(
            sim.faults().stats().injected_total() == 1,
            "the entity batch rots"
        );
        Ok(())
    });
    assert!(run.passed(), "{:?}", run.failure);
}
