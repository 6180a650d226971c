//! One HTTP exchange, as every client makes it: the request under the request timeout
//! (environment time), and for a non-2xx status the error body (bounded, under the idle
//! timeout) mapped to an [`LlmError`] by status, headers and body.

use std::time::Duration;

use super::errors::{from_status, response_now_ms};
use super::reader::read_error_body;
use crate::constants::HTTP_ERROR_BODY_BYTES_MAX;
use crate::env::{Env, EnvironmentExt};
use crate::llm::error::LlmError;
use crate::llm::transport::{HttpRequest, HttpResponse, Transport};

/// A request the server refused (or that never got an answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The error, mapped from the status, headers and body.
    pub error: LlmError,
    /// The error body as read (empty when no response came), for provider-specific
    /// refinement.
    pub body: String,
    /// The response's status (`None` when no response came: a timeout, a refused
    /// connection).
    pub status: Option<u16>,
    /// The response's headers (empty when no response came), for a format whose error
    /// kind travels in a header.
    pub headers: Vec<(String, String)>,
}

impl From<LlmError> for Refused {
    fn from(error: LlmError) -> Self {
        Self {
            error,
            body: String::new(),
            status: None,
            headers: Vec::new(),
        }
    }
}

/// Sends `request` and returns the response if its status is 2xx.
pub async fn send(
    transport: &dyn Transport,
    env: &Env,
    request: HttpRequest,
    timeout: Duration,
    idle: Duration,
) -> Result<HttpResponse, Refused> {
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let response = env
        .timeout(timeout, transport.send(request))
        .await
        .map_err(|_| LlmError::Timeout {
            after_ms: timeout_ms,
        })?
        .map_err(LlmError::from)?;
    if (200..300).contains(&response.status) {
        return Ok(response);
    }
    let status = response.status;
    let headers = response.headers.clone();
    let body = read_error_body(response.body, env, idle, HTTP_ERROR_BODY_BYTES_MAX).await;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    // An HTTP-date Retry-After is measured against the response's own Date when it has
    // one: the server's "now", whatever the skew between its clock and ours.
    let now_unix_ms = response_now_ms(header, env.unix_time_ms());
    let error = from_status(status, header, &body, now_unix_ms);
    if matches!(
        error,
        LlmError::RateLimit {
            retry_after_ms: Some(_)
        }
    ) {
        env.cover("wire.retry_after_header");
    }
    Err(Refused {
        error,
        body,
        status: Some(status),
        headers,
    })
}
