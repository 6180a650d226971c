//! Scenario `wire_shapes`: every provider's wire shapes, split anywhere, through the real
//! clients and the router, under every network and model fault.
//!
//! Workload: one endpoint per provider profile (OpenAI, Azure, DeepSeek chat and
//! reasoner, DashScope, GLM, OpenRouter, vLLM, llama.cpp, Ollama's /v1 and native API,
//! TGI, Xinference, Anthropic's Messages API, OpenAI's Responses API) and one behind an API
//! gateway, each serving a SimLLM (reasoning where
//! the provider streams reasoning); per seed, one call to each through its real client
//! (whole or streamed, with tools or not), then a few calls through a router whose chain
//! mixes three of them. SimNetwork draws each server's version and each response's
//! shapes and read boundaries from the seed.
//!
//! Invariants:
//! 1. Split invariance: every streamed body the client read to its end decodes to the
//!    same events and the same outcome as read, whole, byte by byte, and in seeded
//!    pieces ([`umi_dst::checkers::wire`]).
//! 2. The caller gets what the bytes say: a streamed call whose body was read to its end
//!    collects to exactly what decoding those bytes gives.
//! 3. A call during which no fault fired succeeds with the contract's shape: a clean
//!    finish, the configured model, tool calls exactly when the finish says so.
//! 4. Errors are typed as the fault was, never blaming the request; a 429 reaches the
//!    caller with the Retry-After its server meant (or none when it sent none).
//! 5. The router checkers hold over the mixed-provider chain.
//!
//! Its coverage marks name every shape of every profile, every read plan, keep-alives,
//! proxy pages and resets: a default sweep proves each was produced and handled.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use umi_core::llm::router::LlmRouter;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, FinishReason, LanguageModel, LlmError, LlmErrorKind,
    ModelRef, StreamCollector, ToolChoice,
};
use umi_dst::checkers::router::{RouterLog, check_router};
use umi_dst::checkers::wire::check_stream_splits;
use umi_dst::network::{ClientOptions, Exchange, Profile, ReadPlan, base_url_for, client_for};
use umi_dst::{Endpoint, FaultConfig, FaultKind, SimEnvironment, SimNetwork, Violation, ensure};

use crate::common::{chat, scenario_retry, sim_model, tool_definitions};
use crate::wire_faults::streamed;

/// The API key every endpoint of the scenario requires.
const API_KEY: &str = "sk-umi-wire-shapes-0000";

/// The profiles the scenario sweeps, in this order (each one's endpoint, client and
/// draws in the seed's streams): the profiles there were when its seeds were kept. A
/// profile added later (Bedrock) is not swept here, since one more endpoint would change
/// what every kept seed means; it joins the conformance and split-invariance tests.
const SWEPT: [Profile; 16] = [
    Profile::OpenAi,
    Profile::AzureOpenAi,
    Profile::DeepSeekChat,
    Profile::DeepSeekReasoner,
    Profile::DashScope,
    Profile::Glm,
    Profile::OpenRouter,
    Profile::Vllm,
    Profile::LlamaCpp,
    Profile::OllamaV1,
    Profile::Ollama,
    Profile::Tgi,
    Profile::Xinference,
    Profile::Anthropic,
    Profile::OpenAiResponses,
    Profile::Gemini,
];

/// Calls through the router per seed.
const ROUTED_CALLS_PER_SEED: usize = 3;

/// The error kinds a faulty network or model may cause.
const FAULT_ERRORS: [LlmErrorKind; 11] = [
    LlmErrorKind::Timeout,
    LlmErrorKind::ServerTimeout,
    LlmErrorKind::RateLimit,
    LlmErrorKind::Connection,
    LlmErrorKind::StreamTruncated,
    LlmErrorKind::InvalidResponse,
    LlmErrorKind::Json,
    LlmErrorKind::ServiceUnavailable,
    LlmErrorKind::EmptyStream,
    LlmErrorKind::ContextOverflow,
    LlmErrorKind::ModelNotFound,
];

/// Marks beyond the profiles' own shapes.
const NETWORK_MARKS: [&str; 6] = [
    "wire.keep_alive",
    "wire.reset_mid_stream",
    "wire.shape.proxy.cloudflare_json",
    "wire.shape.proxy.cloudflare_html",
    "wire.shape.proxy.nginx_html",
    "wire.shape.retry_after.http_date",
];

static MARKS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut marks: Vec<&'static str> = SWEPT
        .iter()
        .flat_map(|profile| profile.shape_marks())
        .chain(ReadPlan::MARKS)
        .chain(NETWORK_MARKS)
        .collect();
    marks.sort_unstable();
    marks.dedup();
    marks
});

/// The scenario.
#[umi_dst::scenario(
    goal = "every shape each provider sends, split anywhere, reaches the caller intact or as a typed error",
    faults = [
        FaultConfig::chance(FaultKind::NetworkConnectionRefused, 0.02),
        FaultConfig::chance(FaultKind::NetworkReset, 0.04),
        FaultConfig::chance(FaultKind::NetworkTimeout, 0.02),
        FaultConfig::chance(FaultKind::NetworkPartialWrite, 0.04),
        FaultConfig::chance(FaultKind::NetworkSlowFirstByte, 0.04),
        FaultConfig::chance(FaultKind::NetworkProxyError, 0.03),
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.08),
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.06),
        FaultConfig::chance(FaultKind::LlmContextOverflow, 0.03),
        FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.04),
        FaultConfig::chance(FaultKind::LlmContentFilter, 0.03),
        // Tool-call arguments that do not parse (Ollama's two ways of answering
        // them): since issue 39 these come from `llm.wrong_content`, not from
        // `llm.invalid_response` (ADR 0017). Last, so the rules above keep their ids.
        FaultConfig::chance(FaultKind::LlmWrongContent, 0.12),
    ],
    marks = MARKS.as_slice(),
    run = run,
    rank = 100,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WireShapes;

/// One provider endpoint and the client that talks to it.
struct Target {
    profile: Profile,
    client: Arc<dyn LanguageModel>,
}

/// The providers the scenario reaches where users run them rather than at
/// `https://{name}.sim` below their format's API root: Ollama on its port, over HTTP.
const LOCAL_SERVERS: [(Profile, &str); 1] = [(Profile::Ollama, "http://ollama.sim:11434")];

/// The base URL of `profile`'s server (the gateway's, OpenAI's shapes, when `gateway`),
/// as its client expects it: with its format's API root (`/v1`, or none where the
/// client adds the whole path).
fn base_url(profile: Profile, gateway: bool) -> String {
    if gateway {
        return base_url_for(profile, "gateway.sim");
    }
    LOCAL_SERVERS
        .iter()
        .find(|(local, _)| *local == profile)
        .map_or_else(
            || base_url_for(profile, &format!("{}.sim", profile.name())),
            |(_, url)| (*url).to_owned(),
        )
}

fn targets(sim: &SimEnvironment) -> (Arc<SimNetwork>, Vec<Target>) {
    let mut network = SimNetwork::new(sim).with_capture();
    let mut targets = Vec::new();
    let retry = scenario_retry();
    let timeout = std::time::Duration::from_millis(retry.request_timeout_ms);
    let mut planned = Vec::new();
    for profile in SWEPT {
        planned.push((profile, false));
    }
    planned.push((Profile::OpenAi, true));
    for (profile, gateway) in &planned {
        let url = base_url(*profile, *gateway);
        let model = format!("{}-model", profile.name());
        let provider = if *gateway { "gateway" } else { profile.name() };
        let reasoning = profile.streams_reasoning();
        let llm = sim_model(sim, provider, &model, 32_768, |config| {
            if reasoning {
                config.with_reasoning()
            } else {
                config
            }
        });
        let mut endpoint = Endpoint::openai(&url, llm).with_profile(*profile);
        if profile.credential(API_KEY).is_some() {
            // Ollama's native API has no API keys.
            endpoint = endpoint.with_api_key(API_KEY);
        }
        if *gateway {
            endpoint = endpoint.behind_gateway();
        }
        network = network.with_endpoint(endpoint);
    }
    let network = Arc::new(network);
    let transport: Arc<dyn umi_core::llm::transport::Transport> = network.clone();
    for (profile, gateway) in planned {
        let url = base_url(profile, gateway);
        let provider = if gateway { "gateway" } else { profile.name() };
        let model_ref = ModelRef::new(provider, format!("{}-model", profile.name()), 32_768, 2_048);
        let mut options = ClientOptions::default();
        // Ollama's native API has no API keys.
        options.api_key = profile.credential(API_KEY).map(|_| API_KEY.into());
        options.timeout = Some(timeout);
        // Ask the Responses API for reasoning summaries, so the sweep meets them.
        options.reasoning_summary = true;
        let client = client_for(
            profile,
            &url,
            model_ref,
            &options,
            transport.clone(),
            sim.env(),
        );
        targets.push(Target { profile, client });
    }
    (network, targets)
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let (network, targets) = targets(&sim);
    let mut workload = sim.task_rng("workload.calls");
    let mut splits = sim.task_rng("workload.splits");
    for (index, target) in targets.iter().enumerate() {
        let label = format!(
            "call {index} ({} via {})",
            target.client.model_ref().id(),
            target.profile
        );
        let mut request = chat(&format!("call {index}: what changed this week?"), "wire");
        if workload.bool_with(0.5) {
            request = request.with_tools(tool_definitions());
            // TGI 2.0 answers `tool_choice` with grammar calls this simulator does not
            // serve; every other server takes it.
            if target.profile.serves_required_tool_choice() && workload.bool_with(0.2) {
                request = request.with_tool_choice(ToolChoice::Required);
            }
        }
        let stream = workload.bool_with(0.6);
        // A model the server does not serve (retired, or a typo): its own 404, which the
        // client must type as model-not-found so a router can fall back. Only where that
        // body has a source.
        let retired = target.profile.model_not_found_sourced() && workload.bool_with(0.08);
        if retired {
            request.model = "retired-model".to_owned();
        }
        let exchanges_before = network.with_exchanges(<[_]>::len);
        let faults_before = sim.faults().injected_total();
        let result = if stream {
            streamed(target.client.as_ref(), &request, &label).await?
        } else {
            target.client.complete(&request).await
        };
        let faulted = sim.faults().injected_total() > faults_before;
        let exchange = network.with_exchanges(|all| all.get(exchanges_before).cloned());
        if retired && !faulted {
            ensure!(
                matches!(result, Err(LlmError::ModelNotFound { .. })),
                "{label}: asking for a model the server does not serve gave {result:?}"
            );
            continue;
        }
        check_call(
            &label,
            target,
            stream,
            exchange.as_ref(),
            &result,
            faulted,
            &mut splits,
        )?;
    }
    routed(&sim, &targets).await
}

/// Invariants 1 to 4 for one direct call.
fn check_call(
    label: &str,
    target: &Target,
    stream: bool,
    exchange: Option<&Exchange>,
    result: &Result<CompletionResponse, LlmError>,
    faulted: bool,
    splits: &mut umi_dst::DeterministicRng,
) -> Result<(), Violation> {
    if let Some(exchange) = exchange {
        check_bytes(label, target, stream, exchange, result, splits)?;
    }
    match result {
        Ok(response) if !faulted => {
            ensure!(
                response.finish_reason.is_clean(),
                "{label}: no fault fired, yet the answer finished {}",
                response.finish_reason
            );
            ensure!(
                response.model == target.client.model_ref().model,
                "{label}: answered as {:?}",
                response.model
            );
            ensure!(
                response.tool_calls.is_empty()
                    != (response.finish_reason == FinishReason::ToolCalls),
                "{label}: {} tool call(s) with finish {}",
                response.tool_calls.len(),
                response.finish_reason
            );
        }
        Ok(_) => {}
        Err(error) => {
            ensure!(faulted, "{label} failed though no fault fired: {error}");
            ensure!(
                FAULT_ERRORS.contains(&error.kind()),
                "{label} failed with {}: {error}",
                error.kind()
            );
            if let (LlmError::RateLimit { retry_after_ms }, Some(exchange)) = (error, exchange) {
                let meant = exchange.retry_after_meant_ms;
                let consistent = match (meant, retry_after_ms) {
                    (None, None) => true,
                    (Some(meant), Some(got)) => *got >= meant && *got <= meant + 2_000,
                    _ => false,
                };
                ensure!(
                    consistent || exchange.status != 429,
                    "{label}: the 429 meant a wait of {meant:?} ms, the caller got {retry_after_ms:?}"
                );
            }
        }
    }
    Ok(())
}

/// Invariants on the bytes of one exchange: they decode the same however they are split,
/// and a whole stream's bytes mean what the caller got.
fn check_bytes(
    label: &str,
    target: &Target,
    stream: bool,
    exchange: &Exchange,
    result: &Result<CompletionResponse, LlmError>,
    splits: &mut umi_dst::DeterministicRng,
) -> Result<(), Violation> {
    let decoded = check_stream_splits(exchange, splits)
        .map_err(|v| Violation::new(format!("{label}: {}", v.message)))?;
    if let Some(decoded) = decoded.filter(|_| stream) {
        let mut collector = StreamCollector::new(target.client.model_ref().model.clone());
        let mut from_bytes = Ok(());
        for event in decoded.events {
            if let Err(error) = collector.push(event) {
                from_bytes = Err(error);
                break;
            }
        }
        let from_bytes = match (from_bytes, decoded.error) {
            (Err(error), _) | (Ok(()), Some(error)) => Err(error),
            (Ok(()), None) => collector.finish(),
        };
        ensure!(
            &from_bytes == result,
            "{label}: the caller got {result:?}, the bytes say {from_bytes:?}"
        );
    }
    Ok(())
}

/// Invariant 5: a router over a chain of three providers, drawn per seed.
async fn routed(sim: &SimEnvironment, targets: &[Target]) -> Result<(), Violation> {
    let mut rng = sim.task_rng("workload.chain");
    let mut picked: Vec<usize> = (0..targets.len()).collect();
    rng.shuffle(&mut picked);
    picked.truncate(3);
    let retry = scenario_retry();
    let log = RouterLog::new();
    let mut builder = LlmRouter::builder(sim.env())
        .retry(retry)
        .observer(log.observer());
    let mut ids = Vec::new();
    let mut windows = BTreeMap::new();
    for &index in &picked {
        let client = targets[index].client.clone();
        let id = client.model_ref().id();
        windows.insert(id.clone(), client.model_ref().context_window_tokens);
        builder = builder.model(&id, client);
        ids.push(id);
    }
    let fallbacks: Vec<&str> = ids[1..].iter().map(String::as_str).collect();
    let router = builder
        .default_model(&ids[0])
        .fallback(&fallbacks)
        .build()
        .map_err(|error| Violation::new(format!("the chain's config: {error}")))?;
    for call in 0..ROUTED_CALLS_PER_SEED {
        let request: CompletionRequest = chat(&format!("routed call {call}: summarize"), "wire");
        let _ = if rng.bool_with(0.5) {
            streamed(&router, &request, "routed").await?
        } else {
            router.complete(&request).await
        };
    }
    check_router(&log.events(), &retry, &windows)
}
