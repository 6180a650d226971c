//! Embeddings end to end: umi-core's OpenAI and Ollama embedding clients against
//! SimNetwork's embeddings endpoints, the conformance rules on both, the providers'
//! refusals, and every `llm.embed` fault caught as a typed error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use umi_core::llm::LlmError;
use umi_core::llm::embed::{
    EmbedClient, Embedder, EmbeddingRequest, EncodingFormat, OllamaEmbedConfig, OpenAiEmbedConfig,
};
use umi_core::llm::transport::Transport;
use umi_core::llm::{Connection, LlmErrorKind};
use umi_dst::embed::conformance::check_embedder;
use umi_dst::embed::embed_text;
use umi_dst::network::{Endpoint, SimNetwork};
use umi_dst::{FaultConfig, FaultKind, SimConfig, SimEnvironment, Simulation, Violation, ensure};

const OPENAI: &str = "https://api.openai.example/v1";
const OLLAMA: &str = "http://ollama.example:11434";

fn network(sim: &SimEnvironment) -> Arc<dyn Transport> {
    Arc::new(
        SimNetwork::new(sim)
            .with_endpoint(Endpoint::openai(OPENAI, sim.llm()))
            .with_endpoint(Endpoint::ollama(OLLAMA, sim.llm())),
    )
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
    ]
}

fn run(config: SimConfig, body: impl AsyncFn(SimEnvironment) -> Result<(), Violation> + Sync) {
    let seed = config.seed;
    let run = Simulation::new(config).run_seed(seed, &|sim| body(sim));
    assert!(run.passed(), "{:?}", run.failure);
}

#[test]
fn both_clients_conform_over_sim_network() {
    for seed in [1, 2] {
        run(SimConfig::new(seed), async |sim| {
            for (name, embedder) in embedders(&sim) {
                check_embedder(embedder.as_ref(), "sim-embed")
                    .await
                    .map_err(|e| Violation::new(format!("{name}: {e}")))?;
            }
            Ok(())
        });
    }
}

#[test]
fn every_format_gives_the_models_vectors_at_every_seed() {
    let seen = Mutex::new(Vec::new());
    for seed in [3, 4] {
        run(SimConfig::new(seed), async |sim| {
            let request = EmbeddingRequest::new("", vec!["hello world".into()]).with_dimensions(32);
            for (_, embedder) in embedders(&sim) {
                let out = embedder.embed(&request).await?;
                seen.lock().unwrap().push(out.vectors);
            }
            Ok(())
        });
    }
    let expected = vec![embed_text("sim-embed", "hello world", 32)];
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 6);
    assert!(seen.iter().all(|v| *v == expected));
}

#[test]
fn the_providers_refusals_are_typed() {
    run(SimConfig::new(5), async |sim| {
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

#[test]
fn every_embed_fault_is_a_typed_error() {
    let cases = [
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
    for (kind, expected) in cases {
        for seed in 1..=4 {
            let config = SimConfig::new(seed)
                .with_fault(FaultConfig::always(kind).on_operation("llm.embed").unwrap());
            run(config, async |sim| {
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
}
