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
        match *circuit {
            Circuit::Closed { .. } => Admission::Allowed,
            Circuit::Open { until } if now < until => Admission::Rejected { until },
            Circuit::Open { .. } | Circuit::HalfOpen { probing: false } => {
                *circuit = Circuit::HalfOpen { probing: true };
                Admission::Probe
            }
            Circuit::HalfOpen { probing: true } => Admission::Rejected { until: now },
        }
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
                *circuit = Circuit::Closed { failures: 0 };
                None
            }
            (Circuit::Closed { failures }, false)
                if failures + 1 < self.policy.failures_threshold =>
            {
                *circuit = Circuit::Closed {
                    failures: failures + 1,
                };
                None
            }
            (Circuit::Open { until }, false) => Some(until),
            (_, false) => {
                let until = now + cooldown;
                *circuit = Circuit::Open { until };
                Some(until)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
