//! `dst serve --cassette`: traffic recorded from a `dst serve` upstream through the
//! recording transport (reqwest underneath, real HTTP both ways), then served back by a
//! second server under other seeds. Without faults every body is the recorded one byte
//! for byte, streamed and whole, in three formats; umi-core's clients parse the replay
//! as they parsed the original; faults replace or cut recorded answers in the provider's
//! envelope; a request the cassette does not hold gets the provider's 400 naming the
//! closest recorded request and the JSON path where it differs.

use std::sync::Arc;

use futures::StreamExt;
use umi_core::cassette::{Cassette, CassetteWriter, Header, RecordingTransport};
use umi_core::env::{Env, SystemEnvironment};
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_dst::fault::{FaultConfig, FaultKind};
use umi_dst::network::{Replay, ReplayOptions};
use umi_dst::serve::{ServeConfig, Server};

use crate::support::runtime;

/// The requests recorded: OpenAI chat whole and streamed (with a tool), Anthropic
/// streamed, Ollama whole, and OpenAI chat with a query.
fn requests() -> Vec<(&'static str, serde_json::Value)> {
    let tools = serde_json::json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Weather for a city.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    vec![
        (
            "/v1/chat/completions",
            serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Say hello."}]}),
        ),
        (
            "/v1/chat/completions",
            serde_json::json!({"model": "gpt-4o", "stream": true, "tools": tools, "messages": [{"role": "user", "content": "Weather in Oslo?"}]}),
        ),
        (
            "/v1/messages",
            serde_json::json!({"model": "claude-haiku-4-5", "max_tokens": 256, "stream": true, "messages": [{"role": "user", "content": "Say hello."}]}),
        ),
        (
            "/api/chat",
            serde_json::json!({"model": "llama3", "stream": false, "messages": [{"role": "user", "content": "Say hello."}]}),
        ),
        // Azure's form: the query is part of what is matched.
        (
            "/v1/chat/completions?api-version=2024-10-21",
            serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Say hello."}]}),
        ),
    ]
}

async fn send(transport: &dyn Transport, url: String, body: &serde_json::Value) -> (u16, Vec<u8>) {
    let response = transport
        .send(HttpRequest {
            method: "POST",
            url,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                (
                    "authorization".into(),
                    "Bearer sk-test-cassette-0123456789".into(),
                ),
                ("anthropic-version".into(), "2023-06-01".into()),
            ],
            body: serde_json::to_vec(body).unwrap(),
        })
        .await
        .expect("the server answers");
    let status = response.status;
    let mut body = Vec::new();
    let mut stream = response.body;
    while let Some(read) = stream.next().await {
        match read {
            Ok(bytes) => body.extend_from_slice(&bytes),
            Err(_) => break,
        }
    }
    (status, body)
}

/// Records [`requests`] from a fresh `dst serve` on `seed`; the cassette and the bodies.
fn record(seed: u64) -> (Cassette, Vec<(u16, Vec<u8>)>) {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("serve-cassette-{seed}.jsonl"));
    let bodies = runtime().block_on(async {
        let mut config = ServeConfig::default();
        config.seed = seed;
        let upstream = Server::start(config).await.unwrap();
        let root = upstream.base_url();
        let env: Env = Arc::new(SystemEnvironment::new());
        let writer =
            CassetteWriter::create(&path, &Header::new("serve_cassette test", Some(&root)))
                .unwrap();
        let recorder =
            RecordingTransport::new(ReqwestTransport::new().unwrap(), writer, env, &root);
        let mut bodies = Vec::new();
        for (path, body) in requests() {
            bodies.push(send(&recorder, format!("{root}{path}"), &body).await);
        }
        assert_eq!(recorder.written(), requests().len() as u64);
        upstream.shutdown().await;
        bodies
    });
    let cassette = Cassette::load(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("sk-test-cassette"),
        "a key reached the cassette"
    );
    (cassette, bodies)
}

/// Serves `cassette` on `seed` with `faults`; what each request got.
fn replay(
    cassette: &Cassette,
    seed: u64,
    faults: Vec<FaultConfig>,
    requests: &[(&str, serde_json::Value)],
) -> Vec<(u16, Vec<u8>)> {
    runtime().block_on(async {
        let mut config = ServeConfig::default();
        config.seed = seed;
        config.faults = faults;
        config.cassette = Some(Arc::new(Replay::new(
            Arc::new(cassette.clone()),
            ReplayOptions::default(),
        )));
        let server = Server::start(config).await.unwrap();
        let transport = ReqwestTransport::new().unwrap();
        let mut got = Vec::new();
        for (path, body) in requests {
            got.push(send(&transport, format!("{}{path}", server.base_url()), body).await);
        }
        server.shutdown().await;
        got
    })
}

#[test]
fn a_recording_of_dst_serve_is_served_back_byte_for_byte_under_any_seed() {
    let (cassette, recorded) = record(21);
    assert_eq!(cassette.exchanges.len(), 5);
    assert!(
        cassette.exchanges[4]
            .request
            .path
            .ends_with("?api-version=2024-10-21")
    );
    assert!(
        recorded.iter().all(|(status, _)| *status == 200),
        "{recorded:?}"
    );
    for seed in [1, 2, 99] {
        let replayed = replay(&cassette, seed, Vec::new(), &requests());
        assert_eq!(replayed, recorded, "seed {seed}");
    }
}

#[test]
fn faults_and_misses_over_a_served_cassette_speak_the_providers_envelopes() {
    let (cassette, recorded) = record(22);
    let limited = replay(
        &cassette,
        1,
        vec![FaultConfig::new(FaultKind::LlmRateLimit, 1.0).unwrap()],
        &requests(),
    );
    let statuses: Vec<u16> = limited.iter().map(|(status, _)| *status).collect();
    // Ollama answers a rate limit as its server does: 503 "server busy".
    assert_eq!(statuses, vec![429, 429, 429, 503, 429], "{limited:?}");
    let cut = replay(
        &cassette,
        1,
        vec![FaultConfig::new(FaultKind::LlmStreamCut, 1.0).unwrap()],
        &requests(),
    );
    for ((_, got), (_, full)) in cut.iter().zip(&recorded) {
        assert!(
            got.len() < full.len() && full.starts_with(got),
            "a cut is a prefix of the recording"
        );
    }
    let mut changed = requests();
    changed[0].1["messages"][0]["content"] = "Say goodbye.".into();
    let missed = replay(&cassette, 1, Vec::new(), &changed);
    assert_eq!(missed[0].0, 400);
    let error: serde_json::Value = serde_json::from_slice(&missed[0].1).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("differs at $.messages[0].content"),
        "{message}"
    );
    assert_eq!(missed[1..], recorded[1..], "the other requests still match");
}
