//! SimNetwork: a transport that serves simulated models in the real wire formats, in the
//! shapes real providers send, with network faults in simulated time.
//!
//! The real clients (and the router on top of them) send their HTTP requests here.
//! SimNetwork parses each request as the provider's server would, asks the endpoint's
//! model (usually a SimLLM), and answers with the bytes that provider sends: its JSON
//! layout, its SSE or NDJSON framing, its first and last chunks, where it puts usage,
//! its keep-alive comments, its error envelopes and headers. Each endpoint has a
//! [`Profile`] (OpenAI, Azure, DeepSeek, DashScope, GLM, OpenRouter, vLLM, llama.cpp,
//! Ollama); each response draws among the shapes its profile lists, every one with a
//! public source ([`profile`]). The body then reaches the client in reads whose
//! boundaries are drawn independently of the events ([`ReadPlan`]): inside an event, inside
//! a UTF-8 character, between CR and LF, single bytes, or many events at once.
//!
//! | where | operation | faults |
//! | --- | --- | --- |
//! | before the headers | `network.connect` | `connection_refused`; `timeout` (no answer ever: the client's timeout must fire); `slow_first_byte` (1 to 20 s late); `proxy_error` (a CDN or proxy answers 502/504 with its own page) |
//! | in the body | `network.body` | `reset` (the connection breaks after a seeded number of bytes); `partial_write` (the body just ends there); `timeout` (the server stops sending there: the client's idle timeout must fire) |
//!
//! The model's own failures become HTTP: a refusal is an error status with the
//! provider's error body and headers (a 429 carries Retry-After in the forms that
//! provider uses, or none); an error in the middle of a stream is sent the way that
//! provider sends one; a broken connection is a reset. [`SimNetwork::take_down`] makes an
//! endpoint refuse connections for a simulated interval. [`SimNetwork::with_capture`]
//! keeps every exchange's bytes for checkers ([`capture`]).

mod admit;
mod answer;
mod anthropic;
mod bedrock;
pub mod capture;
mod chat;
mod chat_shapes;
mod clients;
mod embed;
mod embed_serve;
mod format;
pub(crate) mod gemini;
pub(crate) mod headers;
mod ids;
mod json;
mod ollama;
pub mod profile;
pub(crate) mod reads;
pub(crate) mod registry;
pub mod replay;
mod responses;
pub(crate) mod shapes;
mod stamps;
mod stream_body;
mod surface;
mod unparseable;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::cassette::Cassette;
use umi_core::env::Env;
use umi_core::llm::transport::{BodyStream, HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{LanguageModel, LlmError};

use crate::mcp::host::McpHost;
use crate::mcp::{Sessions, SimMcpServer};

pub use anthropic::ANTHROPIC_MARKS;
pub use capture::{BodyEnd, Exchange};
pub use clients::ClientOptions;
pub use format::{Parsed, RequestError, Route};
pub use gemini::GEMINI_MARKS;
pub use ollama::OLLAMA_MARKS;
pub use profile::{Profile, WireFormat};
pub use reads::ReadPlan;
pub(crate) use registry::server_format;
pub use registry::{base_url_for, client_for, ends_in_embeddings};
pub use replay::{
    CassetteMiss, CassetteReport, OnMiss, PastLast, Replay, ReplayOptions, ReplayTiming,
};
pub use responses::RESPONSES_MARKS;

use crate::clock::SimClock;
use crate::environment::SimEnvironment;
use crate::fault::point::{self, unreachable_kind};
use crate::fault::{FaultInjector, NetworkKind};
use crate::rng::{DeterministicRng, streams};
use crate::trace::{NetEvent, Trace};
use format::Responder;

/// Slowest first byte a `network.slow_first_byte` fault delays by, in ms.
pub const SLOW_FIRST_BYTE_MS_MAX: u64 = 20_000;

/// Bytes of a body a `reset` or `partial_write` lets through at most.
pub const BODY_CUT_BYTES_MAX: u64 = 4_096;

/// Largest skew between a server's clock (its `Date` header) and the simulation's, in ms.
pub const SERVER_CLOCK_SKEW_MS_MAX: u64 = 5_000;

/// A server: a base URL, a profile (which fixes its wire format) and the model behind it.
#[derive(Clone)]
pub struct Endpoint {
    base_url: String,
    profile: Profile,
    model: Arc<dyn LanguageModel>,
    api_key: Option<String>,
    gateway: bool,
    replay: Option<Arc<Replay>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An OpenAI-compatible server at `base_url` answering with `model`, in OpenAI's own
    /// shapes (pick another provider's with [`Endpoint::with_profile`]).
    pub fn openai(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            profile: Profile::OpenAi,
            model,
            api_key: None,
            gateway: false,
            replay: None,
        }
    }

    /// An Ollama server (native `/api/chat`) at `base_url` answering with `model`.
    pub fn ollama(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            profile: Profile::Ollama,
            ..Self::openai(base_url, model)
        }
    }

    /// Anthropic's Messages API at `base_url` (`https://api.anthropic.com`, without
    /// `/v1`) answering with `model`.
    pub fn anthropic(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            profile: Profile::Anthropic,
            ..Self::openai(base_url, model)
        }
    }

    /// OpenAI's Responses API at `base_url` (`https://api.openai.com/v1`) answering with
    /// `model`.
    pub fn openai_responses(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            profile: Profile::OpenAiResponses,
            ..Self::openai(base_url, model)
        }
    }

    /// Google's Gemini API at `base_url` (`https://generativelanguage.googleapis.com`,
    /// without the version) answering with `model`.
    pub fn gemini(base_url: &str, model: Arc<dyn LanguageModel>) -> Self {
        Self {
            profile: Profile::Gemini,
            ..Self::openai(base_url, model)
        }
    }

    /// Serves in `profile`'s shapes (and its wire format).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Requires the key (`Authorization: Bearer <key>`, Azure's `api-key`, Anthropic's
    /// `x-api-key`); a wrong or
    /// missing key gets the provider's 401.
    pub fn with_api_key(mut self, key: &str) -> Self {
        self.api_key = Some(key.to_owned());
        self
    }

    /// Puts an API gateway in front that answers rate limits with an HTTP-date
    /// Retry-After (WSO2 API Manager's throttling fault,
    /// `Retry-After: Wed, 18 Sep 2019 05:34:00 GMT`).
    pub fn behind_gateway(mut self) -> Self {
        self.gateway = true;
        self
    }

    /// Answers from `cassette` ([`replay`]): the recorded bytes, under the seed's
    /// reads, timing and faults; the model answers only the misses `options` send to it.
    pub fn with_cassette(mut self, cassette: Arc<Cassette>, options: ReplayOptions) -> Self {
        self.replay = Some(Arc::new(Replay::new(cassette, options)));
        self
    }

    /// Answers from an indexed cassette, shared (`dst serve` indexes its once).
    pub fn with_replay(mut self, replay: Arc<Replay>) -> Self {
        self.replay = Some(replay);
        self
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }
}

/// An endpoint as SimNetwork keeps it: with its server's clock skew and the stream its
/// server version is drawn from.
#[derive(Debug, Clone)]
struct Served {
    endpoint: Endpoint,
    skew_ms: i64,
    server: DeterministicRng,
}

/// The simulated network. Build one per run.
pub struct SimNetwork {
    endpoints: Vec<Served>,
    downtime: Mutex<Vec<(String, Duration, Duration)>>,
    faults: Arc<FaultInjector>,
    clock: SimClock,
    trace: Arc<Trace>,
    env: Env,
    rng: Mutex<DeterministicRng>,
    /// The network's stream, from which each response's stream is forked.
    root: DeterministicRng,
    occurrences: Mutex<BTreeMap<[u8; 32], u64>>,
    capture: Option<Arc<Mutex<Vec<Exchange>>>>,
    mcp: Vec<Arc<McpHost>>,
    /// Each cassette endpoint's replay state, by base URL.
    replays: Mutex<BTreeMap<String, replay::ReplayState>>,
    /// Identical requests a cassette served before this network existed.
    replay_offset: usize,
}

impl std::fmt::Debug for SimNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNetwork")
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

fn whole_body(body: Vec<u8>) -> BodyStream {
    futures::stream::iter([Ok(body)]).boxed()
}

impl SimNetwork {
    /// A network with no endpoints, for the run `sim`.
    pub fn new(sim: &SimEnvironment) -> Self {
        let root = sim.fork_rng(streams::seed::NETWORK.as_str());
        Self {
            endpoints: Vec::new(),
            downtime: Mutex::new(Vec::new()),
            faults: sim.faults().clone(),
            clock: sim.clock().clone(),
            trace: sim.trace().clone(),
            env: sim.env(),
            rng: Mutex::new(root.stream(streams::network::FAULTS)),
            root,
            occurrences: Mutex::new(BTreeMap::new()),
            capture: None,
            mcp: Vec::new(),
            replays: Mutex::new(BTreeMap::new()),
            replay_offset: 0,
        }
    }

    /// Serves `server` at the MCP endpoint `url` (`http://tools.sim/mcp`): requests to
    /// exactly that URL reach it over MCP's Streamable HTTP transport ([`crate::mcp`]).
    /// Its faults are MCP's and its tools' (`tool.*`): the network's own (`network.*`,
    /// [`SimNetwork::take_down`]) and the capture are the model endpoints' only.
    pub fn with_mcp(self, url: &str, server: SimMcpServer) -> Self {
        self.with_mcp_sessions(url, server, Sessions::default(), None)
    }

    /// Like [`SimNetwork::with_mcp`], for a server that already has `sessions` and,
    /// when `sse` says, answers in SSE or JSON (`dst serve` carries both from one
    /// request's simulation to the next).
    pub(crate) fn with_mcp_sessions(
        mut self,
        url: &str,
        server: SimMcpServer,
        sessions: Sessions,
        sse: Option<bool>,
    ) -> Self {
        assert!(
            self.mcp.iter().all(|host| host.url != url),
            "two MCP servers at {url}"
        );
        let rng = self
            .root
            .fork_parts(&[streams::network::MCP.as_bytes(), url.as_bytes()]);
        self.mcp
            .push(Arc::new(McpHost::new(url, server, sessions, rng, sse)));
        self
    }

    /// The MCP server at `url` (its query aside), if there is one.
    fn mcp_host(&self, url: &str) -> Option<&Arc<McpHost>> {
        let path = url.split('?').next().unwrap_or("");
        self.mcp.iter().find(|host| host.url == path)
    }

    /// The sessions the MCP server at `url` has now (`None`: no server there).
    pub fn mcp_sessions(&self, url: &str) -> Option<Sessions> {
        self.mcp
            .iter()
            .find(|host| host.url == url)
            .map(|host| host.sessions())
    }

    /// Adds an endpoint. Its server's clock is off the simulation's by a seeded skew (at
    /// most [`SERVER_CLOCK_SKEW_MS_MAX`]), seen in its `Date` header.
    pub fn with_endpoint(mut self, endpoint: Endpoint) -> Self {
        let mut rng = self.root.fork_parts(&[
            streams::network::SKEW.as_bytes(),
            endpoint.base_url.as_bytes(),
        ]);
        let skew = rng.range_inclusive(0, 2 * SERVER_CLOCK_SKEW_MS_MAX);
        let skew_ms = skew as i64 - SERVER_CLOCK_SKEW_MS_MAX as i64;
        let server = self.root.fork_parts(&[
            streams::network::SERVER.as_bytes(),
            endpoint.base_url.as_bytes(),
        ]);
        self.endpoints.push(Served {
            endpoint,
            skew_ms,
            server,
        });
        self
    }

    /// Counts `served` identical requests as answered before each request (`dst serve`
    /// answers each request in a network of its own, and knows how many times its scope
    /// asked the same before).
    #[cfg(feature = "serve")]
    pub(crate) fn with_replay_offset(mut self, served: u64) -> Self {
        self.replay_offset = usize::try_from(served).unwrap_or(usize::MAX);
        self
    }

    /// Keeps every exchange (request, status, headers, the reads the client got, how the
    /// body ended) for checkers: [`SimNetwork::exchanges`].
    pub fn with_capture(mut self) -> Self {
        self.capture = Some(Arc::new(Mutex::new(Vec::new())));
        self
    }

    /// The exchanges so far (empty without [`SimNetwork::with_capture`]), copied.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.with_exchanges(<[Exchange]>::to_vec)
    }

    /// What `read` makes of the exchanges so far, read in place (a checker that looks at
    /// one exchange per call copies that one, not the whole log, which grows all run).
    pub fn with_exchanges<R>(&self, read: impl FnOnce(&[Exchange]) -> R) -> R {
        match &self.capture {
            Some(log) => read(&log.lock().unwrap_or_else(PoisonError::into_inner)),
            None => read(&[]),
        }
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

    /// The response's own stream: forked from the endpoint, the request's bytes and how
    /// many times those bytes were sent before, so it does not depend on the order of
    /// other requests.
    fn response_rng(&self, base_url: &str, hash: &[u8; 32]) -> DeterministicRng {
        let hash = *hash;
        let occurrence = {
            let mut occurrences = self
                .occurrences
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let count = occurrences.entry(hash).or_insert(0);
            *count += 1;
            *count - 1
        };
        self.root
            .fork_parts(&[base_url.as_bytes(), &hash, &occurrence.to_le_bytes()])
    }

    fn cover_all(&self, marks: Vec<&'static str>) {
        for mark in marks {
            umi_core::env::Environment::cover(self.env.as_ref(), mark);
        }
    }

    /// The connect faults; `Some` is the response that ends the exchange there.
    async fn connect(&self, served: &Served) -> Result<Option<HttpResponse>, TransportError> {
        let Some(kind) = self.faults.decide(&point::NETWORK_CONNECT) else {
            return Ok(None);
        };
        match kind.network() {
            Some(NetworkKind::ConnectionRefused) => Err(TransportError::Connect {
                reason: "connection refused (simulated)".into(),
            }),
            Some(NetworkKind::Timeout) => {
                // The server never answers; only the client's own timeout ends this.
                std::future::pending::<()>().await;
                unreachable!("a pending future never completes")
            }
            Some(NetworkKind::SlowFirstByte) => {
                let delay = self.draw(1_000, SLOW_FIRST_BYTE_MS_MAX);
                self.clock.sleep(Duration::from_millis(delay)).await;
                Ok(None)
            }
            Some(NetworkKind::ProxyError) => {
                let choice = self.draw(0, u64::MAX);
                let page = headers::proxy_page(served.endpoint.profile, choice);
                self.trace.emit(NetEvent::Proxy {
                    status: page.status,
                    mark: page.mark,
                });
                umi_core::env::Environment::cover(self.env.as_ref(), page.mark);
                let mut response_headers =
                    vec![("content-type".to_owned(), page.content_type.to_owned())];
                response_headers.push(("date".to_owned(), self.date(served)));
                response_headers.push(("server".to_owned(), page.server.to_owned()));
                Ok(Some(HttpResponse {
                    status: page.status,
                    headers: response_headers,
                    body: whole_body(page.body),
                }))
            }
            // A body's kinds, and other domains': not drawn at a connect.
            Some(NetworkKind::Reset | NetworkKind::PartialWrite) | None => {
                unreachable_kind(&point::NETWORK_CONNECT, kind)
            }
        }
    }

    /// The server's "now", as its `Date` header says it.
    fn server_now_ms(&self, served: &Served) -> u64 {
        self.clock
            .unix_time_ms()
            .saturating_add_signed(served.skew_ms)
    }

    fn date(&self, served: &Served) -> String {
        headers::http_date(self.server_now_ms(served))
    }

    /// The headers of a response: content type, date, and the profile's own.
    fn response_headers(
        &self,
        served: &Served,
        responder: &mut dyn Responder,
        status: u16,
        stream: bool,
        rng: &mut DeterministicRng,
    ) -> Vec<(String, String)> {
        let mut out = vec![
            (
                "content-type".to_owned(),
                responder.content_type(stream && status == 200).to_owned(),
            ),
            ("date".to_owned(), self.date(served)),
        ];
        out.extend(headers::profile_headers(
            responder.header_set(),
            status,
            self.server_now_ms(served),
            rng,
        ));
        out.extend(responder.own_headers(status, self.server_now_ms(served)));
        out
    }

    /// A refusal with its headers: the Retry-After of a 429 in the form drawn (an
    /// HTTP date behind a gateway).
    fn refusal(
        &self,
        served: &Served,
        mut responder: Box<dyn Responder>,
        error: &LlmError,
        param: Option<&str>,
        rng: &mut DeterministicRng,
    ) -> (HttpResponse, Option<u64>) {
        let (status, body) = responder.refusal(error, param);
        let mut response_headers =
            self.response_headers(served, responder.as_mut(), status, false, rng);
        let mut meant_ms = None;
        if status == 429
            && let LlmError::RateLimit {
                retry_after_ms: Some(wait_ms),
            } = error
        {
            let form = if served.endpoint.gateway {
                Some(shapes::RetryAfterForm::HttpDate)
            } else {
                responder.retry_after()
            };
            if let Some(form) = form {
                let (retry_headers, mark) =
                    headers::retry_after(form, *wait_ms, self.server_now_ms(served));
                meant_ms = (!retry_headers.is_empty()).then_some(*wait_ms);
                response_headers.extend(retry_headers);
                umi_core::env::Environment::cover(self.env.as_ref(), mark);
            }
            if responder.wait_in_body() {
                // The body says how long (Gemini's `RetryInfo`), header or not.
                meant_ms = Some(*wait_ms);
            }
        }
        self.cover_all(responder.marks());
        self.trace.emit(NetEvent::Refuse {
            profile: served.endpoint.profile.name(),
            status,
            error: error.kind().as_str(),
        });
        (
            HttpResponse {
                status,
                headers: response_headers,
                body: whole_body(body),
            },
            meant_ms,
        )
    }

    /// Wraps a body with the `network.body` faults.
    fn body_faults(&self, body: BodyStream) -> BodyStream {
        let Some(kind) = self.faults.decide(&point::NETWORK_BODY) else {
            return body;
        };
        let left = self.draw(0, BODY_CUT_BYTES_MAX) as usize;
        self.trace.emit(NetEvent::Cut {
            fault: kind.name(),
            after_bytes: left as u64,
        });
        reads::cut(body, left, kind)
    }

    /// Traces a request with the hash of what its response depends on (the determinism
    /// check compares it: a body that differs between two runs of a seed is named as the
    /// cause), and returns that hash.
    fn trace_request(&self, request: &HttpRequest, endpoint: &Endpoint) -> [u8; 32] {
        let hashed_url = headers::redact_url(&request.url);
        let hashed_url = hashed_url.as_deref().unwrap_or(&request.url).as_bytes();
        let request_hash = crate::llm::memo::sha256(&[hashed_url, &request.body]);
        // A key in the query (Gemini's `?key=`) is masked before anything records the URL.
        let url = headers::redact_url(&request.url);
        self.trace.emit(NetEvent::Request {
            method: request.method.to_string(),
            url: url.unwrap_or_else(|| request.url.clone()),
            served_by: endpoint.profile.name(),
            body: Some([
                request_hash[0],
                request_hash[1],
                request_hash[2],
                request_hash[3],
            ]),
        });
        request_hash
    }

    fn finish(&self, response: HttpResponse, exchange: Option<Exchange>) -> HttpResponse {
        match (&self.capture, exchange) {
            (Some(log), Some(mut exchange)) => {
                exchange.status = response.status;
                exchange.headers.clone_from(&response.headers);
                let body = capture::record(log.clone(), exchange, response.body);
                HttpResponse { body, ..response }
            }
            _ => response,
        }
    }
}

#[async_trait]
impl Transport for SimNetwork {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        if let Some(host) = self.mcp_host(&request.url) {
            return host.serve(request).await;
        }
        let served = self
            .endpoints
            .iter()
            .find(|served| request.url.starts_with(&served.endpoint.base_url))
            .cloned()
            .ok_or_else(|| TransportError::Connect {
                reason: format!("no route to {} (simulated)", request.url),
            })?;
        let endpoint = &served.endpoint;
        let request_hash = self.trace_request(&request, endpoint);
        if self.is_down(&endpoint.base_url) {
            self.trace.emit(NetEvent::Down {
                base_url: endpoint.base_url.clone(),
            });
            return Err(TransportError::Connect {
                reason: "connection refused: endpoint down (simulated)".into(),
            });
        }
        let mut exchange = self
            .capture
            .as_ref()
            .map(|_| Exchange::new(&request, endpoint));
        if let Some(proxy) = self.connect(&served).await? {
            return Ok(self.finish(proxy, exchange));
        }
        let format = server_format(endpoint.profile.format());
        let mut rng = self.response_rng(&endpoint.base_url, &request_hash);
        let served_model = endpoint.model.model_ref().model.clone();
        let created_s = self.server_now_ms(&served) / 1_000;
        let mut responder = format.responder(
            endpoint.profile,
            served.server.clone(),
            rng.substream(streams::request::RESPONDER),
            created_s,
            &served_model,
        );
        if let Some(replay) = &endpoint.replay {
            let replay_rng = rng.substream(streams::request::REPLAY);
            let replayed = self
                .replay(&served, replay, &request, responder, replay_rng)
                .await;
            if let replay::Replayed::Response(response) = replayed {
                return Ok(self.finish(response, exchange));
            }
            responder = format.responder(
                endpoint.profile,
                served.server.clone(),
                rng.substream(streams::request::RESPONDER),
                created_s,
                &served_model,
            );
        }
        // After the cassette: a recorded embeddings exchange is played back like any other.
        if let Some(response) = self.embeddings(&served, &request, &rng).await {
            return Ok(self.finish(response, exchange));
        }
        let (parsed, responder) = match self.admit(&served, &request, format, responder, &mut rng) {
            Ok(admitted) => admitted,
            Err(refused) => return Ok(self.finish(refused, exchange)),
        };
        let response = self
            .answer(&served, &parsed, responder, rng, exchange.as_mut())
            .await;
        Ok(self.finish(response, exchange))
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
