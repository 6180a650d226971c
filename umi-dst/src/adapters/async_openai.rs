//! async-openai inside a simulation: a tower service for
//! `async_openai::Client::with_http_service` that sends the client's requests through a
//! [`Transport`] (usually [`crate::SimNetwork`]) and hands back its responses as
//! `reqwest::Response`s, streamed bodies included.
//!
//! ```no_run
//! # fn demo(sim: &umi_dst::SimEnvironment) {
//! use std::sync::Arc;
//! use umi_dst::{Endpoint, SimNetwork};
//! let network = Arc::new(SimNetwork::new(sim).with_endpoint(Endpoint::openai("https://api.openai.sim/v1", sim.llm())));
//! let client = umi_dst::adapters::async_openai::client(network, "https://api.openai.sim/v1");
//! // `client` is an ordinary async_openai::Client: hand it to the agent under test.
//! # }
//! ```
//!
//! What async-openai does with time and randomness (0.43, read from its source):
//! - its retry layers (`OpenAIRetryLayer`, `SimpleRetryPolicy`) wait with
//!   `tokio::time::sleep`, which inside a simulation is simulated time, and add no
//!   jitter: retries replay exactly. `with_http_service` replaces the default stack, so
//!   an agent that wants retries adds the layer itself (as it would in production);
//! - it has no timeout of its own: add `tower::timeout` (also tokio time, so
//!   simulated), or a `network.timeout` fault stalls the call until the run's limit;
//! - it reads OS randomness only for download file names and the wall clock only to
//!   verify webhooks, neither on the chat or Responses paths.
//!
//! So [`CLIENT`] lists no hazards; the service notes it in the run
//! ([`crate::adapters::foreign::note`]), and a determinism failure in a run that uses it says it
//! was there and that its source showed no clock or randomness of its own.
//!
//! A request body async-openai streams (multipart uploads) cannot go through
//! SimNetwork: such a request fails with an error naming it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use futures::StreamExt;
use umi_core::llm::transport::Transport;

use super::http_bridge;

/// async-openai as the determinism check knows it: on the chat and Responses paths it
/// reads no clock or randomness of its own (see the module docs).
pub static CLIENT: crate::adapters::foreign::ForeignClient =
    crate::adapters::foreign::ForeignClient {
        name: "async-openai 0.43",
        hazards: &[],
    };

/// The service: async-openai's requests through `transport`.
#[derive(Clone, Debug)]
pub struct SimService {
    transport: Arc<dyn Transport>,
}

impl SimService {
    /// A service sending through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        crate::adapters::foreign::note(&CLIENT);
        Self { transport }
    }
}

/// Makes building an async-openai client safe in a build where reqwest has no TLS
/// provider of its own (`rustls-no-provider`, as umi-core's transport uses): installs
/// rustls's ring provider for the process. [`client`] calls it; call it yourself before
/// `async_openai::Client::with_config` in such a build.
pub fn prepare() {
    umi_core::llm::transport::install_crypto_provider();
}

/// An async-openai client whose requests go to `transport`, with `base_url` as its API
/// base (`https://api.openai.sim/v1`) and a placeholder key.
pub fn client(transport: Arc<dyn Transport>, base_url: &str) -> async_openai::Client<OpenAIConfig> {
    prepare();
    let config = OpenAIConfig::new()
        .with_api_base(base_url)
        .with_api_key("sk-umi-simulated");
    async_openai::Client::with_config(config).with_http_service(SimService::new(transport))
}

fn failure(message: String) -> OpenAIError {
    OpenAIError::InvalidArgument(message)
}

async fn send(
    transport: Arc<dyn Transport>,
    factory: HttpRequestFactory,
) -> Result<reqwest::Response, OpenAIError> {
    let request = factory.build().await?;
    let body = match request.body() {
        None => Vec::new(),
        Some(body) => body
            .as_bytes()
            .ok_or_else(|| {
                failure(format!(
                    "{} {}: a streamed request body cannot go through SimNetwork",
                    request.method(),
                    request.url()
                ))
            })?
            .to_vec(),
    };
    let http = http_bridge::request(request.method(), request.url(), request.headers(), body);
    // A refused or broken connection is what reqwest would report: a transport error.
    let response = transport
        .send(http)
        .await
        .map_err(|error| OpenAIError::Boxed(Box::new(error)))?;
    let builder = http_bridge::response_head(&response);
    let body = response.body.map(|chunk| {
        chunk
            .map(bytes::Bytes::from)
            .map_err(|e| std::io::Error::other(e.to_string()))
    });
    let response = builder
        .body(reqwest::Body::wrap_stream(body))
        .map_err(|error| failure(format!("a simulated response is not valid HTTP: {error}")))?;
    Ok(reqwest::Response::from(response))
}

impl tower::Service<HttpRequestFactory> for SimService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        Box::pin(send(self.transport.clone(), factory))
    }
}
