//! Contract tests: recorded responses of OpenAI, DeepSeek, Qwen, GLM and Ollama replayed
//! through the real clients, at every chunking, and the requests the clients send.
//! No real API is called.

use std::sync::Arc;

use futures::StreamExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::{
    CompletionRequest, CompletionResponse, Connection, FinishReason, LanguageModel, LlmError,
    Message, ModelRef, StreamCollector, TokenUsage, ToolDefinition,
};

use crate::support::{FixtureTransport, in_sim, proptest_config};

const OPENAI_LIKE: [&str; 4] = ["openai", "deepseek", "qwen", "glm"];
const CHUNKS: [usize; 6] = [1, 2, 3, 7, 64, 1 << 20];

fn client(
    provider: &str,
    transport: Arc<FixtureTransport>,
    sim: &umi_dst::SimEnvironment,
) -> Arc<dyn LanguageModel> {
    let model = ModelRef::new(provider, "test-model", 128_000, 8_192);
    if provider == "ollama" {
        Arc::new(OllamaClient::new(
            OllamaConfig::new("http://localhost:11434", model),
            transport,
            sim.env(),
        ))
    } else {
        let url = format!("https://{provider}.example/v1/");
        let config = OpenAiConfig::new(Connection::new(url).with_api_key("sk-test"), model);
        Arc::new(OpenAiClient::new(config, transport, sim.env()))
    }
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![
        Message::system("be brief"),
        Message::user("weather in Oslo?"),
    ])
    .with_tools(vec![ToolDefinition::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )])
    .with_max_tokens(100)
    .with_stop(vec!["\n\n".into()])
}

/// `complete` on fixture `name` of `provider`, with the body in `chunk`-byte pieces.
fn complete(
    provider: &str,
    name: &str,
    chunk: usize,
) -> (Result<CompletionResponse, LlmError>, Vec<Value>) {
    let transport = Arc::new(FixtureTransport::load(provider, name, chunk));
    let result = in_sim(async |sim| {
        client(provider, transport.clone(), &sim)
            .complete(&request())
            .await
    });
    let bodies = transport
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    (result, bodies)
}

/// `stream`, collected with the real collector.
fn stream(provider: &str, name: &str, chunk: usize) -> Result<CompletionResponse, LlmError> {
    let transport = Arc::new(FixtureTransport::load(provider, name, chunk));
    in_sim(async |sim| {
        let llm = client(provider, transport.clone(), &sim);
        let events = llm.stream(&request()).await?;
        StreamCollector::collect("test-model", events).await
    })
}

#[test]
fn plain_chat() {
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        let (response, bodies) = complete(provider, "chat", 1 << 20);
        let response = response.unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert_eq!(
            response.text, "Hello! How can I help you today?",
            "{provider}"
        );
        let counts = response
            .usage
            .map(|u| (u.prompt_tokens, u.completion_tokens));
        assert_eq!(
            (response.finish_reason, counts),
            (FinishReason::Stop, Some((12, 9))),
            "{provider}"
        );
        if *provider == "openai" {
            // The fixture carries `prompt_tokens_details` and `completion_tokens_details`.
            let usage = response.usage.unwrap();
            assert_eq!(
                (usage.cached_prompt_tokens, usage.reasoning_tokens),
                (Some(0), Some(0))
            );
        }
        assert_eq!(bodies[0]["stream"], json!(false), "{provider}");
    }
    let (deepseek, _) = complete("deepseek", "chat", 64);
    assert_eq!(
        deepseek.unwrap().reasoning.as_deref(),
        Some("Greeting; answer briefly.")
    );
}

#[test]
fn tool_calls_with_null_content() {
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        let response = complete(provider, "tool_call", 1 << 20)
            .0
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        let call = &response.tool_calls[0];
        let city = if *provider == "glm" { "北京" } else { "Oslo" };
        assert_eq!(
            (call.name.as_str(), &call.arguments),
            ("get_weather", &json!({"city": city, "days": 2})),
            "{provider}"
        );
        assert_eq!(
            (response.text.as_str(), response.finish_reason),
            ("", FinishReason::ToolCalls),
            "{provider}"
        );
        assert_eq!(
            call.id,
            if *provider == "ollama" {
                "call_0"
            } else {
                "call_abc123"
            }
        );
    }
}

#[test]
fn streamed_chat_at_every_chunking() {
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        for chunk in CHUNKS {
            let response = stream(provider, "stream_chat", chunk)
                .unwrap_or_else(|e| panic!("{provider} chunk {chunk}: {e}"));
            assert_eq!(
                response.text, "Hello, wörld! 👋",
                "{provider} chunk {chunk}"
            );
            assert_eq!(
                (response.finish_reason, response.usage),
                (FinishReason::Stop, Some(TokenUsage::new(12, 7))),
                "{provider} chunk {chunk}"
            );
        }
    }
    assert_eq!(
        stream("deepseek", "stream_chat", 5)
            .unwrap()
            .reasoning
            .as_deref(),
        Some("The user greets. Reply politely.")
    );
}

#[test]
fn streamed_parallel_tool_calls_at_every_chunking() {
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        for chunk in CHUNKS {
            let response = stream(provider, "stream_tool_call", chunk)
                .unwrap_or_else(|e| panic!("{provider} chunk {chunk}: {e}"));
            let names: Vec<&str> = response
                .tool_calls
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            assert_eq!(names, ["get_weather", "search"], "{provider} chunk {chunk}");
            assert_eq!(
                response.tool_calls[1].arguments,
                json!({"query": "umbrella \"rules\""}),
                "{provider} chunk {chunk}"
            );
            assert_eq!(
                (response.finish_reason, response.usage),
                (FinishReason::ToolCalls, Some(TokenUsage::new(90, 30))),
                "{provider}"
            );
        }
    }
    assert_eq!(
        stream("ollama", "stream_tool_call", 9)
            .unwrap()
            .reasoning
            .as_deref(),
        Some("Need the weather.")
    );
}

#[test]
fn errors_map_to_typed_errors() {
    let retry = |p: &str| match p {
        "openai" => Some(2_000),
        "deepseek" => Some(1_500),
        "qwen" => Some(5_000), // an HTTP date five seconds after the simulated wall clock
        "ollama" => Some(3_000),
        _ => None,
    };
    let context = |p: &str| match p {
        "openai" => (Some(130_512), Some(128_000)),
        "deepseek" => (Some(70_000), Some(65_536)),
        "qwen" => (None, Some(30_720)),
        _ => (None, None),
    };
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        for via_stream in [false, true] {
            let run = |name| {
                if via_stream {
                    stream(provider, name, 7)
                } else {
                    complete(provider, name, 7).0
                }
            };
            assert_eq!(
                run("error_429"),
                Err(LlmError::RateLimit {
                    retry_after_ms: retry(provider)
                }),
                "{provider}"
            );
            let (prompt_tokens, limit) = context(provider);
            assert_eq!(
                run("error_context"),
                Err(LlmError::ContextOverflow {
                    prompt_tokens,
                    limit
                }),
                "{provider}"
            );
            assert!(
                matches!(run("error_401"), Err(LlmError::Auth { status: 401, .. })),
                "{provider}: {:?}",
                run("error_401")
            );
            assert!(
                matches!(
                    run("error_500"),
                    Err(LlmError::ServiceUnavailable {
                        status: Some(500),
                        ..
                    })
                ),
                "{provider}"
            );
        }
    }
    // "model not found" is its own kind, so a router may fall back to the next model.
    assert!(matches!(
        complete("ollama", "error_404", 7).0,
        Err(LlmError::ModelNotFound {
            status: Some(404),
            ..
        })
    ));
}

#[test]
fn openai_requests_are_mapped_field_by_field() {
    let transport = Arc::new(FixtureTransport::load("openai", "stream_chat", 1 << 20));
    let conversation = CompletionRequest::new(vec![
        Message::system("be brief"),
        Message::user("weather?"),
        Message::assistant_tool_calls(
            "",
            vec![umi_core::llm::ToolCall::new(
                "c1",
                "get_weather",
                json!({"city": "Oslo"}),
            )],
        ),
        Message::tool_result("c1", "sunny", true),
    ])
    .with_tools(request().tools)
    .with_max_tokens(50)
    .with_temperature(0.5)
    .with_json_output()
    .with_seed(7)
    .with_task("agent.step");
    in_sim(async |sim| {
        let events = client("openai", transport.clone(), &sim)
            .stream(&conversation)
            .await
            .unwrap();
        let _ = events.collect::<Vec<_>>().await;
    });
    let sent = transport.requests.lock().unwrap()[0].clone();
    assert_eq!(sent.url, "https://openai.example/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(
        body["messages"][2]["content"],
        Value::Null,
        "a tool-calling turn without text sends null"
    );
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}",
        "arguments go as a JSON string"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert!(
        body.get("task").is_none(),
        "the task tag never leaves the process"
    );
}

#[test]
fn ollama_requests_are_mapped_field_by_field() {
    let transport = Arc::new(FixtureTransport::load("ollama", "chat", 1 << 20));
    let conversation = CompletionRequest::new(vec![
        Message::user("weather?"),
        Message::assistant_tool_calls(
            "",
            vec![umi_core::llm::ToolCall::new(
                "c1",
                "get_weather",
                json!({"city": "Oslo"}),
            )],
        ),
        Message::tool_result("c1", "sunny", true),
    ])
    .with_max_tokens(50)
    .with_stop(vec!["END".into()])
    .with_json_output();
    in_sim(async |sim| {
        client("ollama", transport.clone(), &sim)
            .complete(&conversation)
            .await
            .unwrap()
    });
    let sent = transport.requests.lock().unwrap()[0].clone();
    assert_eq!(sent.url, "http://localhost:11434/api/chat");
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["options"], json!({"num_predict": 50, "stop": ["END"]}));
    assert_eq!(body["format"], "json");
    assert_eq!(
        body["messages"][1]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Oslo"}),
        "Ollama takes objects"
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "content": "sunny", "tool_name": "get_weather"})
    );
}

#[test]
fn a_stream_cut_before_done_is_truncation_and_an_error_event_is_an_error() {
    let raw = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/openai/stream_chat.http"),
    )
    .unwrap();
    let finish = raw
        .windows(22)
        .position(|w| w == b"\"finish_reason\":\"stop\"")
        .unwrap();
    let collect_cut = |cut: usize| {
        let transport = Arc::new(FixtureTransport::parse(&raw[..cut], 11));
        in_sim(async |sim| {
            let events = client("openai", transport.clone(), &sim)
                .stream(&request())
                .await?;
            StreamCollector::collect("m", events).await
        })
    };
    // Cut inside the last content chunk: the answer is incomplete.
    let result = collect_cut(finish - 40);
    assert!(
        matches!(result, Err(LlmError::StreamTruncated { .. })),
        "{result:?}"
    );
    // Cut after the finish reason, before the usage chunk and `[DONE]`: the answer is
    // whole, so it is accepted (usage unknown: absent, not zero).
    let line_end = finish + raw[finish..].iter().position(|b| *b == b'\n').unwrap() + 2;
    let whole = collect_cut(line_end).unwrap();
    assert_eq!(
        (whole.text.as_str(), whole.usage),
        ("Hello, wörld! 👋", None)
    );

    let raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"error\": {\"message\": \"Rate limit\", \"type\": \"rate_limit_error\"}}\n\n";
    let transport = Arc::new(FixtureTransport::parse(raw, 5));
    let result = in_sim(async |sim| {
        client("openai", transport.clone(), &sim)
            .stream(&request())
            .await
            .err()
    });
    assert_eq!(
        result,
        Some(LlmError::RateLimit {
            retry_after_ms: None
        }),
        "an error before any output comes from stream() itself"
    );
}

fn fixture_bytes() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut all = Vec::new();
    for provider in OPENAI_LIKE.iter().chain(["ollama"].iter()) {
        let mut entries: Vec<_> = std::fs::read_dir(dir.join(provider))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            all.push(std::fs::read(path).unwrap());
        }
    }
    all
}

proptest! {
    #![proptest_config(proptest_config(400))]

    /// Hostile or truncated bytes never panic the clients: every fixture, mutated at
    /// random positions, cut short and chunked at random, gives a response or an error.
    #[test]
    fn hostile_wire_bytes_never_panic(index in 0usize..41, flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8), keep in 0.0f64..=1.0, chunk in 1usize..40, ollama in any::<bool>(), streamed in any::<bool>()) {
        let fixtures = fixture_bytes();
        let mut raw = fixtures[index % fixtures.len()].clone();
        let header_end = raw.windows(4).position(|w| w == b"\r\n\r\n").map_or(0, |i| i + 4);
        for (position, byte) in flips {
            if raw.len() > header_end {
                let at = header_end + position % (raw.len() - header_end);
                raw[at] = byte;
            }
        }
        raw.truncate(header_end + ((raw.len() - header_end) as f64 * keep) as usize);
        let transport = Arc::new(FixtureTransport::parse(&raw, chunk));
        let provider = if ollama { "ollama" } else { "openai" };
        let _ = in_sim(async |sim| {
            let llm = client(provider, transport.clone(), &sim);
            if streamed {
                match llm.stream(&request()).await {
                    Ok(events) => StreamCollector::collect("m", events).await.map(|_| ()),
                    Err(error) => Err(error),
                }
            } else {
                llm.complete(&request()).await.map(|_| ())
            }
        });
    }
}

/// A provider's configured headers go with every format. Pins a fix: the registry
/// dropped them for Ollama (a server behind a proxy that wants its own header), since
/// each format's config listed its own fields and Ollama's had no extra headers.
#[test]
fn a_providers_headers_reach_the_server_in_every_format() {
    for kind in ["openai", "ollama", "anthropic", "openai_responses"] {
        let provider: umi_core::llm::registry::ProviderConfig = serde_json::from_value(json!({
            "type": kind,
            "endpoint": "https://llm.example/v1",
            "headers": {"x-team": "agents"},
        }))
        .unwrap();
        let transport = Arc::new(FixtureTransport::parse(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\r\n{}",
            64,
        ));
        let sent = in_sim(async |sim| {
            let client = umi_core::llm::registry::client(
                &provider,
                ModelRef::new("p", "m", 32_768, 1_024),
                None,
                std::time::Duration::from_secs(5),
                transport.clone(),
                sim.env(),
            );
            let refused = client.complete(&request()).await;
            assert!(refused.is_err(), "{kind}: a 503 is an error");
            transport.requests.lock().unwrap().clone()
        });
        assert_eq!(sent.len(), 1, "{kind}: one request");
        assert_eq!(
            sent[0].header("x-team"),
            Some("agents"),
            "{kind}: {:?}",
            sent[0]
        );
    }
}

/// Answers each request with the next of its raw HTTP responses (the last one repeats),
/// and counts the requests.
#[derive(Debug)]
struct Sequence {
    responses: Vec<String>,
    sent: std::sync::Mutex<usize>,
}

impl Sequence {
    fn new(responses: Vec<String>) -> Arc<Self> {
        Arc::new(Self {
            responses,
            sent: std::sync::Mutex::new(0),
        })
    }
}

#[async_trait::async_trait]
impl umi_core::llm::transport::Transport for Sequence {
    async fn send(
        &self,
        request: umi_core::llm::transport::HttpRequest,
    ) -> Result<umi_core::llm::transport::HttpResponse, umi_core::llm::transport::TransportError>
    {
        let index = {
            let mut sent = self.sent.lock().unwrap();
            *sent += 1;
            (*sent - 1).min(self.responses.len() - 1)
        };
        FixtureTransport::parse(self.responses[index].as_bytes(), 17)
            .send(request)
            .await
    }
}

fn sse(events: &[Value]) -> String {
    let mut body = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
    for event in events {
        body.push_str(&format!("data: {event}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// The agent over a router over the chat client, on `responses` in turn: its outcome,
/// the arguments its `pay` tool ran with, and how many requests were sent.
fn agent_on(
    responses: Vec<String>,
) -> (
    Result<umi_core::agent::AgentOutcome, umi_core::agent::AgentError>,
    Vec<Value>,
    usize,
) {
    let transport = Sequence::new(responses);
    let paid = Arc::new(std::sync::Mutex::new(Vec::new()));
    let outcome = in_sim(async |sim| {
        let client = OpenAiClient::new(
            OpenAiConfig::new(
                "https://llm.example/v1",
                umi_core::llm::ModelRef::new("p", "m", 32_000, 1_000),
            ),
            transport.clone(),
            sim.env(),
        );
        let router = umi_core::llm::router::LlmRouter::builder(sim.env())
            .model("p/m", Arc::new(client))
            .default_model("p/m")
            .retry(umi_core::llm::router::RetryPolicy::default().with_max_retries(3))
            .build()
            .unwrap();
        let mut tools = umi_core::agent::ToolRegistry::new();
        let log = paid.clone();
        tools
            .register_fn(
                "pay",
                "pays",
                json!({"type": "object"}),
                move |args: Value| {
                    let log = log.clone();
                    async move {
                        log.lock().unwrap().push(args);
                        Ok("paid".to_owned())
                    }
                },
            )
            .unwrap();
        umi_core::agent::Agent::new(Arc::new(router), sim.env())
            .with_tools(tools)
            .run(vec![Message::user("pay the bill")])
            .await
    });
    let paid = paid.lock().unwrap().clone();
    let sent = *transport.sent.lock().unwrap();
    (outcome, paid, sent)
}

/// Issue 29, the fourth defect, as the guide now says it ("A stream that ends with
/// nothing but its end marker"): a stream of `[DONE]` alone is an empty stream, which
/// the router retries like any cut before the first event, so the agent runs on the
/// retried answer; a tool call's header followed by an error object in vLLM's flat
/// shape (once skipped, leaving a call with `{}` arguments the model never gave) ends
/// the turn in the typed error, and the tool never runs.
#[test]
fn an_end_marker_alone_is_retried_and_an_unknown_error_object_is_never_an_answer() {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let answer = [
        chunk(
            json!({"role": "assistant", "content": "Paid nothing."}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
    ];
    let (outcome, paid, sent) = agent_on(vec![sse(&[]), sse(&answer)]);
    assert_eq!(outcome.expect("the retry answers").answer, "Paid nothing.");
    assert_eq!(
        (paid.len(), sent),
        (0, 2),
        "one empty stream retried, one answer"
    );

    let header = chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
            "function": {"name": "pay", "arguments": ""}}]}),
        Value::Null,
    );
    let flat_error = json!({"object": "error", "message": "Internal server error",
        "type": "InternalServerError", "param": null, "code": 500});
    let (outcome, paid, _) = agent_on(vec![sse(&[header, flat_error])]);
    let error = outcome.expect_err("an error inside the stream is no answer");
    assert!(
        error.to_string().contains("Internal server error"),
        "{error}"
    );
    assert!(paid.is_empty(), "the tool ran with {paid:?}");
}
