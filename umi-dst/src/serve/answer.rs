//! One HTTP request answered inside its own simulation.
//!
//! Everything about the answer derives from the request's seed: the session's (or the
//! one the request named), the endpoint, the request's canonical hash and how many times
//! that hash was seen before in the session, mixed into one run seed. The run builds a
//! SimLLM and a SimNetwork endpoint of the profile, sends the request through them, and
//! records the response: status, headers, and each piece of the body with the simulated
//! time it was released. Nothing here reads the wall clock or depends on which other
//! requests are in flight; playing the record back in real time is [`super::http`]'s job.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};
use umi_core::llm::ModelRef;
use umi_core::llm::transport::{HttpRequest, Transport};

use super::config::{EndpointSpec, ServeConfig};
use crate::config::SimConfig;
use crate::llm::{SimLlm, SimLlmConfig};
use crate::network::{Endpoint, SimNetwork};
use crate::simulation::Simulation;
use crate::trace::{KeptEvent, Trace, TraceHash};

/// Simulated time after which a response that has not come (or a body that stopped) is
/// a stall: the server holds the connection for it, scaled, then drops it.
pub(crate) const STALL_MS: u64 = 600_000;

/// The host requests are addressed to inside the simulation.
const SIM_HOST: &str = "http://umi.serve";

/// A context window and output limit for every served model.
const CONTEXT_WINDOW_TOKENS: u32 = 131_072;
const OUTPUT_TOKENS_MAX: u32 = 8_192;

/// How the response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The body is whole.
    Complete,
    /// The connection broke (a reset, or a refused connection before any response).
    Reset,
    /// The server stopped answering: the client's own timeout must end it.
    Stall,
}

impl End {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Reset => "reset",
            Self::Stall => "stall",
        }
    }
}

/// A response as the simulation produced it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// `None`: no response at all (the connection failed before the headers).
    pub(crate) status: Option<u16>,
    pub(crate) headers: Vec<(String, String)>,
    /// When the status line and headers came, in simulated time since the request.
    pub(crate) head_at: Duration,
    /// Body pieces with the simulated time since the request at which each was sent.
    pub(crate) pieces: Vec<(Duration, Vec<u8>)>,
    pub(crate) end: End,
    /// When the end came (a stall: when it began).
    pub(crate) end_at: Duration,
    pub(crate) run_seed: u64,
    pub(crate) faults: Vec<String>,
    /// The run's trace, typed (its text is written when the log is read).
    pub(crate) trace: Vec<KeptEvent>,
    pub(crate) trace_hash: TraceHash,
    /// What an MCP `tools/call` was and did (its log entry's `tool` field).
    pub(crate) tool: Option<super::world::ToolEntry>,
}

/// What an answer is seeded by: what the model is asked, in canonical form, and never
/// how it is delivered.
///
/// The request is read as `endpoint`'s server reads it (the format's own parser, the one
/// SimNetwork answers with), into umi-core's provider-neutral `CompletionRequest`: the
/// model's name, the conversation (system text, messages, tool calls and results), the
/// tools, the tool choice, whether calls may run in parallel, the output schema (or JSON
/// mode), the token limit, the temperature, the stop sequences and the sampling seed.
/// Its canonical JSON (sorted keys) is hashed. So `stream`, `stream_options`, field
/// order, spacing, and every field the format's parser does not map (`store`,
/// `metadata`, `user`, `service_tier`, `include`, ...) change nothing: the same
/// conversation gets the same seed whole, with `"stream": false`, or streamed. A body the
/// server refuses (it is not JSON, or breaks the format's rules) is hashed as it came,
/// with its path: its answer is the refusal, which names what was wrong.
///
/// Returned with the hash: the conversation as the format's server parsed it (`None` for
/// a body it refuses), which the log's `history` digests.
pub(crate) fn conversation_hash(
    endpoint: &EndpointSpec,
    path: &str,
    request: &HttpRequest,
) -> ([u8; 32], Option<umi_core::llm::CompletionRequest>) {
    let format = crate::network::server_format(endpoint.profile.format());
    // A request read off the wire has no URL yet; a format whose path and query say
    // what is asked (Gemini's model) reads them from there.
    let with_url;
    let request = if request.url.is_empty() && format.reads_query() {
        with_url = HttpRequest {
            url: format!("{SIM_HOST}{path}"),
            ..request.clone()
        };
        &with_url
    } else {
        request
    };
    let mut hasher = Sha256::new();
    let conversation = match format.parse(request, endpoint.profile) {
        Ok(parsed) => {
            hasher.update(b"umi.serve.conversation.v1");
            let value = serde_json::to_value(&parsed.request)
                .expect("a CompletionRequest serializes to JSON");
            crate::llm::canonical_json(&mut hasher, &value);
            Some(parsed.request)
        }
        Err(_) => {
            hasher.update(b"umi.serve.request.v1");
            hasher.update((path.len() as u64).to_le_bytes());
            hasher.update(path.as_bytes());
            let parsed = serde_json::from_slice::<serde_json::Value>(&request.body).ok();
            hash_json_or_bytes(&mut hasher, parsed.as_ref(), &request.body);
            None
        }
    };
    (hasher.finalize().into(), conversation)
}

/// Hashes a body as its canonical JSON when it parsed (`parsed`), else as its bytes,
/// each behind its own tag byte so the two never collide.
pub(crate) fn hash_json_or_bytes(
    hasher: &mut Sha256,
    parsed: Option<&serde_json::Value>,
    raw: &[u8],
) {
    match parsed {
        Some(value) => {
            hasher.update([1]);
            crate::llm::canonical_json(hasher, value);
        }
        None => {
            hasher.update([0]);
            hasher.update(raw);
        }
    }
}

/// The run seed of one request.
pub(crate) fn run_seed(
    seed: u64,
    endpoint: &EndpointSpec,
    hash: &[u8; 32],
    occurrence: u64,
) -> u64 {
    let digest = Sha256::new()
        .chain_update(b"umi.serve.seed.v1")
        .chain_update(seed.to_le_bytes())
        .chain_update(endpoint.profile.name().as_bytes())
        .chain_update([0])
        .chain_update(endpoint.prefix.as_bytes())
        .chain_update(hash)
        .chain_update(occurrence.to_le_bytes())
        .finalize();
    u64::from_le_bytes(
        digest[..8]
            .try_into()
            .expect("a SHA-256 digest has 8 bytes"),
    )
}

/// The model a request names: in its path for a format whose paths carry it (Gemini's),
/// else in its body.
fn requested_model(endpoint: &EndpointSpec, path: &str, body: &[u8]) -> Option<String> {
    let format = crate::network::server_format(endpoint.profile.format());
    let below = path.strip_prefix(endpoint.api_root()).unwrap_or(path);
    let below = below.split('?').next().unwrap_or(below);
    if let Some(model) = format.route(below, None).and_then(|route| route.model) {
        return Some(model);
    }
    super::model::named_model(body)
}

/// The model that answers a request asking for `asked`: any name when the server
/// serves any (`umi-sim` for a request that names none); else the name when it is
/// served, or the first served one, whose server then answers "model not found" in its
/// own words.
fn served_model(config: &ServeConfig, asked: Option<String>) -> String {
    match asked {
        Some(name) if config.models.is_empty() || config.models.contains(&name) => name,
        _ => config
            .models
            .first()
            .cloned()
            .unwrap_or_else(|| super::config::MODEL_DEFAULT.to_owned()),
    }
}

/// Answers `request` (its path already under `endpoint`'s prefix, stripped of any seed
/// prefix) in a simulation of `run_seed`.
pub(crate) fn answer(
    config: &ServeConfig,
    endpoint: &EndpointSpec,
    run_seed: u64,
    occurrence: u64,
    path: &str,
    request: HttpRequest,
) -> Recorded {
    let recorded: Arc<Mutex<Option<Recorded>>> = Arc::new(Mutex::new(None));
    let simulation = simulation_for(config, run_seed);
    let model = served_model(config, requested_model(endpoint, path, &request.body));
    let base = format!("{SIM_HOST}{}{}", endpoint.prefix, endpoint.api_root());
    let url = format!("{SIM_HOST}{}{path}", endpoint.prefix);
    // The request moves into the run: `simulation_for` sets no budget, so the body runs
    // once (a budget's fault-free rerun is what would run it again).
    let request = std::cell::RefCell::new(Some(HttpRequest { url, ..request }));
    let held = HeldTrace::default();
    let run = simulation.run_seed(run_seed, &|sim| {
        held.hold(&sim);
        let recorded = recorded.clone();
        let request = request
            .borrow_mut()
            .take()
            .expect("a served request's simulation runs its body once");
        let (base, model) = (base.clone(), model.clone());
        let api_key = config.api_key.clone();
        async move {
            let llm = Arc::new(SimLlm::with_config(&sim, served_llm(endpoint, &model))?);
            let network = match &config.cassette {
                Some(replay) => {
                    // A cassette's paths are below the server's root (what the client
                    // sent after the endpoint's prefix), as `dst record` records them.
                    let root = format!("{SIM_HOST}{}", endpoint.prefix);
                    let served = Endpoint::openai(&root, llm)
                        .with_profile(endpoint.profile)
                        .with_replay(replay.clone());
                    SimNetwork::new(&sim)
                        .with_endpoint(served)
                        .with_replay_offset(occurrence)
                }
                None => {
                    let mut served = Endpoint::openai(&base, llm).with_profile(endpoint.profile);
                    if let Some(key) = &api_key {
                        served = served.with_api_key(key.expose());
                    }
                    SimNetwork::new(&sim).with_endpoint(served)
                }
            };
            let record = exchange(&sim, &network, request).await;
            *recorded.lock().unwrap_or_else(PoisonError::into_inner) = Some(record);
            Ok(())
        }
    });
    let record = recorded
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or_else(|| failed_run(&format!("{:?}", run.failure), run.trace_hash));
    finish_record(record, run_seed, &run, &held)
}

/// A served run's trace, held by the run's body so that its events can be taken, typed,
/// once the run ends (`SimConfig::trace_full_typed`: their text is written only when the
/// log is read).
#[derive(Default)]
pub(crate) struct HeldTrace(Mutex<Option<Arc<Trace>>>);

impl HeldTrace {
    /// Holds `sim`'s trace (a body calls it as it starts).
    pub(crate) fn hold(&self, sim: &crate::SimEnvironment) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(sim.trace().clone());
    }

    /// The held trace's events (none when the body never started, or the run passed
    /// `TRACE_EVENTS_FULL_MAX` events).
    fn take(&self) -> Vec<KeptEvent> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .and_then(|trace| trace.take_kept())
            .unwrap_or_default()
    }
}

/// `record` with what its run says of it: the run seed, the faults, the trace (`held`'s
/// events).
pub(crate) fn finish_record(
    mut record: Recorded,
    run_seed: u64,
    run: &crate::simulation::SeedRun,
    held: &HeldTrace,
) -> Recorded {
    record.run_seed = run_seed;
    record.faults = run
        .injections
        .iter()
        .map(|i| format!("{}@{}", i.kind, i.operation))
        .collect();
    record.trace = held.take();
    record.trace_hash = run.trace_hash;
    record
}

/// The simulation of one request: seed `run_seed`, the session's faults (switched by
/// the seed in swarm mode), the whole trace kept, and simulated time bounded well past a
/// stall.
pub(crate) fn simulation_for(config: &ServeConfig, run_seed: u64) -> Simulation {
    let mut simulation =
        Simulation::new(SimConfig::new(run_seed)).with_faults(config.faults.iter().cloned());
    if config.swarm {
        simulation = simulation.with_swarm();
    }
    simulation.with_config(|mut c| {
        c.trace_full = true;
        // The log holds the events typed and writes their text when it is read; no tail
        // (a served run's report is its log entry, whose trace is whole).
        c.trace_full_typed = true;
        c.trace_tail_events = 0;
        c.sim_time_max = Duration::from_millis(STALL_MS * 4);
        // `answer` moves the request into the run's body, which therefore runs once: a
        // budget's fault-free rerun would run it twice.
        assert!(
            !c.budget.is_limited(),
            "a served request's simulation sets no budget"
        );
        c
    })
}

/// The SimLLM that serves `model` at `endpoint` (reasoning on for a profile that
/// streams it).
fn served_llm(endpoint: &EndpointSpec, model: &str) -> SimLlmConfig {
    let llm_config = SimLlmConfig::default().with_model(ModelRef::new(
        endpoint.profile.name(),
        model,
        CONTEXT_WINDOW_TOKENS,
        OUTPUT_TOKENS_MAX,
    ));
    if endpoint.profile.streams_reasoning() {
        llm_config.with_reasoning()
    } else {
        llm_config
    }
}

/// The record of a run that failed before it answered (a bug in the simulator): a 500
/// that says so (`failure`), never a hang. The caller fills in the seed, the faults and
/// the trace.
pub(crate) fn failed_run(failure: &str, trace_hash: TraceHash) -> Recorded {
    Recorded {
        status: Some(500),
        headers: vec![("content-type".into(), "text/plain".into())],
        head_at: Duration::ZERO,
        pieces: vec![(
            Duration::ZERO,
            format!("umi: the simulation failed: {failure}").into_bytes(),
        )],
        end: End::Complete,
        end_at: Duration::ZERO,
        run_seed: 0,
        faults: Vec::new(),
        trace: Vec::new(),
        trace_hash,
        tool: None,
    }
}

/// Sends `request` through `network` and records what comes back, in simulated time.
pub(crate) async fn exchange(
    sim: &crate::SimEnvironment,
    network: &SimNetwork,
    request: HttpRequest,
) -> Recorded {
    let clock = sim.clock().clone();
    let start = clock.now();
    let stall = Duration::from_millis(STALL_MS);
    let mut record = Recorded {
        status: None,
        headers: Vec::new(),
        head_at: Duration::ZERO,
        pieces: Vec::new(),
        end: End::Complete,
        end_at: Duration::ZERO,
        run_seed: 0,
        faults: Vec::new(),
        trace: Vec::new(),
        trace_hash: TraceHash([0; 32]),
        tool: None,
    };
    let response = tokio::select! {
        biased;
        response = network.send(request) => response,
        () = clock.sleep(stall) => {
            record.end = End::Stall;
            record.end_at = clock.now() - start;
            return record;
        }
    };
    // A connection refused or reset (and any transport failure added later) ends the HTTP
    // connection the way the simulation did: a reset.
    let Ok(response) = response else {
        record.end = End::Reset;
        record.end_at = clock.now() - start;
        return record;
    };
    record.status = Some(response.status);
    record.headers = response.headers;
    record.head_at = clock.now() - start;
    let mut body = response.body;
    loop {
        let next = tokio::select! {
            biased;
            next = body.next() => next,
            () = clock.sleep(stall) => {
                record.end = End::Stall;
                break;
            }
        };
        match next {
            None => break,
            Some(Ok(bytes)) => record.pieces.push((clock.now() - start, bytes)),
            Some(Err(_)) => {
                record.end = End::Reset;
                break;
            }
        }
    }
    record.end_at = clock.now() - start;
    record
}
