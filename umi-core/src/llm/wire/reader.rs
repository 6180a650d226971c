//! A response body read into stream events, with the environment's idle timeout.
//!
//! A [`WireDecoder`] knows a format (SSE chunks, NDJSON lines); the reader feeds it bytes
//! as they arrive, hands out its events one by one, and ends the stream the way the
//! provider contract says: with the decoder's `Done`, or with one `Err` item (a broken
//! connection, an idle timeout, an error inside the stream, or an end without `Done`).

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;

use crate::env::{Env, EnvironmentExt};
use crate::llm::error::LlmError;
use crate::llm::event::{EventStream, StreamEvent};
use crate::llm::transport::BodyStream;

/// A wire format: bytes in, events out.
pub trait WireDecoder: Send + 'static {
    /// Events completed by `chunk`.
    fn feed(&mut self, chunk: &[u8]) -> Result<Vec<StreamEvent>, LlmError>;
    /// Events at the end of the body (a final `Done`, or an error if the end came early).
    fn finish(&mut self, events_so_far: u64) -> Result<Vec<StreamEvent>, LlmError>;
    /// Whether the format's own end marker arrived (`[DONE]`, `"done": true`).
    fn is_done(&self) -> bool;
}

struct Reader<D> {
    body: BodyStream,
    decoder: D,
    pending: VecDeque<StreamEvent>,
    failed: Option<LlmError>,
    finished: bool,
    events: u64,
    env: Env,
    idle: Duration,
}

impl<D: WireDecoder> Reader<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.events += 1;
                return Some(Ok(event));
            }
            if let Some(error) = self.failed.take() {
                self.finished = true;
                return Some(Err(error));
            }
            if self.finished {
                return None;
            }
            if self.decoder.is_done() {
                // Done was queued; nothing after the end marker matters.
                self.finished = true;
                continue;
            }
            let idle_ms = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
            let outcome = match self.env.timeout(self.idle, self.body.next()).await {
                Err(_) => {
                    self.env.cover("wire.idle_timeout");
                    Err(LlmError::Timeout { after_ms: idle_ms })
                }
                Ok(None) => self.decoder.finish(self.events),
                Ok(Some(Err(error))) => Err(error.into()),
                Ok(Some(Ok(bytes))) => self.decoder.feed(&bytes),
            };
            match outcome {
                Ok(events) => {
                    let ended = events.iter().any(StreamEvent::is_done);
                    self.pending.extend(events);
                    if ended {
                        self.finished = true;
                    }
                }
                Err(error) => {
                    self.env.cover(match &error {
                        LlmError::StreamTruncated { .. } => "wire.stream_truncated",
                        LlmError::Connection { .. } => "wire.connection_broken",
                        _ => "wire.error_in_stream",
                    });
                    self.failed = Some(error);
                }
            }
            if !self.finished
                && self.pending.is_empty()
                && self.failed.is_none()
                && self.decoder.is_done()
            {
                self.finished = true;
            }
        }
    }
}

/// Reads `body` with `decoder`. The first item is awaited here, so an error before any
/// event (an error object at the head of a 200 stream, a timeout before the first byte)
/// is returned as `Err`, as the provider contract asks.
pub async fn events(
    body: BodyStream,
    decoder: impl WireDecoder,
    env: Env,
    idle: Duration,
) -> Result<EventStream, LlmError> {
    let mut reader = Reader {
        body,
        decoder,
        pending: VecDeque::new(),
        failed: None,
        finished: false,
        events: 0,
        env,
        idle,
    };
    let first = match reader.next().await {
        Some(Ok(event)) => event,
        Some(Err(error)) => return Err(error),
        None => return Err(LlmError::EmptyStream),
    };
    let rest = futures::stream::unfold(reader, |mut reader| async move {
        let item = reader.next().await?;
        Some((item, reader))
    });
    Ok(futures::stream::iter([Ok(first)]).chain(rest).boxed())
}

/// Reads a whole body, at most `limit` bytes, with the idle timeout between chunks.
pub async fn read_body(
    mut body: BodyStream,
    env: &Env,
    idle: Duration,
    limit: usize,
) -> Result<Vec<u8>, LlmError> {
    let mut out = Vec::new();
    loop {
        let chunk = match env.timeout(idle, body.next()).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    after_ms: u64::try_from(idle.as_millis()).unwrap_or(u64::MAX),
                });
            }
            Ok(None) => return Ok(out),
            Ok(Some(chunk)) => chunk?,
        };
        if out.len() + chunk.len() > limit {
            return Err(LlmError::ResponseTooLarge {
                what: "the response body".into(),
                bytes: out.len() + chunk.len(),
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
}

/// Reads an error body: at most `limit` bytes, lossy UTF-8; a broken body gives what came.
pub async fn read_error_body(
    mut body: BodyStream,
    env: &Env,
    idle: Duration,
    limit: usize,
) -> String {
    let mut out = Vec::new();
    while out.len() < limit {
        match env.timeout(idle, body.next()).await {
            Ok(Some(Ok(chunk))) => {
                out.extend_from_slice(&chunk[..chunk.len().min(limit - out.len())]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
