//! One router retry-and-fallback call, run two ways in the same bench:
//! through SimNetwork in simulated time, and through a wiremock-rs HTTP server on
//! loopback in real time, with the same router settings (2 retries, backoff 20 ms then
//! 40 ms, no jitter) and the real OpenAI-compatible client both times.
//!
//! The primary answers every attempt with a 503, the fallback with a chat completion.
//! Run with `cargo bench -p umi-dst --bench router` (part of `make bench`).

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

mod support;

use std::hint::black_box;
use std::sync::Arc;

use serde_json::json;
use umi_core::env::SystemEnvironment;
use umi_core::llm::router::{LlmRouter, RouterConfig};
use umi_core::llm::transport::{ReqwestTransport, Transport};
use umi_core::llm::{CompletionRequest, LanguageModel, LlmError, Message, ModelRef};
use umi_dst::doubles::{FnLanguageModel, Turn};
use umi_dst::{Endpoint, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(base: &str) -> RouterConfig {
    let text = format!(
        r#"
[providers.primary]
type = "openai"
endpoint = "{base}/primary/v1"
[providers.fallback]
type = "openai"
endpoint = "{base}/fallback/v1"
[models."primary/m"]
context_window = 32768
max_output = 1024
[models."fallback/m"]
context_window = 32768
max_output = 1024
[routing]
default = "primary/m"
fallback = ["fallback/m"]
[retry]
max_retries = 2
initial_backoff_ms = 20
backoff_multiplier = 2.0
backoff_max_ms = 1000
jitter = 0.0
request_timeout_ms = 5000
[cooldown]
failures_threshold = 1000000
"#
    );
    RouterConfig::from_toml(&text, "bench.toml").unwrap()
}

fn transport(transport: impl Transport + 'static) -> Arc<dyn Transport> {
    Arc::new(transport)
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("hello")])
}

fn main() {
    println!(
        "router: one call = 3 failed attempts on the primary (503), backoff 20 + 40 ms, then the fallback"
    );

    // Simulated: SimNetwork in paused time.
    let runtime = support::sim_runtime();
    let _guard = runtime.enter();
    let sim =
        SimEnvironment::new(&SimConfig::new(1).with_steps_max(umi_dst::constants::SIM_STEPS_MAX))
            .unwrap();
    let down: Arc<dyn LanguageModel> = Arc::new(FnLanguageModel::new(|_, _| {
        Turn::refuse(LlmError::ServiceUnavailable {
            status: Some(503),
            message: "down".into(),
        })
    }));
    let up = Arc::new(
        SimLlm::with_config(
            &sim,
            SimLlmConfig::default()
                .without_latency()
                .with_model(ModelRef::new("fallback", "m", 32_768, 1_024)),
        )
        .unwrap(),
    );
    let network = SimNetwork::new(&sim)
        .with_endpoint(Endpoint::openai("http://sim/primary/v1", down))
        .with_endpoint(Endpoint::openai("http://sim/fallback/v1", up));
    let simulated = LlmRouter::from_config(
        &config("http://sim"),
        &transport(network),
        &sim.env(),
        |_| None,
    )
    .unwrap();
    let sim_time = support::measure_batch(2_000, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                black_box(simulated.complete(&request()).await.unwrap());
            }
        });
    });
    drop(_guard);

    // Real: wiremock on loopback, reqwest, the system clock (so a real runtime, the
    // baseline's own).
    let real_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let real_time = real_runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/primary/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded", "type": "server_error"}})))
            .mount(&server)
            .await;
        let answer = json!({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
        Mock::given(method("POST")).and(path("/fallback/v1/chat/completions")).respond_with(ResponseTemplate::new(200).set_body_json(answer)).mount(&server).await;
        let real = ReqwestTransport::new().unwrap();
        let env: umi_core::env::Env = Arc::new(SystemEnvironment::new());
        let router = LlmRouter::from_config(&config(&server.uri()), &transport(real), &env, |_| None).unwrap();
        router.complete(&request()).await.unwrap();
        let start = std::time::Instant::now();
        const CALLS: u32 = 10;
        for _ in 0..CALLS {
            black_box(router.complete(&request()).await.unwrap());
        }
        start.elapsed() / CALLS
    });
    support::report(
        "router call, wiremock loopback (real)",
        real_time,
        "same call, SimNetwork (simulated)",
        sim_time,
    );
    println!("  (the real run waits out its 60 ms of backoff; the simulated one jumps over it)");
}
