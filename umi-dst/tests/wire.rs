//! The real clients and the router over SimNetwork: the provider contract over the wire,
//! network faults as the clients see them, Retry-After over HTTP, downtime, and the
//! router from a config file under random fault schedules, checked by the router
//! checkers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use umi_core::env::EnvironmentExt;
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::router::{LlmRouter, RouterConfig};
use umi_core::llm::{
    CompletionRequest, Connection, LanguageModel, LlmError, Message, ModelRef, StreamCollector,
};
use umi_core::memory::tasks::{extraction_request, rewrite_request};
use umi_dst::checkers::router::{RouterLog, check_router};
use umi_dst::conformance::Conformance;
use umi_dst::network::Profile;
use umi_dst::{
    Endpoint, FaultConfig, FaultKind, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork,
    Simulation, Violation, ensure,
};

const OPENAI_URL: &str = "https://api.sim.example/v1";
const OLLAMA_URL: &str = "http://ollama.sim:11434";

fn sim_model(sim: &SimEnvironment, provider: &str, model: &str, window: u32) -> Arc<SimLlm> {
    let config = SimLlmConfig::default().with_model(ModelRef::new(provider, model, window, 4_096));
    Arc::new(SimLlm::with_config(sim, config).unwrap())
}

fn openai_client(sim: &SimEnvironment) -> OpenAiClient {
    let network = SimNetwork::new(sim).with_endpoint(
        Endpoint::openai(OPENAI_URL, sim_model(sim, "sim", "sim-large", 32_768))
            .with_api_key("sk-sim"),
    );
    let config = OpenAiConfig::new(
        Connection::new(OPENAI_URL).with_api_key("sk-sim"),
        ModelRef::new("sim", "sim-large", 32_768, 4_096),
    );
    OpenAiClient::new(config, Arc::new(network), sim.env())
}

fn ollama_client(sim: &SimEnvironment) -> OllamaClient {
    let network = SimNetwork::new(sim).with_endpoint(Endpoint::ollama(
        OLLAMA_URL,
        sim_model(sim, "ollama", "qwen3:8b", 32_768),
    ));
    OllamaClient::new(
        OllamaConfig::new(
            OLLAMA_URL,
            ModelRef::new("ollama", "qwen3:8b", 32_768, 4_096),
        ),
        Arc::new(network),
        sim.env(),
    )
}

#[test]
fn openai_client_over_the_wire_passes_conformance() {
    Conformance::new()
        .cases(200)
        .deterministic(true)
        .honours_stop(true)
        .check(openai_client);
}

#[test]
fn ollama_client_over_the_wire_passes_conformance() {
    Conformance::new()
        .cases(200)
        .deterministic(true)
        .honours_stop(true)
        .check(ollama_client);
}

fn one_fault(kind: FaultKind) -> SimConfig {
    SimConfig::new(9).with_fault(FaultConfig::always(kind).with_max_injections(1))
}

async fn collect_stream(
    llm: &dyn LanguageModel,
) -> Result<umi_core::llm::CompletionResponse, LlmError> {
    let request = CompletionRequest::new(vec![Message::user(
        "tell me a long story about Alice and Bob",
    )]);
    let events = llm.stream(&request).await?;
    StreamCollector::collect("m", events).await
}

#[test]
fn network_faults_reach_the_client_as_typed_errors() {
    Simulation::new(one_fault(FaultKind::NetworkConnectionRefused))
        .try_run(async |sim| {
            let client = openai_client(&sim);
            let first = collect_stream(&client).await;
            ensure!(matches!(&first, Err(LlmError::Connection { reason }) if reason.contains("refused")), "{first:?}");
            ensure!(collect_stream(&client).await.is_ok(), "the next request connects");
            Ok(())
        })
        .unwrap();
    Simulation::new(one_fault(FaultKind::NetworkTimeout))
        .try_run(async |sim| {
            let client = openai_client(&sim);
            let before = sim.env().elapsed();
            let hung = collect_stream(&client).await;
            ensure!(
                hung == Err(LlmError::Timeout { after_ms: 60_000 }),
                "{hung:?}"
            );
            ensure!(
                sim.env().elapsed() - before == Duration::from_secs(60),
                "the client's own timeout fired"
            );
            Ok(())
        })
        .unwrap();
    Simulation::new(one_fault(FaultKind::NetworkSlowFirstByte))
        .try_run(async |sim| {
            let before = sim.env().elapsed();
            ensure!(
                collect_stream(&openai_client(&sim)).await.is_ok(),
                "slow but fine"
            );
            ensure!(
                sim.env().elapsed() - before >= Duration::from_secs(1),
                "{:?}",
                sim.env().elapsed() - before
            );
            Ok(())
        })
        .unwrap();
    let (mut resets, mut cuts) = (0, 0);
    for seed in 0..30 {
        for kind in [FaultKind::NetworkReset, FaultKind::NetworkPartialWrite] {
            let outcome = std::sync::Mutex::new(None);
            Simulation::new(
                SimConfig::new(seed).with_fault(FaultConfig::always(kind).with_max_injections(1)),
            )
            .try_run(|sim| {
                let outcome = &outcome;
                async move {
                    *outcome.lock().unwrap() = Some(collect_stream(&openai_client(&sim)).await);
                    Ok(())
                }
            })
            .unwrap();
            match (kind, outcome.into_inner().unwrap().unwrap()) {
                (FaultKind::NetworkReset, Err(LlmError::Connection { .. })) => resets += 1,
                (
                    FaultKind::NetworkPartialWrite,
                    Err(LlmError::StreamTruncated { .. } | LlmError::EmptyStream),
                ) => cuts += 1,
                // A cut that lands after the last content may still leave a whole answer.
                (_, Ok(_)) => {}
                (kind, other) => panic!("seed {seed} {kind}: {other:?}"),
            }
        }
    }
    assert!(resets > 20 && cuts > 20, "resets {resets}, cuts {cuts}");
}

/// A 429's Retry-After, in every form the profiles send (Azure's `retry-after-ms` with
/// seconds, OpenAI's optional seconds, a gateway's HTTP date against a skewed server
/// clock, or none), is read by the client as at least the wait the server meant, and
/// never invented when the server sent none.
#[test]
fn retry_after_over_http_is_never_shorter_than_asked() {
    let forms = std::sync::Mutex::new(std::collections::BTreeSet::new());
    for seed in 0..90 {
        Simulation::new(
            SimConfig::new(seed)
                .with_fault(FaultConfig::always(FaultKind::LlmRateLimit).with_max_injections(1)),
        )
        .try_run(|sim| {
            let forms = &forms;
            async move {
                let mut endpoint =
                    Endpoint::openai(OPENAI_URL, sim_model(&sim, "sim", "sim-large", 32_768));
                endpoint = match seed % 3 {
                    0 => endpoint.with_profile(Profile::AzureOpenAi),
                    1 => endpoint.behind_gateway(),
                    _ => endpoint,
                };
                let network =
                    Arc::new(SimNetwork::new(&sim).with_endpoint(endpoint).with_capture());
                let client = OpenAiClient::new(
                    OpenAiConfig::new(OPENAI_URL, ModelRef::new("sim", "sim-large", 32_768, 4_096)),
                    network.clone(),
                    sim.env(),
                );
                let error = collect_stream(&client).await.unwrap_err();
                let LlmError::RateLimit { retry_after_ms } = error else {
                    return Err(Violation::new(format!("{error:?}")));
                };
                let exchange = network.exchanges().pop().expect("one exchange");
                ensure!(exchange.status == 429, "status {}", exchange.status);
                match (exchange.retry_after_meant_ms, retry_after_ms) {
                    (None, None) => {
                        forms.lock().unwrap().insert("none");
                    }
                    (Some(meant), Some(got)) => {
                        ensure!(
                            got >= meant && got <= meant + 2_000,
                            "meant {meant} ms, the client read {got} ms"
                        );
                        let form = if exchange.header("retry-after-ms").is_some() {
                            "ms"
                        } else if exchange
                            .header("retry-after")
                            .is_some_and(|v| v.contains("GMT"))
                        {
                            "date"
                        } else {
                            "seconds"
                        };
                        forms.lock().unwrap().insert(form);
                    }
                    (meant, got) => {
                        return Err(Violation::new(format!(
                            "the server meant {meant:?}, the client read {got:?}"
                        )));
                    }
                }
                Ok(())
            }
        })
        .unwrap();
    }
    assert_eq!(
        forms.into_inner().unwrap().into_iter().collect::<Vec<_>>(),
        ["date", "ms", "none", "seconds"],
        "every form occurs"
    );
}

#[test]
fn an_endpoint_down_for_an_interval_refuses_then_recovers() {
    Simulation::new(SimConfig::new(1))
        .try_run(async |sim| {
            let network = Arc::new(SimNetwork::new(&sim).with_endpoint(Endpoint::openai(
                OPENAI_URL,
                sim_model(&sim, "sim", "m", 32_768),
            )));
            network.take_down(OPENAI_URL, Duration::from_secs(10), Duration::from_secs(70));
            let client = OpenAiClient::new(
                OpenAiConfig::new(OPENAI_URL, ModelRef::new("sim", "m", 32_768, 4_096)),
                network,
                sim.env(),
            );
            ensure!(
                collect_stream(&client).await.is_ok(),
                "up before the interval"
            );
            sim.env().sleep(Duration::from_secs(20)).await;
            ensure!(
                matches!(
                    collect_stream(&client).await,
                    Err(LlmError::Connection { .. })
                ),
                "down during it"
            );
            sim.env().sleep(Duration::from_secs(60)).await;
            ensure!(collect_stream(&client).await.is_ok(), "up after it");
            Ok(())
        })
        .unwrap();
}

const CONFIG: &str = r#"
[providers.deepseek]
type = "openai"
endpoint = "https://api.deepseek.sim/v1"
api_key_env = "DEEPSEEK_API_KEY"

[providers.glm]
type = "openai"
endpoint = "https://open.bigmodel.sim/api/paas/v4"
api_key_env = "GLM_API_KEY"

[providers.ollama]
type = "ollama"
endpoint = "http://ollama.sim:11434"

[models."deepseek/deepseek-chat"]
context_window = 65536
max_output = 8192

[models."glm/glm-4-plus"]
context_window = 128000
max_output = 4096

[models."ollama/qwen3:8b"]
context_window = 32768
max_output = 4096

[routing]
default = "ollama/qwen3:8b"
fallback = ["deepseek/deepseek-chat", "glm/glm-4-plus"]
context_fallback = ["deepseek/deepseek-chat", "glm/glm-4-plus"]
tasks = { "memory.rewrite_query" = "deepseek/deepseek-chat" }

[retry]
max_retries = 2
request_timeout_ms = 30000
initial_backoff_ms = 500
backoff_multiplier = 2.0
backoff_max_ms = 8000
jitter = 0.3
retry_after_max_ms = 20000
deadline_ms = 120000

[cooldown]
failures_threshold = 4
cooldown_ms = 15000
"#;

fn keys(name: &str) -> Option<String> {
    match name {
        "DEEPSEEK_API_KEY" => Some("sk-deepseek".into()),
        "GLM_API_KEY" => Some("glm-key".into()),
        _ => None,
    }
}

/// The router from the config file, with real clients, over a SimNetwork serving three
/// SimLLMs; its events go to `log`.
fn stack(sim: &SimEnvironment, log: &RouterLog) -> (LlmRouter, BTreeMap<String, u32>) {
    let config = RouterConfig::from_toml(CONFIG, "engine.toml").unwrap();
    let network = SimNetwork::new(sim)
        .with_endpoint(
            Endpoint::openai(
                "https://api.deepseek.sim/v1",
                sim_model(sim, "deepseek", "deepseek-chat", 65_536),
            )
            .with_api_key("sk-deepseek"),
        )
        .with_endpoint(
            Endpoint::openai(
                "https://open.bigmodel.sim/api/paas/v4",
                sim_model(sim, "glm", "glm-4-plus", 128_000),
            )
            .with_api_key("glm-key"),
        )
        .with_endpoint(Endpoint::ollama(
            "http://ollama.sim:11434",
            sim_model(sim, "ollama", "qwen3:8b", 32_768),
        ));
    let router = LlmRouter::from_config(
        &config,
        &(Arc::new(network) as Arc<dyn umi_core::llm::transport::Transport>),
        &sim.env(),
        keys,
    )
    .unwrap()
    .with_observer(log.observer());
    let windows = config
        .models
        .iter()
        .map(|(id, m)| (id.clone(), m.context_window))
        .collect();
    (router, windows)
}

#[test]
fn the_router_from_a_config_answers_over_the_wire() {
    Simulation::new(SimConfig::new(2))
        .try_run(async |sim| {
            let log = RouterLog::new();
            let (router, _) = stack(&sim, &log);
            let answer = router
                .complete(&extraction_request("Alice joined Acme Corp."))
                .await?;
            ensure!(
                umi_core::memory::tasks::parse_extraction(&answer.text).is_ok(),
                "SimLLM behind the wire routes by keywords: {}",
                answer.text
            );
            let routed = router
                .complete(&rewrite_request("where is Alice?"))
                .await
                .unwrap();
            ensure!(
                routed.model == "deepseek-chat",
                "the task route picked deepseek: {}",
                routed.model
            );
            let missing_key = LlmRouter::from_config(
                &RouterConfig::from_toml(CONFIG, "engine.toml").unwrap(),
                &(Arc::new(SimNetwork::new(&sim)) as Arc<dyn umi_core::llm::transport::Transport>),
                &sim.env(),
                |_| None,
            );
            let error = missing_key.err().unwrap();
            ensure!(
                error.field == "providers.deepseek.api_key_env"
                    && error.value == "DEEPSEEK_API_KEY",
                "{error}"
            );
            Ok(())
        })
        .unwrap();
}

/// The share of calls (in percent) the router must answer under random fault schedules.
const ANSWERED_SHARE_MIN_PERCENT: usize = 69;

/// The router's properties hold under random fault schedules: swarm mode switches LLM
/// and network faults on and off per seed; each seed makes a mix of whole and streamed
/// calls, and the router checkers run on everything it did.
#[test]
fn router_properties_hold_under_random_fault_schedules() {
    let kinds = [
        FaultKind::LlmRateLimit,
        FaultKind::LlmServiceUnavailable,
        FaultKind::LlmTimeout,
        FaultKind::LlmStreamCut,
        FaultKind::LlmContextOverflow,
        FaultKind::NetworkConnectionRefused,
        FaultKind::NetworkReset,
        FaultKind::NetworkTimeout,
        FaultKind::NetworkSlowFirstByte,
        FaultKind::NetworkPartialWrite,
    ];
    let answered = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let (ok, bad) = (answered.clone(), failed.clone());
    Simulation::from_env()
        .with_swarm_over(&kinds)
        .with_seeds(0..120)
        .run(move |sim| {
            let (ok, bad) = (ok.clone(), bad.clone());
            async move {
                let log = RouterLog::new();
                let (router, windows) = stack(&sim, &log);
                let requests = [
                    extraction_request("Maria met Chen at the Berlin Summit."),
                    CompletionRequest::new(vec![Message::user("Summarize the plan for Monday.")]),
                    rewrite_request("who did Maria meet?"),
                ];
                for (index, request) in requests.iter().cycle().take(6).enumerate() {
                    let outcome = if index % 2 == 0 {
                        router.complete(request).await.map(|_| ())
                    } else {
                        match router.stream(request).await {
                            Ok(events) => events
                                .collect::<Vec<_>>()
                                .await
                                .into_iter()
                                .find_map(Result::err)
                                .map_or(Ok(()), Err),
                            Err(error) => Err(error),
                        }
                    };
                    match outcome {
                        Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(_) => bad.fetch_add(1, Ordering::Relaxed),
                    };
                    sim.env()
                        .sleep(Duration::from_millis(sim.env().random_in_range(
                            "workload.gap",
                            0,
                            5_000,
                        )))
                        .await;
                }
                check_router(
                    &log.events(),
                    &RouterConfig::from_toml(CONFIG, "engine.toml")
                        .unwrap()
                        .retry,
                    &windows,
                )
            }
        });
    let (answered, failed) = (
        answered.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    );
    // A share, not a count: `DST_SEEDS` changes how many calls there are (`make
    // sweep-tests SEEDS=20` once failed here with 210 of 240 answered). 69% is the 500 of
    // the default range's 720 calls this asserted before.
    let calls = answered + failed;
    assert!(
        answered * 100 > calls * ANSWERED_SHARE_MIN_PERCENT,
        "the router gets most calls answered despite the faults: {answered} answered, {failed} failed"
    );
    assert!(
        failed > 0,
        "some schedules are hostile enough to fail calls: {failed}"
    );
}

/// The property run above is only as good as its checker: the same stack's events,
/// checked against a policy that claims a longer backoff than the router used, must fail.
#[test]
fn the_router_checker_is_not_vacuous_over_the_wire() {
    let error = Simulation::new(
        SimConfig::new(3).with_fault(FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.5)),
    )
    .try_run(async |sim| {
        let log = RouterLog::new();
        let (router, windows) = stack(&sim, &log);
        for _ in 0..5 {
            let _ = router
                .complete(&CompletionRequest::new(vec![Message::user("hi")]))
                .await;
        }
        let mut claimed = RouterConfig::from_toml(CONFIG, "engine.toml")
            .unwrap()
            .retry;
        claimed.initial_backoff_ms *= 10;
        check_router(&log.events(), &claimed, &windows)
    })
    .unwrap_err();
    assert!(
        error.to_string().contains("under the backoff floor"),
        "{error}"
    );
}

/// Task tags never cross the wire: a task-only route cannot answer a request that came
/// over SimNetwork, and SimLLM says so in the trace; `for_task_or` answers it by content.
#[test]
fn task_routes_over_the_wire_say_they_cannot_match() {
    use umi_dst::llm::{FnRoute, Generated};
    Simulation::new(SimConfig::new(3))
        .try_run(async |sim| {
            let config = SimLlmConfig::default()
                .with_model(ModelRef::new("sim", "sim-large", 32_768, 4_096))
                .without_latency();
            let llm = SimLlm::with_config(&sim, config)
                .unwrap()
                .with_route(FnRoute::for_task("my.summary", |_, _| {
                    Generated::text("tagged")
                }))
                .with_route(FnRoute::for_task_or(
                    "my.title",
                    |request| request.prompt_text().contains("title"),
                    |_, _| Generated::text("a title"),
                ));
            let network = SimNetwork::new(&sim)
                .with_endpoint(Endpoint::openai(OPENAI_URL, Arc::new(llm)).with_api_key("sk-sim"));
            let client = OpenAiClient::new(
                OpenAiConfig::new(
                    Connection::new(OPENAI_URL).with_api_key("sk-sim"),
                    ModelRef::new("sim", "sim-large", 32_768, 4_096),
                ),
                Arc::new(network),
                sim.env(),
            );
            let summary = CompletionRequest::new(vec![Message::user("summarize this")])
                .with_task("my.summary");
            let answer = client.complete(&summary).await.unwrap();
            ensure!(
                answer.text != "tagged",
                "a task route matched over the wire"
            );
            let warned = sim
                .trace()
                .tail()
                .iter()
                .filter(|e| e.kind == "llm.untagged")
                .count();
            ensure!(warned == 1, "the mismatch was said {warned} times");
            let title = CompletionRequest::new(vec![Message::user("a title, please")])
                .with_task("my.title");
            let answer = client.complete(&title).await.unwrap();
            ensure!(
                answer.text == "a title",
                "for_task_or answered {:?}",
                answer.text
            );
            Ok(())
        })
        .unwrap();
}
