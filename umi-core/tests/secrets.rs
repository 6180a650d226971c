//! Secrets through every failure path: a key echoed by a server (a 401 body, a header
//! dump in a 500, an in-stream error, broken JSON, a body cut mid-key) or held in the
//! endpoint URL (a refused connection naming it), for every client format, never
//! reaches the error's Display or Debug, the router's error, its events as a trace
//! records them, a report or a seed comment; and the key still goes to the server.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use umi_core::llm::anthropic::{AnthropicClient, AnthropicConfig};
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::responses::{ResponsesClient, ResponsesConfig};
use umi_core::llm::router::{LlmRouter, RetryPolicy};
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{CompletionRequest, Connection, LanguageModel, LlmError, Message, ModelRef};

use crate::support::{FixtureTransport, in_sim};

/// The configured key (distinct windows, so any 8 characters of it are telling).
const KEY: &str = "sk-live-Q7wE9rT2yU4iO6pA8sD0";
/// The password in the endpoint URL's userinfo.
const URL_PASSWORD: &str = "urlpw-K3j5H7g9F1d";
/// A key in the endpoint URL's query string.
const QUERY_KEY: &str = "AIzaQ-M2n4B6v8C0x";
const SECRETS: [&str; 3] = [KEY, URL_PASSWORD, QUERY_KEY];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    OpenAi,
    Ollama,
    Anthropic,
    Responses,
}

const FORMATS: [Format; 4] = [
    Format::OpenAi,
    Format::Ollama,
    Format::Anthropic,
    Format::Responses,
];

/// A way for a key to come back in the text a client hands on.
#[derive(Debug, Clone, Copy)]
enum Path {
    Unauthorized,
    HeaderDump,
    StreamError,
    BrokenJson,
    CutSnippet,
    RefusedUrl,
}

const PATHS: [Path; 6] = [
    Path::Unauthorized,
    Path::HeaderDump,
    Path::StreamError,
    Path::BrokenJson,
    Path::CutSnippet,
    Path::RefusedUrl,
];

fn base_url(format: Format) -> String {
    let root = format!("https://svc:{URL_PASSWORD}@llm.example");
    match format {
        Format::OpenAi | Format::Responses => format!("{root}/v1?key={QUERY_KEY}"),
        Format::Ollama | Format::Anthropic => format!("{root}?key={QUERY_KEY}"),
    }
}

/// The client for `format`, and how it prints (`Debug`).
fn client(
    format: Format,
    transport: Arc<dyn Transport>,
    env: umi_core::env::Env,
) -> (Arc<dyn LanguageModel>, String) {
    fn boxed<M: LanguageModel + std::fmt::Debug + 'static>(
        model: M,
    ) -> (Arc<dyn LanguageModel>, String) {
        let printed = format!("{model:?}");
        (Arc::new(model), printed)
    }
    let model = ModelRef::new("p", "m", 32_000, 1_000);
    let url = base_url(format);
    match format {
        Format::OpenAi => boxed(OpenAiClient::new(
            OpenAiConfig::new(Connection::new(url).with_api_key(KEY), model),
            transport,
            env,
        )),
        Format::Ollama => boxed(OllamaClient::new(
            OllamaConfig::new(Connection::new(url).with_api_key(KEY), model),
            transport,
            env,
        )),
        Format::Anthropic => boxed(AnthropicClient::new(
            AnthropicConfig::new(Connection::new(url).with_api_key(KEY), model),
            transport,
            env,
        )),
        Format::Responses => boxed(ResponsesClient::new(
            ResponsesConfig::new(Connection::new(url).with_api_key(KEY), model),
            transport,
            env,
        )),
    }
}

/// The 401 body each provider sends, echoing the key.
fn unauthorized(format: Format) -> String {
    let message = format!("Incorrect API key provided: {KEY}");
    let body = match format {
        Format::Ollama => serde_json::json!({ "error": message }),
        Format::Anthropic => serde_json::json!({
            "type": "error",
            "error": { "type": "authentication_error", "message": message },
        }),
        Format::OpenAi | Format::Responses => serde_json::json!({
            "error": { "message": message, "type": "invalid_request_error", "code": "invalid_api_key" },
        }),
    };
    format!("HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\r\n{body}")
}

/// An error event inside a 200 stream, echoing the key.
fn stream_error(format: Format) -> String {
    let message = format!("upstream refused key {KEY}");
    let (content_type, body) = match format {
        Format::OpenAi => (
            "text/event-stream",
            format!(
                "data: {}\n\n",
                serde_json::json!({ "error": { "message": message, "type": "server_error" } })
            ),
        ),
        Format::Responses => (
            "text/event-stream",
            format!(
                "event: error\ndata: {}\n\n",
                serde_json::json!({ "type": "error", "sequence_number": 0, "code": "server_error", "message": message })
            ),
        ),
        Format::Anthropic => (
            "text/event-stream",
            format!(
                "event: error\ndata: {}\n\n",
                serde_json::json!({ "type": "error", "error": { "type": "api_error", "message": message } })
            ),
        ),
        Format::Ollama => (
            "application/x-ndjson",
            format!("{}\n", serde_json::json!({ "error": message })),
        ),
    };
    format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n\r\n{body}")
}

/// A 200 answer whose JSON breaks off inside the key (`padding` characters before it).
fn broken_json(format: Format, padding: usize, stream: bool) -> String {
    let broken = format!("{{\"id\": \"{}{KEY}", "x".repeat(padding));
    if !stream {
        return format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{broken}");
    }
    let body = match format {
        Format::OpenAi => format!("data: {broken}\n\n"),
        Format::Responses => format!("event: response.created\ndata: {broken}\n\n"),
        Format::Anthropic => format!("event: message_start\ndata: {broken}\n\n"),
        Format::Ollama => format!("{broken}\n"),
    };
    let content_type = if format == Format::Ollama {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n\r\n{body}")
}

fn raw_response(format: Format, path: Path, stream: bool) -> String {
    match path {
        Path::Unauthorized => unauthorized(format),
        Path::HeaderDump => format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n\r\n\
             upstream failed; request headers: Authorization: Bearer {KEY}\nx-api-key: {KEY}\n"
        ),
        Path::StreamError => stream_error(format),
        Path::BrokenJson => broken_json(format, 0, stream),
        // The error snippet keeps 200 bytes: the cut falls inside the key.
        Path::CutSnippet => broken_json(format, 180, stream),
        Path::RefusedUrl => String::new(),
    }
}

/// No connection: the error names the URL, as reqwest's does.
#[derive(Debug)]
struct Refusing;

#[async_trait::async_trait]
impl Transport for Refusing {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        Err(TransportError::Connect {
            reason: format!(
                "error sending request for url ({}): tcp connect error: Connection refused (os error 111)",
                request.url
            ),
        })
    }
}

/// Every window of 8 characters of every secret that occurs in `text`.
fn leaks(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for secret in SECRETS {
        let chars: Vec<char> = secret.chars().collect();
        for window in chars.windows(8) {
            let window: String = window.iter().collect();
            if text.contains(&window) {
                found.push(window);
            }
        }
    }
    found
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("hello")]).with_max_tokens(50)
}

/// The error of a call, as `complete` or as a collected `stream` returns it.
async fn call(model: &dyn LanguageModel, stream: bool) -> LlmError {
    if !stream {
        return model
            .complete(&request())
            .await
            .expect_err("every scripted answer fails");
    }
    let mut events = match model.stream(&request()).await {
        Ok(events) => events,
        Err(error) => return error,
    };
    while let Some(item) = events.next().await {
        if let Err(error) = item {
            return error;
        }
    }
    panic!("the stream ended without an error")
}

/// Everything a failure can be printed as: the error (Display, Debug, JSON as a report
/// holds it, a seed comment), the router's error, its events as a trace records them.
fn outputs_of(format: Format, path: Path, stream: bool) -> Vec<(String, String)> {
    let transport: Arc<dyn Transport> = match path {
        Path::RefusedUrl => Arc::new(Refusing),
        _ => Arc::new(FixtureTransport::parse(
            raw_response(format, path, stream).as_bytes(),
            7,
        )),
    };
    in_sim(async |sim| {
        let (model, model_printed) = client(format, transport.clone(), sim.env());
        let error = call(model.as_ref(), stream).await;
        let events = Arc::new(Mutex::new(Vec::new()));
        let trace = sim.trace().clone();
        let observer_events = events.clone();
        let router = LlmRouter::builder(sim.env())
            .model("p/m", client(format, transport, sim.env()).0)
            .default_model("p/m")
            .retry(RetryPolicy::default().with_max_retries(0))
            .build()
            .unwrap()
            .with_observer(Arc::new(move |event, _| {
                trace.record("router.event", format_args!("{event:?}"));
                observer_events.lock().unwrap().push(format!("{event:?}"));
            }));
        let routed = call(&router, stream).await;
        let trace_text: Vec<String> = sim
            .trace()
            .tail()
            .iter()
            .map(|event| format!("{event:?}"))
            .collect();
        vec![
            ("Display".to_owned(), error.to_string()),
            ("Debug".to_owned(), format!("{error:?}")),
            ("JSON".to_owned(), serde_json::to_string(&error).unwrap()),
            (
                "seed comment".to_owned(),
                umi_dst::corpus::format_line(7, &format!("correctness: {error}")),
            ),
            ("router Display".to_owned(), routed.to_string()),
            ("router Debug".to_owned(), format!("{routed:?}")),
            (
                "router events".to_owned(),
                events.lock().unwrap().join("\n"),
            ),
            ("trace".to_owned(), trace_text.join("\n")),
            ("client Debug".to_owned(), model_printed),
            ("router client Debug".to_owned(), format!("{router:?}")),
        ]
    })
}

#[test]
fn no_failure_path_leaks_a_configured_secret() {
    let mut failures = Vec::new();
    for format in FORMATS {
        for path in PATHS {
            for stream in [false, true] {
                let outputs = outputs_of(format, path, stream);
                // The key was there to leak: the error says where it was taken out.
                if !outputs[0].1.contains("[REDACTED]") {
                    failures.push(format!(
                        "{format:?} {path:?} stream={stream}: nothing redacted in {}",
                        outputs[0].1
                    ));
                }
                for (output, text) in outputs {
                    let found = leaks(&text);
                    if !found.is_empty() {
                        failures.push(format!(
                            "{format:?} {path:?} stream={stream} {output}: {found:?} in {text}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} leaks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn errors_say_what_happened_with_the_secret_redacted() {
    let outputs = outputs_of(Format::OpenAi, Path::Unauthorized, false);
    assert_eq!(
        outputs[0].1,
        "authentication failed (401): Incorrect API key provided: [REDACTED]"
    );
    let refused = outputs_of(Format::Anthropic, Path::RefusedUrl, true);
    assert!(
        refused[0]
            .1
            .contains("url (https://svc:[REDACTED]@llm.example?key=[REDACTED]/v1/messages)"),
        "{}",
        refused[0].1
    );
}

#[test]
fn requests_print_redacted_and_still_carry_the_key() {
    for format in FORMATS {
        let transport = Arc::new(FixtureTransport::parse(unauthorized(format).as_bytes(), 64));
        in_sim(async |sim| {
            let (model, _) = client(format, transport.clone(), sim.env());
            let _ = model.complete(&request()).await;
        });
        let requests = transport.requests.lock().unwrap();
        let sent = &requests[0];
        let (header, value) = match format {
            Format::Anthropic => ("x-api-key", KEY.to_owned()),
            _ => ("authorization", format!("Bearer {KEY}")),
        };
        assert_eq!(sent.header(header), Some(value.as_str()), "{format:?}");
        assert!(
            sent.url.contains(URL_PASSWORD),
            "{format:?}: the URL is sent as given"
        );
        let printed = format!("{sent:?}");
        assert!(leaks(&printed).is_empty(), "{format:?}: {printed}");
        assert!(printed.contains("[REDACTED]"), "{printed}");
    }
}

#[test]
fn a_real_refused_connection_does_not_print_the_url_credentials() {
    // A port nobody listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = runtime.block_on(async {
        let transport: Arc<dyn Transport> =
            Arc::new(umi_core::llm::transport::ReqwestTransport::new().unwrap());
        let env: umi_core::env::Env = Arc::new(umi_core::env::SystemEnvironment::new());
        let config = OpenAiConfig::new(
            Connection::new(format!(
                "http://svc:{URL_PASSWORD}@127.0.0.1:{port}/v1?key={QUERY_KEY}"
            ))
            .with_api_key(KEY),
            ModelRef::new("p", "m", 32_000, 1_000),
        );
        OpenAiClient::new(config, transport, env)
            .complete(&request())
            .await
            .unwrap_err()
    });
    assert_eq!(
        error.kind(),
        umi_core::llm::LlmErrorKind::Connection,
        "{error}"
    );
    let printed = format!("{error} {error:?}");
    assert!(leaks(&printed).is_empty(), "{printed}");
}
