//! A cassette replayed to async-openai, unmodified, parses exactly as the original did.
//!
//! async-openai (through `umi_dst::adapters::async_openai`) asks SimNetwork's OpenAI
//! endpoint, SimLLM answering, while umi-core's `RecordingTransport` records the
//! exchanges; then the cassette is replayed (`Endpoint::with_cassette`) on other seeds,
//! whose read splits and SimLLM differ, and async-openai's typed answers (the whole
//! `CreateChatCompletionResponse`, every streamed chunk) must equal the recorded run's:
//! the same content, tool calls, finish reason and usage, and every other field.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_openai::types::chat::{
    CreateChatCompletionRequest, CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
    FinishReason,
};
use futures::StreamExt;
use serde_json::json;
use umi_core::cassette::{Cassette, CassetteWriter, Header, RecordingTransport};
use umi_core::llm::ModelRef;
use umi_core::llm::transport::Transport;
use umi_dst::adapters::async_openai::client;
use umi_dst::network::ReplayOptions;
use umi_dst::{Endpoint, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork, Simulation};

const URL: &str = "https://recorded-openai.sim/v1";
const MODEL: &str = "cassette-model";

/// What async-openai made of one request: the typed answer (whole, or every chunk in
/// order), or its error.
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    Whole(Box<CreateChatCompletionResponse>),
    Chunks(Vec<CreateChatCompletionStreamResponse>),
    Failed(String),
}

/// A plain question and one that must call a tool, streamed or not.
fn requests(stream: bool) -> Vec<CreateChatCompletionRequest> {
    let tool = json!({"type": "function", "function": {"name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}});
    let mut plain = json!({"model": MODEL, "messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What changed in the project this week?"}]});
    let mut tooled = json!({"model": MODEL, "tools": [tool], "tool_choice": "required",
        "messages": [{"role": "user", "content": "What is the weather in Oslo?"}]});
    if stream {
        for request in [&mut plain, &mut tooled] {
            request["stream"] = json!(true);
            request["stream_options"] = json!({"include_usage": true});
        }
    }
    [plain, tooled]
        .into_iter()
        .map(|request| serde_json::from_value(request).unwrap())
        .collect()
}

/// Every request through async-openai over `transport`.
async fn ask(transport: Arc<dyn Transport>, stream: bool) -> Vec<Parsed> {
    let client = client(transport, URL);
    let mut parsed = Vec::new();
    for request in requests(stream) {
        let outcome = if stream {
            match client.chat().create_stream(request).await {
                Ok(mut chunks) => {
                    let mut got = Vec::new();
                    let mut failed = None;
                    while let Some(chunk) = chunks.next().await {
                        match chunk {
                            Ok(chunk) => got.push(chunk),
                            Err(error) => failed = Some(error.to_string()),
                        }
                    }
                    failed.map_or(Parsed::Chunks(got), Parsed::Failed)
                }
                Err(error) => Parsed::Failed(error.to_string()),
            }
        } else {
            match client.chat().create(request).await {
                Ok(response) => Parsed::Whole(Box::new(response)),
                Err(error) => Parsed::Failed(error.to_string()),
            }
        };
        parsed.push(outcome);
    }
    parsed
}

fn simulated(sim: &SimEnvironment) -> Arc<SimLlm> {
    let model = ModelRef::new("sim", MODEL, 32_768, 2_048);
    Arc::new(SimLlm::with_config(sim, SimLlmConfig::default().with_model(model)).unwrap())
}

/// async-openai's answers on `seed`, recorded: the parses and the cassette.
fn record(stream: bool, seed: u64) -> (Vec<Parsed>, Cassette) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("async-openai-cassette-{stream}-{seed}.jsonl"));
    let got = Mutex::new(Vec::new());
    Simulation::new(SimConfig::new(seed))
        .try_run(|sim: SimEnvironment| {
            let (path, got) = (&path, &got);
            async move {
                let endpoint = Endpoint::openai(URL, simulated(&sim));
                let network = Arc::new(SimNetwork::new(&sim).with_endpoint(endpoint));
                let header = Header::new("async-openai cassette test", Some(URL));
                let writer = CassetteWriter::create(path, &header).unwrap();
                let recorder = RecordingTransport::new(network, writer, sim.env(), URL);
                *got.lock().unwrap() = ask(Arc::new(recorder), stream).await;
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("recording seed {seed}: {e:?}"));
    (got.into_inner().unwrap(), Cassette::load(&path).unwrap())
}

/// async-openai's answers on `seed`, the endpoint replaying `cassette`.
fn replay(cassette: &Arc<Cassette>, stream: bool, seed: u64) -> Vec<Parsed> {
    let got = Mutex::new(Vec::new());
    Simulation::new(SimConfig::new(seed))
        .with_determinism_check(true)
        .try_run(|sim: SimEnvironment| {
            let got = &got;
            async move {
                let endpoint = Endpoint::openai(URL, simulated(&sim))
                    .with_cassette(cassette.clone(), ReplayOptions::default());
                let network = Arc::new(SimNetwork::new(&sim).with_endpoint(endpoint));
                *got.lock().unwrap() = ask(network, stream).await;
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("replaying seed {seed}: {e:?}"));
    got.into_inner().unwrap()
}

/// The text, tool-call names and finish reason of a parse, to check the recording holds
/// real answers (so an equality of two empty parses cannot pass).
fn summary(parsed: &Parsed) -> (String, Vec<String>, Option<FinishReason>, bool) {
    match parsed {
        Parsed::Whole(response) => {
            let choice = &response.choices[0];
            let calls = choice.message.tool_calls.iter().flatten();
            let names = calls
                .map(|call| match call {
                    async_openai::types::chat::ChatCompletionMessageToolCalls::Function(f) => {
                        f.function.name.clone()
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            let text = choice.message.content.clone().unwrap_or_default();
            (text, names, choice.finish_reason, response.usage.is_some())
        }
        Parsed::Chunks(chunks) => {
            let (mut text, mut names, mut finish, mut usage) = (String::new(), vec![], None, false);
            for chunk in chunks {
                usage |= chunk.usage.is_some();
                for choice in &chunk.choices {
                    text.push_str(choice.delta.content.as_deref().unwrap_or(""));
                    let calls = choice.delta.tool_calls.iter().flatten();
                    names.extend(calls.filter_map(|c| c.function.as_ref()?.name.clone()));
                    finish = choice.finish_reason.or(finish);
                }
            }
            (text, names, finish, usage)
        }
        Parsed::Failed(error) => panic!("the recorded run failed: {error}"),
    }
}

#[test]
fn async_openai_parses_a_replayed_cassette_exactly_as_the_recorded_answers() {
    for stream in [false, true] {
        let (recorded, cassette) = record(stream, 1);
        assert_eq!(cassette.exchanges.len(), 2, "stream={stream}");
        let (text, calls, finish, usage) = summary(&recorded[0]);
        assert!(!text.is_empty() && calls.is_empty(), "stream={stream}");
        assert_eq!(finish, Some(FinishReason::Stop), "stream={stream}");
        assert!(usage, "stream={stream}: usage reported");
        let (_, calls, finish, _) = summary(&recorded[1]);
        assert!(
            !calls.is_empty() && calls.iter().all(|name| name == "get_weather"),
            "stream={stream}: {calls:?}"
        );
        assert_eq!(finish, Some(FinishReason::ToolCalls), "stream={stream}");
        let cassette = Arc::new(cassette);
        for seed in [2, 3] {
            let replayed = replay(&cassette, stream, seed);
            assert_eq!(replayed, recorded, "stream={stream} seed {seed}");
        }
    }
}
