//! The trace: every notable event of a run, with its simulated timestamp, and one hash
//! over all of them.
//!
//! The hash is the determinism check's evidence: same seed, same binary, same hash, in
//! any process. It is computed incrementally (SHA-256 over each event's index, time, kind
//! and detail), so a run of any length needs constant memory. The trace keeps only the
//! last few events for the failure report, unless full recording is switched on (for
//! replays and for locating where two runs diverged).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock::SimClock;
use crate::constants::{TRACE_DETAIL_BYTES_MAX, TRACE_EVENTS_FULL_MAX};

/// One event, as the trace keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceEvent {
    /// Position in the run, from 0.
    pub index: u64,
    /// Simulated time since the run started.
    #[serde(serialize_with = "serialize_duration_us")]
    pub at: Duration,
    /// Dotted kind, e.g. `llm.call`, `fault`, `sleep`.
    pub kind: &'static str,
    /// What happened, cut to `TRACE_DETAIL_BYTES_MAX` bytes.
    pub detail: String,
}

fn serialize_duration_us<S: serde::Serializer>(at: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(at.as_micros()).unwrap_or(u64::MAX))
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
        self.0[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for TraceHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
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
    tail: VecDeque<TraceEvent>,
    tail_max: usize,
    full: Option<Vec<TraceEvent>>,
    full_overflowed: bool,
}

impl Trace {
    /// A trace stamped by `clock`, keeping the last `tail_max` events and, with
    /// `record_full`, every event (up to `TRACE_EVENTS_FULL_MAX`).
    pub fn new(clock: SimClock, tail_max: usize, record_full: bool) -> Self {
        Self {
            clock,
            state: Mutex::new(TraceState {
                hasher: Sha256::new(),
                count: 0,
                tail: VecDeque::with_capacity(tail_max.min(1024)),
                tail_max,
                full: record_full.then(Vec::new),
                full_overflowed: false,
            }),
        }
    }

    /// Appends an event at the current simulated time.
    pub fn record(&self, kind: &'static str, detail: fmt::Arguments<'_>) {
        let detail = match detail.as_str() {
            Some(text) => cut_detail(text.to_owned()),
            None => cut_detail(detail.to_string()),
        };
        let at = self.clock.now();
        let mut state = self.lock();
        let index = state.count;
        state.hasher.update(index.to_le_bytes());
        state.hasher.update(
            u64::try_from(at.as_nanos())
                .unwrap_or(u64::MAX)
                .to_le_bytes(),
        );
        state.hasher.update((kind.len() as u64).to_le_bytes());
        state.hasher.update(kind.as_bytes());
        state.hasher.update((detail.len() as u64).to_le_bytes());
        state.hasher.update(detail.as_bytes());
        state.count += 1;
        let event = TraceEvent {
            index,
            at,
            kind,
            detail,
        };
        if let Some(full) = state.full.as_mut() {
            if full.len() < TRACE_EVENTS_FULL_MAX {
                full.push(event.clone());
            } else {
                state.full_overflowed = true;
            }
        }
        if state.tail_max > 0 {
            if state.tail.len() == state.tail_max {
                state.tail.pop_front();
            }
            state.tail.push_back(event);
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

    /// The last events kept for reports, oldest first.
    pub fn tail(&self) -> Vec<TraceEvent> {
        self.lock().tail.iter().cloned().collect()
    }

    /// Every event, when full recording is on (`None` otherwise, or when the run passed
    /// `TRACE_EVENTS_FULL_MAX` events).
    pub fn events(&self) -> Option<Vec<TraceEvent>> {
        let state = self.lock();
        if state.full_overflowed {
            return None;
        }
        state.full.clone()
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

/// Cuts `detail` to `TRACE_DETAIL_BYTES_MAX` bytes at a character boundary.
fn cut_detail(mut detail: String) -> String {
    if detail.len() <= TRACE_DETAIL_BYTES_MAX {
        return detail;
    }
    const MARK: &str = "…[cut]";
    let mut end = TRACE_DETAIL_BYTES_MAX - MARK.len();
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    detail.truncate(end);
    detail.push_str(MARK);
    debug_assert!(detail.len() <= TRACE_DETAIL_BYTES_MAX);
    detail
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

    fn in_runtime<T>(body: impl FnOnce() -> T) -> T {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let _guard = runtime.enter();
        body()
    }

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

    #[test]
    fn long_details_are_cut_on_a_char_boundary() {
        let cut = cut_detail("é".repeat(TRACE_DETAIL_BYTES_MAX));
        assert!(cut.len() <= TRACE_DETAIL_BYTES_MAX);
        assert!(cut.ends_with("…[cut]"));
    }

    #[test]
    fn divergence_is_located() {
        let event = |index, detail: &str| TraceEvent {
            index,
            at: Duration::ZERO,
            kind: "k",
            detail: detail.into(),
        };
        let left = vec![event(0, "a"), event(1, "b")];
        let right = vec![event(0, "a"), event(1, "c")];
        assert_eq!(first_divergence(&left, &right), Some(1));
        assert_eq!(first_divergence(&left, &left), None);
        assert_eq!(first_divergence(&left, &left[..1]), Some(1));
    }
}
