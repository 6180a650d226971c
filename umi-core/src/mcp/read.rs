//! Reading an MCP server's answer to one POST: a single JSON object
//! (`Content-Type: application/json`) or an SSE stream of messages
//! (`text/event-stream`), where the response to the request may follow notifications
//! (2025-11-25, transports, sending messages to the server, rules 5 and 6).

use futures::StreamExt;
use serde_json::Value;

use super::MCP_RESPONSE_BYTES_MAX;
use crate::llm::transport::{BodyStream, TransportError};
use crate::llm::wire::sse::SseDecoder;

/// Notifications kept from one response at most (the rest are read and dropped).
pub(crate) const NOTIFICATIONS_KEPT_MAX: usize = 64;

/// What a response body held: the server's notifications, and the response to the
/// request when it came.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) notifications: Vec<String>,
    pub(crate) response: Option<Value>,
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The connection broke.
    Transport(TransportError),
    /// The bytes are not what the protocol says.
    Malformed(String),
}

/// Reads `body` (JSON when `sse` is false) until the response with `id` arrives.
pub(crate) async fn answer(mut body: BodyStream, sse: bool, id: u64) -> Result<Answer, ReadError> {
    let mut answer = Answer::default();
    let mut bytes: Vec<u8> = Vec::new();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut read_bytes = 0usize;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(ReadError::Transport)?;
        read_bytes += chunk.len();
        if read_bytes > MCP_RESPONSE_BYTES_MAX {
            return Err(ReadError::Malformed(format!(
                "the response is over {MCP_RESPONSE_BYTES_MAX} bytes"
            )));
        }
        if !sse {
            bytes.extend_from_slice(&chunk);
            continue;
        }
        decoder
            .feed(&chunk, &mut events)
            .map_err(|error| ReadError::Malformed(error.to_string()))?;
        for event in events.drain(..) {
            take(&mut answer, &event.data, id)?;
            if answer.response.is_some() {
                return Ok(answer);
            }
        }
    }
    if sse {
        if let Some(event) = decoder
            .finish()
            .map_err(|error| ReadError::Malformed(error.to_string()))?
        {
            take(&mut answer, &event.data, id)?;
        }
        return Ok(answer);
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ReadError::Malformed("the body is not UTF-8".into()))?;
    take(&mut answer, text, id)?;
    Ok(answer)
}

/// The first `bytes_max` bytes of `body` as text (lossy), for an error message; a body
/// that breaks is what came before.
pub(crate) async fn prefix(mut body: BodyStream, bytes_max: usize) -> String {
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() >= bytes_max {
            bytes.truncate(bytes_max);
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Files one message (`data`, a JSON-RPC message) into `answer`: a notification's
/// method, or the response when its id is `id`. Empty data (an SSE priming event) is
/// skipped.
fn take(answer: &mut Answer, data: &str, id: u64) -> Result<(), ReadError> {
    if data.trim().is_empty() {
        return Ok(());
    }
    let message: Value = serde_json::from_str(data)
        .map_err(|error| ReadError::Malformed(format!("a message is not JSON: {error}")))?;
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        if message.get("id").is_none() && answer.notifications.len() < NOTIFICATIONS_KEPT_MAX {
            answer.notifications.push(method.to_owned());
        }
        // A request of the server's (sampling, elicitation): this client offers none of
        // those capabilities, so a server must not send one; it is ignored.
        return Ok(());
    }
    if message.get("id").and_then(Value::as_u64) == Some(id) {
        answer.response = Some(message);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn body(pieces: &[&str]) -> BodyStream {
        let pieces: Vec<Result<Vec<u8>, TransportError>> =
            pieces.iter().map(|p| Ok(p.as_bytes().to_vec())).collect();
        futures::stream::iter(pieces).boxed()
    }

    #[tokio::test]
    async fn responses_are_found_in_json_and_in_sse_split_anywhere() {
        let json = answer(
            body(&[r#"{"jsonrpc":"2.0","id":3,"re"#, r#"sult":{}}"#]),
            false,
            3,
        )
        .await
        .unwrap();
        assert_eq!(json.response.unwrap()["id"], 3);
        let sse = answer(
            body(&[
                "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
                "id: 1\ndata:\n\n",
                "event: message\nda",
                "ta: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[]}}\n\n",
            ]),
            true,
            4,
        )
        .await
        .unwrap();
        assert_eq!(sse.notifications, ["notifications/tools/list_changed"]);
        assert_eq!(
            sse.response.unwrap()["result"]["tools"],
            serde_json::json!([])
        );
    }

    #[tokio::test]
    async fn a_stream_that_ends_or_breaks_first_has_no_response() {
        let ended = answer(
            body(&["event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"]),
            true,
            1,
        )
        .await
        .unwrap();
        assert!(ended.response.is_none());
        let broken: BodyStream = futures::stream::iter([
            Ok(b"event: message\n".to_vec()),
            Err(TransportError::Reset {
                reason: "cut".into(),
            }),
        ])
        .boxed();
        assert!(matches!(
            answer(broken, true, 1).await,
            Err(ReadError::Transport(_))
        ));
        let garbage = answer(body(&["data: {nope\n\n"]), true, 1).await;
        assert!(
            matches!(garbage, Err(ReadError::Malformed(reason)) if reason.contains("not JSON"))
        );
    }
}
