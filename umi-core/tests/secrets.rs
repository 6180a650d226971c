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
    // A real runtime, not a simulation: a real connection refused by the OS.
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

/// Keys as a `.env` line, a dashboard copy or a heredoc leave them.
fn keys_with_whitespace() -> [String; 5] {
    [
        format!("{KEY} "),
        format!(" {KEY}"),
        format!("{KEY}\n"),
        format!("{KEY}\r\n"),
        format!("\t{KEY}  "),
    ]
}

/// How a user sets the key.
#[derive(Debug, Clone, Copy)]
enum Setting {
    /// `Connection::with_api_key`.
    Connection,
    /// A router config's `api_key_env`, read from the environment.
    ConfigEnv,
    /// A secret header among the extra headers (Azure's `api-key`).
    SecretHeader,
}

const SETTINGS: [Setting; 3] = [
    Setting::Connection,
    Setting::ConfigEnv,
    Setting::SecretHeader,
];

/// A server that refuses every key and echoes the one it read, as OpenAI's 401 does:
/// a header's value trimmed of surrounding whitespace (RFC 9110, section 5.5), whole
/// in the message and masked ("sk-live-****…wxyz") in a second sentence, in a 401
/// (`stream: false`) or in an error inside a 200 stream.
#[derive(Debug)]
struct Echoing {
    format: Format,
    in_stream: bool,
}

impl Echoing {
    fn echo(request: &HttpRequest) -> String {
        let read = |name: &str| request.header(name).map(str::trim).map(str::to_owned);
        let key = read("api-key")
            .or_else(|| read("x-api-key"))
            .or_else(|| {
                read("authorization").map(|v| v.trim_start_matches("Bearer ").trim().to_owned())
            })
            .unwrap_or_default();
        let chars: Vec<char> = key.chars().collect();
        let masked: String = if chars.len() > 12 {
            let head: String = chars[..8].iter().collect();
            let tail: String = chars[chars.len() - 4..].iter().collect();
            format!("{head}{}{tail}", "*".repeat(chars.len() - 12))
        } else {
            key.clone()
        };
        format!("Incorrect API key provided: {key}. Masked: {masked}.")
    }
}

#[async_trait::async_trait]
impl Transport for Echoing {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let message = Self::echo(&request);
        let raw = if self.in_stream {
            stream_error(self.format).replace(&format!("upstream refused key {KEY}"), &message)
        } else {
            unauthorized(self.format)
                .replace(&format!("Incorrect API key provided: {KEY}"), &message)
        };
        FixtureTransport::parse(raw.as_bytes(), 11)
            .send(request)
            .await
    }
}

/// The router config of `format`'s provider, its key in `UMI_TEST_KEY`.
fn router_config(format: Format) -> umi_core::llm::router::RouterConfig {
    let kind = match format {
        Format::OpenAi => "openai",
        Format::Responses => "openai_responses",
        Format::Anthropic => "anthropic",
        Format::Ollama => "ollama",
    };
    let text = format!(
        "[providers.p]\ntype = \"{kind}\"\nendpoint = \"https://llm.example/v1\"\napi_key_env = \"UMI_TEST_KEY\"\n\n\
         [models.\"p/m\"]\ncontext_window = 32000\nmax_output = 1000\n\n\
         [routing]\ndefault = \"p/m\"\n\n[retry]\nmax_retries = 0\n"
    );
    umi_core::llm::router::RouterConfig::from_toml(&text, "(test)").unwrap()
}

/// The model `setting` builds with `key`, over `transport`.
fn keyed_model(
    format: Format,
    setting: Setting,
    key: &str,
    transport: Arc<dyn Transport>,
    env: umi_core::env::Env,
) -> Arc<dyn LanguageModel> {
    let model = ModelRef::new("p", "m", 32_000, 1_000);
    let connection = match setting {
        Setting::ConfigEnv => {
            let router = LlmRouter::from_config(&router_config(format), &transport, &env, |name| {
                (name == "UMI_TEST_KEY").then(|| key.to_owned())
            })
            .unwrap();
            return Arc::new(router);
        }
        Setting::Connection => Connection::new("https://llm.example/v1").with_api_key(key),
        Setting::SecretHeader => Connection::new("https://llm.example/v1")
            .with_extra_headers(vec![("api-key".to_owned(), key.to_owned())]),
    };
    match format {
        Format::OpenAi => Arc::new(OpenAiClient::new(
            OpenAiConfig::new(connection, model),
            transport,
            env,
        )),
        Format::Ollama => Arc::new(OllamaClient::new(
            OllamaConfig::new(connection, model),
            transport,
            env,
        )),
        Format::Anthropic => Arc::new(AnthropicClient::new(
            AnthropicConfig::new(connection, model),
            transport,
            env,
        )),
        Format::Responses => Arc::new(ResponsesClient::new(
            ResponsesConfig::new(connection, model),
            transport,
            env,
        )),
    }
}

/// Issue 29, the first defect: a key configured with a trailing space was sent as
/// configured, the server echoed it trimmed, and the redactor knew only the untrimmed
/// form (619 of 9,892 outputs leaked). Every key form × every way of setting it × every
/// format, whole and streamed, through a server that echoes what it read.
#[test]
fn a_key_with_surrounding_whitespace_never_leaks_from_an_echoing_server() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for key in keys_with_whitespace() {
        for setting in SETTINGS {
            for format in FORMATS {
                for in_stream in [false, true] {
                    let transport: Arc<dyn Transport> = Arc::new(Echoing { format, in_stream });
                    let error = in_sim(async |sim| {
                        let model = keyed_model(format, setting, &key, transport, sim.env());
                        call(model.as_ref(), in_stream).await
                    });
                    let outputs = [
                        error.to_string(),
                        format!("{error:?}"),
                        serde_json::to_string(&error).unwrap(),
                        umi_dst::corpus::format_line(7, &format!("correctness: {error}")),
                    ];
                    let case = format!("{key:?} {setting:?} {format:?} stream={in_stream}");
                    if !outputs[0].contains("[REDACTED]") {
                        failures.push(format!("{case}: no echo redacted in {}", outputs[0]));
                    }
                    for output in outputs {
                        checked += 1;
                        let found = leaks(&output);
                        if !found.is_empty() || output.contains("****") {
                            failures.push(format!("{case}: {found:?} in {output}"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} leaks in {checked} outputs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_key_is_sent_trimmed_as_every_server_reads_it() {
    for key in keys_with_whitespace() {
        let transport = Arc::new(FixtureTransport::parse(
            unauthorized(Format::OpenAi).as_bytes(),
            64,
        ));
        in_sim(async |sim| {
            let model = keyed_model(
                Format::OpenAi,
                Setting::Connection,
                &key,
                transport.clone(),
                sim.env(),
            );
            let _ = model.complete(&request()).await;
        });
        let requests = transport.requests.lock().unwrap();
        assert_eq!(
            requests[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str()),
            "{key:?}"
        );
    }
}

#[test]
fn a_configured_key_that_is_blank_is_refused_naming_its_variable() {
    let transport: Arc<dyn Transport> = Arc::new(Refusing);
    in_sim(async |sim| {
        for (value, says) in [
            ("  \n", "the key is empty"),
            ("sk-a\u{7}b", "control character"),
        ] {
            let error = LlmRouter::from_config(
                &router_config(Format::OpenAi),
                &transport,
                &sim.env(),
                |_| Some(value.to_owned()),
            )
            .unwrap_err();
            assert_eq!(error.field, "providers.p.api_key_env");
            assert_eq!(error.value, "UMI_TEST_KEY");
            assert!(error.reason.contains(says), "{error}");
            assert!(!error.to_string().contains("sk-a"), "{error}");
        }
    });
}
