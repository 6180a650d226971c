//! What every handler of `dst serve` answers with: the response body type, the state
//! every connection shares, and the two helpers that build a response. Below the router
//! (`http`), the playback (`play`), the server's own answers (`own`) and MCP (`mcp`), so
//! each reaches them without reaching the others.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use tokio::sync::Semaphore;

use super::config::ServeConfig;
use super::pool::SimulationPool;
use super::session::Session;

/// The body type of every response.
pub(crate) type Body = UnsyncBoxBody<Bytes, io::Error>;

/// What every connection shares.
pub(crate) struct State {
    pub(crate) config: ServeConfig,
    pub(crate) session: Session,
    /// The agent's own spans, per scope (`POST /v1/traces`).
    pub(crate) agent_spans: super::agent_spans::AgentSpans,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) simulations: SimulationPool,
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

pub(crate) fn respond(status: u16, headers: Vec<(String, String)>, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
