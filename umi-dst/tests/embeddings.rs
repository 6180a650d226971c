//! Embeddings end to end: umi-core's OpenAI, Ollama and Gemini embedding clients against
//! SimNetwork's embeddings endpoints, the conformance rules on both, the providers'
//! refusals, and every `llm.embed` fault caught as a typed error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use umi_core::llm::LlmError;
use umi_core::llm::embed::{
    EmbedClient, Embedder, EmbeddingRequest, EncodingFormat, GeminiEmbedConfig, OllamaEmbedConfig,
    OpenAiEmbedConfig,
};
use umi_core::llm::transport::Transport;
use umi_core::llm::{Connection, LlmErrorKind};
use umi_dst::embed::conformance::check_embedder;
use umi_dst::embed::embed_text;
use umi_dst::network::{Endpoint, SimNetwork};
use umi_dst::{FaultConfig, FaultKind, SimConfig, SimEnvironment, Simulation, Violation, ensure};

const OPENAI: &str = "https://api.openai.example/v1";
const OLLAMA: &str = "http://ollama.example:11434";
const GEMINI: &str = "https://generativelanguage.example";
const GOOGLE_KEY: &str = "AIza-embeddings-test-0042";

fn network(sim: &SimEnvironment) -> Arc<dyn Transport> {
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::openai(OPENAI, sim.llm()))
            .with_endpoint(Endpoint::ollama(OLLAMA, sim.llm()))
            .with_endpoint(Endpoint::gemini(GEMINI, sim.llm()).with_api_key(GOOGLE_KEY)),
    )
}

fn gemini_config(model: &str) -> GeminiEmbedConfig {
    let connection = Connection::new(GEMINI)
        .with_api_key(GOOGLE_KEY)
        .with_timeout(Duration::from_secs(30));
    GeminiEmbedConfig::new(connection, model)
}

fn timeout() -> Connection {
    Connection::new(OPENAI).with_timeout(Duration::from_secs(30))
}

fn embedders(sim: &SimEnvironment) -> Vec<(&'static str, Arc<dyn Embedder>)> {
    let net = network(sim);
    let openai = |encoding| {
        let config = OpenAiEmbedConfig::new(timeout(), "sim-embed").with_encoding(encoding);
        Arc::new(EmbedClient::new(config, net.clone(), sim.env())) as Arc<dyn Embedder>
    };
    let ollama_connection = Connection::new(OLLAMA).with_timeout(Duration::from_secs(30));
    let ollama = OllamaEmbedConfig::new(ollama_connection, "sim-embed");
    vec![
        ("openai base64", openai(EncodingFormat::Base64)),
        ("openai float", openai(EncodingFormat::Float)),
        (
            "ollama",
            Arc::new(EmbedClient::new(ollama, net.clone(), sim.env())),
        ),
        (
            "gemini",
            Arc::new(EmbedClient::new(
                gemini_config("sim-embed"),
                net.clone(),
                sim.env(),
            )),
        ),
    ]
}

#[umi_dst::test(seeds = [1, 2])]
async fn every_client_conforms_over_sim_network(sim: SimEnvironment) -> Result<(), Violation> {
    for (name, embedder) in embedders(&sim) {
        check_embedder(embedder.as_ref(), "sim-embed")
            .await
            .map_err(|e| Violation::new(format!("{name}: {e}")))?;
    }
    Ok(())
}

#[test]
fn every_format_gives_the_models_vectors_at_every_seed() {
    let seen = Mutex::new(Vec::new());
    Simulation::new(SimConfig::new(3))
        .with_seeds([3, 4])
        .run(async |sim| {
            let request = EmbeddingRequest::new("", vec!["hello world".into()]).with_dimensions(32);
            for (_, embedder) in embedders(&sim) {
                let out = embedder.embed(&request).await?;
                seen.lock().unwrap().push(out.vectors);
            }
            Ok(())
        });
    let expected = vec![embed_text("sim-embed", "hello world", 32)];
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 8);
    assert!(seen.iter().all(|v| *v == expected));
}

#[test]
fn the_providers_refusals_are_typed() {
    Simulation::new(SimConfig::new(5)).run(async |sim| {
        let net = network(&sim);
        let client = EmbedClient::new(
            OpenAiEmbedConfig::new(timeout(), "sim-embed"),
            net,
            sim.env(),
        );
        let ask = |inputs: Vec<String>, dimensions: Option<u32>, model: &str| {
            let mut request = EmbeddingRequest::new(model, inputs);
            request.dimensions = dimensions;
            request
        };
        let empty = client.embed(&ask(vec![String::new()], None, "")).await;
        ensure!(
            matches!(&empty, Err(LlmError::BadRequest { message, .. }) if message.contains("'$.input' is invalid")),
            "{empty:?}"
        );
        let wide = client.embed(&ask(vec!["a".into()], Some(512), "")).await;
        ensure!(
            matches!(&wide, Err(LlmError::BadRequest { message, .. }) if message.contains("dimensions")),
            "{wide:?}"
        );
        let ada = client
            .embed(&ask(vec!["a".into()], Some(8), "text-embedding-ada-002"))
            .await;
        ensure!(
            matches!(&ada, Err(LlmError::BadRequest { message, .. }) if message.contains("does not support specifying dimensions")),
            "{ada:?}"
        );
        let long = client
            .embed(&ask(vec!["word ".repeat(40_000)], None, ""))
            .await;
        ensure!(
            matches!(
                long,
                Err(LlmError::ContextOverflow {
                    limit: Some(8_192),
                    ..
                })
            ),
            "{long:?}"
        );
        Ok(())
    });
}

const FAULT_CASES: [(FaultKind, LlmErrorKind); 6] = [
    (
        FaultKind::LlmEmbeddingWrongDimensions,
        LlmErrorKind::InvalidResponse,
    ),
    (
        FaultKind::LlmEmbeddingTruncated,
        LlmErrorKind::InvalidResponse,
    ),
    (
        FaultKind::LlmEmbeddingMissing,
        LlmErrorKind::InvalidResponse,
    ),
    (FaultKind::LlmRateLimit, LlmErrorKind::RateLimit),
    (
        FaultKind::LlmServiceUnavailable,
        LlmErrorKind::ServiceUnavailable,
    ),
    (FaultKind::LlmTimeout, LlmErrorKind::Timeout),
];

/// One fault kind on every `llm.embed` call (the seed is the run's).
fn faulted(kind: FaultKind) -> SimConfig {
    SimConfig::new(1).with_fault(FaultConfig::always(kind).on_operation("llm.embed").unwrap())
}

#[test]
fn every_embed_fault_is_a_typed_error() {
    for (kind, expected) in FAULT_CASES {
        Simulation::new(faulted(kind))
            .with_seeds(1..=4)
            .run(async |sim| {
                let inputs = vec!["alpha beta".into(), "gamma".into(), "delta epsilon".into()];
                let request = EmbeddingRequest::new("", inputs).with_dimensions(16);
                for (name, embedder) in embedders(&sim) {
                    let outcome = embedder.embed(&request).await;
                    // Ollama answers a full queue with 503 "server busy ... maximum
                    // pending requests exceeded", never a 429.
                    let expected = match (name, expected) {
                        ("ollama", LlmErrorKind::RateLimit) => LlmErrorKind::ServiceUnavailable,
                        _ => expected,
                    };
                    ensure!(
                        outcome.as_ref().err().map(LlmError::kind) == Some(expected),
                        "{kind} via {name}: {outcome:?}"
                    );
                }
                Ok(())
            });
    }
}

/// Gemini's one-content `embedContent` answer, broken by every fault, is caught too;
/// its 429 carries Google's `RetryInfo` wait.
#[test]
fn gemini_single_content_faults_are_typed_errors() {
    for (kind, expected) in FAULT_CASES {
        Simulation::new(faulted(kind))
            .with_seeds(1..=4)
            .run(async |sim| {
                let client = EmbedClient::new(gemini_config("sim-embed"), network(&sim), sim.env());
                let request = EmbeddingRequest::new("", vec!["alpha".into()]).with_dimensions(16);
                let outcome = client.embed(&request).await;
                ensure!(
                    outcome.as_ref().err().map(LlmError::kind) == Some(expected),
                    "{kind} via gemini: {outcome:?}"
                );
                if let Err(LlmError::RateLimit { retry_after_ms }) = outcome {
                    ensure!(retry_after_ms.is_some(), "a 429 without its wait");
                }
                Ok(())
            });
    }
}

fn bad_request_saying(outcome: &Result<umi_core::llm::Embeddings, LlmError>, words: &str) -> bool {
    matches!(outcome, Err(LlmError::BadRequest { status: Some(400), message }) if message.contains(words))
}

#[test]
fn googles_refusals_are_typed() {
    Simulation::new(SimConfig::new(6)).run(async |sim| {
        let net = network(&sim);
        let client = |model: &str| EmbedClient::new(gemini_config(model), net.clone(), sim.env());
        let empty = client("sim-embed")
            .embed(&EmbeddingRequest::new("", vec!["a".into(), String::new()]))
            .await;
        ensure!(
            bad_request_saying(&empty, "requests[1].content contains an empty Part"),
            "{empty:?}"
        );
        let long = client("text-embedding-004")
            .embed(&EmbeddingRequest::new("", vec!["word ".repeat(4_000)]))
            .await;
        ensure!(
            matches!(
                long,
                Err(LlmError::ContextOverflow {
                    limit: Some(2_048),
                    ..
                })
            ),
            "{long:?}"
        );
        let unknown = client("gemini-embedding-999")
            .embed(&EmbeddingRequest::new("", vec!["a".into()]))
            .await;
        ensure!(
            matches!(&unknown, Err(LlmError::ModelNotFound { message, .. }) if message.contains("not supported for embedContent")),
            "{unknown:?}"
        );
        let wide = client("text-embedding-004")
            .embed(&EmbeddingRequest::new("", vec!["a".into()]).with_dimensions(1_024))
            .await;
        ensure!(
            bad_request_saying(&wide, "output_dimensionality"),
            "{wide:?}"
        );
        let out = client("gemini-embedding-001")
            .embed(&EmbeddingRequest::new("", vec!["a".into(), "b".into()]))
            .await?;
        ensure!(out.vectors[1].len() == 3_072, "{}", out.vectors[1].len());
        Ok(())
    });
}
