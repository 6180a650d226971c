//! rig, unmodified, over SimNetwork through `umi_dst::adapters::rig`: its OpenAI chat and
//! Ollama models answer as Umi's own clients do for the same seed, whole and streamed,
//! call tools and take their results back, see the seed's faults as rig's own errors,
//! and replay by seed.
//!
//! Built with the `rig` feature only, in a build of its own (`cargo test -p umi-dst
//! --features rig --test main`, which `make test` runs: the whole binary, so the golden
//! files show that seeds mean the same in this build, where rig-core turns on serde_json's
//! `preserve_order`, as in the default one). No workspace member enables `rig`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use rig_core::completion::{CompletionRequest, CompletionResponse, ToolDefinition};
use rig_core::message::{Message, ToolName, ToolResultContent};
use rig_core::streaming::{Item, StreamEvent};
use rig_core::{ErrorKind, ProviderError};
use umi_core::llm::ModelRef;
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_dst::adapters::rig::{SimHttpError, ollama, openai};
use umi_dst::{
    Endpoint, FaultConfig, FaultKind, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork,
    Simulation, Violation, ensure,
};

const OPENAI_URL: &str = "https://api.openai.sim/v1";
const OLLAMA_URL: &str = "http://ollama.sim:11434";
const MODEL: &str = "sim-large";
const PROMPT: &str = "tell me a long story about Alice and Bob";

fn sim_model(sim: &SimEnvironment) -> Arc<SimLlm> {
    let config = SimLlmConfig::default().with_model(ModelRef::new("sim", MODEL, 32_768, 4_096));
    Arc::new(SimLlm::with_config(sim, config).expect("a valid config"))
}

fn openai_network(sim: &SimEnvironment) -> Arc<SimNetwork> {
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::openai(OPENAI_URL, sim_model(sim)))
            .with_capture(),
    )
}

fn ollama_network(sim: &SimEnvironment) -> Arc<SimNetwork> {
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::ollama(OLLAMA_URL, sim_model(sim)))
            .with_capture(),
    )
}

fn violation(error: impl std::fmt::Display) -> Violation {
    Violation::new(error.to_string())
}

/// A rig stream read to its end: the text it delivered, how many text pieces it came
/// in, and the error that ended it, if one did.
struct Streamed {
    text: String,
    pieces: usize,
    error: Option<ProviderError>,
}

async fn read_stream(mut stream: rig_core::streaming::CompletionStream) -> Streamed {
    let mut streamed = Streamed {
        text: String::new(),
        pieces: 0,
        error: None,
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(Item::Event(StreamEvent::Text { text, .. })) => {
                streamed.text.push_str(&text);
                streamed.pieces += 1;
            }
            Ok(_) => {}
            Err(error) => {
                streamed.error = Some(error);
                return streamed;
            }
        }
    }
    if let Err(error) = stream.finish().await {
        streamed.error = Some(error);
    }
    streamed
}

/// What one seed's prompt gets: from rig whole, from rig streamed (a fresh network each,
/// so each is the run's first such request), and from Umi's own OpenAI client.
fn answers(seed: u64) -> (String, Streamed, String) {
    let found = Mutex::new(None);
    Simulation::new(SimConfig::new(seed))
        .try_run(|sim| {
            let found = &found;
            async move {
                let model = openai(openai_network(&sim), OPENAI_URL).chat(MODEL);
                let whole = model
                    .call(CompletionRequest::new(PROMPT))
                    .await
                    .map_err(violation)?;
                let model = openai(openai_network(&sim), OPENAI_URL).chat(MODEL);
                let stream = model
                    .stream(CompletionRequest::new(PROMPT))
                    .map_err(violation)?;
                let streamed = read_stream(stream).await;
                let umi = OpenAiClient::new(
                    OpenAiConfig::new(OPENAI_URL, ModelRef::new("sim", MODEL, 32_768, 4_096)),
                    openai_network(&sim),
                    sim.env(),
                );
                let request =
                    umi_core::llm::CompletionRequest::new(vec![umi_core::llm::Message::user(
                        PROMPT,
                    )]);
                let ours = umi_core::llm::LanguageModel::complete(&umi, &request)
                    .await
                    .map_err(violation)?;
                *found.lock().unwrap() = Some((whole.text(), streamed, ours.text));
                Ok(())
            }
        })
        .unwrap();
    found.into_inner().unwrap().expect("the run finished")
}

/// rig reads SimNetwork's bytes as Umi's own client does: the same answer for the same
/// seed, whole or streamed, and streams arrive in pieces.
#[test]
fn rig_answers_as_umis_own_client_does() {
    let mut streamed_in_pieces = 0;
    for seed in 1..=12 {
        let (whole, streamed, ours) = answers(seed);
        assert!(!ours.is_empty(), "seed {seed}: Umi's client got no text");
        assert_eq!(whole, ours, "seed {seed}: rig's whole answer");
        assert!(
            streamed.error.is_none(),
            "seed {seed}: {:?}",
            streamed.error
        );
        assert_eq!(streamed.text, ours, "seed {seed}: rig's streamed answer");
        if streamed.pieces > 1 {
            streamed_in_pieces += 1;
        }
    }
    assert!(
        streamed_in_pieces >= 10,
        "{streamed_in_pieces} of 12 streams came in more than one piece"
    );
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new("get_weather").unwrap(),
        "The current weather in a city",
        serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }),
    )
}

/// Asks with a tool; when the model calls it, answers every call and asks again.
/// Returns whether the model called the tool.
async fn tool_round_trip<W>(model: &rig_core::Model<W>) -> Result<bool, Violation>
where
    W: rig_core::wire::Wire<Op = rig_core::operation::Completion>,
    rig_core::http_client::DynHttpClient: rig_core::driver::Transport<W>,
{
    let mut request = CompletionRequest::new("What is the weather in Oslo?").tool(weather_tool());
    let first: CompletionResponse = model.call(request.clone()).await.map_err(violation)?;
    let calls: Vec<_> = first.tool_calls().cloned().collect();
    if calls.is_empty() {
        ensure!(!first.text().is_empty(), "neither text nor a tool call");
        return Ok(false);
    }
    for call in &calls {
        ensure!(
            call.function.name.as_str() == "get_weather",
            "called {:?}",
            call.function.name
        );
        ensure!(
            call.function.invalid_arguments.is_none()
                && call
                    .function
                    .arguments
                    .get("city")
                    .is_some_and(|c| c.is_string()),
            "arguments {:?} / {:?}",
            call.function.arguments,
            call.function.invalid_arguments
        );
    }
    request.chat_history.push(
        first
            .message()
            .ok_or_else(|| violation("no assistant turn"))?,
    );
    request.chat_history.push(Message::tool_results(
        calls
            .iter()
            .map(|call| call.result(vec![ToolResultContent::text("12°C, light rain")]))
            .collect(),
    ));
    let second = model.call(request).await.map_err(violation)?;
    ensure!(
        !second.text().is_empty() || second.tool_calls().next().is_some(),
        "the turn after the tool result is empty"
    );
    Ok(true)
}

/// Tool calls round-trip on both wires: OpenAI's with the provider's ids, Ollama's
/// native API (whose calls carry no id, so rig issues its own) by position.
#[test]
fn rig_tool_calls_round_trip_on_openai_and_ollama() {
    let called = Mutex::new([0usize; 2]);
    Simulation::new(SimConfig::new(0))
        .with_seeds(1..=12)
        .try_run(|sim| {
            let called = &called;
            async move {
                let chat = openai(openai_network(&sim), OPENAI_URL).chat(MODEL);
                let native = ollama(ollama_network(&sim), OLLAMA_URL).native_completion(MODEL);
                let by_openai = tool_round_trip(&chat).await?;
                let by_ollama = tool_round_trip(&native).await?;
                let mut called = called.lock().unwrap();
                called[0] += usize::from(by_openai);
                called[1] += usize::from(by_ollama);
                Ok(())
            }
        })
        .unwrap();
    let [openai_calls, ollama_calls] = called.into_inner().unwrap();
    assert!(
        openai_calls >= 4 && ollama_calls >= 4,
        "the tool was called on {openai_calls} (OpenAI) and {ollama_calls} (Ollama) of 12 seeds"
    );
}

fn one_fault(kind: FaultKind) -> Simulation {
    Simulation::new(SimConfig::new(9).with_fault(FaultConfig::always(kind).with_max_injections(1)))
}

/// A 429 and a 503 are rig's preserved provider replies (status, retryability and the
/// Retry-After header kept); a refused connection is rig's transport error; the next
/// request succeeds.
#[test]
fn faults_surface_as_rigs_own_errors() {
    for (kind, status) in [
        (FaultKind::LlmRateLimit, 429),
        (FaultKind::LlmServiceUnavailable, 503),
        (FaultKind::NetworkConnectionRefused, 0),
    ] {
        one_fault(kind)
            .try_run(async |sim| {
                let network = openai_network(&sim);
                let model = openai(network.clone(), OPENAI_URL).chat(MODEL);
                let error = model
                    .call(CompletionRequest::new(PROMPT))
                    .await
                    .expect_err("the fault fails the first call");
                ensure!(error.is_retryable(), "{kind:?}: {error:?} is not retryable");
                if status == 0 {
                    ensure!(error.kind() == ErrorKind::Http, "{kind:?}: {error:?}");
                    ensure!(error.to_string().contains("refused"), "{error}");
                } else {
                    let reply = error
                        .provider_response()
                        .ok_or_else(|| violation(format!("{kind:?}: {error:?}")))?;
                    ensure!(
                        reply.status.map(|s| s.as_u16()) == Some(status),
                        "{kind:?}: {reply:?}"
                    );
                    let exchange = network.exchanges().pop().expect("one exchange");
                    ensure!(
                        status != 429 || exchange.header("retry-after").is_some(),
                        "this seed's 429 names its wait"
                    );
                    ensure!(
                        reply
                            .headers
                            .as_ref()
                            .and_then(|h| h.get("retry-after"))
                            .and_then(|v| v.to_str().ok())
                            == exchange.header("retry-after"),
                        "{kind:?}: Retry-After as sent"
                    );
                }
                ensure!(
                    model.call(CompletionRequest::new(PROMPT)).await.is_ok(),
                    "{kind:?}: the next request succeeds"
                );
                Ok(())
            })
            .unwrap();
    }
}

/// A stream cut mid-answer ends rig's stream with an error: never an answer that looks
/// whole.
#[test]
fn a_cut_stream_is_an_error_in_rig() {
    let cut = Mutex::new(0);
    Simulation::new(SimConfig::new(0).with_fault(FaultConfig::always(FaultKind::LlmStreamCut)))
        .with_seeds(1..=12)
        .try_run(|sim| {
            let cut = &cut;
            async move {
                let model = openai(openai_network(&sim), OPENAI_URL).chat(MODEL);
                let stream = model
                    .stream(CompletionRequest::new(PROMPT))
                    .map_err(violation)?;
                let streamed = read_stream(stream).await;
                ensure!(
                    streamed.error.is_some(),
                    "a cut stream read as whole: {:?}",
                    streamed.text
                );
                *cut.lock().unwrap() += 1;
                Ok(())
            }
        })
        .unwrap();
    assert_eq!(cut.into_inner().unwrap(), 12);
}

/// A multipart upload is refused with the adapter's typed error, naming the request.
#[test]
fn a_multipart_request_is_refused_by_name() {
    Simulation::new(SimConfig::new(1))
        .try_run(async |sim| {
            let client = umi_dst::adapters::rig::SimHttpClient::new(openai_network(&sim));
            let request = rig_core::http_client::Request::post(format!("{OPENAI_URL}/files"))
                .body(rig_core::http_client::MultipartForm::new())
                .map_err(violation)?;
            let sent = rig_core::http_client::HttpClientExt::send_multipart::<bytes::Bytes>(
                &client, request,
            )
            .await;
            let Err(error) = sent else {
                return Err(violation("a multipart request went through"));
            };
            let rig_core::http_client::Error::Instance(inner) = &error else {
                return Err(violation(format!("{error:?}")));
            };
            ensure!(
                inner.downcast_ref::<SimHttpError>()
                    == Some(&SimHttpError::MultipartRequest {
                        method: "POST".into(),
                        url: format!("{OPENAI_URL}/files"),
                    }),
                "{error}"
            );
            Ok(())
        })
        .unwrap();
}

/// A few rig calls under random rate limits and stream cuts.
async fn rig_workload(
    sim: SimEnvironment,
    texts: &Mutex<Vec<(u64, String)>>,
) -> Result<(), Violation> {
    let model = openai(openai_network(&sim), OPENAI_URL).chat(MODEL);
    let mut text = String::new();
    for turn in 0..4 {
        let request = CompletionRequest::new(format!("{PROMPT}, part {turn}"));
        match model.stream(request) {
            Ok(stream) => {
                let streamed = read_stream(stream).await;
                text.push_str(&streamed.text);
            }
            Err(error) => text.push_str(&error.to_string()),
        }
    }
    texts.lock().unwrap().push((sim.seed(), text));
    Ok(())
}

/// Same seed, same trace hash (checked by the runner and across two runs); different
/// seeds, different answers.
#[test]
fn rig_replays_by_seed() {
    let faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.2),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.2),
    ];
    let texts = Mutex::new(Vec::new());
    let run = || {
        Simulation::new(SimConfig::new(0))
            .with_faults(faults.clone())
            .with_seeds(1..=4)
            .with_determinism_check(true)
            .try_run(|sim| rig_workload(sim, &texts))
            .unwrap()
    };
    let first = run();
    let second = run();
    let hashes = |summary: &umi_dst::RunSummary| {
        summary
            .seeds
            .iter()
            .map(|s| s.trace_hash)
            .collect::<Vec<_>>()
    };
    assert_eq!(hashes(&first), hashes(&second), "same seeds, same traces");
    let distinct: BTreeSet<_> = hashes(&first).into_iter().collect();
    assert_eq!(distinct.len(), 4, "four seeds, four traces");
    let texts: BTreeSet<(u64, String)> = texts.into_inner().unwrap().into_iter().collect();
    assert_eq!(texts.len(), 4, "one answer per seed across runs: {texts:?}");
    let answers: BTreeSet<&String> = texts.iter().map(|(_, text)| text).collect();
    assert_eq!(answers.len(), 4, "four seeds, four answers");
}

/// The adapter tells the run rig is there, so a determinism failure names rig's own
/// clock and randomness where they fit.
#[test]
fn the_adapter_notes_rig_in_the_run() {
    let texts = Mutex::new(Vec::new());
    let run = Simulation::new(SimConfig::new(1)).run_seed(1, &|sim| rig_workload(sim, &texts));
    assert!(run.passed(), "{:?}", run.failure);
    let noted: Vec<&str> = run.foreign.iter().map(|c| c.name).collect();
    assert_eq!(noted, ["rig-core 0.44"]);
    assert!(
        !run.foreign[0].hazards.is_empty(),
        "rig's audit found hazards"
    );
}
