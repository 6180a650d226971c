//! What `dst serve` promises the frameworks that use it (issue 22), over real HTTP:
//! one answer per conversation whether it is asked whole, with `"stream": false`, or
//! streamed (with `stream_options` too), in every format; a rerun under a fresh scope is
//! a rerun, on a used server as on a fresh one; with no flags every format is served at
//! its standard path and any model name answered; an unknown path names the flag that
//! serves it.

use serde_json::{Value, json};
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_core::llm::{CompletionResponse, FinishReason, ToolCall};
use umi_dst::network::WireFormat;
use umi_dst::serve::{RunningServer, ServeConfig, Server};

use crate::support::runtime;

/// A raw exchange: status, the body, and the `x-umi-*` headers.
#[derive(Debug, Clone, PartialEq)]
struct Raw {
    status: u16,
    body: Vec<u8>,
    occurrence: Option<String>,
    faults: Option<String>,
}

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> Raw {
    let transport = ReqwestTransport::new().unwrap();
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let response = transport
        .send(HttpRequest {
            method: "POST",
            url: url.to_owned(),
            headers: all,
            body: serde_json::to_vec(body).unwrap(),
        })
        .await
        .expect("the server answers");
    let header = |name: &str| response.header(name).map(str::to_owned);
    let (occurrence, faults, status) = (
        header("x-umi-occurrence"),
        header("x-umi-faults"),
        response.status,
    );
    let reads: Vec<Vec<u8>> = futures::StreamExt::collect::<Vec<_>>(response.body)
        .await
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    Raw {
        status,
        body: reads.concat(),
        occurrence,
        faults,
    }
}

async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, String, Option<String>) {
    let transport = ReqwestTransport::new().unwrap();
    let response = transport
        .send(HttpRequest {
            method: "GET",
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        })
        .await
        .expect("the server answers");
    let hash = response.header("x-umi-trace-hash").map(str::to_owned);
    let status = response.status;
    let reads: Vec<Vec<u8>> = futures::StreamExt::collect::<Vec<_>>(response.body)
        .await
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    (
        status,
        String::from_utf8_lossy(&reads.concat()).into_owned(),
        hash,
    )
}

/// What a client makes of a body: the answer, as umi-core's decoders read it.
fn answer_of(format: WireFormat, streamed: bool, body: &[u8]) -> CompletionResponse {
    let text = String::from_utf8_lossy(body);
    let answer = if streamed {
        umi_dst::checkers::wire::decode_as_client(format, [body]).collect("m")
    } else {
        match format {
            WireFormat::OpenAiChat => umi_core::llm::openai::parse_response(&text, "m"),
            WireFormat::OpenAiResponses => umi_core::llm::responses::parse_response(&text, "m"),
            WireFormat::AnthropicMessages => umi_core::llm::anthropic::parse_response(&text, "m"),
            WireFormat::Ollama => umi_core::llm::ollama::parse_response(&text, "m"),
            other => panic!("no parser for {other:?}"),
        }
    };
    answer.unwrap_or_else(|e| panic!("{format:?} streamed={streamed}: {e}\n{text}"))
}

/// The part of an answer that is the model's: text, tool calls, finish.
fn said(answer: &CompletionResponse) -> (String, Vec<ToolCall>, FinishReason) {
    (
        answer.text.clone(),
        answer.tool_calls.clone(),
        answer.finish_reason.clone(),
    )
}

const QUESTION: &str = "What is the weather in Oslo, and should I take an umbrella?";

/// A conversation in `format`'s own words (with a tool on odd seeds), the path it goes
/// to, its extra headers, and how a body asks for a stream.
fn conversation(
    format: WireFormat,
    seed: u64,
) -> (Value, &'static str, Vec<(&'static str, &'static str)>) {
    let parameters =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let with_tool = seed % 2 == 1;
    let (mut body, path, headers) = match format {
        WireFormat::OpenAiChat => (
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]}),
            "/v1/chat/completions",
            vec![],
        ),
        WireFormat::OpenAiResponses => (
            json!({"model": "gpt-4.1", "input": QUESTION,
                   "tools": [{"type": "function", "name": "get_weather", "parameters": parameters}]}),
            "/v1/responses",
            vec![],
        ),
        WireFormat::AnthropicMessages => (
            json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": QUESTION}],
                   "tools": [{"name": "get_weather", "input_schema": parameters}]}),
            "/v1/messages",
            vec![("anthropic-version", "2023-06-01")],
        ),
        WireFormat::Ollama => (
            json!({"model": "qwen3:8b", "messages": [{"role": "user", "content": QUESTION}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]}),
            "/api/chat",
            vec![],
        ),
        other => panic!("no conversation for {other:?}"),
    };
    if !with_tool {
        body.as_object_mut().unwrap().remove("tools");
    }
    (body, path, headers)
}

/// The ways a framework asks for one answer: (the fields added, whether it streams).
fn deliveries(format: WireFormat) -> Vec<(Value, bool)> {
    let mut ways = vec![
        (json!({"stream": false}), false),
        (json!({"stream": true}), true),
    ];
    match format {
        // Ollama streams unless told not to.
        WireFormat::Ollama => ways.push((json!({}), true)),
        _ => ways.push((json!({}), false)),
    }
    if format == WireFormat::OpenAiChat {
        ways.push((
            json!({"stream": true, "stream_options": {"include_usage": true}}),
            true,
        ));
        // Fields a client adds that no model reads.
        ways.push((
            json!({"stream": false, "store": false, "metadata": {"run": "x"}, "user": "u-1"}),
            false,
        ));
    }
    ways
}

const FORMATS: [WireFormat; 4] = [
    WireFormat::OpenAiChat,
    WireFormat::OpenAiResponses,
    WireFormat::AnthropicMessages,
    WireFormat::Ollama,
];

/// Issue 22: the answer's seed came from the whole body, so `stream`, `stream_options`
/// or any field a framework adds changed the answer (three ways of asking, three
/// answers). Now every way of asking gets the model's same text, tool calls and finish.
#[test]
fn streamed_and_whole_get_one_answer_in_every_format() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let base = server.base_url();
        for format in FORMATS {
            for seed in 1..=8u64 {
                let (conversation, path, headers) = conversation(format, seed);
                let mut answers = Vec::new();
                for (index, (fields, streamed)) in deliveries(format).into_iter().enumerate() {
                    let mut body = conversation.clone();
                    for (key, value) in fields.as_object().unwrap() {
                        body[key] = value.clone();
                    }
                    // A fresh scope per way of asking: each is its occurrence 0.
                    let url = format!("{base}/seed/{seed}/scope/way-{index}{path}");
                    let raw = post(&url, &body, &headers).await;
                    assert_eq!(
                        raw.status,
                        200,
                        "{format:?} seed {seed}: {}",
                        String::from_utf8_lossy(&raw.body)
                    );
                    answers.push((fields, said(&answer_of(format, streamed, &raw.body))));
                }
                let (first_fields, first) = &answers[0];
                for (fields, answer) in &answers[1..] {
                    assert_eq!(
                        answer, first,
                        "{format:?} seed {seed}: {fields} differs from {first_fields}"
                    );
                }
            }
        }
        server.shutdown().await;
    });
}

/// The same conversation asked three times in a row (a client retrying), with faults on
/// so each occurrence meets its own draws.
async fn session(base: &str, scope: &str) -> Vec<Raw> {
    let (body, path, headers) = conversation(WireFormat::OpenAiChat, 3);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let url = format!("{base}/seed/77/scope/{scope}{path}");
        seen.push(post(&url, &body, &headers).await);
    }
    seen
}

fn faulty() -> ServeConfig {
    let mut config = ServeConfig::default();
    config.faults = vec![
        umi_dst::fault::FaultConfig::chance(umi_dst::fault::FaultKind::LlmRateLimit, 0.4),
        umi_dst::fault::FaultConfig::chance(umi_dst::fault::FaultKind::LlmStreamCut, 0.3),
    ];
    config
}

async fn scope_trace(server: &RunningServer, scope: &str) -> (String, String) {
    let (status, text, hash) = get(
        &format!("{}/umi/trace?scope={scope}", server.base_url()),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    (text, hash.expect("the trace names its hash"))
}

/// Issue 22: on a long-lived server the same test with the same seed got other answers
/// (each repeat was the next occurrence). Under a fresh scope a rerun gets the same bytes
/// on the used server and on a fresh one, and its scope's trace hashes alike; without a
/// scope the repeats go on counting, and `POST /umi/reset` starts them again.
#[test]
fn a_rerun_under_a_fresh_scope_is_a_rerun_on_a_used_server() {
    runtime().block_on(async {
        let used = Server::start(faulty()).await.unwrap();
        let first = session(&used.base_url(), "run-1").await;
        let occurrences: Vec<_> = first
            .iter()
            .map(|r| r.occurrence.clone().unwrap())
            .collect();
        assert_eq!(occurrences, ["0", "1", "2"], "repeats in one scope count");
        assert_ne!(first[0], first[1], "a retry meets the next draw");
        let again = session(&used.base_url(), "run-2").await;
        assert_eq!(again, first, "a rerun on the used server");
        let fresh = Server::start(faulty()).await.unwrap();
        let elsewhere = session(&fresh.base_url(), "run-3").await;
        assert_eq!(elsewhere, first, "a rerun on a fresh server");
        let (text, hash) = scope_trace(&used, "run-1").await;
        assert_eq!(
            text.lines().count(),
            4,
            "three entries and the summary: {text}"
        );
        assert_eq!(scope_trace(&used, "run-2").await.1, hash);
        assert_eq!(scope_trace(&fresh, "run-3").await.1, hash);
        let entry: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(entry["scope"], "run-1");
        assert!(
            entry["cut"].is_boolean() && entry["faults"].is_array(),
            "{entry}"
        );

        // Without a scope, the server-wide count goes on; a reset starts it again.
        let (body, path, headers) = conversation(WireFormat::OpenAiChat, 3);
        let unscoped = format!("{}/seed/77{path}", used.base_url());
        assert_eq!(
            post(&unscoped, &body, &headers).await.occurrence.as_deref(),
            Some("0")
        );
        assert_eq!(
            post(&unscoped, &body, &headers).await.occurrence.as_deref(),
            Some("1")
        );
        let reset = post(&format!("{}/umi/reset", used.base_url()), &json!({}), &[]).await;
        assert_eq!(reset.status, 200);
        assert_eq!(
            post(&unscoped, &body, &headers).await.occurrence.as_deref(),
            Some("0")
        );
        assert_eq!(
            session(&used.base_url(), "run-1").await,
            first,
            "a reset forgets scopes too"
        );
        used.shutdown().await;
        fresh.shutdown().await;
    });
}

/// Issue 22: with no flags `dst serve` served OpenAI chat and Ollama only, so the
/// frameworks on the Responses API got a 404, and only `umi-sim` was answered. Now every
/// format answers at its standard path with any model name, each lists its models as
/// its provider does, `--model` restricts, and a path no endpoint serves names the flag.
#[test]
fn with_no_flags_every_format_answers_any_model() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let base = server.base_url();
        for format in FORMATS {
            let (body, path, headers) = conversation(format, 2);
            let raw = post(&format!("{base}{path}"), &body, &headers).await;
            assert_eq!(
                raw.status,
                200,
                "{format:?}: {}",
                String::from_utf8_lossy(&raw.body)
            );
        }
        let (_, openai, _) = get(&format!("{base}/v1/models"), &[]).await;
        assert_eq!(
            serde_json::from_str::<Value>(&openai).unwrap()["object"],
            "list",
            "{openai}"
        );
        let (_, anthropic, _) = get(
            &format!("{base}/v1/models"),
            &[("anthropic-version", "2023-06-01")],
        )
        .await;
        assert_eq!(
            serde_json::from_str::<Value>(&anthropic).unwrap()["data"][0]["type"],
            "model",
            "{anthropic}"
        );
        server.shutdown().await;

        let mut config = ServeConfig::default();
        config.models = vec!["only-this".into()];
        config.endpoints = vec![umi_dst::serve::EndpointSpec::parse("openai").unwrap()];
        let server = Server::start(config).await.unwrap();
        let (body, path, headers) = conversation(WireFormat::OpenAiChat, 2);
        let refused = post(&format!("{}{path}", server.base_url()), &body, &headers).await;
        assert_eq!(
            refused.status,
            404,
            "{}",
            String::from_utf8_lossy(&refused.body)
        );
        assert!(String::from_utf8_lossy(&refused.body).contains("gpt-4o-mini"));
        let (body, path, headers) = conversation(WireFormat::OpenAiResponses, 2);
        let unserved = post(&format!("{}{path}", server.base_url()), &body, &headers).await;
        assert_eq!(unserved.status, 404);
        let said = String::from_utf8_lossy(&unserved.body);
        assert!(said.contains("--endpoint openai_responses"), "{said}");
        server.shutdown().await;
    });
}
