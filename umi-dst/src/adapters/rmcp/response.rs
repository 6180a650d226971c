//! How rmcp's Streamable HTTP client reads an answer, done over umi-core's bodies: the
//! media type, a body read to a limit, `Retry-After`, an auth challenge, SSE events, a
//! refused `server/discover` probe, a failed or a JSON POST. Each follows rmcp 3.11's
//! reqwest client (`src/transport/common/reqwest/streamable_http_client.rs`).

use std::borrow::Cow;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use umi_core::llm::transport::{BodyStream, HttpResponse, TransportError};

use super::error::{Error, SimMcpHttpError, client_error};
use super::headers::JSON_MIME_TYPE;

/// The longest `Retry-After` value kept (rmcp's `MAX_RETRY_AFTER_BYTES`).
const RETRY_AFTER_BYTES_MAX: usize = 128;

/// Whether a `Content-Type` value names `expected`: its type/subtype, parameters aside,
/// case-insensitively (RFC 9110 §8.3.1; rmcp's `media_type_is`).
pub(super) fn media_type_is(value: &str, expected: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// The longest prefix of `text` of at most `bytes_max` bytes that ends on a character.
pub(super) fn prefix(text: &str, bytes_max: usize) -> &str {
    let end = (0..=bytes_max.min(text.len()))
        .rev()
        .find(|end| text.is_char_boundary(*end))
        .unwrap_or(0);
    &text[..end]
}

/// Why a body could not be read whole.
pub(super) enum BodyRead {
    TooLarge,
    Broken(TransportError),
}

/// The body, read to its end; over `bytes_max` it is `TooLarge` (when `truncate`, cut
/// at `bytes_max` instead).
pub(super) async fn read_body(
    mut body: BodyStream,
    bytes_max: usize,
    truncate: bool,
) -> Result<Vec<u8>, BodyRead> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(BodyRead::Broken)?;
        if bytes.len() + chunk.len() > bytes_max {
            if !truncate {
                return Err(BodyRead::TooLarge);
            }
            let room = bytes_max - bytes.len();
            bytes.extend_from_slice(&chunk[..room]);
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The `Retry-After` value as rmcp keeps it: raw, when short enough.
pub(super) fn retry_after(response: &HttpResponse) -> Option<String> {
    response
        .header("retry-after")
        .filter(|value| value.len() <= RETRY_AFTER_BYTES_MAX)
        .map(str::to_owned)
}

/// rmcp's errors for a 401 or 403 that carries a challenge (RFC 6750 §3), as its reqwest
/// client reports them.
pub(super) fn auth_error(response: &HttpResponse) -> Option<Error> {
    let challenge = response.header("www-authenticate")?.to_owned();
    match response.status {
        401 => Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            challenge,
        ))),
        // The challenge is handed over whole; its `scope` is not parsed out (no
        // simulated server sends one).
        403 => Some(StreamableHttpError::InsufficientScope(
            InsufficientScopeError::new(challenge, None),
        )),
        _ => None,
    }
}

/// The SSE events of `body` (the parser rmcp's own clients use), each event's data held
/// to `max_event_size`; the stream ends after its first error.
pub(super) fn sse_events(
    body: BodyStream,
    max_event_size: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let bytes = body.map(|chunk| chunk.map(Bytes::from));
    SseStream::from_bytes_stream(bytes)
        .map(move |event| match event {
            Ok(event) if event.data.as_ref().map_or(0, String::len) > max_event_size => Err(
                SseError::Body(Box::new(SimMcpHttpError::SseEventTooLarge {
                    bytes: event.data.as_ref().map_or(0, String::len),
                    max_size: max_event_size,
                })),
            ),
            other => other,
        })
        .scan(false, |failed, event| {
            if *failed {
                return std::future::ready(None);
            }
            *failed = event.is_err();
            std::future::ready(Some(event))
        })
        .boxed()
}

/// A `server/discover` probe refused with a 4xx by a server of the handshake era, as
/// rmcp's `legacy_discover_response` (`src/transport/streamable_http_client.rs`) turns
/// it into a JSON-RPC error correlated with the probe, so rmcp's `Auto` lifecycle falls
/// back to `initialize` as with its own clients.
pub(super) fn refused_discover(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: u16,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session_was_attached || !(400..500).contains(&status) || status == 401 || status == 403 {
        return None;
    }
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(JsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

/// A non-success answer to a POST, as rmcp's reqwest client reads it.
pub(super) async fn post_failure(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    response: HttpResponse,
    limits: StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Error> {
    let status = response.status;
    let is_json = response
        .header("content-type")
        .is_some_and(|ct| media_type_is(ct, JSON_MIME_TYPE));
    let status_error = (status == 429 || (500..600).contains(&status))
        .then(|| HttpStatusError::new(status, retry_after(&response)));
    if let Some(error) = status_error.as_ref().filter(|_| !is_json || status == 429) {
        return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(
            error.status,
            error.retry_after.clone(),
        )));
    }
    let is_auth_failure = status == 401 || status == 403;
    let body = if is_json && !is_auth_failure {
        match read_body(response.body, limits.max_json_response_size, false).await {
            Ok(body) => body,
            Err(BodyRead::TooLarge) => {
                return Err(status_error.map_or(
                    StreamableHttpError::ResponseBodyTooLarge {
                        max_size: limits.max_json_response_size,
                    },
                    StreamableHttpError::HttpStatus,
                ));
            }
            Err(BodyRead::Broken(error)) => return Err(client_error(error)),
        }
    } else {
        match read_body(response.body, limits.max_error_response_size, true).await {
            Ok(body) => body,
            Err(BodyRead::TooLarge) => Vec::new(),
            Err(BodyRead::Broken(error)) => return Err(client_error(error)),
        }
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    if let Some(refused) = refused_discover(message, session_was_attached, status, &text) {
        return Ok(refused);
    }
    if is_json
        && !is_auth_failure
        && let Ok(error @ JsonRpcMessage::Error(_)) =
            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
    {
        return Ok(StreamableHttpPostResponse::Json(error, None));
    }
    if let Some(error) = status_error {
        return Err(StreamableHttpError::HttpStatus(error));
    }
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!(
            "HTTP {status}: {}",
            prefix(&text, limits.max_error_response_size)
        ),
    )))
}

/// A 2xx JSON answer to a POST: the message, or (for a notification or a response,
/// which await none) accepted whatever it is.
pub(super) async fn json_post_response(
    body: BodyStream,
    limits: &StreamableHttpResponseLimits,
    new_session: Option<String>,
    awaits_no_response: bool,
) -> Result<StreamableHttpPostResponse, Error> {
    let body = match read_body(body, limits.max_json_response_size, false).await {
        Ok(body) => body,
        Err(BodyRead::TooLarge) => {
            return Err(StreamableHttpError::ResponseBodyTooLarge {
                max_size: limits.max_json_response_size,
            });
        }
        Err(BodyRead::Broken(error)) => return Err(client_error(error)),
    };
    match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
        Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
        Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
        Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!(
                "could not parse JSON response as ServerJsonRpcMessage: {error}: {}",
                String::from_utf8_lossy(&body)
            ),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::rmcp::headers::EVENT_STREAM_MIME_TYPE;

    #[test]
    fn content_types_match_by_essence() {
        assert!(media_type_is("application/json", JSON_MIME_TYPE));
        assert!(media_type_is(
            " Text/Event-Stream ; charset=utf-8",
            EVENT_STREAM_MIME_TYPE
        ));
        assert!(!media_type_is("application/json-seq", JSON_MIME_TYPE));
        assert!(!media_type_is("", JSON_MIME_TYPE));
    }
}
