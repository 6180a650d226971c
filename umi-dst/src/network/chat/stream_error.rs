//! What an error after the 200 says inside a chat stream, per provider.
//!
//! A server's in-stream error is not its HTTP error body written into the stream: each
//! server wraps (or flattens) it its own way, and a client that parses one shape
//! chokes on the other (openai-python raises a `TypeError` on a bare
//! `{"object": "error", ...}` chunk). So the payload is built here from the HTTP body
//! the profile's envelope gives, by the stream error shape the profile draws, each
//! from its source ([`crate::network::profile`]):
//!
//! - `data: {"error": {...}}` (OpenAI, Azure; llama.cpp's newer server): the envelope
//!   as it is, already wrapped.
//! - vLLM (`serving_engine.py`, `create_streaming_error_response`): `json.dumps({"error":
//!   ErrorResponse.model_dump()})` up to 0.10.0, whose `ErrorResponse` is the flat
//!   `{"object": "error", "message", ...}`; from 0.10.1 `ErrorResponse` is itself
//!   `{"error": {...}}` and is dumped as it is. Both reach the client wrapped.
//! - Xinference (`restful_api.py`, the chat stream's `except`): `json.dumps({"error":
//!   str(ex)})`, the message as a string, never FastAPI's `{"detail": ...}` (that is
//!   its HTTP errors' body).
//! - llama.cpp's older `error:` field: the inner object, unwrapped.
//! - TGI (`server.rs`): `{"error": "<text>", "error_type": "<kind>"}`, its HTTP body
//!   too.
//!
//! [`in_stream`] is a pure function of the shape and the HTTP body, so a table
//! test reaches every pair.

use crate::network::chat_shapes::StreamErrorShape;
use crate::network::json::{Json, Spacing};

/// How an error after the 200 goes on the wire: the decision of [`in_stream`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InStream {
    /// `data: <payload>` written with `spacing`, then `data: [DONE]` (`then_done`) or
    /// the connection closes.
    Data {
        /// The event's JSON.
        payload: Json,
        /// How the server writes it.
        spacing: Spacing,
        /// Whether `[DONE]` follows (else the connection closes).
        then_done: bool,
    },
    /// An SSE field named `error` carrying this object, then `data: [DONE]`.
    ErrorField(Json),
    /// OpenRouter's chunk with this object as its top-level `error` and
    /// `finish_reason: "error"`, then `[DONE]`.
    ErrorChunk(Json),
    /// One stray empty chunk, then the connection closes (Ollama's /v1).
    StrayChunk,
    /// The connection drops.
    Reset,
}

/// How an error whose HTTP body (in the profile's envelope) is `http_body` goes inside
/// a stream of `shape`.
pub(crate) fn in_stream(shape: StreamErrorShape, http_body: &Json) -> InStream {
    let data = |payload: Json, spacing: Spacing, then_done: bool| InStream::Data {
        payload,
        spacing,
        then_done,
    };
    match shape {
        StreamErrorShape::DataThenDone => data(wrapped(http_body), Spacing::Compact, true),
        StreamErrorShape::DataPythonThenDone => data(wrapped(http_body), Spacing::Python, true),
        StreamErrorShape::DataThenClose => data(wrapped(http_body), Spacing::Compact, false),
        StreamErrorShape::PlainTextThenClose => {
            // `json.dumps`, framed by sse-starlette.
            let payload = Json::object(vec![("error", message_text(http_body).into())]);
            data(payload, Spacing::Python, false)
        }
        // TGI's HTTP body is already `{"error": "<text>", "error_type": "<kind>"}`.
        StreamErrorShape::TypedTextThenClose => data(http_body.clone(), Spacing::Compact, false),
        StreamErrorShape::ErrorField => {
            InStream::ErrorField(inner_error(http_body).unwrap_or_else(|| http_body.clone()))
        }
        StreamErrorShape::ErrorChunk => {
            InStream::ErrorChunk(inner_error(http_body).unwrap_or_else(Json::null))
        }
        StreamErrorShape::StrayChunk => InStream::StrayChunk,
        StreamErrorShape::Reset => InStream::Reset,
    }
}

/// `body` as `{"error": {...}}`: as it is when it already is, else inside the wrapper
/// (vLLM's flat body, as its streaming path dumps it).
fn wrapped(body: &Json) -> Json {
    match inner_error(body) {
        Some(_) => body.clone(),
        None => Json::object(vec![("error", body.clone())]),
    }
}

/// The value of a body's top-level `error` field, if it has one.
pub(crate) fn inner_error(body: &Json) -> Option<Json> {
    body.get("error")
}

fn text_of(value: &Json) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// The error's message as one line of text, wherever the envelope keeps it: FastAPI's
/// `detail`, a string `error`, or the `message` of an error object, wrapped or flat.
fn message_text(body: &Json) -> String {
    let candidates = [
        body.get("detail"),
        body.get("error"),
        body.get("error").and_then(|error| error.get("message")),
        body.get("message"),
    ];
    candidates
        .iter()
        .flatten()
        .find_map(text_of)
        .unwrap_or_else(|| "Internal server error".to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn payload(shape: StreamErrorShape, body: serde_json::Value) -> Option<String> {
        match in_stream(shape, &Json::from(body)) {
            InStream::Data { payload, .. } | InStream::ErrorField(payload) => {
                Some(payload.to_text(Spacing::Compact))
            }
            InStream::ErrorChunk(_) | InStream::StrayChunk | InStream::Reset => None,
        }
    }

    #[test]
    fn each_shape_carries_what_its_server_sends() {
        let openai = json!({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}});
        let vllm_flat = json!({"object": "error", "message": "boom", "type": "InternalServerError", "param": null, "code": 500});
        let fastapi = json!({"detail": "Model is loading"});
        let tgi = json!({"error": "overloaded", "error_type": "overloaded"});
        let table = [
            (
                StreamErrorShape::DataThenDone,
                openai.clone(),
                Some(openai.clone()),
            ),
            // vLLM up to 0.10.0: the flat body inside the wrapper.
            (
                StreamErrorShape::DataPythonThenDone,
                vllm_flat.clone(),
                Some(json!({"error": vllm_flat})),
            ),
            // vLLM from 0.10.1: already wrapped.
            (
                StreamErrorShape::DataPythonThenDone,
                openai.clone(),
                Some(openai.clone()),
            ),
            (
                StreamErrorShape::ErrorField,
                openai.clone(),
                Some(openai["error"].clone()),
            ),
            // Xinference: the text, never FastAPI's `detail`.
            (
                StreamErrorShape::PlainTextThenClose,
                fastapi,
                Some(json!({"error": "Model is loading"})),
            ),
            (
                StreamErrorShape::PlainTextThenClose,
                openai.clone(),
                Some(json!({"error": "boom"})),
            ),
            (StreamErrorShape::TypedTextThenClose, tgi.clone(), Some(tgi)),
            (StreamErrorShape::Reset, openai.clone(), None),
            (StreamErrorShape::StrayChunk, openai, None),
        ];
        for (shape, body, expected) in table {
            let expected = expected.map(|value| Json::from(value).to_text(Spacing::Compact));
            assert_eq!(
                payload(shape, body.clone()),
                expected,
                "{shape:?} of {body}"
            );
        }
    }
}
