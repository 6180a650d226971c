//! [`SimMcpHttpClient`], the HTTP client rmcp's Streamable HTTP transport is given, and
//! the transports built over it ([`transport`], [`with_config`]). What it does for each
//! request is in `requests.rs`.

use std::sync::Arc;

use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport};

use super::error::{Error, client_error};
use super::hazards::CLIENT;

/// rmcp's Streamable HTTP client over `transport`: give it to
/// `StreamableHttpClientTransport::with_client`, or use [`transport`].
#[derive(Clone, Debug)]
pub struct SimMcpHttpClient {
    transport: Arc<dyn Transport>,
}

impl SimMcpHttpClient {
    /// A client sending through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        crate::adapters::foreign::note(&CLIENT);
        Self { transport }
    }

    /// Sends `request` through the transport; a broken connection is rmcp's `Client` error.
    pub(super) async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error> {
        self.transport.send(request).await.map_err(client_error)
    }
}

/// rmcp's Streamable HTTP client transport to the MCP server at `url`, its requests sent
/// through `transport` (`Arc<SimNetwork>` works as is), with rmcp's default
/// configuration. Hand it to rmcp: `().serve(transport(network, url)).await`.
///
/// It spawns rmcp's worker on the current tokio runtime, so call it inside a simulation.
pub fn transport(
    transport: Arc<dyn Transport>,
    url: &str,
) -> StreamableHttpClientTransport<SimMcpHttpClient> {
    with_config(
        transport,
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    )
}

/// Like [`transport`], with rmcp's `config` (its URI, timeouts, limits, whether to
/// initialize again on an expired session).
pub fn with_config(
    transport: Arc<dyn Transport>,
    config: StreamableHttpClientTransportConfig,
) -> StreamableHttpClientTransport<SimMcpHttpClient> {
    StreamableHttpClientTransport::with_client(SimMcpHttpClient::new(transport), config)
}
