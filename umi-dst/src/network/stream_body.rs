//! A streamed body: the model's events through the format's encoder, as bytes released
//! when the model produces them in simulated time, with the server's keep-alive
//! comments while it waits.
//!
//! A broken connection in the model's stream (`LlmError::Connection`) is a reset of the
//! body, not bytes: the client sees its transport fail. A part the client cannot parse
//! (`LlmError::InvalidResponse`, from `llm.invalid_response`) is the format's own frame
//! for the text it carried, cut mid-JSON ([`super::unparseable`]), and the server closes.
//! Any other error after the 200 is written the way the provider writes one. Keep-alives come from the server's own timer:
//! the first after a drawn interval of silence, then at that interval, so they depend on
//! simulated time only, never on how often the client polls.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use umi_core::env::Env;
use umi_core::llm::transport::{BodyStream, TransportError};
use umi_core::llm::{EventStream, LlmError, StreamEvent};

use super::format::{Flow, StreamEncoder};
use super::stamps;
use crate::clock::SimClock;
use crate::rng::DeterministicRng;

/// Shortest and longest silence before a keep-alive comment, in ms (neither DeepSeek nor
/// OpenRouter documents its cadence; sse-starlette's ping is every 15 s).
pub(crate) const KEEP_ALIVE_MS_MIN: u64 = 500;
/// See [`KEEP_ALIVE_MS_MIN`].
pub(crate) const KEEP_ALIVE_MS_MAX: u64 = 15_000;

/// Comments one response sends at most (a stalled model cannot grow a body forever).
pub(crate) const KEEP_ALIVES_PER_RESPONSE_MAX: u32 = 10_000;

/// The most bytes a frame's buffer is made room for ahead of its event (the size of the
/// frame before it, up to this): a frame grown from empty was reallocated five or six
/// times on the way to its ~250 bytes, per event (issue 41). A larger frame still grows.
const FRAME_BYTES_HINT_MAX: usize = 4_096;

struct State {
    events: EventStream,
    encoder: Box<dyn StreamEncoder>,
    clock: SimClock,
    env: Env,
    keep_alive: Option<(&'static str, Duration)>,
    /// The server's clock offset from the simulation's wall clock, for dated comments.
    unix_offset_ms: u64,
    /// When the next keep-alive is due (simulated time since the run started).
    due: Duration,
    keep_alives: u32,
    /// The size of the last frame: the room the next one's buffer starts with.
    frame_bytes_hint: usize,
    ended: bool,
    /// Where an unparseable part is cut (its own stream: no other draw moves).
    cut_rng: DeterministicRng,
}

impl State {
    fn cover(&mut self) {
        for mark in self.encoder.marks() {
            self.env.cover(mark);
        }
    }

    /// The format's frame for `snippet`, cut mid-JSON; the body ends after it.
    fn unparseable(&mut self, snippet: String) -> Vec<u8> {
        let mut frame = Vec::new();
        self.encoder.event(&StreamEvent::text(snippet), &mut frame);
        self.cover();
        self.ended = true;
        self.env.cover("wire.unparseable_part");
        let cut = self.encoder.unparseable(&frame, &mut self.cut_rng);
        // A frame with no JSON (none in the profiles) is sent cut in half.
        cut.unwrap_or_else(|| frame[..frame.len() / 2].to_vec())
    }

    /// The model's next item (`Some`), or `None` when the keep-alive falls due first.
    /// The item is polled first (a `biased` race); the keep-alive timer is built only
    /// when the item is not ready at once, unboxed, and polled right after it, as the
    /// `tokio::select!` of a boxed timer this replaces polled its timer.
    async fn next_or_keep_alive(&mut self) -> Option<Option<Result<StreamEvent, LlmError>>> {
        let mut timer = std::pin::pin!(None::<tokio::time::Sleep>);
        let (events, clock, due) = (&mut self.events, &self.clock, self.due);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = events.poll_next_unpin(cx) {
                return Poll::Ready(Some(item));
            }
            if timer.is_none() {
                let wait = due.saturating_sub(clock.now());
                timer.set(Some(clock.sleep_unboxed(wait)));
            }
            let armed = timer.as_mut().as_pin_mut();
            match armed.map(|timer| timer.poll(cx)) {
                Some(Poll::Pending) => Poll::Pending,
                _ => Poll::Ready(None),
            }
        })
        .await
    }

    async fn step(&mut self) -> Option<Result<Vec<u8>, TransportError>> {
        loop {
            if self.ended {
                return None;
            }
            let item = match self.keep_alive {
                Some((comment, every)) if self.keep_alives < KEEP_ALIVES_PER_RESPONSE_MAX => {
                    let Some(item) = self.next_or_keep_alive().await else {
                        self.keep_alives += 1;
                        self.due = self.clock.now() + every;
                        self.env.cover("wire.keep_alive");
                        let line_end = self.encoder.line_end();
                        let now_ms = self.unix_offset_ms + self.clock.now().as_millis() as u64;
                        let comment = comment.replace("{date}", &stamps::python_utc(now_ms));
                        let bytes = format!("{comment}{line_end}{line_end}").into_bytes();
                        return Some(Ok(bytes));
                    };
                    item
                }
                _ => self.events.next().await,
            };
            let mut out = Vec::with_capacity(self.frame_bytes_hint);
            let flow = match item {
                None => {
                    // The model's stream ended without Done: the server closes.
                    self.ended = true;
                    return None;
                }
                Some(Ok(event)) => self.encoder.event(&event, &mut out),
                Some(Err(LlmError::Connection { reason })) => {
                    self.ended = true;
                    self.env.cover("wire.reset_mid_stream");
                    return Some(Err(TransportError::Reset { reason }));
                }
                Some(Err(LlmError::InvalidResponse { snippet, .. })) => {
                    return Some(Ok(self.unparseable(snippet)));
                }
                Some(Err(error)) => self.encoder.error(&error, &mut out),
            };
            self.cover();
            if flow == Flow::Reset {
                self.ended = true;
                return Some(Err(TransportError::Reset {
                    reason: "connection reset by peer (simulated server failure)".into(),
                }));
            }
            if flow != Flow::Continue {
                self.ended = true;
            }
            if let Some((_, every)) = self.keep_alive {
                self.due = self.clock.now() + every;
            }
            if !out.is_empty() {
                self.frame_bytes_hint = out.len().min(FRAME_BYTES_HINT_MAX);
                return Some(Ok(out));
            }
        }
    }
}

/// The body of a streamed answer.
pub(crate) fn body(
    events: EventStream,
    mut encoder: Box<dyn StreamEncoder>,
    clock: SimClock,
    env: Env,
    mut rng: DeterministicRng,
) -> BodyStream {
    let mut preamble = Vec::new();
    encoder.preamble(&mut preamble);
    let keep_alive = encoder.keep_alive().map(|keep_alive| {
        let every_ms = keep_alive
            .every_ms
            .unwrap_or_else(|| rng.range_inclusive(KEEP_ALIVE_MS_MIN, KEEP_ALIVE_MS_MAX));
        (keep_alive.comment, Duration::from_millis(every_ms))
    });
    let unix_offset_ms = clock
        .unix_time_ms()
        .saturating_sub(u64::try_from(clock.now().as_millis()).unwrap_or(u64::MAX));
    let due = clock.now() + keep_alive.map_or(Duration::ZERO, |(_, every)| every);
    let cut_rng = rng.stream(crate::rng::streams::request::UNPARSEABLE);
    let state = State {
        events,
        encoder,
        clock,
        env,
        keep_alive,
        unix_offset_ms,
        due,
        keep_alives: 0,
        frame_bytes_hint: 0,
        ended: false,
        cut_rng,
    };
    let opening = (!preamble.is_empty()).then_some(Ok(preamble));
    let rest = futures::stream::unfold(state, |mut state| async move {
        let item = state.step().await?;
        Some((item, state))
    });
    futures::stream::iter(opening).chain(rest).boxed()
}
