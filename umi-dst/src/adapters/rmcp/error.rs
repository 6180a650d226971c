//! What the adapter itself cannot do ([`SimMcpHttpError`]), and rmcp's error type over
//! it: rmcp reports an adapter error as `StreamableHttpError::Client`.

use rmcp::transport::streamable_http_client::StreamableHttpError;
use umi_core::llm::transport::TransportError;

/// What the adapter itself cannot do; rmcp reports it as
/// `StreamableHttpError::Client`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimMcpHttpError {
    /// The connection failed or broke (a simulated network fault, a reset by the server).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// rmcp's message could not be serialized as JSON.
    #[error("the JSON-RPC message could not be serialized: {reason}")]
    Serialize {
        /// serde_json's reason.
        reason: String,
    },
    /// An SSE event's data was larger than the transport's `max_sse_event_size`.
    #[error("an SSE event of {bytes} bytes is over the limit of {max_size} bytes")]
    SseEventTooLarge {
        /// The event's data, in bytes.
        bytes: usize,
        /// The limit.
        max_size: usize,
    },
}

/// rmcp's error for a request of this adapter.
pub(super) type Error = StreamableHttpError<SimMcpHttpError>;

/// An adapter error as rmcp carries it.
pub(super) fn client_error(error: impl Into<SimMcpHttpError>) -> Error {
    StreamableHttpError::Client(error.into())
}
