//! The HTTP transport the provider clients speak through.
//!
//! A client builds an [`HttpRequest`] and gets back the status, the headers and the body
//! as a byte stream. Production uses [`ReqwestTransport`] (reqwest with rustls); tests
//! replay recorded responses; simulations use umi-dst's SimNetwork, which serves a
//! simulated model in the real wire formats, so the clients' own parsing, error mapping
//! and timeouts are what the seeds exercise. Timeouts are not the transport's business:
//! the clients apply them with the injected environment's clock.

use std::fmt;

use async_trait::async_trait;
use futures::stream::BoxStream;

use super::error::LlmError;
use super::secrets::{redact_headers, redact_url};

/// An HTTP request. `Debug` redacts secret headers (`authorization`, `x-api-key`,
/// `api-key`, and any whose name says key, token or secret) and the URL's credentials;
/// the body is shown as text.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The full URL.
    pub url: String,
    /// Headers, in order (names as given).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &redact_url(&self.url))
            .field("headers", &redact_headers(&self.headers))
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

/// A response body, chunk by chunk.
pub type BodyStream = BoxStream<'static, Result<Vec<u8>, TransportError>>;

/// An HTTP response: status and headers now, the body as it arrives.
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers (names lowercase).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: BodyStream,
}

impl HttpResponse {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &redact_headers(&self.headers))
            .finish_non_exhaustive()
    }
}

/// A failure below HTTP: no connection, or a connection that broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Could not connect (refused, DNS, TLS).
    #[error("cannot connect: {reason}")]
    Connect {
        /// What happened.
        reason: String,
    },
    /// The connection broke after it was made (reset, closed mid-body).
    #[error("connection reset: {reason}")]
    Reset {
        /// What happened.
        reason: String,
    },
}

impl From<TransportError> for LlmError {
    fn from(error: TransportError) -> Self {
        LlmError::Connection {
            reason: error.to_string(),
        }
    }
}

/// Sends HTTP requests.
#[async_trait]
pub trait Transport: Send + Sync + fmt::Debug {
    /// Sends `request` and returns once the response's headers arrived.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError>;
}

/// A shared transport is a transport (a recorder can wrap the one a test keeps).
#[async_trait]
impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        (**self).send(request).await
    }
}

#[cfg(feature = "http")]
pub use reqwest_transport::{ReqwestTransport, install_crypto_provider};

#[cfg(feature = "http")]
mod reqwest_transport {
    use async_trait::async_trait;
    use futures::StreamExt;

    use super::{HttpRequest, HttpResponse, Transport, TransportError};
    use crate::llm::secrets::redact_patterns;

    /// The production transport: reqwest over rustls (ring), HTTP/1.1, no timeouts of
    /// its own (the clients time requests with the environment's clock).
    #[derive(Debug, Clone)]
    pub struct ReqwestTransport {
        client: reqwest::Client,
    }

    /// Installs rustls's ring provider for the process, unless one is installed already.
    /// A `reqwest::Client` built with `rustls-no-provider` (this crate's choice) panics
    /// without one; call this before building one yourself (an async-openai client, say).
    pub fn install_crypto_provider() {
        // Several libraries may race to install a process-wide provider; any one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }

    impl ReqwestTransport {
        /// A transport with a connection pool and rustls.
        pub fn new() -> Result<Self, TransportError> {
            install_crypto_provider();
            let client = reqwest::Client::builder()
                .user_agent(concat!("umi/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|error| TransportError::Connect {
                    reason: error.to_string(),
                })?;
            Ok(Self { client })
        }
    }

    #[async_trait]
    impl Transport for ReqwestTransport {
        async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
            let method =
                reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|error| {
                    TransportError::Connect {
                        reason: error.to_string(),
                    }
                })?;
            let mut builder = self.client.request(method, &request.url).body(request.body);
            for (name, value) in &request.headers {
                builder = builder.header(name, value);
            }
            // reqwest names the URL in its errors: its credentials go before the text
            // leaves (the client redacts its own secrets again at its seam).
            let response = builder
                .send()
                .await
                .map_err(|error| TransportError::Connect {
                    reason: redact_patterns(&error.to_string()),
                })?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let body = response
                .bytes_stream()
                .map(|chunk| {
                    chunk
                        .map(|bytes| bytes.to_vec())
                        .map_err(|error| TransportError::Reset {
                            reason: redact_patterns(&error.to_string()),
                        })
                })
                .boxed();
            Ok(HttpResponse {
                status,
                headers,
                body,
            })
        }
    }
}
