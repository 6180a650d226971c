//! The per-provider circuit breaker.
//!
//! After `failures_threshold` consecutive failures a provider's circuit opens: the router
//! skips it until `cooldown_ms` have passed. Then one probe is let through (half-open):
//! success closes the circuit, failure opens it for another cooldown. Failures that are
//! the request's fault (bad request, invalid prompt, context overflow) do not count.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::config::CooldownPolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Circuit {
    Closed { failures: u32 },
    Open { until: Duration },
    HalfOpen { probing: bool },
}

/// What the breaker says about a provider now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Go ahead.
    Allowed,
    /// Go ahead: this call is the half-open probe.
    Probe,
    /// Skip: cooling down until this time.
    Rejected { until: Duration },
}

/// Circuits by provider.
#[derive(Debug)]
pub(crate) struct Breaker {
    policy: CooldownPolicy,
    circuits: Mutex<BTreeMap<String, Circuit>>,
}

impl Breaker {
    pub(crate) fn new(policy: CooldownPolicy) -> Self {
        Self {
            policy,
            circuits: Mutex::new(BTreeMap::new()),
        }
    }

    pub(crate) fn admit(&self, provider: &str, now: Duration) -> Admission {
        let mut circuits = self.circuits.lock().unwrap_or_else(PoisonError::into_inner);
        let circuit = circuits
            .entry(provider.to_owned())
            .or_insert(Circuit::Closed { failures: 0 });
        let admission = match *circuit {
            Circuit::Closed { .. } => Admission::Allowed,
            Circuit::Open { until } if now < until => Admission::Rejected { until },
            Circuit::Open { .. } | Circuit::HalfOpen { probing: false } => {
                transition(circuit, Circuit::HalfOpen { probing: true }, now);
                Admission::Probe
            }
            Circuit::HalfOpen { probing: true } => Admission::Rejected { until: now },
        };
        // What the breaker hands the router: a rejection never ends in the past.
        debug_assert!(
            !matches!(admission, Admission::Rejected { until } if until < now),
            "breaker: {provider} rejected until {admission:?}, before now ({now:?})"
        );
        admission
    }

    /// Records an outcome; returns when the circuit opened, if this failure opened it.
    pub(crate) fn record(&self, provider: &str, now: Duration, success: bool) -> Option<Duration> {
        let mut circuits = self.circuits.lock().unwrap_or_else(PoisonError::into_inner);
        let circuit = circuits
            .entry(provider.to_owned())
            .or_insert(Circuit::Closed { failures: 0 });
        let cooldown = Duration::from_millis(self.policy.cooldown_ms);
        match (*circuit, success) {
            (_, true) => {
                transition(circuit, Circuit::Closed { failures: 0 }, now);
                None
            }
            (Circuit::Closed { failures }, false)
                if failures + 1 < self.policy.failures_threshold =>
            {
                let failures = failures + 1;
                transition(circuit, Circuit::Closed { failures }, now);
                None
            }
            (Circuit::Open { until }, false) => Some(until),
            (_, false) => {
                let until = now + cooldown;
                transition(circuit, Circuit::Open { until }, now);
                Some(until)
            }
        }
    }
}

/// Whether a circuit may go from `from` to `to` at `now`: the breaker's state machine.
/// A success closes any circuit; a failure counts up a closed one or opens it (until a
/// time not past); an open one turns half-open (probing) only once its cooldown is over.
fn transition_is_legal(from: Circuit, to: Circuit, now: Duration) -> bool {
    match (from, to) {
        _ if from == to => true,
        (_, Circuit::Closed { failures: 0 }) => true,
        (Circuit::Closed { failures }, Circuit::Closed { failures: next }) => next == failures + 1,
        (Circuit::Closed { .. } | Circuit::HalfOpen { .. }, Circuit::Open { until }) => {
            until >= now
        }
        (Circuit::Open { until }, Circuit::HalfOpen { probing: true }) => now >= until,
        (Circuit::HalfOpen { probing: false }, Circuit::HalfOpen { probing: true }) => true,
        _ => false,
    }
}

/// Moves `circuit` to `to`: both `admit` (handing over a probe) and `record` (taking an
/// outcome in) change a circuit only through here, and only along the state machine.
fn transition(circuit: &mut Circuit, to: Circuit, now: Duration) {
    debug_assert!(
        transition_is_legal(*circuit, to, now),
        "breaker: illegal transition {circuit:?} -> {to:?} at {now:?}"
    );
    *circuit = to;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_machine_allows_only_its_transitions() {
        let t = Duration::from_millis;
        let closed = |failures| Circuit::Closed { failures };
        let open = |ms| Circuit::Open { until: t(ms) };
        let probing = Circuit::HalfOpen { probing: true };
        let table = [
            (closed(0), closed(1), 0, true),
            (closed(1), closed(0), 0, true),
            (closed(1), closed(3), 0, false),
            (closed(2), open(1_000), 0, true),
            (closed(2), open(10), 20, false),
            (open(100), probing, 100, true),
            (open(100), probing, 99, false),
            (open(100), open(200), 150, false),
            (open(100), closed(0), 50, true),
            (probing, open(200), 100, true),
            (probing, closed(0), 100, true),
            (closed(0), probing, 0, false),
            (probing, Circuit::HalfOpen { probing: false }, 0, false),
        ];
        for (from, to, now_ms, legal) in table {
            assert_eq!(
                transition_is_legal(from, to, t(now_ms)),
                legal,
                "{from:?} -> {to:?} at {now_ms} ms"
            );
        }
    }

    /// A planted bad transition (a closed circuit straight to probing, skipping its
    /// cooldown) trips the assertion both sides change circuits through.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "breaker: illegal transition")]
    fn an_illegal_transition_trips_the_assertion() {
        let mut circuit = Circuit::Closed { failures: 0 };
        transition(
            &mut circuit,
            Circuit::HalfOpen { probing: true },
            Duration::ZERO,
        );
    }

    #[test]
    fn opens_after_the_threshold_and_probes_after_the_cooldown() {
        let breaker = Breaker::new(CooldownPolicy::new(2, 1_000));
        let t = Duration::from_millis;
        assert_eq!(breaker.admit("p", t(0)), Admission::Allowed);
        assert_eq!(breaker.record("p", t(0), false), None);
        assert_eq!(breaker.record("p", t(10), false), Some(t(1_010)));
        assert_eq!(
            breaker.admit("p", t(500)),
            Admission::Rejected { until: t(1_010) }
        );
        assert_eq!(breaker.admit("p", t(1_010)), Admission::Probe);
        assert_eq!(
            breaker.admit("p", t(1_011)),
            Admission::Rejected { until: t(1_011) },
            "one probe at a time"
        );
        assert_eq!(
            breaker.record("p", t(1_020), false),
            Some(t(2_020)),
            "a failed probe reopens"
        );
        assert_eq!(breaker.admit("p", t(2_020)), Admission::Probe);
        assert_eq!(breaker.record("p", t(2_030), true), None);
        assert_eq!(breaker.admit("p", t(2_031)), Admission::Allowed);
        assert_eq!(
            breaker.admit("other", t(0)),
            Admission::Allowed,
            "circuits are per provider"
        );
    }
}
