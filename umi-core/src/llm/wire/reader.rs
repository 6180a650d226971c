//! A response body read into stream events, with the environment's idle timeout.
//!
//! A [`WireDecoder`] knows a format (SSE chunks, NDJSON lines); [`Decoding`] feeds it
//! reads and keeps the stream's limits, sans I/O; the reader drives that from the body
//! as bytes arrive, hands out events one by one, and ends the stream the way the
//! provider contract says: with the decoder's `Done`, or with one `Err` item (a broken
//! connection, an idle timeout, an error inside the stream, or an end without `Done`),
//! always after every event decoded before it.

use std::collections::VecDeque;
use std::time::Duration;

use futures::{FutureExt, StreamExt};

use crate::constants::WIRE_STREAM_BYTES_MAX;
use crate::env::{Env, EnvironmentExt};
use crate::llm::collector::StreamCollector;
use crate::llm::error::{LlmError, LlmErrorKind};
use crate::llm::event::{EventStream, StreamEvent};
use crate::llm::response::CompletionResponse;
use crate::llm::transport::BodyStream;

/// A wire format's stream decoder: bytes in, events out, sans I/O.
///
/// Every method pushes the events it completed onto `out` *before* returning an error,
/// so an error decoded in the same read as earlier events never erases them: the
/// outcome of a stream (its events, then success or the typed error) is the same for
/// every split of its bytes into reads.
pub trait WireDecoder: Send + 'static {
    /// Decodes `bytes`, the next read of the body.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
    /// The body ended: a final `Done`, or an error if it ended early. `events_so_far`
    /// counts the events pushed before (for [`LlmError::StreamTruncated`]).
    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
    /// Whether the format's own end marker arrived (`[DONE]`, `"done": true`): nothing
    /// after it is read.
    fn is_done(&self) -> bool;
}

impl<D: WireDecoder + ?Sized> WireDecoder for Box<D> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        (**self).feed(bytes, out)
    }
    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        (**self).finish(events_so_far, out)
    }
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
}

/// The sans-I/O core of reading a stream: reads in, events out, the stream's byte limit
/// and its end. [`events`] drives it from a body with timeouts; [`decode_reads`] from
/// bytes already in hand (tests, the split-invariance checker).
#[derive(Debug)]
pub struct Decoding<D> {
    decoder: D,
    events: u64,
    bytes: usize,
    done_seen: bool,
}

impl<D: WireDecoder> Decoding<D> {
    /// A decoding at the start of a stream.
    pub fn new(decoder: D) -> Self {
        Self {
            decoder,
            events: 0,
            bytes: 0,
            done_seen: false,
        }
    }

    /// Decodes one read; an `Err` ends the stream (the events pushed before it stand).
    pub fn read(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        self.bytes = self.bytes.saturating_add(bytes.len());
        if self.bytes > WIRE_STREAM_BYTES_MAX {
            return Err(LlmError::ResponseTooLarge {
                what: "the streamed body".into(),
                bytes: self.bytes,
                limit: WIRE_STREAM_BYTES_MAX,
            });
        }
        let before = out.len();
        let fed = self.decoder.feed(bytes, out);
        self.count(&out[before..]);
        fed
    }

    fn count(&mut self, new: &[StreamEvent]) {
        self.events += new.len() as u64;
        self.done_seen |= new.iter().any(StreamEvent::is_done);
    }

    /// The body ended.
    pub fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let before = out.len();
        let finished = self.decoder.finish(self.events, out);
        self.count(&out[before..]);
        if finished.is_ok() && !self.done_seen {
            // A decoder that ended without Done and without saying why.
            return Err(LlmError::StreamTruncated {
                events_received: self.events,
            });
        }
        finished
    }

    /// Whether the stream's end arrived (the format's marker, or a `Done` event).
    pub fn is_done(&self) -> bool {
        self.done_seen || self.decoder.is_done()
    }
}

/// What a stream amounted to: its events in order, then the error that ended it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The events, in order.
    pub events: Vec<StreamEvent>,
    /// The error that ended the stream (`None`: it ended well).
    pub error: Option<LlmError>,
}

impl Decoded {
    /// The answer a caller collecting this stream gets: its events through a
    /// [`StreamCollector`], then the error that ended it, if any.
    pub fn collect(&self, model: &str) -> Result<CompletionResponse, LlmError> {
        let events = self.events.iter().cloned().map(Ok);
        StreamCollector::collect_items(model, events.chain(self.error.clone().map(Err)))
    }
}

/// Decodes a whole body given as `reads`, as [`events`] would deliver it (minus the
/// timeouts, which need a clock): reading stops at the end marker or at the first error.
pub fn decode_reads<'a>(
    decoder: impl WireDecoder,
    reads: impl IntoIterator<Item = &'a [u8]>,
) -> Decoded {
    let mut decoding = Decoding::new(decoder);
    let mut events = Vec::new();
    for bytes in reads {
        if decoding.is_done() {
            break;
        }
        if let Err(error) = decoding.read(bytes, &mut events) {
            return Decoded {
                events,
                error: Some(error),
            };
        }
    }
    let error = if decoding.is_done() {
        None
    } else {
        decoding.end(&mut events).err()
    };
    Decoded { events, error }
}

struct Reader<D> {
    body: BodyStream,
    decoding: Decoding<D>,
    pending: VecDeque<StreamEvent>,
    /// The events one read decoded, before they join `pending` (kept, not one new
    /// vector per read).
    decoded: Vec<StreamEvent>,
    failed: Option<LlmError>,
    finished: bool,
    env: Env,
    idle: Duration,
}

impl<D: WireDecoder> Reader<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if let Some(error) = self.failed.take() {
                self.finished = true;
                return Some(Err(error));
            }
            if self.finished {
                return None;
            }
            if self.decoding.is_done() {
                // Done was queued; nothing after the end marker matters.
                self.finished = true;
                continue;
            }
            let idle_ms = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
            let mut events = std::mem::take(&mut self.decoded);
            // Bytes already delivered need no timer: the idle timeout is armed only when
            // the body has to be waited for (same outcome, no timer per read).
            let next = match self.body.next().now_or_never() {
                Some(item) => Ok(item),
                None => self.env.timeout(self.idle, self.body.next()).await,
            };
            let outcome = match next {
                Err(_) => {
                    self.env.cover("wire.idle_timeout");
                    Err(LlmError::Timeout { after_ms: idle_ms })
                }
                Ok(None) => self.decoding.end(&mut events),
                Ok(Some(Err(error))) => Err(error.into()),
                Ok(Some(Ok(bytes))) => self.decoding.read(&bytes, &mut events),
            };
            // Events decoded before an error are delivered before it.
            if events.iter().any(StreamEvent::is_done) {
                self.finished = true;
            }
            self.pending.extend(events.drain(..));
            self.decoded = events;
            if let Err(error) = outcome {
                self.env.cover(stream_error_mark(error.kind()));
                self.failed = Some(error);
            }
        }
    }
}

/// The coverage mark an error inside a stream hits: a cut stream and a broken connection
/// each have their own, every other error (an error event, a timeout, a body too large)
/// the shared one. Listed, not `_`: a new error kind is decided here.
fn stream_error_mark(kind: LlmErrorKind) -> &'static str {
    match kind {
        LlmErrorKind::StreamTruncated => "wire.stream_truncated",
        LlmErrorKind::Connection => "wire.connection_broken",
        LlmErrorKind::Timeout
        | LlmErrorKind::ServerTimeout
        | LlmErrorKind::ModelNotFound
        | LlmErrorKind::RateLimit
        | LlmErrorKind::ContextOverflow
        | LlmErrorKind::InvalidResponse
        | LlmErrorKind::ServiceUnavailable
        | LlmErrorKind::Json
        | LlmErrorKind::InvalidPrompt
        | LlmErrorKind::Auth
        | LlmErrorKind::BadRequest
        | LlmErrorKind::EmptyStream
        | LlmErrorKind::ResponseTooLarge
        | LlmErrorKind::TooManyToolCalls
        | LlmErrorKind::Exhausted => "wire.error_in_stream",
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
        decoding: Decoding::new(decoder),
        pending: VecDeque::new(),
        decoded: Vec::new(),
        failed: None,
        finished: false,
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
    // Fused: polled again after its end, the stream answers `None` (an unfused
    // `unfold` panics).
    Ok(futures::stream::iter([Ok(first)])
        .chain(rest)
        .fuse()
        .boxed())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::openai::ChunkDecoder;

    /// Keep-alive comments complete no event, so only the stream's cap ends a server
    /// that sends them forever.
    #[test]
    fn a_stream_that_never_ends_is_cut_at_the_stream_limit() {
        let keep_alives = ": keep-alive\n\n".repeat(64 * 1024);
        let reads = std::iter::repeat_n(
            keep_alives.as_bytes(),
            WIRE_STREAM_BYTES_MAX / keep_alives.len() + 2,
        );
        let decoded = decode_reads(ChunkDecoder::new(), reads);
        assert!(decoded.events.is_empty());
        match decoded.error {
            Some(LlmError::ResponseTooLarge { bytes, limit, .. }) => {
                assert_eq!(limit, WIRE_STREAM_BYTES_MAX);
                assert!(bytes > limit && bytes <= limit + keep_alives.len());
            }
            other => panic!("{other:?}"),
        }
    }
}
