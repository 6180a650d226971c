//! The agent as a sweep scenario: unchanged, its async-openai client pointed at
//! SimNetwork through `umi_dst::adapters::async_openai`, with async-openai's own retry
//! layer in front (as its default client has), under model and network faults.
//!
//! Workload: three questions per seed, through a provider drawn per seed among the
//! OpenAI-format profiles async-openai parses (OpenAI, Azure, DeepSeek, DashScope, vLLM).
//!
//! Invariants:
//! 1. An answer is never made of a stream that was cut: when the last exchange of a
//!    question did not reach its end, the agent reports an error.
//! 2. An answer says something, after at most `TURNS_MAX` turns, having run a tool for
//!    every call the model made.
//! 3. A failure is one the faults can cause: an API error, a cut stream, arguments broken
//!    by the model, never a panic.
//!
//! The first version of the agent trusted the end of a stream; the first sweep found
//! seeds where a stream cut mid-answer came back as a whole answer (invariant 1). The
//! fix is the `None` arm in `WeatherAgent::ask`; the seed is kept in
//! `seeds/weather_agent.seeds` and replayed by `cargo test`. The same sweep then found a
//! second: a `stop` with no text handed back as the answer (seed 47).

use std::sync::Arc;

use async_openai::middleware::retry::OpenAIRetryLayer;
use umi_core::llm::StreamEvent;
use umi_dst::adapters::async_openai::SimService;
use umi_dst::checkers::wire::decode_as_client;
use umi_dst::network::{Exchange, Profile};
use umi_dst::{Endpoint, FaultConfig, FaultKind, SimEnvironment, SimNetwork, Violation, ensure};

use crate::agent::{AgentError, Answer, TURNS_MAX, WeatherAgent};

/// The questions each seed asks.
const QUESTIONS: [&str; 3] = [
    "What is the weather in Oslo?",
    "Should I take an umbrella in Rome and in Paris tomorrow?",
    "Is it warmer in Lisbon than in Berlin?",
];

/// Providers whose bytes async-openai parses (the others' limits are listed in Umi's
/// third-party test).
const PROFILES: [Profile; 5] = [
    Profile::OpenAi,
    Profile::AzureOpenAi,
    Profile::DeepSeekChat,
    Profile::DashScope,
    Profile::Vllm,
];

const URL: &str = "https://api.weather-llm.sim/v1";
const MODEL: &str = "gpt-sim";

/// The scenario.
#[umi_dst::scenario(
    name = "weather_agent",
    goal = "the async-openai agent never answers from a cut stream and fails only as the faults allow",
    faults = [
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.12),
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.1),
        FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.05),
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.05),
        FaultConfig::chance(FaultKind::NetworkReset, 0.04),
        FaultConfig::chance(FaultKind::NetworkPartialWrite, 0.04),
    ],
    marks = ["wire.reset_mid_stream"],
    run = run,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WeatherAgentScenario;

/// The agent over a fresh SimNetwork endpoint of a drawn profile; the network, to check.
pub fn agent(sim: &SimEnvironment) -> (WeatherAgent, Arc<SimNetwork>) {
    let mut draw = sim.rng("workload.profile");
    let profile = PROFILES[draw.index(PROFILES.len())];
    let llm = umi_dst::SimLlm::with_config(
        sim,
        umi_dst::SimLlmConfig::default()
            .with_model(umi_core::llm::ModelRef::new("sim", MODEL, 32_768, 2_048)),
    )
    .expect("a valid config");
    let network = Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::openai(URL, Arc::new(llm)).with_profile(profile))
            .with_capture(),
    );
    // async-openai's own retry policy, as its default client uses it.
    let service = tower::ServiceBuilder::new()
        .layer(OpenAIRetryLayer::default())
        .service(SimService::new(network.clone()));
    umi_dst::adapters::async_openai::prepare();
    let config = async_openai::config::OpenAIConfig::new()
        .with_api_base(URL)
        .with_api_key("sk-unused");
    let client = async_openai::Client::with_config(config).with_http_service(service);
    (WeatherAgent::new(client, MODEL), network)
}

/// Invariants 1 to 3 for one question, given the exchanges it made and whether a fault
/// fired meanwhile.
pub fn check(
    question: &str,
    outcome: &Result<Answer, AgentError>,
    exchanges: &[Exchange],
    faulted: bool,
) -> Result<(), Violation> {
    // What the bytes of the last exchange say, decoded as a careful client would: a
    // stream is whole only if it reached the provider's end of answer.
    let last_cut = exchanges.last().is_some_and(|e| {
        let decoded = decode_as_client(e.profile.format(), e.reads.iter().map(Vec::as_slice));
        e.status == 200
            && (decoded.error.is_some() || !decoded.events.last().is_some_and(StreamEvent::is_done))
    });
    match outcome {
        Ok(answer) => {
            ensure!(
                !last_cut,
                "{question:?}: answered {:?} from a stream that was cut",
                answer.text
            );
            ensure!(!answer.text.is_empty(), "{question:?}: an empty answer");
            ensure!(
                answer.turns <= TURNS_MAX,
                "{question:?}: {} turns",
                answer.turns
            );
        }
        Err(error) => ensure!(
            faulted,
            "{question:?} failed though no fault fired: {error}"
        ),
    }
    Ok(())
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let (agent, network) = agent(&sim);
    for question in QUESTIONS {
        let before = network.exchanges().len();
        let faults_before = sim.faults().injected_total();
        let outcome = agent.ask(question).await;
        let exchanges = network.exchanges();
        let faulted = sim.faults().injected_total() > faults_before;
        check(question, &outcome, &exchanges[before..], faulted)?;
    }
    Ok(())
}
