//! SimNetwork: a transport that serves simulated models in the real wire formats, with
//! network faults in simulated time.
//!
//! The real clients (and the router on top of them) send their HTTP requests here.
//! SimNetwork parses each request as a server would, asks the endpoint's model (usually
//! a SimLLM), and answers with the bytes a real server sends: JSON, SSE chunks (OpenAI
//! format) or NDJSON lines (Ollama), each streamed chunk released when the model
//! produces it in simulated time. So the clients' own SSE parsing, error mapping,
//! Retry-After handling and timeouts are what the seeds exercise.
//!
//! | where | operation | faults |
//! | --- | --- | --- |
//! | before the headers | `network.connect` | `connection_refused`; `timeout` (no answer ever: the client's timeout must fire); `slow_first_byte` (1 to 20 s late) |
//! | in the body | `network.body` | `reset` (the connection breaks after a seeded number of bytes); `partial_write` (the body just ends there); `timeout` (the server stops sending there: the client's idle timeout must fire) |
//!
//! The model's own failures become HTTP: a refusal is an error status with the
//! provider's error body (a 429 carries Retry-After as `retry-after-ms`, seconds or an
//! HTTP date, chosen by the seed); an error in the middle of a stream is an error event
//! inside the 200 stream. [`SimNetwork::take_down`] makes an endpoint refuse connections
//! for a simulated interval.

mod ollama;
mod openai;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::llm::transport::{BodyStream, HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{LanguageModel, LlmError};

pub use ollama::{NdjsonEncoder, parse_request as parse_ollama_request};
pub use openai::{SseEncoder, error_object, error_status, parse_request as parse_openai_request};

use crate::clock::SimClock;
use crate::environment::SimEnvironment;
use crate::fault::{FaultDomain, FaultInjector, FaultKind};
use crate::rng::DeterministicRng;
use crate::trace::Trace;

/// Slowest first byte a `network.slow_first_byte` fault delays by, in ms.
pub const SLOW_FIRST_BYTE_MS_MAX: u64 = 20_000;

/// Bytes of a body a `reset` or `partial_write` lets through at most.
pub const BODY_CUT_BYTES_MAX: u64 = 1_024;

/// The wire format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI chat completions (`/chat/completions`).
    OpenAi,
    /// Ollama's native `/api/chat`.
    Ollama,
}

/// A server: a base URL, a format and the model behind it.
#[derive(Clone)]
pub struct Endpoint {
    base_url: String,
    format: WireFormat,
    model: Arc<dyn LanguageModel>,
    api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An OpenAI-compatible server at `base_url` answering with `model`.
    pub fn openai(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            format: WireFormat::OpenAi,
            model,
            api_key: None,
        }
    }

    /// An Ollama server at `base_url` answering with `model`.
    pub fn ollama(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            format: WireFormat::Ollama,
            model,
            api_key: None,
        }
    }

    /// Requires `Authorization: Bearer <key>` (a wrong or missing key gets a 401).
    pub fn with_api_key(mut self, key: &str) -> Self {
        self.api_key = Some(key.to_owned());
        self
    }
}

/// The simulated network. Build one per run.
pub struct SimNetwork {
    endpoints: Vec<Endpoint>,
    downtime: Mutex<Vec<(String, Duration, Duration)>>,
    faults: Arc<FaultInjector>,
    clock: SimClock,
    trace: Arc<Trace>,
    rng: Mutex<DeterministicRng>,
}

impl std::fmt::Debug for SimNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNetwork")
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

fn response(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> HttpResponse {
    HttpResponse {
        status,
        headers,
        body: futures::stream::iter([Ok(body)]).boxed(),
    }
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".to_owned(), "application/json".to_owned())]
}

impl SimNetwork {
    /// A network with no endpoints, for the run `sim`.
    pub fn new(sim: &SimEnvironment) -> Self {
        Self {
            endpoints: Vec::new(),
            downtime: Mutex::new(Vec::new()),
            faults: sim.faults().clone(),
            clock: sim.clock().clone(),
            trace: sim.trace().clone(),
            rng: Mutex::new(sim.rng("network")),
        }
    }

    /// Adds an endpoint.
    pub fn with_endpoint(mut self, endpoint: Endpoint) -> Self {
        self.endpoints.push(endpoint);
        self
    }

    /// Makes the endpoint at `base_url` refuse connections from `from` to `until`
    /// (simulated time since the run started).
    pub fn take_down(&self, base_url: &str, from: Duration, until: Duration) {
        self.downtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((base_url.trim_end_matches('/').to_owned(), from, until));
    }

    fn draw(&self, low: u64, high: u64) -> u64 {
        self.rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .range_inclusive(low, high)
    }

    fn is_down(&self, base_url: &str) -> bool {
        let now = self.clock.now();
        let downtime = self.downtime.lock().unwrap_or_else(PoisonError::into_inner);
        downtime
            .iter()
            .any(|(url, from, until)| url == base_url && *from <= now && now < *until)
    }

    /// The Retry-After headers of a 429, in a form the seed chooses.
    fn retry_after(&self, wait_ms: Option<u64>) -> Vec<(String, String)> {
        let Some(wait_ms) = wait_ms else {
            return Vec::new();
        };
        match self.draw(0, 2) {
            0 => vec![("retry-after-ms".into(), wait_ms.to_string())],
            1 => vec![("retry-after".into(), wait_ms.div_ceil(1000).to_string())],
            _ => {
                // An HTTP date has whole seconds: round up, never ask for less.
                let at_ms = self.clock.unix_time_ms() + wait_ms;
                let at = std::time::UNIX_EPOCH + Duration::from_secs(at_ms.div_ceil(1000));
                vec![("retry-after".into(), httpdate::fmt_http_date(at))]
            }
        }
    }

    fn error_response(&self, format: WireFormat, error: &LlmError) -> HttpResponse {
        let mut headers = json_headers();
        if let LlmError::RateLimit { retry_after_ms } = error {
            headers.extend(self.retry_after(*retry_after_ms));
        }
        let body = match format {
            WireFormat::OpenAi => openai::error_object(error).to_string(),
            WireFormat::Ollama => {
                serde_json::json!({"error": ollama::error_text(error)}).to_string()
            }
        };
        response(openai::error_status(error), headers, body.into_bytes())
    }

    /// Wraps a body with the `network.body` faults.
    fn body_faults(&self, body: BodyStream) -> BodyStream {
        let kinds = [
            FaultKind::NetworkReset,
            FaultKind::NetworkPartialWrite,
            FaultKind::NetworkTimeout,
        ];
        let Some(kind) = self
            .faults
            .decide_among(FaultDomain::Network, "network.body", &kinds)
        else {
            return body;
        };
        let left = self.draw(0, BODY_CUT_BYTES_MAX) as usize;
        self.trace
            .record("net.cut", format_args!("{kind} after {left} bytes"));
        // What follows the cut: an error, the end of the body, or nothing ever again.
        let after_cut = move || -> Option<BodyStream> {
            match kind {
                FaultKind::NetworkReset => Some(
                    futures::stream::iter([Err(TransportError::Reset {
                        reason: "connection reset by peer (simulated)".into(),
                    })])
                    .boxed(),
                ),
                FaultKind::NetworkTimeout => Some(futures::stream::pending().boxed()),
                _ => None,
            }
        };
        // State: the body, the bytes still allowed through, and whether it has ended.
        futures::stream::unfold(
            (body, left, false),
            move |(mut body, left, ended)| async move {
                if ended {
                    return None;
                }
                match body.next().await {
                    Some(Ok(mut chunk)) if chunk.len() >= left => {
                        chunk.truncate(left);
                        match after_cut() {
                            Some(rest) => Some((Ok(chunk), (rest, 0, false))),
                            None => Some((Ok(chunk), (body, 0, true))),
                        }
                    }
                    Some(Ok(chunk)) => {
                        let left = left - chunk.len();
                        Some((Ok(chunk), (body, left, false)))
                    }
                    other => other.map(|item| (item, (body, 0, true))),
                }
            },
        )
        .boxed()
    }
}

#[async_trait]
impl Transport for SimNetwork {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let endpoint = self
            .endpoints
            .iter()
            .find(|e| request.url.starts_with(&e.base_url))
            .cloned()
            .ok_or_else(|| TransportError::Connect {
                reason: format!("no route to {} (simulated)", request.url),
            })?;
        self.trace.record(
            "net.request",
            format_args!("{} {}", request.method, request.url),
        );
        if self.is_down(&endpoint.base_url) {
            self.trace
                .record("net.down", format_args!("{}", endpoint.base_url));
            return Err(TransportError::Connect {
                reason: "connection refused: endpoint down (simulated)".into(),
            });
        }
        let kinds = [
            FaultKind::NetworkConnectionRefused,
            FaultKind::NetworkTimeout,
            FaultKind::NetworkSlowFirstByte,
        ];
        match self
            .faults
            .decide_among(FaultDomain::Network, "network.connect", &kinds)
        {
            Some(FaultKind::NetworkConnectionRefused) => {
                return Err(TransportError::Connect {
                    reason: "connection refused (simulated)".into(),
                });
            }
            Some(FaultKind::NetworkTimeout) => {
                // The server never answers; only the client's own timeout ends this.
                std::future::pending::<()>().await;
            }
            Some(FaultKind::NetworkSlowFirstByte) => {
                self.clock
                    .sleep(Duration::from_millis(
                        self.draw(1_000, SLOW_FIRST_BYTE_MS_MAX),
                    ))
                    .await;
            }
            _ => {}
        }
        if let Some(key) = &endpoint.api_key
            && request.header("authorization") != Some(&format!("Bearer {key}"))
        {
            let body = match endpoint.format {
                WireFormat::OpenAi => serde_json::json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string(),
                WireFormat::Ollama => serde_json::json!({"error": "unauthorized"}).to_string(),
            };
            return Ok(response(401, json_headers(), body.into_bytes()));
        }
        let parsed = match endpoint.format {
            WireFormat::OpenAi => openai::parse_request(&request.body),
            WireFormat::Ollama => ollama::parse_request(&request.body),
        };
        let (completion, stream) = match parsed {
            Ok(parsed) => parsed,
            Err(reason) => {
                let body = serde_json::json!({"error": {"message": reason, "type": "invalid_request_error"}}).to_string();
                return Ok(response(400, json_headers(), body.into_bytes()));
            }
        };
        if !stream {
            let answer = endpoint.model.complete(&completion).await;
            return Ok(match answer {
                Err(error) => self.error_response(endpoint.format, &error),
                Ok(answer) => {
                    let body = match endpoint.format {
                        WireFormat::OpenAi => {
                            openai::response_body(&answer, self.clock.unix_time_ms() / 1000)
                        }
                        WireFormat::Ollama => ollama::response_body(&answer),
                    };
                    HttpResponse {
                        status: 200,
                        headers: json_headers(),
                        body: self.body_faults(futures::stream::iter([Ok(body)]).boxed()),
                    }
                }
            });
        }
        let events = match endpoint.model.stream(&completion).await {
            Err(error) => return Ok(self.error_response(endpoint.format, &error)),
            Ok(events) => events,
        };
        let (content_type, body): (&str, BodyStream) = match endpoint.format {
            WireFormat::OpenAi => {
                let mut encoder = SseEncoder::default();
                let body = events.map(move |item| {
                    Ok(match item {
                        Ok(event) => encoder.event(&event),
                        Err(error) => encoder.error(&error),
                    })
                });
                ("text/event-stream", body.boxed())
            }
            WireFormat::Ollama => {
                let mut encoder = NdjsonEncoder::new(&completion.model);
                let body = events.map(move |item| {
                    Ok(match item {
                        Ok(event) => encoder.event(&event),
                        Err(error) => encoder.error(&error),
                    })
                });
                ("application/x-ndjson", body.boxed())
            }
        };
        let headers = vec![("content-type".to_owned(), content_type.to_owned())];
        Ok(HttpResponse {
            status: 200,
            headers,
            body: self.body_faults(body),
        })
    }
}

/// The `tools` of a request body: both formats send OpenAI's
/// `[{"type": "function", "function": {name, description, parameters}}]`.
fn parse_tools(value: &serde_json::Value) -> Result<Vec<umi_core::llm::ToolDefinition>, String> {
    use serde_json::Value;
    let tools = value
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    tools
        .map(|tool| {
            let function = tool.get("function").ok_or("a tool has no function")?;
            let text = |key: &str| function.get(key).and_then(Value::as_str).unwrap_or("");
            let parameters = function.get("parameters").cloned();
            Ok(umi_core::llm::ToolDefinition::new(
                text("name"),
                text("description"),
                parameters.unwrap_or_else(|| serde_json::json!({"type": "object"})),
            ))
        })
        .collect()
}
