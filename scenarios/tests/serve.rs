//! `dst serve` over real HTTP: answers that depend on the request and never on arrival
//! order or concurrency, faults and the server's own refusals in each provider's
//! envelope, umi-core's own clients as its users, and its limits.

use std::sync::Arc;

use futures::StreamExt;
use umi_core::env::{Env, SystemEnvironment};
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_core::llm::{CompletionRequest, LanguageModel, Message, ModelRef, StreamCollector};
use umi_dst::fault::{FaultConfig, FaultKind};
use umi_dst::network::{ClientOptions, Profile, client_for};
use umi_dst::serve::{EndpointSpec, RunningServer, ServeConfig, Server};

const MODEL: &str = "umi-sim";

use crate::support::runtime;

fn config(seed: u64) -> ServeConfig {
    let mut config = ServeConfig::default();
    config.seed = seed;
    config.endpoints = [
        "openai",
        "ollama",
        "anthropic",
        "openai_responses@/r",
        "deepseek_reasoner@/deepseek",
    ]
    .iter()
    .map(|e| EndpointSpec::parse(e).unwrap())
    .collect();
    config
}

/// Status, the headers that say how to reproduce it, and the body.
type Seen = (u16, Option<String>, Vec<u8>);

async fn send(
    transport: &ReqwestTransport,
    url: String,
    body: String,
    headers: &[(&str, &str)],
) -> Seen {
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let response = transport
        .send(HttpRequest {
            method: "POST",
            url,
            headers: all,
            body: body.into_bytes(),
        })
        .await
        .expect("the server answers");
    let hash = response.header("x-umi-request-hash").map(str::to_owned);
    let status = response.status;
    let bytes: Vec<u8> = response
        .body
        .filter_map(|r| async move { r.ok() })
        .concat()
        .await;
    (status, hash, bytes)
}

/// Twenty distinct requests across the endpoints, streamed and whole, with tools or not.
/// A request to send: URL, body, extra headers.
type Planned = (String, String, Vec<(&'static str, &'static str)>);

fn requests(base: &str) -> Vec<Planned> {
    let mut out = Vec::new();
    for index in 0..20 {
        let stream = index % 2 == 0;
        let text = format!("request {index}: what is the weather in Oslo?");
        let tools = r#"[{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]"#;
        let (path, body, headers) = match index % 5 {
            0 => (
                "/v1/chat/completions",
                format!(
                    r#"{{"model":"{MODEL}","stream":{stream},"messages":[{{"role":"user","content":"{text}"}}],"tools":{tools}}}"#
                ),
                vec![],
            ),
            1 => (
                "/api/chat",
                format!(
                    r#"{{"model":"{MODEL}","stream":{stream},"messages":[{{"role":"user","content":"{text}"}}]}}"#
                ),
                vec![],
            ),
            2 => (
                "/v1/messages",
                format!(
                    r#"{{"model":"{MODEL}","max_tokens":256,"stream":{stream},"messages":[{{"role":"user","content":"{text}"}}]}}"#
                ),
                vec![("anthropic-version", "2023-06-01")],
            ),
            3 => (
                "/r/v1/responses",
                format!(r#"{{"model":"{MODEL}","stream":{stream},"input":"{text}"}}"#),
                vec![],
            ),
            _ => (
                "/deepseek/v1/chat/completions",
                format!(
                    r#"{{"model":"{MODEL}","stream":{stream},"messages":[{{"role":"user","content":"{text}"}}]}}"#
                ),
                vec![("x-umi-seed", "99")],
            ),
        };
        out.push((format!("{base}{path}"), body, headers));
    }
    out
}

async fn trace_hash(transport: &ReqwestTransport, server: &RunningServer) -> String {
    let response = transport
        .send(HttpRequest {
            method: "GET",
            url: format!("{}/umi/trace", server.base_url()),
            headers: vec![],
            body: vec![],
        })
        .await
        .unwrap();
    response.header("x-umi-trace-hash").unwrap().to_owned()
}

/// The same requests, sent all at once in one order to one server and in the reverse
/// order to another started alike, get byte-identical responses; the session trace
/// hashes agree.
#[test]
fn responses_depend_on_the_request_not_on_arrival_order() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let mut seen = Vec::new();
        let mut hashes = Vec::new();
        for reverse in [false, true] {
            let server = Server::start(config(11)).await.unwrap();
            let mut list: Vec<(usize, _)> = requests(&server.base_url())
                .into_iter()
                .enumerate()
                .collect();
            if reverse {
                list.reverse();
            }
            let sends = list.into_iter().map(|(index, (url, body, headers))| {
                let transport = transport.clone();
                async move { (index, send(&transport, url, body, &headers).await) }
            });
            let mut answered: Vec<(usize, Seen)> = futures::future::join_all(sends).await;
            answered.sort_by_key(|(index, _)| *index);
            hashes.push(trace_hash(&transport, &server).await);
            seen.push(answered);
            server.shutdown().await;
        }
        for ((index, first), (_, second)) in seen[0].iter().zip(&seen[1]) {
            assert_eq!(
                first.0,
                200,
                "request {index}: {}",
                String::from_utf8_lossy(&first.2)
            );
            assert_eq!(
                first, second,
                "request {index} differs between arrival orders"
            );
        }
        assert_eq!(hashes[0], hashes[1], "session trace hashes");
    });
}

/// What the serve bench measures as `dst serve`'s own floor (`answer_alone`: a request's
/// hash and simulation, no server around them) is the work a request costs: its body is
/// the one the server sends for the same request and seed, streamed and whole, at each
/// of this server's endpoints (chat completions, Ollama, Anthropic, Responses, DeepSeek).
/// A floor that did less (no simulation, another seed or hash) would fail here.
#[test]
fn the_simulation_alone_answers_what_the_server_sends() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let config = config(5);
        let server = Server::start(config.clone()).await.unwrap();
        let base = server.base_url();
        for (index, (url, body, headers)) in requests(&base).into_iter().enumerate() {
            let path = url.strip_prefix(&base).expect("a request to this server");
            for seed in [3_u64, 4] {
                let scope = format!("alone-{index}-{seed}");
                let seed_text = seed.to_string();
                // The request's own seed header (one of them names one) gives way to this.
                let mut all: Vec<(&str, &str)> = (headers.iter().copied())
                    .filter(|(name, _)| *name != "x-umi-seed")
                    .collect();
                all.extend([
                    ("x-umi-seed", seed_text.as_str()),
                    ("x-umi-scope", scope.as_str()),
                ]);
                let (status, _, served) = send(&transport, url.clone(), body.clone(), &all).await;
                assert_eq!(
                    status,
                    200,
                    "request {index}: {}",
                    String::from_utf8_lossy(&served)
                );
                let request = (
                    all.iter()
                        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                        .collect(),
                    body.clone().into_bytes(),
                );
                let (config, asked) = (config.clone(), path.to_owned());
                // A simulation builds its own runtime: off this one's workers.
                #[allow(clippy::disallowed_methods)] // a test's real runtime, no simulation's
                let alone = tokio::task::spawn_blocking(move || {
                    umi_dst::serve::answer_alone(&config, &asked, request, seed)
                })
                .await
                .unwrap();
                assert_eq!(
                    alone.as_deref(),
                    Some(served.as_slice()),
                    "request {index} ({path}), seed {seed}"
                );
            }
        }
        server.shutdown().await;
    });
}

/// umi-core's own clients, over real HTTP, get well-formed answers in every format, and
/// a server started alike gives them the same answers.
#[test]
fn umi_clients_over_real_http_get_the_same_answers_from_the_same_seed() {
    runtime().block_on(async {
        let transport: Arc<dyn Transport> = Arc::new(ReqwestTransport::new().unwrap());
        let env: Env = Arc::new(SystemEnvironment::new());
        let mut texts = Vec::new();
        for _ in 0..2 {
            let server = Server::start(config(5)).await.unwrap();
            let base = server.base_url();
            let mut round = Vec::new();
            for (profile, url) in [
                (Profile::OpenAi, format!("{base}/v1")),
                (Profile::Ollama, base.clone()),
                (Profile::Anthropic, base.clone()),
                (Profile::OpenAiResponses, format!("{base}/r/v1")),
            ] {
                let model_ref = ModelRef::new("serve", MODEL, 131_072, 1_024);
                let client = client_for(
                    profile,
                    &url,
                    model_ref,
                    &ClientOptions::default(),
                    transport.clone(),
                    env.clone(),
                );
                let request =
                    CompletionRequest::new(vec![Message::user("what changed this week?")]);
                let whole = client
                    .complete(&request)
                    .await
                    .unwrap_or_else(|e| panic!("{profile}: {e}"));
                let events = client.stream(&request).await.unwrap();
                let streamed = StreamCollector::collect(MODEL, events)
                    .await
                    .unwrap_or_else(|e| panic!("{profile}: {e}"));
                assert!(
                    whole.finish_reason.is_clean() && streamed.finish_reason.is_clean(),
                    "{profile}"
                );
                assert!(!whole.text.is_empty(), "{profile}");
                round.push((profile, whole.text, streamed.text));
            }
            texts.push(round);
            server.shutdown().await;
        }
        assert_eq!(texts[0], texts[1]);
    });
}

/// Faults come as the provider sends them, Retry-After scaled by `--time-scale`; the
/// server's own refusals (a body too large, an unknown path, a bad seed, an unknown
/// model) in the endpoint's envelope, naming the problem.
#[test]
fn faults_and_refusals_arrive_in_the_providers_envelopes() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let mut limited = config(3);
        limited.faults = vec![FaultConfig::chance(FaultKind::LlmRateLimit, 1.0)];
        limited.body_bytes_max = 4_096;
        // Served models named: another name gets the provider's "model not found".
        limited.models = vec![MODEL.to_owned()];
        let server = Server::start(limited).await.unwrap();
        let base = server.base_url();
        let chat =
            format!(r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"hi"}}]}}"#);
        let response = transport
            .send(HttpRequest {
                method: "POST",
                url: format!("{base}/v1/chat/completions"),
                headers: vec![],
                body: chat.clone().into_bytes(),
            })
            .await
            .unwrap();
        assert_eq!(response.status, 429);
        assert!(
            response
                .header("x-umi-faults")
                .is_some_and(|f| f.contains("llm.rate_limit")),
            "{:?}",
            response.header("x-umi-faults")
        );
        if let Some(wait) = response.header("retry-after") {
            assert_eq!(wait, "0", "scaled by --time-scale 0");
        }
        let cases = [
            (
                "/v1/chat/completions",
                "x".repeat(5_000),
                413,
                "over this server's limit of 4096 bytes",
            ),
            ("/v1/chat/completions", "{not json".to_owned(), 400, "error"),
            (
                "/v1/nothing",
                chat.clone(),
                404,
                "Invalid URL (POST /nothing)",
            ),
            ("/nothing", chat.clone(), 404, "no such path /nothing"),
            (
                "/api/chat",
                r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#.to_owned(),
                404,
                "model 'gpt-x' not found",
            ),
            (
                "/seed/x/v1/chat/completions",
                chat.clone(),
                400,
                "path /seed/x: is not a seed",
            ),
        ];
        for (path, body, status, words) in cases {
            let (got, _, bytes) = send(&transport, format!("{base}{path}"), body, &[]).await;
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(got, status, "{path}: {text}");
            assert!(text.contains(words), "{path}: {text}");
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"));
        }
        server.shutdown().await;
    });
}

/// Over `--concurrency-max`, a request gets a 503 with Retry-After at once, in the
/// provider's envelope, while the one in flight finishes.
#[test]
fn over_the_concurrency_limit_is_a_503_with_retry_after() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let mut one = config(8);
        one.concurrency_max = 1;
        one.time_scale = 1.0;
        let server = Server::start(one).await.unwrap();
        let base = server.base_url();
        let long = format!(
            r#"{{"model":"{MODEL}","stream":true,"messages":[{{"role":"user","content":"{}"}}]}}"#,
            "tell me a long story about Alice and Bob. ".repeat(20)
        );
        // The first stream's headers arrive with its first token; its body takes longer.
        let first = transport
            .send(HttpRequest {
                method: "POST",
                url: format!("{base}/api/chat"),
                headers: vec![],
                body: long.into_bytes(),
            })
            .await
            .unwrap();
        assert_eq!(first.status, 200);
        let (status, _, bytes) = send(
            &transport,
            format!("{base}/api/chat"),
            format!(r#"{{"model":"{MODEL}","messages":[]}}"#),
            &[],
        )
        .await;
        assert_eq!(status, 503, "{}", String::from_utf8_lossy(&bytes));
        assert!(String::from_utf8_lossy(&bytes).contains("limit of 1 requests in flight"));
        let rest: Vec<u8> = first
            .body
            .filter_map(|r| async move { r.ok() })
            .concat()
            .await;
        assert!(
            String::from_utf8_lossy(&rest).contains("\"done\":true"),
            "the first finishes"
        );
        server.shutdown().await;
    });
}

/// No input brings the server down: 600 seeded requests with random paths, methods,
/// headers and bodies (JSON-ish, truncated, binary, huge), through the real HTTP stack;
/// each gets a response or a closed connection, and the server still answers after.
#[test]
fn no_input_brings_the_server_down() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let mut limited = config(13);
        limited.body_bytes_max = 64 * 1024;
        limited.faults = vec![FaultConfig::chance(FaultKind::NetworkReset, 0.1)];
        let server = Server::start(limited).await.unwrap();
        let base = server.base_url();
        let mut rng = umi_dst::DeterministicRng::new(13);
        let paths = ["/v1/chat/completions", "/api/chat", "/v1/messages", "/r/v1/responses", "/seed/7/api/chat", "/umi/trace", "/", "/%ff/..", "/v1/models", "/api/tags", "/deepseek/v1/chat/completions"];
        let bodies = [
            r#"{"model":"umi-sim","messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"model":"umi-sim","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
            r#"{"model":"umi-sim","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"f","input":{}}]},{"role":"user","content":"y"}]}"#,
            r#"{"model":"umi-sim","input":[{"type":"function_call_output","call_id":"c","output":"o"}],"stream":true}"#,
            r#"{"model":7,"messages":"no"}"#,
            "[]",
            "null",
        ];
        let mut answered = 0;
        for _ in 0..600 {
            let path = paths[rng.index(paths.len())];
            let mut body = bodies[rng.index(bodies.len())].as_bytes().to_vec();
            match rng.below(4) {
                0 => {
                    let keep = rng.index(body.len() + 1);
                    body.truncate(keep);
                }
                1 => {
                    let len = rng.index(2_048);
                    body = rng.bytes(len);
                }
                2 => body = vec![b'{'; 70_000],
                _ => {}
            }
            let method = ["POST", "GET", "PUT", "DELETE"][rng.index(4)];
            let mut headers = Vec::new();
            if rng.bool_with(0.3) {
                headers.push(("x-umi-seed".to_owned(), ["1", "0x1f", "-3", "99999999999999999999", ""][rng.index(5)].to_owned()));
            }
            if rng.bool_with(0.5) {
                headers.push(("anthropic-version".to_owned(), "2023-06-01".to_owned()));
            }
            let sent = transport.send(HttpRequest { method, url: format!("{base}{path}"), headers, body }).await;
            if let Ok(response) = sent {
                assert!((200..600).contains(&response.status));
                let bytes: Vec<u8> = response.body.filter_map(|r| async move { r.ok() }).concat().await;
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains("the simulation failed"), "{method} {path}: {text}");
                answered += 1;
            }
        }
        assert!(answered > 500, "{answered} of 600 answered");
        // Still answering: some of these seeds meet no reset (each does, one time in ten).
        let mut statuses = Vec::new();
        for seed in ["5", "6", "7", "8"] {
            let body = format!(r#"{{"model":"{MODEL}","stream":false,"messages":[{{"role":"user","content":"still there?"}}]}}"#);
            let headers = vec![("x-umi-seed".to_owned(), seed.to_owned())];
            let sent = transport.send(HttpRequest { method: "POST", url: format!("{base}/api/chat"), headers, body: body.into_bytes() }).await;
            statuses.push(sent.map(|response| response.status).ok());
        }
        assert!(statuses.contains(&Some(200)), "the server still answers: {statuses:?}");
        server.shutdown().await;
    });
}
