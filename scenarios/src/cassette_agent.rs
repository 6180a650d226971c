//! Scenario `cassette_agent`: the agent loop over a recorded multi-turn tool
//! conversation, under faults. The recording supplies what the model says; the seed
//! supplies the reads, the latency and the faults over it.
//!
//! Workload: two agent runs (a weather question and a notes search, each a few turns
//! with tool calls) through the router (retries on) and umi-core's OpenAI client, over
//! SimNetwork replaying `scenarios/cassettes/agent_tools.jsonl`. The cassette is the
//! fault-free run of this same workload, recorded through umi-core's recording
//! transport ([`record`]; a test keeps the checked-in file equal to a fresh recording).
//! The model side sees 429s, 503s, cut streams, broken answers, resets and late first
//! bytes; the tools never fail (their results are part of the next request, and a
//! different result is a different conversation).
//!
//! Invariants:
//! 1. The agent never leaves the recorded conversation: no request misses the
//!    cassette. Retries and resent turns must send exactly what the fault-free run sent;
//!    a cut turn's partial text or a duplicated tool result would be a miss.
//! 2. Every run ends within `iterations_max` turns; every call the model asked for runs
//!    exactly once and is paired with one result.
//! 3. A run that finishes gives the recorded final answer; one that fails fails as the
//!    router reports exhaustion or a stream broken mid-turn.
//! 4. When every run finished, every recorded exchange was used (an agent that stops
//!    early leaves some over).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use umi_core::agent::{Agent, AgentConfig, AgentError, AgentEvent};
use umi_core::cassette::Cassette;
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::router::LlmRouter;
use umi_core::llm::transport::Transport;
use umi_core::llm::wire::sse::SseDecoder;
use umi_core::llm::{Connection, LanguageModel, LlmErrorKind, Message, ModelRef};
use umi_dst::checkers::router::RouterLog;
use umi_dst::network::{Replay, ReplayOptions};
use umi_dst::{Endpoint, FaultConfig, FaultKind, SimEnvironment, SimNetwork, Violation, ensure};

use crate::common::{
    Execution, orphan_tool_result, scenario_retry, sim_model, tool_registry, unanswered_tool_call,
};

/// The recording, checked in.
pub const CASSETTE: &str = include_str!("../cassettes/agent_tools.jsonl");

/// The cassette's file, from the package root.
pub const CASSETTE_PATH: &str = "cassettes/agent_tools.jsonl";

/// Where the recorded provider lives.
const BASE_URL: &str = "https://api.recorded.sim/v1";

/// The model asked for.
const MODEL: (&str, &str) = ("openai", "gpt-4o");

/// The seed the cassette was recorded on.
pub const RECORDING_SEED: u64 = 7;

/// Model turns per run.
const ITERATIONS_MAX: u32 = 6;

/// Retries of a turn whose stream was cut.
const STREAM_CUT_RETRIES_MAX: u32 = 2;

/// The prompts, one run each.
const PROMPTS: [&str; 2] = [
    "What is the weather in Kyoto for three days?",
    "Search my travel notes for the hotel in Lisbon.",
];

/// How a routed turn may end in error under this scenario's faults.
const TURN_ERRORS: [LlmErrorKind; 5] = [
    LlmErrorKind::Exhausted,
    LlmErrorKind::StreamTruncated,
    LlmErrorKind::Connection,
    LlmErrorKind::InvalidResponse,
    LlmErrorKind::Json,
];

/// The scenario.
#[umi_dst::scenario(
    goal = "the agent over a recorded tool conversation stays on it under faults",
    faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.08),
        FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.05),
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.02),
        FaultConfig::chance(FaultKind::NetworkReset, 0.03),
        FaultConfig::chance(FaultKind::NetworkSlowFirstByte, 0.05),
    ],
    marks = ["cassette.replay", "router.retry", "agent.stream_retry"],
    run = run,
    rank = 150,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CassetteAgent;

fn model_ref() -> ModelRef {
    ModelRef::new(MODEL.0, MODEL.1, 128_000, 2_048)
}

/// The agent of the workload, over `transport`.
fn agent(
    sim: &SimEnvironment,
    transport: Arc<dyn Transport>,
    log: &RouterLog,
    executions: &Arc<Mutex<Vec<Execution>>>,
) -> Agent {
    let retry = scenario_retry();
    let timeout = Duration::from_millis(retry.request_timeout_ms);
    let config = OpenAiConfig::new(Connection::new(BASE_URL).with_timeout(timeout), model_ref());
    let client: Arc<dyn LanguageModel> = Arc::new(OpenAiClient::new(config, transport, sim.env()));
    let id = format!("{}/{}", MODEL.0, MODEL.1);
    let router = LlmRouter::builder(sim.env())
        .retry(retry)
        .observer(log.observer())
        .model(&id, client)
        .default_model(&id)
        .build()
        .expect("one model, named");
    let config = AgentConfig::default()
        .with_iterations_max(ITERATIONS_MAX)
        .with_stream_cut_retries_max(STREAM_CUT_RETRIES_MAX);
    Agent::new(Arc::new(router), sim.env())
        .with_tools(tool_registry(sim, executions, 0.0))
        .with_config(config)
}

/// Records the workload, fault-free, from SimLLM on `sim` into a cassette at `path`
/// (what the checked-in cassette was made with: `RECORDING_SEED`).
pub async fn record(sim: SimEnvironment, path: &std::path::Path) -> Result<(), Violation> {
    use umi_core::cassette::{CassetteWriter, Header, RecordingTransport};
    let llm = sim_model(&sim, MODEL.0, MODEL.1, 128_000, |config| config);
    let network = Arc::new(SimNetwork::new(&sim).with_endpoint(Endpoint::openai(BASE_URL, llm)));
    let header = Header::new("umi-scenarios cassette_agent::record", Some(BASE_URL));
    let writer = CassetteWriter::create(path, &header)
        .map_err(|error| Violation::new(format!("cannot record: {error}")))?;
    let recorder = RecordingTransport::new(network, writer, sim.env(), BASE_URL);
    let executions = Arc::new(Mutex::new(Vec::new()));
    let agent = agent(&sim, Arc::new(recorder), &RouterLog::new(), &executions);
    for prompt in PROMPTS {
        agent
            .run(conversation(prompt))
            .await
            .map_err(|error| Violation::new(format!("the recording run failed: {error}")))?;
    }
    Ok(())
}

fn conversation(prompt: &str) -> Vec<Message> {
    vec![Message::system("Use the tools."), Message::user(prompt)]
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    run_over(sim, |network| network).await
}

/// The scenario's run, with the agent's transport made from the replaying network by
/// `transport` (the canary plants its bug there).
pub async fn run_over(
    sim: SimEnvironment,
    transport: impl FnOnce(Arc<dyn Transport>) -> Arc<dyn Transport>,
) -> Result<(), Violation> {
    let (replay, finals) = indexed_cassette().map_err(Violation::new)?;
    let llm = sim_model(&sim, MODEL.0, MODEL.1, 128_000, |config| config);
    let endpoint = Endpoint::openai(BASE_URL, llm).with_replay(Arc::clone(replay));
    let network = Arc::new(SimNetwork::new(&sim).with_endpoint(endpoint));
    let (log, executions) = (RouterLog::new(), Arc::new(Mutex::new(Vec::new())));
    let agent = agent(&sim, transport(network.clone()), &log, &executions);
    let mut all_finished = true;
    for prompt in PROMPTS {
        executions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let finished = one_run(&agent, prompt, &executions, finals).await?;
        all_finished &= finished;
    }
    let report = network
        .cassette_report(BASE_URL)
        .ok_or_else(|| Violation::new("the endpoint replays no cassette"))?;
    ensure!(
        report.miss_count == 0,
        "the agent left the recorded conversation: {}",
        report
            .misses
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
    ensure!(
        !all_finished || report.leftovers.is_empty(),
        "every run finished, yet recorded exchanges {:?} were never asked for",
        report.leftovers
    );
    umi_dst::checkers::router::check_router(&log.events(), &scenario_retry(), &Default::default())
}

/// The cassette indexed for replay, and its final answers.
type IndexedCassette = (Arc<Replay>, Vec<String>);

/// The scenario's cassette, parsed and indexed for replay, and its final answers: made
/// once per process, since they are a function of the checked-in file alone (parsing,
/// indexing and reading the finals cost a quarter of a seed when made per seed, issue
/// 41). Nothing a seed does reaches them: a `Replay` is read-only (the replay's cursor
/// lives in each run's `SimNetwork`), and the finals are only compared with.
fn indexed_cassette() -> Result<(&'static Arc<Replay>, &'static [String]), String> {
    static INDEXED: OnceLock<Result<IndexedCassette, String>> = OnceLock::new();
    let indexed = INDEXED.get_or_init(|| {
        let cassette = Cassette::parse(CASSETTE, std::path::Path::new(CASSETTE_PATH))
            .map_err(|error| format!("the scenario's cassette: {error}"))?;
        let finals = recorded_finals(&cassette);
        let replay = Replay::new(Arc::new(cassette), ReplayOptions::default());
        Ok((Arc::new(replay), finals))
    });
    match indexed {
        Ok((replay, finals)) => Ok((replay, finals)),
        Err(error) => Err(error.clone()),
    }
}

/// The final answers the cassette holds: the text of each whole answer with no tool
/// call, or of each stream's content, as the recorded bodies say (the last exchange of
/// each run ends it).
fn recorded_finals(cassette: &Cassette) -> Vec<String> {
    cassette
        .exchanges
        .iter()
        .filter_map(|exchange| {
            let body = String::from_utf8_lossy(&exchange.response.body_bytes()).into_owned();
            (!body.contains("tool_calls")).then(|| streamed_text(&body))
        })
        .collect()
}

/// The content text of an OpenAI chat answer, streamed (`data:` events, read with
/// umi-core's SSE decoder, the one the clients use) or whole (a body with no events).
fn streamed_text(body: &str) -> String {
    let mut text = String::new();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    // On a decoding error the events before it are kept, as a client would read them.
    if decoder.feed(body.as_bytes(), &mut events).is_ok()
        && let Ok(Some(last)) = decoder.finish()
    {
        events.push(last);
    }
    let values: Vec<serde_json::Value> = if events.is_empty() {
        serde_json::from_str(body).into_iter().collect()
    } else {
        events
            .iter()
            .filter_map(|event| serde_json::from_str(&event.data).ok())
            .collect()
    };
    for value in values {
        let choice = &value["choices"][0];
        for part in [&choice["delta"]["content"], &choice["message"]["content"]] {
            if let Some(piece) = part.as_str() {
                text.push_str(piece);
            }
        }
    }
    text
}

/// One agent run and its invariants; whether it finished.
async fn one_run(
    agent: &Agent,
    prompt: &str,
    executions: &Arc<Mutex<Vec<Execution>>>,
    finals: &[String],
) -> Result<bool, Violation> {
    let (mut started, mut iterations) = (Vec::new(), 0u32);
    let outcome = agent
        .run_with_events(conversation(prompt), &mut |event| match event {
            AgentEvent::ToolCallStarted { call } => started.push(call),
            AgentEvent::IterationStarted { iteration } => iterations = iteration,
            _ => {}
        })
        .await;
    ensure!(
        iterations <= ITERATIONS_MAX,
        "{prompt:?}: {iterations} turns"
    );
    let ran = executions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len();
    ensure!(
        ran == started.len(),
        "{prompt:?}: {} calls started, {ran} tool runs",
        started.len()
    );
    match outcome {
        Ok(outcome) => {
            if let Some(id) = orphan_tool_result(&outcome.messages)
                .or_else(|| unanswered_tool_call(&outcome.messages))
            {
                return Err(Violation::new(format!(
                    "{prompt:?}: call {id} is not paired with one result"
                )));
            }
            ensure!(
                finals.contains(&outcome.answer),
                "{prompt:?}: the final answer {:?} is none the recording gave",
                outcome.answer
            );
            Ok(true)
        }
        Err(AgentError::Provider(error)) => {
            ensure!(
                TURN_ERRORS.contains(&error.kind()),
                "{prompt:?}: a turn failed with {}: {error}",
                error.kind()
            );
            Ok(false)
        }
        Err(error) => Err(Violation::new(format!(
            "{prompt:?}: the agent failed: {error}"
        ))),
    }
}
