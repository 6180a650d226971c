//! Cassettes: SimNetwork's own traffic in every profile, streamed and whole, recorded
//! through umi-core's recording transport, then replayed under other seeds. Without
//! faults a replay gives the client the recorded bytes exactly, whatever the read split,
//! and umi-core's client parses them into the same answer; the same seed replays the
//! same run; faults land on recorded exchanges; a request the cassette does not hold is
//! explained by the closest recorded one and the JSON paths where they part.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use umi_core::cassette::{Cassette, CassetteWriter, Header, RecordingTransport};
use umi_core::llm::{
    CompletionRequest, LanguageModel, Message, ModelRef, StreamCollector, ToolDefinition,
};
use umi_dst::network::{
    ClientOptions, OnMiss, PastLast, Profile, ReplayOptions, ReplayTiming, base_url_for, client_for,
};
use umi_dst::{
    Endpoint, FaultConfig, FaultKind, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork,
    Simulation, Violation,
};

const MODEL: &str = "cassette-model";

fn model_ref() -> ModelRef {
    ModelRef::new("sim", MODEL, 32_768, 2_048)
}

fn requests() -> Vec<CompletionRequest> {
    let weather = ToolDefinition::new(
        "get_weather",
        "Weather for a city.",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    );
    vec![
        CompletionRequest::new(vec![
            Message::system("You are a concise assistant."),
            Message::user("What changed in the project this week?"),
        ]),
        CompletionRequest::new(vec![Message::user("What is the weather in Oslo?")])
            .with_tools(vec![weather]),
    ]
}

fn cassette_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cassette-{name}.jsonl"))
}

/// What a client made of an answer: the answer's text and tool calls, or the error's
/// kind.
type Outcome = Result<(String, Vec<(String, String)>), String>;

async fn ask(client: &dyn LanguageModel, request: &CompletionRequest, stream: bool) -> Outcome {
    let response = if stream {
        match client.stream(request).await {
            Ok(events) => StreamCollector::collect(MODEL, events).await,
            Err(error) => Err(error),
        }
    } else {
        client.complete(request).await
    };
    response
        .map(|r| {
            let calls = r
                .tool_calls
                .into_iter()
                .map(|c| (c.name, c.arguments.to_string()));
            (r.text, calls.collect())
        })
        .map_err(|error| format!("{:?}", error.kind()))
}

/// Records `profile`'s answers to [`requests`] on `seed` (SimLLM behind SimNetwork,
/// through the recording transport); returns the cassette, the outcomes and the bodies
/// the client read.
fn record(
    profile: Profile,
    stream: bool,
    seed: u64,
    faults: &[FaultConfig],
) -> (Cassette, Vec<Outcome>, Vec<Vec<u8>>) {
    // A file per recording: the tests run in parallel, and several record the same
    // profile and seed.
    static RECORDINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = RECORDINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = cassette_path(&format!("{profile}-{stream}-{seed}-{nth}"));
    let got = Mutex::new((Vec::new(), Vec::new()));
    Simulation::new(SimConfig::new(seed))
        .with_faults(faults.iter().cloned())
        .try_run(|sim: SimEnvironment| {
            let (path, got) = (&path, &got);
            async move {
                let config = SimLlmConfig::default().with_model(model_ref());
                let llm = Arc::new(SimLlm::with_config(&sim, config).unwrap());
                let url = base_url_for(profile, "recorded.sim");
                let network = Arc::new(
                    SimNetwork::new(&sim)
                        .with_endpoint(Endpoint::openai(&url, llm).with_profile(profile))
                        .with_capture(),
                );
                let writer =
                    CassetteWriter::create(path, &Header::new("cassette test", Some(&url)))
                        .unwrap();
                let recorder = RecordingTransport::new(network.clone(), writer, sim.env(), &url);
                let client = client_for(
                    profile,
                    &url,
                    model_ref(),
                    &ClientOptions::default(),
                    Arc::new(recorder),
                    sim.env(),
                );
                let mut outcomes = Vec::new();
                for request in requests() {
                    outcomes.push(ask(client.as_ref(), &request, stream).await);
                }
                let bodies = network.exchanges().iter().map(|e| e.body()).collect();
                *got.lock().unwrap() = (outcomes, bodies);
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("recording {profile} seed {seed}: {e:?}"));
    let (outcomes, bodies) = got.into_inner().unwrap();
    (Cassette::load(&path).unwrap(), outcomes, bodies)
}

/// Replays `cassette` as `profile`'s server on `seed` with `options` and `faults`;
/// returns the outcomes, the bodies the client read and the replay's report.
fn replay(
    cassette: &Arc<Cassette>,
    profile: Profile,
    stream: bool,
    seed: u64,
    options: &ReplayOptions,
    faults: &[FaultConfig],
    requests: &[CompletionRequest],
) -> (
    Vec<Outcome>,
    Vec<Vec<u8>>,
    umi_dst::network::CassetteReport,
    std::time::Duration,
) {
    let got = Mutex::new(None);
    Simulation::new(SimConfig::new(seed))
        .with_faults(faults.iter().cloned())
        .with_determinism_check(true)
        .try_run(|sim: SimEnvironment| {
            let got = &got;
            async move {
                let config = SimLlmConfig::default().with_model(model_ref());
                let llm = Arc::new(SimLlm::with_config(&sim, config).unwrap());
                let url = base_url_for(profile, "recorded.sim");
                let endpoint = Endpoint::openai(&url, llm)
                    .with_profile(profile)
                    .with_cassette(cassette.clone(), options.clone());
                let network =
                    Arc::new(SimNetwork::new(&sim).with_endpoint(endpoint).with_capture());
                let client = client_for(
                    profile,
                    &url,
                    model_ref(),
                    &ClientOptions::default(),
                    network.clone(),
                    sim.env(),
                );
                let mut outcomes = Vec::new();
                for request in requests {
                    outcomes.push(ask(client.as_ref(), request, stream).await);
                }
                let bodies = network.exchanges().iter().map(|e| e.body()).collect();
                let report = network
                    .cassette_report(&url)
                    .ok_or_else(|| Violation::new("no report"))?;
                *got.lock().unwrap() = Some((outcomes, bodies, report, sim.clock().now()));
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("replaying {profile} seed {seed}: {e:?}"));
    got.into_inner().unwrap().unwrap()
}

#[test]
fn every_profile_replays_its_recording_byte_for_byte_under_any_read_split() {
    let options = ReplayOptions::default();
    let mut compared = 0;
    for profile in Profile::ALL {
        for stream in [false, true] {
            let (cassette, recorded, bodies) = record(profile, stream, 7, &[]);
            assert_eq!(
                cassette.exchanges.len(),
                requests().len(),
                "{profile} stream={stream}"
            );
            for (exchange, body) in cassette.exchanges.iter().zip(&bodies) {
                assert_eq!(
                    &exchange.response.body_bytes(),
                    body,
                    "{profile}: the cassette holds what the client read"
                );
            }
            let cassette = Arc::new(cassette);
            for seed in [1, 2, 3] {
                let (outcomes, replayed, report, _) =
                    replay(&cassette, profile, stream, seed, &options, &[], &requests());
                assert_eq!(
                    replayed, bodies,
                    "{profile} stream={stream} seed {seed}: the bytes read"
                );
                assert_eq!(
                    outcomes, recorded,
                    "{profile} stream={stream} seed {seed}: the parse"
                );
                assert_eq!(report.miss_count, 0);
                assert!(report.leftovers.is_empty(), "{report:?}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, Profile::ALL.len() * 2 * 3);
}

#[test]
fn a_recorded_mid_stream_error_replays_as_it_happened() {
    let cut = [FaultConfig::new(FaultKind::LlmStreamCut, 1.0).unwrap()];
    let (cassette, recorded, bodies) = record(Profile::OpenAi, true, 11, &cut);
    assert!(recorded.iter().all(Result::is_err), "{recorded:?}");
    let cassette = Arc::new(cassette);
    let (outcomes, replayed, _, _) = replay(
        &cassette,
        Profile::OpenAi,
        true,
        5,
        &ReplayOptions::default(),
        &[],
        &requests(),
    );
    assert_eq!(replayed, bodies);
    assert_eq!(outcomes, recorded);
}

#[test]
fn faults_land_on_recorded_exchanges_and_a_replaced_answer_is_not_used_up() {
    let (cassette, _, _) = record(Profile::OpenAi, true, 7, &[]);
    let cassette = Arc::new(cassette);
    let options = ReplayOptions::default();
    let table = [
        (FaultKind::LlmRateLimit, "RateLimit"),
        (FaultKind::LlmServiceUnavailable, "ServiceUnavailable"),
        (FaultKind::LlmModelNotFound, "ModelNotFound"),
        (FaultKind::LlmContextOverflow, "ContextOverflow"),
    ];
    for (kind, expected) in table {
        let faults = [FaultConfig::new(kind, 1.0).unwrap()];
        let (outcomes, _, report, _) = replay(
            &cassette,
            Profile::OpenAi,
            true,
            3,
            &options,
            &faults,
            &requests(),
        );
        for outcome in &outcomes {
            assert_eq!(outcome.as_ref().unwrap_err(), expected, "{kind}");
        }
        assert_eq!(report.served, 0, "{kind}: a replaced answer is not used up");
        assert_eq!(report.leftovers.len(), requests().len());
    }
    let cut = [FaultConfig::new(FaultKind::LlmStreamCut, 1.0).unwrap()];
    let (cut_outcomes, cut_bodies, report, _) = replay(
        &cassette,
        Profile::OpenAi,
        true,
        3,
        &options,
        &cut,
        &requests(),
    );
    assert!(cut_outcomes.iter().all(Result::is_err), "{cut_outcomes:?}");
    let whole: Vec<Vec<u8>> = cassette
        .exchanges
        .iter()
        .map(|e| e.response.body_bytes())
        .collect();
    for (got, full) in cut_bodies.iter().zip(&whole) {
        assert!(
            got.len() < full.len() && full.starts_with(got),
            "a cut is a prefix of the recording"
        );
    }
    assert_eq!(report.served, 2);
}

#[test]
fn a_miss_names_the_closest_recorded_request_and_where_it_differs() {
    let (cassette, recorded, _) = record(Profile::OpenAi, false, 7, &[]);
    let cassette = Arc::new(cassette);
    let mut changed = requests();
    changed[0] = CompletionRequest::new(vec![
        Message::system("You are a concise assistant."),
        Message::user("What changed in the project this month?"),
    ]);
    let (outcomes, _, report, _) = replay(
        &cassette,
        Profile::OpenAi,
        false,
        1,
        &ReplayOptions::default(),
        &[],
        &changed,
    );
    assert_eq!(outcomes[0].as_ref().unwrap_err(), "BadRequest");
    assert_eq!(outcomes[1], recorded[1]);
    assert_eq!(report.miss_count, 1);
    let miss = report.misses[0].to_string();
    assert!(miss.contains("POST /chat/completions"), "{miss}");
    assert!(
        miss.contains("exchange 0 (file line 2), which differs at $.messages[1].content"),
        "{miss}"
    );
    assert_eq!(report.leftovers, vec![0], "the exchange never asked for");

    let to_model = ReplayOptions {
        on_miss: OnMiss::Model,
        ..ReplayOptions::default()
    };
    let (outcomes, _, _, _) = replay(
        &cassette,
        Profile::OpenAi,
        false,
        1,
        &to_model,
        &[],
        &changed,
    );
    assert!(outcomes[0].is_ok(), "SimLLM answers the miss: {outcomes:?}");

    let twice = vec![requests()[0].clone(), requests()[0].clone()];
    let (outcomes, _, _, _) = replay(
        &cassette,
        Profile::OpenAi,
        false,
        1,
        &ReplayOptions::default(),
        &[],
        &twice,
    );
    assert_eq!(outcomes[0], outcomes[1], "past the last, the last again");
    let strict = ReplayOptions {
        past_last: PastLast::Miss,
        ..ReplayOptions::default()
    };
    let (outcomes, _, report, _) =
        replay(&cassette, Profile::OpenAi, false, 1, &strict, &[], &twice);
    assert_eq!(outcomes[1].as_ref().unwrap_err(), "BadRequest");
    assert!(
        report.misses[0]
            .to_string()
            .contains("matches but was used up"),
        "{:?}",
        report.misses
    );
}

#[test]
fn recorded_time_plays_in_simulated_time_scaled_or_not_at_all() {
    let (mut cassette, _, _) = record(Profile::OpenAi, true, 7, &[]);
    // Stretch the recording to forty seconds a stream.
    for exchange in &mut cassette.exchanges {
        let response = &mut exchange.response;
        response.headers_ms = 1_000;
        let count = response.pieces.len() as u64;
        for (index, piece) in response.pieces.iter_mut().enumerate() {
            piece.1 = 1_000 + 39_000 * (index as u64 + 1) / count;
        }
    }
    let cassette = Arc::new(cassette);
    let took = |timing: ReplayTiming| {
        let options = ReplayOptions {
            timing,
            ..ReplayOptions::default()
        };
        replay(
            &cassette,
            Profile::OpenAi,
            true,
            2,
            &options,
            &[],
            &requests(),
        )
        .3
    };
    let recorded = took(ReplayTiming::Recorded);
    assert_eq!(
        recorded.as_secs(),
        80,
        "two forty-second streams, one after the other"
    );
    assert_eq!(took(ReplayTiming::Scaled { permille: 500 }).as_secs(), 40);
    assert_eq!(took(ReplayTiming::Instant).as_millis(), 0);
    assert_ne!(took(ReplayTiming::Jittered), recorded);
}

#[test]
fn a_key_never_reaches_a_recording_of_a_simulated_provider() {
    let key = "sk-proj-PLANTEDkey0123456789abcdef";
    let path = cassette_path("keyed");
    Simulation::new(SimConfig::new(3))
        .try_run(|sim: SimEnvironment| {
            let path = &path;
            async move {
                let llm = Arc::new(
                    SimLlm::with_config(&sim, SimLlmConfig::default().with_model(model_ref()))
                        .unwrap(),
                );
                let url = format!("https://user:{key}@keyed.sim/v1");
                let network = Arc::new(
                    SimNetwork::new(&sim)
                        .with_endpoint(Endpoint::openai(&url, llm).with_api_key(key)),
                );
                let writer =
                    CassetteWriter::create(path, &Header::new("cassette test", Some(&url)))
                        .unwrap();
                let recorder = RecordingTransport::new(network, writer, sim.env(), &url);
                let mut options = ClientOptions::default();
                options.api_key = Some(umi_core::llm::secrets::ApiKey::new(key));
                let client = client_for(
                    Profile::OpenAi,
                    &url,
                    model_ref(),
                    &options,
                    Arc::new(recorder),
                    sim.env(),
                );
                let request =
                    CompletionRequest::new(vec![Message::user(format!("my key is {key}"))]);
                let _ = client.complete(&request).await;
                Ok(())
            }
        })
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().count() >= 2, "{text}");
    assert!(!text.contains("PLANTEDkey"), "{text}");
}
