//! The trace: every notable event of a run, with its simulated timestamp, and one hash
//! over all of them.
//!
//! The hash is the determinism check's evidence: same seed, same binary, same hash, in
//! any process. It is computed incrementally (SHA-256 over each event's index, time, kind
//! and detail), so a run of any length needs constant memory. The trace keeps only the
//! last few events for the failure report, unless full recording is switched on (for
//! replays and for locating where two runs diverged).
//!
//! Each event is a typed record ([`TraceKind`]); what is hashed and shown is its kind's
//! name and its text, so the hash is over the same bytes as when events were strings.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock::SimClock;
use crate::constants::{TRACE_DETAIL_BYTES_MAX, TRACE_EVENTS_FULL_MAX};
use crate::micros::micros_saturating;

mod kind;

pub use kind::{
    CassetteEvent, ClockEvent, FaultEvent, LlmEvent, McpEvent, NetEvent, RunEvent, StorageEvent,
    ToolEvent, TraceKind,
};

/// One event, as the trace keeps it: the typed record, and its kind and text as hashed.
#[derive(Debug, Clone, Serialize)]
pub struct TraceEvent {
    /// Position in the run, from 0.
    pub index: u64,
    /// Simulated time since the run started.
    #[serde(serialize_with = "serialize_duration_us")]
    pub at: Duration,
    /// Dotted kind, e.g. `llm.call`, `fault`, `sleep`: the record's [`TraceKind::name`].
    pub kind: &'static str,
    /// What happened: the record's text, cut to `TRACE_DETAIL_BYTES_MAX` bytes.
    pub detail: String,
    /// What happened, typed (not serialized: a report shows the kind and the text).
    #[serde(skip)]
    pub record: TraceKind,
}

impl TraceEvent {
    /// Event `index` of a run, at `at`: `record` with its kind and cut text.
    pub fn new(index: u64, at: Duration, record: TraceKind) -> Self {
        Self {
            index,
            at,
            kind: record.name(),
            detail: cut_detail(record.detail()),
            record,
        }
    }
}

/// Two events are the same when the trace would hash them the same: position, time,
/// kind and text (a difference past the cut is no difference, as in the hash).
impl PartialEq for TraceEvent {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
            && self.at == other.at
            && self.kind == other.kind
            && self.detail == other.detail
    }
}

impl Eq for TraceEvent {}

fn serialize_duration_us<S: serde::Serializer>(at: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(micros_saturating(*at))
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.at.as_micros();
        write!(
            f,
            "[{:>6}.{:06}s] #{:<5} {:<18} {}",
            micros / 1_000_000,
            micros % 1_000_000,
            self.index,
            self.kind,
            self.detail
        )
    }
}

/// The SHA-256 of a trace.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TraceHash(pub [u8; 32]);

impl TraceHash {
    /// The first 16 hex digits, enough to tell runs apart in a report.
    pub fn short(&self) -> String {
        umi_core::hex::lower(&self.0[..8])
    }
}

impl fmt::Display for TraceHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&umi_core::hex::lower(&self.0))
    }
}

impl fmt::Debug for TraceHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceHash({})", self.short())
    }
}

impl Serialize for TraceHash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The event log of one run. Shared (behind `Arc`) by everything that records.
pub struct Trace {
    clock: SimClock,
    state: Mutex<TraceState>,
}

struct TraceState {
    hasher: Sha256,
    count: u64,
    tail: VecDeque<KeptEvent>,
    tail_max: usize,
    full: Option<Vec<KeptEvent>>,
    full_overflowed: bool,
    /// The bytes hashed for the event being recorded: its index, time, kind and text,
    /// each length-prefixed, in one buffer reused from event to event (no allocation per
    /// event, one call into the hasher).
    scratch: Vec<u8>,
    /// A named event's text, written outside the lock (its `Display` is the caller's and
    /// may read the trace) and reused from event to event.
    detail_scratch: Vec<u8>,
}

impl TraceState {
    fn new(tail_max: usize, record_full: bool) -> Self {
        Self {
            hasher: Sha256::new(),
            count: 0,
            tail: VecDeque::with_capacity(tail_max.min(1024)),
            tail_max,
            full: record_full.then(Vec::new),
            full_overflowed: false,
            scratch: Vec::new(),
            detail_scratch: Vec::new(),
        }
    }

    /// Whether the events are kept (a tail or the full trace), not only hashed.
    fn keeps_events(&self) -> bool {
        self.tail_max > 0 || self.full.is_some()
    }

    /// Hashes the next event: its index, `at`, `kind` and the text `write_text` appends
    /// to the buffer it is given (cut to `TRACE_DETAIL_BYTES_MAX` bytes here), each
    /// length-prefixed; returns its index.
    fn hash_event(
        &mut self,
        at: Duration,
        kind: &str,
        write_text: impl FnOnce(&mut Vec<u8>),
    ) -> u64 {
        let index = self.count;
        let buffer = &mut self.scratch;
        buffer.clear();
        buffer.extend_from_slice(&index.to_le_bytes());
        buffer.extend_from_slice(
            &u64::try_from(at.as_nanos())
                .unwrap_or(u64::MAX)
                .to_le_bytes(),
        );
        buffer.extend_from_slice(&(kind.len() as u64).to_le_bytes());
        buffer.extend_from_slice(kind.as_bytes());
        let length_at = buffer.len();
        buffer.extend_from_slice(&[0; 8]);
        let text_at = buffer.len();
        write_text(buffer);
        cut_bytes_in_place(buffer, text_at);
        let text_len = (buffer.len() - text_at) as u64;
        buffer[length_at..text_at].copy_from_slice(&text_len.to_le_bytes());
        self.hasher.update(&*buffer);
        self.count += 1;
        index
    }
}

/// An event as the trace keeps it: its position, time and typed record, without its
/// text. Most events are never read (a passing seed's tail is dropped), so their text is
/// written once, to be hashed, and again only for the events someone asks for
/// ([`KeptEvent::event`]); `dst serve`'s log holds its runs' events so, and writes their
/// text when the log is read.
#[derive(Debug, Clone)]
pub(crate) struct KeptEvent {
    pub(crate) index: u64,
    pub(crate) at: Duration,
    pub(crate) record: TraceKind,
}

impl KeptEvent {
    /// The event as the trace recorded it: its kind and text written again (the same
    /// text as was hashed, since it is a function of the record).
    pub(crate) fn event(&self) -> TraceEvent {
        TraceEvent::new(self.index, self.at, self.record.clone())
    }
}

impl Trace {
    /// A trace stamped by `clock`, keeping the last `tail_max` events and, with
    /// `record_full`, every event (up to `TRACE_EVENTS_FULL_MAX`).
    pub fn new(clock: SimClock, tail_max: usize, record_full: bool) -> Self {
        Self {
            clock,
            state: Mutex::new(TraceState::new(tail_max, record_full)),
        }
    }

    /// Appends an event recorded by name ([`TraceKind::Named`]) at the current
    /// simulated time: what `Environment::record` does.
    pub fn record(&self, kind: &'static str, detail: fmt::Arguments<'_>) {
        let at = self.clock.now();
        let mut state = self.lock();
        if !state.keeps_events() {
            // Only hashed (a sweep's run keeps no events): the text goes into a reused
            // buffer, with no `String` of its own (issue 41). It is written with the lock
            // released, as a kept event's is: the caller's `Display` may read the trace.
            let mut text = std::mem::take(&mut state.detail_scratch);
            drop(state);
            text.clear();
            write_arguments(&mut text, detail);
            let mut state = self.lock();
            state.hash_event(at, kind, |buffer| buffer.extend_from_slice(&text));
            state.detail_scratch = text;
            return;
        }
        drop(state);
        let detail = match detail.as_str() {
            Some(text) => text.to_owned(),
            None => detail.to_string(),
        };
        // Cut before it is kept: a full trace holds up to `TRACE_EVENTS_FULL_MAX` events,
        // and text under the cap is hashed as it is, so the hash is what it was.
        self.emit(TraceKind::Named {
            kind,
            detail: cut_detail(detail),
        });
    }

    /// Appends `record` at the current simulated time. The hash takes the event's
    /// index, time, kind and text ([`TraceKind::name`] and its `Display`, cut to
    /// `TRACE_DETAIL_BYTES_MAX` bytes), each length-prefixed.
    pub fn emit(&self, record: impl Into<TraceKind>) {
        let record = record.into();
        let at = self.clock.now();
        let mut guard = self.lock();
        let state = &mut *guard;
        // The text goes into the buffer the trace keeps for the hashed bytes, not a new
        // `String` per event: the kept events hold the record and write their text again
        // when read ([`KeptEvent::event`]), which is the same text, since it is a function of
        // the record.
        let index = state.hash_event(at, record.name(), |buffer| {
            write_detail(&record, buffer);
        });
        if !state.keeps_events() {
            return;
        }
        let kept = KeptEvent { index, at, record };
        if let Some(full) = state.full.as_mut() {
            if full.len() < TRACE_EVENTS_FULL_MAX {
                full.push(kept.clone());
            } else {
                state.full_overflowed = true;
            }
        }
        if state.tail_max > 0 {
            if state.tail.len() == state.tail_max {
                state.tail.pop_front();
            }
            state.tail.push_back(kept);
        }
    }

    /// The hash over every event so far.
    pub fn hash(&self) -> TraceHash {
        TraceHash(self.lock().hasher.clone().finalize().into())
    }

    /// How many events were recorded.
    pub fn len(&self) -> u64 {
        self.lock().count
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The last events kept for reports, oldest first. A sweep's runs keep none (it
    /// reports no tail; `dst replay` runs the seed again to show one), so a scenario's
    /// own check must not read it: its verdict would differ between a sweep and a replay.
    pub fn tail(&self) -> Vec<TraceEvent> {
        self.lock().tail.iter().map(KeptEvent::event).collect()
    }

    /// Every event, when full recording is on (`None` otherwise, or when the run passed
    /// `TRACE_EVENTS_FULL_MAX` events).
    pub fn events(&self) -> Option<Vec<TraceEvent>> {
        let state = self.lock();
        if state.full_overflowed {
            return None;
        }
        state
            .full
            .as_ref()
            .map(|full| full.iter().map(KeptEvent::event).collect())
    }

    /// Every event, typed, taken out of the trace (which keeps no full record after):
    /// what [`Trace::events`] would write, for a reader that writes the text itself when
    /// it needs it. `None` as for `events`.
    #[cfg(feature = "serve")]
    pub(crate) fn take_kept(&self) -> Option<Vec<KeptEvent>> {
        let mut state = self.lock();
        if state.full_overflowed {
            return None;
        }
        state.full.take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TraceState> {
        // A panic while holding the lock leaves a consistent state (each update is
        // applied in full before the next statement), so poisoning is ignored.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("events", &self.len())
            .finish_non_exhaustive()
    }
}

/// The hash a trace would have after `events`, hashed as they came (index, time, kind,
/// text): what a test holds events written again from their records to, against the
/// run's own [`TraceHash`].
#[cfg(all(test, feature = "serve"))]
pub(crate) fn hash_of(events: &[TraceEvent]) -> TraceHash {
    let mut state = TraceState::new(0, false);
    for event in events {
        let index = state.hash_event(event.at, event.kind, |buffer| {
            buffer.extend_from_slice(event.detail.as_bytes());
        });
        assert_eq!(index, event.index, "events hashed in the order they came");
    }
    TraceHash(state.hasher.finalize().into())
}

/// Cuts `detail` to `TRACE_DETAIL_BYTES_MAX` bytes at a character boundary.
fn cut_detail(mut detail: String) -> String {
    cut_in_place(&mut detail);
    detail
}

/// Cuts `detail` in place to `TRACE_DETAIL_BYTES_MAX` bytes at a character boundary,
/// marking the cut.
fn cut_in_place(detail: &mut String) {
    if detail.len() <= TRACE_DETAIL_BYTES_MAX {
        return;
    }
    const MARK: &str = "…[cut]";
    let mut end = TRACE_DETAIL_BYTES_MAX - MARK.len();
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    detail.truncate(end);
    detail.push_str(MARK);
    debug_assert!(detail.len() <= TRACE_DETAIL_BYTES_MAX);
}

/// Appends `record`'s text to `buffer` (uncut: the caller cuts), as its `Display`
/// writes it.
fn write_detail(record: &TraceKind, buffer: &mut Vec<u8>) {
    match record.text() {
        Some(text) => buffer.extend_from_slice(text.as_bytes()),
        None => write_arguments(buffer, format_args!("{record}")),
    }
}

/// Appends the text of `arguments` to `buffer`.
fn write_arguments(buffer: &mut Vec<u8>, arguments: fmt::Arguments<'_>) {
    use std::io::Write as _;
    match arguments.as_str() {
        Some(text) => buffer.extend_from_slice(text.as_bytes()),
        // Writing to a `Vec` cannot fail; a `Display` that returns an error is a bug.
        None => buffer
            .write_fmt(arguments)
            .expect("a trace record's Display does not fail"),
    }
}

/// Cuts the UTF-8 text that starts at `text_at` in `buffer` as [`cut_in_place`] cuts a
/// `String`: to `TRACE_DETAIL_BYTES_MAX` bytes at a character boundary, marking the cut.
fn cut_bytes_in_place(buffer: &mut Vec<u8>, text_at: usize) {
    if buffer.len() - text_at <= TRACE_DETAIL_BYTES_MAX {
        return;
    }
    const MARK: &str = "…[cut]";
    let mut end = text_at + TRACE_DETAIL_BYTES_MAX - MARK.len();
    // `str::is_char_boundary` on valid UTF-8: a byte that is not a continuation byte.
    while (buffer[end] as i8) < -0x40 {
        end -= 1;
    }
    buffer.truncate(end);
    buffer.extend_from_slice(MARK.as_bytes());
}

/// The index of the first event where two full traces differ, if they do.
pub fn first_divergence(left: &[TraceEvent], right: &[TraceEvent]) -> Option<usize> {
    let common = left.len().min(right.len());
    (0..common)
        .find(|&i| left[i] != right[i])
        .or((left.len() != right.len()).then_some(common))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::clock::tests::in_paused_runtime as in_runtime;

    #[test]
    fn same_events_same_hash_and_order_matters() {
        in_runtime(|| {
            let a = Trace::new(SimClock::new(0), 4, false);
            let b = Trace::new(SimClock::new(0), 4, false);
            let c = Trace::new(SimClock::new(0), 4, false);
            for trace in [&a, &b] {
                trace.record("x", format_args!("one"));
                trace.record("y", format_args!("two {}", 2));
            }
            c.record("y", format_args!("two {}", 2));
            c.record("x", format_args!("one"));
            assert_eq!(a.hash(), b.hash());
            assert_ne!(a.hash(), c.hash());
            // A kind/detail boundary shift must change the hash too.
            let d = Trace::new(SimClock::new(0), 4, false);
            d.record("x", format_args!("ab"));
            let e = Trace::new(SimClock::new(0), 4, false);
            e.record("xa", format_args!("b"));
            assert_ne!(d.hash(), e.hash());
        });
    }

    /// A typed record hashes as the kind and text it displays: the same bytes as the
    /// string it replaced, so a seed's hash did not change when events became typed.
    #[test]
    fn a_record_hashes_as_its_name_and_text() {
        in_runtime(|| {
            let typed = Trace::new(SimClock::new(0), 4, true);
            let named = Trace::new(SimClock::new(0), 4, true);
            let body = Some([0xde, 0xad, 0xbe, 0xef]);
            typed.emit(ClockEvent::Sleep {
                duration: Duration::from_millis(250),
            });
            typed.emit(NetEvent::Request {
                method: "POST".into(),
                url: "https://x.sim/v1".into(),
                served_by: "openai",
                body,
            });
            named.record("sleep", format_args!("{} ms", 250));
            named.record(
                "net.request",
                format_args!("POST https://x.sim/v1 (openai) body=deadbeef"),
            );
            assert_eq!(typed.hash(), named.hash());
            let events = typed.events().unwrap();
            assert_eq!(events, named.events().unwrap());
            assert!(matches!(
                events[1].record,
                TraceKind::Net(NetEvent::Request { body: b, .. }) if b == body
            ));
        });
    }

    /// A named event's `Display` is the caller's and may read the trace it is recorded
    /// into: with events kept or only hashed (a sweep's run), it is written with the
    /// trace's lock released (under the lock this test deadlocks), and both hash alike.
    #[test]
    fn a_records_display_may_read_its_own_trace() {
        struct Count<'a>(&'a Trace);
        impl fmt::Display for Count<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} events before", self.0.len())
            }
        }
        in_runtime(|| {
            let hashed = Trace::new(SimClock::new(0), 0, false);
            let kept = Trace::new(SimClock::new(0), 4, true);
            for trace in [&hashed, &kept] {
                trace.record("a", format_args!("{}", Count(trace)));
                trace.record("b", format_args!("{}", Count(trace)));
            }
            assert_eq!(hashed.hash(), kept.hash());
            let second = kept.events().unwrap()[1].to_string();
            assert!(second.contains("1 events before"), "{second}");
        });
    }

    #[test]
    fn tail_keeps_the_newest_events() {
        in_runtime(|| {
            let trace = Trace::new(SimClock::new(0), 3, true);
            for i in 0..10 {
                trace.record("n", format_args!("{i}"));
            }
            let tail: Vec<_> = trace.tail().into_iter().map(|e| e.detail).collect();
            assert_eq!(tail, ["7", "8", "9"]);
            assert_eq!(trace.len(), 10);
            assert_eq!(trace.events().unwrap().len(), 10);
        });
    }

    /// Review of issue 27: a named event kept its whole text in its record, so a full
    /// trace of long user events held far more than `TRACE_DETAIL_BYTES_MAX` per event.
    #[test]
    fn a_named_event_keeps_only_its_cut_text() {
        in_runtime(|| {
            let trace = Trace::new(SimClock::new(0), 3, true);
            let long = "x".repeat(TRACE_DETAIL_BYTES_MAX * 4);
            trace.record("user", format_args!("{long}"));
            let events = trace.events().unwrap();
            let TraceKind::Named { detail, .. } = &events[0].record else {
                panic!("{:?}", events[0].record);
            };
            assert!(detail.len() <= TRACE_DETAIL_BYTES_MAX, "{}", detail.len());
            assert_eq!(detail, &events[0].detail);
        });
    }

    /// The text hashed from the trace's buffer and the text an event shows when read are
    /// the same bytes, cut or not (issue 41 made the first a reused buffer and the second
    /// a text written again from the record).
    #[test]
    fn the_hashed_text_is_the_shown_text() {
        let long = "é".repeat(TRACE_DETAIL_BYTES_MAX);
        let records = [
            TraceKind::Named {
                kind: "k",
                detail: "plain".into(),
            },
            TraceKind::Clock(ClockEvent::Sleep {
                duration: Duration::from_millis(250),
            }),
            TraceKind::Storage(StorageEvent::Rot { key: long.clone() }),
            TraceKind::Net(NetEvent::BadRequest { message: long }),
        ];
        let header = b"bytes before the text".to_vec();
        for record in records {
            let mut buffer = header.clone();
            write_detail(&record, &mut buffer);
            cut_bytes_in_place(&mut buffer, header.len());
            let shown = TraceEvent::new(0, Duration::ZERO, record).detail;
            assert_eq!(
                &buffer[..header.len()],
                &header[..],
                "the bytes before were kept"
            );
            assert_eq!(&buffer[header.len()..], shown.as_bytes());
        }
    }

    /// Issue 41: a run that keeps no events hashes a named event's text without making a
    /// `String` of it; the hash is the one a run that keeps them gets.
    #[test]
    fn a_trace_that_keeps_nothing_hashes_what_one_that_keeps_events_does() {
        in_runtime(|| {
            let long = "é".repeat(TRACE_DETAIL_BYTES_MAX);
            let record_into = |trace: &Trace| {
                trace.record("plain", format_args!("text"));
                trace.record("formatted", format_args!("{} and {}", 1, "two"));
                trace.record("long", format_args!("{long}"));
                trace.emit(ClockEvent::Sleep {
                    duration: Duration::from_millis(250),
                });
                trace.emit(NetEvent::BadRequest {
                    message: long.clone(),
                });
            };
            let kept = Trace::new(SimClock::new(0), 4, true);
            let hashed = Trace::new(SimClock::new(0), 0, false);
            record_into(&kept);
            record_into(&hashed);
            assert_eq!(kept.hash(), hashed.hash());
            assert_eq!(hashed.len(), 5);
            assert!(hashed.tail().is_empty());
        });
    }

    #[test]
    fn long_details_are_cut_on_a_char_boundary() {
        let cut = cut_detail("é".repeat(TRACE_DETAIL_BYTES_MAX));
        assert!(cut.len() <= TRACE_DETAIL_BYTES_MAX);
        assert!(cut.ends_with("…[cut]"));
    }

    #[test]
    fn divergence_is_located() {
        let event = |index, detail: &str| {
            let detail = detail.to_owned();
            TraceEvent::new(
                index,
                Duration::ZERO,
                TraceKind::Named { kind: "k", detail },
            )
        };
        let left = vec![event(0, "a"), event(1, "b")];
        let right = vec![event(0, "a"), event(1, "c")];
        assert_eq!(first_divergence(&left, &right), Some(1));
        assert_eq!(first_divergence(&left, &left), None);
        assert_eq!(first_divergence(&left, &left[..1]), Some(1));
    }
}
