//! Third-party code inside a simulation, and what the determinism check says about it.
//!
//! An adapter lets a client Umi did not write (async-openai, rig, rmcp) run inside a
//! simulation. Such a client may keep its own clock or randomness: retry jitter drawn
//! from OS entropy, a request id from a UUID, a deadline from `Instant::now`. Umi cannot
//! seed those; what it can do is know them. Each adapter describes its client as a
//! [`ForeignClient`] with the [`Hazard`]s found in the client's source, and notes it
//! ([`note`]) when it is built inside a run. When the determinism check then finds two
//! runs of one seed apart, [`explain`] reads the first events that differ (a request
//! body that changed, the same event at another simulated time, different events at
//! the same point) and names the cause that fits, with the noted clients' hazards of
//! that kind.
//!
//! The notes live in a thread-local scoped to one run (simulations run on one thread,
//! and a nested simulation is refused): set when the run starts, taken when it ends,
//! so nothing outlives a seed. Outside a run, [`note`] does nothing.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use serde::Serialize;

use crate::trace::{NetEvent, RunEvent, Trace, TraceEvent, TraceKind};

/// A third-party client, as an adapter describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignClient {
    /// The crate or package, with the version the hazards were read from
    /// (`async-openai 0.43`).
    pub name: &'static str,
    /// Where the client keeps time or randomness of its own on the paths the adapter
    /// serves; empty when its source showed none.
    pub hazards: &'static [Hazard],
}

/// One place a client reads what the simulation does not control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hazard {
    /// What and where, in the client's terms (`retry jitter from rand::rng() in
    /// RetryPolicy::backoff`).
    pub source: &'static str,
    /// How it shows in a trace.
    pub effect: Effect,
}

/// How an uncontrolled input shows when two runs of a seed are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Effect {
    /// It changes what the client sends (ids, timestamps in a body).
    RequestBytes,
    /// It changes when the client acts (jittered sleeps, wall-clock deadlines).
    Timing,
    /// It changes what the client does next (iteration order, thread scheduling).
    Order,
}

impl fmt::Display for ForeignClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.hazards.is_empty() {
            return write!(f, "{} (no clock or randomness of its own known)", self.name);
        }
        let sources: Vec<&str> = self.hazards.iter().map(|h| h.source).collect();
        write!(f, "{} ({})", self.name, sources.join("; "))
    }
}

struct Scope {
    trace: Arc<Trace>,
    clients: Vec<&'static ForeignClient>,
}

thread_local! {
    static CURRENT: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Notes that `client` runs in the current simulation (once per run; later notes of
/// the same client are ignored), and records a `foreign` trace event. Outside a
/// simulation it does nothing.
pub fn note(client: &'static ForeignClient) {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        let Some(scope) = current.as_mut() else {
            return;
        };
        if scope.clients.iter().any(|c| c.name == client.name) {
            return;
        }
        scope.clients.push(client);
        scope.trace.emit(RunEvent::Foreign {
            client: client.name.to_owned(),
        });
    });
}

/// The notes of one run: opened when it starts, finished when it ends.
pub(crate) struct RunNotes(());

impl RunNotes {
    /// Opens the notes of a run recording into `trace`.
    pub(crate) fn open(trace: Arc<Trace>) -> Self {
        CURRENT.with(|current| {
            let mut current = current.borrow_mut();
            assert!(
                current.is_none(),
                "a run's foreign-client notes opened inside another run's"
            );
            *current = Some(Scope {
                trace,
                clients: Vec::new(),
            });
        });
        Self(())
    }

    /// Closes the notes and returns the clients noted, in the order they were noted.
    pub(crate) fn finish(self) -> Vec<&'static ForeignClient> {
        let clients = CURRENT
            .with(|current| current.borrow_mut().take())
            .map(|scope| scope.clients)
            .unwrap_or_default();
        std::mem::forget(self);
        clients
    }
}

impl Drop for RunNotes {
    /// A run that unwound past its notes still closes them, so the next run on this
    /// thread starts clean.
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// A `net.request` event's call (method, URL, who serves it) and its body digest.
fn request_of(event: &TraceEvent) -> Option<(String, Option<[u8; 4]>)> {
    // One variant's fields, not a decision over the variants: `let else`, no `_ =>`.
    let TraceKind::Net(NetEvent::Request {
        method,
        url,
        served_by,
        body,
    }) = &event.record
    else {
        return None;
    };
    Some((format!("{method} {url} ({served_by})"), *body))
}

/// Why two runs of one seed parted at `first` / `second` (the first events that
/// differ; `None`: that run had ended), given the third-party clients noted in either
/// run. `None` when the events say nothing more than that they differ and no client
/// was noted.
pub fn explain(
    first: Option<&TraceEvent>,
    second: Option<&TraceEvent>,
    clients: &[&ForeignClient],
) -> Option<String> {
    if (first.is_none() || second.is_none()) && clients.is_empty() {
        return None;
    }
    let (cause, effect) = divergence(first, second);
    let mut out = cause;
    let suspects: Vec<&Hazard> = clients
        .iter()
        .flat_map(|c| c.hazards.iter())
        .filter(|h| Some(h.effect) == effect)
        .collect();
    if !suspects.is_empty() {
        let sources: Vec<&str> = suspects.iter().map(|h| h.source).collect();
        let _ = write!(out, "; known in this run: {}", sources.join("; "));
    }
    if !clients.is_empty() {
        let named: Vec<String> = clients
            .iter()
            .map(|c| {
                if c.hazards.is_empty() {
                    c.to_string()
                } else {
                    c.name.to_owned()
                }
            })
            .collect();
        let _ = write!(
            out,
            "; third-party clients in this run: {}",
            named.join(", ")
        );
    }
    Some(out)
}

/// What the first differing events say happened, and the effect of a hazard that would
/// cause it (`None`: one run ended where the other went on).
fn divergence(first: Option<&TraceEvent>, second: Option<&TraceEvent>) -> (String, Option<Effect>) {
    if let (Some((call, a_body)), Some((b_call, b_body))) =
        (first.and_then(request_of), second.and_then(request_of))
        && call == b_call
        && a_body != b_body
    {
        return (
            format!(
                "the same call ({call}) sent a different request body: the code under test \
                 put something unseeded into it (the wall clock, OS randomness, a counter \
                 shared between seeds)"
            ),
            Some(Effect::RequestBytes),
        );
    }
    match (first, second) {
        (Some(a), Some(b)) if a.kind == b.kind && a.detail == b.detail && a.at != b.at => (
            format!(
                "the same event ({}) came at another simulated time ({:?} then {:?}): a wait \
                 whose length the simulation did not draw (retry jitter from OS randomness, a \
                 duration from the wall clock)",
                a.kind, a.at, b.at
            ),
            Some(Effect::Timing),
        ),
        (Some(_), Some(_)) => (
            "the runs did different things at the same point: an order the simulation does \
             not fix (a hash map's iteration, a thread, state left by an earlier seed)"
                .to_owned(),
            Some(Effect::Order),
        ),
        _ => ("one run ended where the other went on".to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    static JITTERY: ForeignClient = ForeignClient {
        name: "jittery 1.0",
        hazards: &[
            Hazard {
                source: "retry jitter from rand::rng()",
                effect: Effect::Timing,
            },
            Hazard {
                source: "a UUID v4 in every request body",
                effect: Effect::RequestBytes,
            },
        ],
    };
    static QUIET: ForeignClient = ForeignClient {
        name: "quiet 2.0",
        hazards: &[],
    };

    fn event(at_ms: u64, kind: &'static str, detail: &str) -> TraceEvent {
        let detail = detail.to_owned();
        let at = Duration::from_millis(at_ms);
        TraceEvent::new(7, at, TraceKind::Named { kind, detail })
    }

    #[test]
    fn causes_follow_from_the_first_differing_events() {
        let request = |body: u8| {
            let record = TraceKind::Net(NetEvent::Request {
                method: "POST".into(),
                url: "https://x.sim/v1/chat".into(),
                served_by: "openai",
                body: Some([body; 4]),
            });
            TraceEvent::new(7, Duration::from_millis(5), record)
        };
        let cases: [(Option<TraceEvent>, Option<TraceEvent>, &str, &str); 4] = [
            (
                Some(request(0xaa)),
                Some(request(0xbb)),
                "sent a different request body",
                "a UUID v4",
            ),
            (
                Some(event(5, "sleep", "250ms")),
                Some(event(9, "sleep", "250ms")),
                "came at another simulated time",
                "retry jitter",
            ),
            (
                Some(event(5, "llm.call", "a")),
                Some(event(5, "storage.write", "b")),
                "different things at the same point",
                "third-party clients in this run: jittery 1.0",
            ),
            (
                Some(event(5, "llm.call", "a")),
                None,
                "ended where the other went on",
                "jittery",
            ),
        ];
        for (first, second, cause, named) in cases {
            let text = explain(first.as_ref(), second.as_ref(), &[&JITTERY])
                .expect("a cause with a client noted");
            assert!(text.contains(cause), "{text}");
            assert!(text.contains(named), "{text}");
        }
    }

    #[test]
    fn only_hazards_of_the_matching_effect_are_named() {
        let text = explain(
            Some(&event(5, "sleep", "1s")),
            Some(&event(6, "sleep", "1s")),
            &[&JITTERY],
        )
        .expect("a timing cause");
        assert!(text.contains("retry jitter"), "{text}");
        assert!(!text.contains("known in this run: a UUID"), "{text}");
    }

    #[test]
    fn a_client_without_hazards_is_listed_as_such_and_nothing_is_said_without_one() {
        let text = explain(
            Some(&event(5, "llm.call", "a")),
            Some(&event(5, "llm.call", "b")),
            &[&QUIET],
        )
        .expect("a cause");
        assert!(
            text.contains("quiet 2.0 (no clock or randomness of its own known)"),
            "{text}"
        );
        assert!(!text.contains("known in this run"), "{text}");
        assert_eq!(explain(Some(&event(1, "a", "x")), None, &[]), None);
    }

    #[test]
    fn notes_are_kept_per_run_once_per_client_and_ignored_outside_a_run() {
        note(&JITTERY); // no run: nothing to note into
        let runtime = crate::clock::tests::paused_runtime();
        let _entered = runtime.enter();
        let clock = crate::clock::SimClock::new(0);
        let trace = Arc::new(Trace::new(clock, 16, true));
        let notes = RunNotes::open(trace.clone());
        note(&JITTERY);
        note(&QUIET);
        note(&JITTERY);
        let noted: Vec<&str> = notes.finish().iter().map(|c| c.name).collect();
        assert_eq!(noted, ["jittery 1.0", "quiet 2.0"]);
        assert_eq!(trace.len(), 2, "one `foreign` event per client");
        let next = RunNotes::open(trace);
        assert!(
            next.finish().is_empty(),
            "the next run starts with no notes"
        );
    }
}
