//! rig inside a simulation: an HTTP client for rig's provider clients
//! (`rig_core::http_client::HttpClientExt`) that sends their requests through a
//! [`Transport`] (usually [`crate::SimNetwork`]), whole and streamed replies both.
//!
//! ```no_run
//! # fn demo(sim: &umi_dst::SimEnvironment) {
//! use std::sync::Arc;
//! use umi_dst::{Endpoint, SimNetwork};
//! let network = Arc::new(SimNetwork::new(sim).with_endpoint(Endpoint::openai("https://api.openai.sim/v1", sim.llm())));
//! let openai = umi_dst::adapters::rig::openai(network, "https://api.openai.sim/v1");
//! // `openai` is an ordinary rig `OpenAI` client: `openai.chat("gpt-4o")` is the model
//! // to hand the agent under test. Any other rig provider takes the same client:
//! // `Config::…connect(SimHttpClient::new(network))` or `client.with_http(…)`.
//! # }
//! ```
//!
//! Built against rig-core 0.44 (`default-features = false`: no reqwest, no TLS), the
//! newest release whose rust-version (1.95) our toolchain meets.
//!
//! What rig does with time and randomness (0.44, read from its source, on the paths a
//! chat model uses: `Model::call`, `Model::stream`, the OpenAI chat, Ollama and
//! Anthropic wires and the HTTP driver):
//! - **no retries, no timeouts, no backoff** of its own on HTTP: a failure is returned
//!   at once as a `ProviderError` (with `is_retryable()` to let the caller decide), so
//!   nothing rig does waits. An agent that retries or times out does so itself;
//! - **its timers are wall-clock**: `rig_core::wasm_compat::{sleep, timeout}` run on
//!   `futures-timer`'s own thread, not on tokio, so they ignore the simulated clock
//!   (real waits, a run that depends on the machine's speed). rig uses them only for
//!   the Responses WebSocket and the ChatGPT/Copilot device logins (which also read
//!   `Instant::now`, as Gemini's context caching reads `SystemTime::now`), none of them
//!   on a chat path; an agent that calls them itself is not deterministic: use tokio's
//!   time instead;
//! - **OS randomness**: a tool call the provider sent without an id (Ollama's native
//!   API never sends one) gets a random v4 UUID (`LocalCallId`, from `getrandom`).
//!   It never reaches the wire (requests spell such ids `tool-0`, `tool-1`, … in order),
//!   but it is in the `ToolCall` the agent sees: an agent that logs, hashes or keys a
//!   map by it differs from run to run. `rig_core::id::generate` (`fastrand`, seeded
//!   from OS entropy) names requests only for the ChatGPT and Copilot providers;
//! - **process-wide counters**: `rig_core::id::RunId` counts up across the process, so
//!   two runs of one seed in one process (the determinism check) see different values;
//! - **serde_json `preserve_order`**: rig-core turns this feature on, so in any build
//!   with the `rig` feature every JSON object in the process keeps insertion order
//!   instead of sorting its keys. That does not change what a seed means: every seeded
//!   path of Umi (SimLLM's answers and schema walks, the request hash, umi-core's request
//!   bodies and prompts, the simulated servers' bodies) serializes and iterates JSON
//!   through `umi_core::canonical_json`, keys sorted, so a seed gives the same bytes and
//!   the same draws in a build with `rig` as in one without, and a seed found in either
//!   replays in the other. `make test` runs all of umi-dst's integration tests in the
//!   `rig` build too (`sim_llm::golden` and
//!   `determinism::wire_bytes_do_not_depend_on_map_order` pin the bytes). The JSON rig
//!   itself writes (its request bodies) keeps rig's own order, which is the same in
//!   every `rig` build.
//!
//! A multipart request (rig's transcription and file uploads) cannot go through
//! SimNetwork: it fails with [`SimHttpError::MultipartRequest`], naming it.

#![allow(
    clippy::result_large_err,
    reason = "rig's http_client::Error is the error its HttpClientExt trait requires"
)]

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use rig_core::http_client::{
    self, HttpClientExt, LazyBody, MultipartForm, Request, Response, StreamingResponse,
};
use rig_core::providers::ollama::{Ollama, OllamaConfig};
use rig_core::providers::openai::{OpenAI, OpenAIConfig};
use umi_core::llm::secrets::redact_url;
use umi_core::llm::transport::{HttpResponse, Transport};

use super::http_bridge;
use crate::constants::ADAPTER_ERROR_BODY_BYTES_MAX;

/// What the adapter cannot do with a request or a simulated response; rig reports it as
/// a transport failure (`ProviderError::Http`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimHttpError {
    /// rig sent a multipart body (an upload), which SimNetwork does not take.
    #[error("{method} {url}: a multipart request cannot go through SimNetwork")]
    MultipartRequest {
        /// The request's method.
        method: String,
        /// The request's URL, credentials redacted.
        url: String,
    },
    /// The simulated response could not be made an `http` response (a header SimNetwork
    /// should never send).
    #[error("{url}: the simulated response is not valid HTTP: {reason}")]
    InvalidResponse {
        /// The request's URL, credentials redacted.
        url: String,
        /// What `http` refused.
        reason: String,
    },
}

/// rig as the determinism check knows it (see the module docs): a client built over
/// this adapter notes it in the run, and a divergence names these hazards where they fit.
pub static CLIENT: crate::adapters::foreign::ForeignClient =
    crate::adapters::foreign::ForeignClient {
        name: "rig-core 0.44",
        hazards: &[
            crate::adapters::foreign::Hazard {
                source: "rig_core::wasm_compat::{sleep, timeout} wait on futures-timer's wall-clock \
                     thread, not on the simulated clock",
                effect: crate::adapters::foreign::Effect::Timing,
            },
            crate::adapters::foreign::Hazard {
                source: "a tool call sent without an id gets a random UUID (LocalCallId, from \
                     getrandom): an agent that logs, hashes or keys by it differs per run",
                effect: crate::adapters::foreign::Effect::Order,
            },
            crate::adapters::foreign::Hazard {
                source: "rig_core::id::RunId counts up across the process, so a second run of a \
                     seed sees other values",
                effect: crate::adapters::foreign::Effect::Order,
            },
        ],
    };

/// rig's HTTP client over `transport`: give it to any rig provider configuration's
/// `connect`, or to a client's `with_http`.
#[derive(Clone, Debug)]
pub struct SimHttpClient {
    transport: Arc<dyn Transport>,
}

impl SimHttpClient {
    /// A client sending through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        crate::adapters::foreign::note(&CLIENT);
        Self { transport }
    }
}

/// A rig OpenAI client whose requests go to `transport`, with `base_url` as its API base
/// (`https://api.openai.sim/v1`) and a placeholder key. Its `chat(model)` is the Chat
/// Completions model SimNetwork's OpenAI endpoints serve.
pub fn openai(transport: Arc<dyn Transport>, base_url: &str) -> OpenAI {
    OpenAIConfig::new("sk-umi-simulated")
        .with_base_url(base_url)
        .connect(SimHttpClient::new(transport))
}

/// A rig Ollama client whose requests go to `transport`, with `base_url` as the daemon
/// (`http://ollama.sim:11434`). Its `native_completion(model)` speaks `/api/chat`, as
/// SimNetwork's Ollama endpoints do.
pub fn ollama(transport: Arc<dyn Transport>, base_url: &str) -> Ollama {
    OllamaConfig::new()
        .with_base_url(base_url)
        .connect(SimHttpClient::new(transport))
}

/// The parts of a request rig built, as SimNetwork takes it, and its URL for errors.
fn to_sim<T: Into<Bytes>>(request: Request<T>) -> (umi_core::llm::transport::HttpRequest, String) {
    let (parts, body) = request.into_parts();
    let body: Bytes = body.into();
    let url = redact_url(&parts.uri.to_string());
    let request = http_bridge::request(&parts.method, &parts.uri, &parts.headers, body.to_vec());
    (request, url)
}

/// A response-less failure, as rig's own transport reports one.
fn instance(error: impl std::error::Error + Send + Sync + 'static) -> http_client::Error {
    http_client::Error::instance(error)
}

/// Sends `request`; a non-success status becomes the error rig's transports report for
/// it (status, body and headers kept, so `Retry-After` stays readable), as rig-reqwest
/// does. Returns the success response and the URL for later errors.
async fn exchange(
    transport: &dyn Transport,
    request: umi_core::llm::transport::HttpRequest,
    url: &str,
) -> http_client::Result<(http::response::Builder, HttpResponse)> {
    let response = transport.send(request).await.map_err(instance)?;
    let head = http_bridge::response_head(&response);
    if (200..300).contains(&response.status) {
        return Ok((head, response));
    }
    let status = http::StatusCode::from_u16(response.status)
        .map_err(|error| invalid(url, error.to_string()))?;
    let headers = head
        .headers_ref()
        .cloned()
        .ok_or_else(|| invalid(url, "a header name or value http refuses".to_owned()))?;
    let body = read_body(response, ADAPTER_ERROR_BODY_BYTES_MAX).await?;
    Err(http_client::Error::non_success_with_details(
        status,
        headers,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

fn invalid(url: &str, reason: String) -> http_client::Error {
    instance(SimHttpError::InvalidResponse {
        url: url.to_owned(),
        reason,
    })
}

/// The body, read to its end or to `bytes_max` (the rest is cut off); a broken
/// connection is rig's transport error.
async fn read_body(response: HttpResponse, bytes_max: usize) -> http_client::Result<Vec<u8>> {
    let mut body = response.body;
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(instance)?;
        let room = bytes_max.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= bytes_max {
            break;
        }
    }
    Ok(bytes)
}

impl HttpClientExt for SimHttpClient {
    fn send<T, U>(
        &self,
        request: Request<T>,
    ) -> impl Future<Output = http_client::Result<Response<LazyBody<U>>>> + Send + 'static
    where
        T: Into<Bytes> + Send,
        U: From<Bytes> + Send + 'static,
    {
        let transport = self.transport.clone();
        let (request, url) = to_sim(request);
        async move {
            let (head, response) = exchange(transport.as_ref(), request, &url).await?;
            // rig reads a whole reply as one body: the same bytes SimNetwork streams, in
            // full (a cut or reset while reading is rig's transport error).
            let body: LazyBody<U> = Box::pin(async move {
                let mut stream = response.body;
                let mut bytes = Vec::new();
                while let Some(chunk) = stream.next().await {
                    bytes.extend_from_slice(&chunk.map_err(instance)?);
                }
                Ok(U::from(Bytes::from(bytes)))
            });
            head.body(body)
                .map_err(|error| invalid(&url, error.to_string()))
        }
    }

    fn send_multipart<U>(
        &self,
        request: Request<MultipartForm>,
    ) -> impl Future<Output = http_client::Result<Response<LazyBody<U>>>> + Send + 'static
    where
        U: From<Bytes> + Send + 'static,
    {
        let error = SimHttpError::MultipartRequest {
            method: request.method().to_string(),
            url: redact_url(&request.uri().to_string()),
        };
        std::future::ready(Err(instance(error)))
    }

    fn send_streaming<T>(
        &self,
        request: Request<T>,
    ) -> impl Future<Output = http_client::Result<StreamingResponse>> + Send
    where
        T: Into<Bytes> + Send,
    {
        let transport = self.transport.clone();
        let (request, url) = to_sim(request);
        async move {
            let (head, response) = exchange(transport.as_ref(), request, &url).await?;
            // Each read SimNetwork makes is one chunk rig's framer sees, as a socket's
            // reads would be; a cut or reset ends the stream with rig's transport error.
            let body: http_client::BoxedStream = Box::pin(
                response
                    .body
                    .map(|chunk| chunk.map(Bytes::from).map_err(instance)),
            );
            head.body(body)
                .map_err(|error| invalid(&url, error.to_string()))
        }
    }
}
