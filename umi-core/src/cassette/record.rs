//! [`RecordingTransport`]: any transport, with every exchange it carries appended to a
//! cassette once its body has ended.
//!
//! The client reads the body as it arrives; the recorder keeps a copy of each read and
//! when it came (on the injected environment's clock, so a recording made in a
//! simulation has simulated times), and writes the exchange, redacted, as one line when
//! the body ends: cleanly, with a reset (recorded as it happened), or when no byte came
//! for the idle timeout (recorded as the server falling silent). A request that got no
//! response (the upstream is down) writes nothing and returns the error. A body the
//! client dropped before its end (OpenAI's clients stop reading at `data: [DONE]`) is
//! written when it is dropped, with what was read and [`BodyEnd::Dropped`], and counted
//! in [`RecordingTransport::abandoned`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;

use super::redact::RawResponse;
use super::{BodyEnd, CassetteWriter, Exchange, Piece, RESPONSE_PIECES_MAX, Redaction};
use crate::env::{Env, EnvironmentExt};
use crate::llm::secrets::Redactor;
use crate::llm::transport::{BodyStream, HttpRequest, HttpResponse, Transport, TransportError};

/// A transport that records what `inner` carries into a cassette.
#[derive(Debug)]
pub struct RecordingTransport<T> {
    inner: T,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    writer: CassetteWriter,
    env: Env,
    root: String,
    redaction: Redaction,
    idle_timeout: Option<Duration>,
    written: AtomicU64,
    abandoned: AtomicU64,
    write_failures: AtomicU64,
}

impl<T: Transport> RecordingTransport<T> {
    /// Records what `inner` carries into `writer`, paths taken below `root` (the base URL
    /// the client is configured with), times on `env`'s clock.
    pub fn new(inner: T, writer: CassetteWriter, env: Env, root: &str) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared {
                writer,
                env,
                root: root.trim_end_matches('/').to_owned(),
                redaction: Redaction::new(),
                idle_timeout: None,
                written: AtomicU64::new(0),
                abandoned: AtomicU64::new(0),
                write_failures: AtomicU64::new(0),
            }),
        }
    }

    /// Removes `redaction`'s secrets and fields too.
    pub fn with_redaction(mut self, redaction: Redaction) -> Self {
        self.shared_mut().redaction = redaction;
        self
    }

    /// Ends a body (recorded as [`BodyEnd::Timeout`], and a reset for the client) when
    /// no byte comes for `idle`.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.shared_mut().idle_timeout = Some(idle);
        self
    }

    fn shared_mut(&mut self) -> &mut Shared {
        Arc::get_mut(&mut self.shared).expect("configured before the first request")
    }

    /// Exchanges written so far.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Relaxed)
    }

    /// Bodies the client dropped before they ended (written as [`BodyEnd::Dropped`]).
    pub fn abandoned(&self) -> u64 {
        self.shared.abandoned.load(Ordering::Relaxed)
    }

    /// Exchanges that could not be written (the file's error was logged).
    pub fn write_failures(&self) -> u64 {
        self.shared.write_failures.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl<T: Transport> Transport for RecordingTransport<T> {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let started = self.shared.env.elapsed();
        let response = self.inner.send(request.clone()).await?;
        let headers_ms = ms_since(&self.shared.env, started);
        let redactor = self.shared.redaction.redactor(&request);
        let pending = Pending {
            shared: self.shared.clone(),
            request,
            redactor,
            started,
            raw: RawResponse {
                status: response.status,
                headers: response.headers.clone(),
                headers_ms,
                body: Vec::new(),
                pieces: Vec::new(),
                end: BodyEnd::Clean,
            },
            done: false,
        };
        Ok(HttpResponse {
            body: recorded_body(response.body, pending),
            ..response
        })
    }
}

fn ms_since(env: &Env, started: Duration) -> u64 {
    u64::try_from(env.elapsed().saturating_sub(started).as_millis()).unwrap_or(u64::MAX)
}

/// An exchange whose body is still being read.
struct Pending {
    shared: Arc<Shared>,
    request: HttpRequest,
    redactor: Redactor,
    started: Duration,
    raw: RawResponse,
    done: bool,
}

impl Pending {
    fn read(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.raw.pieces.len() < RESPONSE_PIECES_MAX {
            let at_ms = ms_since(&self.shared.env, self.started);
            self.raw.pieces.push(Piece(self.raw.body.len(), at_ms));
        }
        self.raw.body.extend_from_slice(bytes);
    }

    fn finish(&mut self, end: BodyEnd) {
        assert!(!self.done, "an exchange is written once");
        self.done = true;
        self.raw.end = end;
        let shared = &self.shared;
        let exchange = Exchange {
            request: shared
                .redaction
                .request(&self.request, &shared.root, &self.redactor),
            response: shared.redaction.response(self.raw.clone(), &self.redactor),
        };
        match shared.writer.append(&exchange) {
            Ok(()) => shared.written.fetch_add(1, Ordering::Relaxed),
            Err(error) => {
                tracing::error!(%error, "the exchange was not recorded");
                shared.write_failures.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            self.shared.abandoned.fetch_add(1, Ordering::Relaxed);
            self.finish(BodyEnd::Dropped);
        }
    }
}

fn recorded_body(body: BodyStream, pending: Pending) -> BodyStream {
    futures::stream::unfold(Some((body, pending)), |state| async move {
        let (mut body, mut pending) = state?;
        let next = match pending.shared.idle_timeout {
            Some(idle) => match pending.shared.env.clone().timeout(idle, body.next()).await {
                Ok(next) => next,
                Err(elapsed) => {
                    pending.finish(BodyEnd::Timeout);
                    let reason = format!(
                        "no body byte for {} ms (the recorder's idle timeout)",
                        elapsed.after.as_millis()
                    );
                    return Some((Err(TransportError::Reset { reason }), None));
                }
            },
            None => body.next().await,
        };
        match next {
            Some(Ok(bytes)) => {
                pending.read(&bytes);
                Some((Ok(bytes), Some((body, pending))))
            }
            Some(Err(error)) => {
                pending.finish(BodyEnd::Reset);
                Some((Err(error), None))
            }
            None => {
                pending.finish(BodyEnd::Clean);
                None
            }
        }
    })
    .boxed()
}
