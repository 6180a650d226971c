//! The router's decision after a failed attempt, as a pure function.
//!
//! [`LlmRouter::route`](super::LlmRouter) carries steps out (events, coverage marks,
//! sleeps, the breaker); what the next step *is* lives here, so every rule of the retry
//! policy can be read in one place and checked by a table test without a simulation:
//!
//! 1. an overflowing prompt moves to a model with a larger context window;
//! 2. a request the provider refused as malformed ends the call (another model would
//!    refuse it too);
//! 3. a circuit the attempt just opened, an error that is not retryable, or the last
//!    retry moves to the next model (no backoff: nothing would answer it);
//! 4. a Retry-After longer than the policy waits moves to the next model;
//! 5. a wait that would end past the call's deadline moves to the next model;
//! 6. otherwise: wait the backoff (floor plus jitter) or the Retry-After, whichever is
//!    longer, and retry the same model.

use std::fmt;
use std::time::Duration;

use super::config::RetryPolicy;
use crate::llm::error::LlmError;

/// What the router does after an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Try models with a larger context window (rule 1).
    LargerWindow,
    /// End the call with this attempt's error (rule 2).
    Refuse,
    /// Leave this model for the next in the chain.
    NextModel(NextReason),
    /// Sleep, then try the same model again (rule 6).
    Retry {
        /// How long to sleep: the larger of the backoff and the Retry-After.
        sleep_ms: u64,
        /// The backoff without jitter.
        floor_ms: u64,
        /// The jitter added to the floor.
        jitter_ms: u64,
        /// What the provider asked for, if it did.
        retry_after_ms: Option<u64>,
    },
}

/// Why the router left a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextReason {
    /// This attempt opened the provider's circuit (rule 3).
    CircuitOpened,
    /// The error is not one a retry can mend (rule 3).
    NotRetryable,
    /// The last retry failed (rule 3).
    RetriesExhausted,
    /// The provider asked to wait longer than the policy does (rule 4).
    RetryAfterTooLong,
    /// The wait would end past the call's deadline (rule 5).
    PastDeadline,
}

impl NextReason {
    /// Every reason, in the order of the rules.
    pub const ALL: [Self; 5] = [
        Self::CircuitOpened,
        Self::NotRetryable,
        Self::RetriesExhausted,
        Self::RetryAfterTooLong,
        Self::PastDeadline,
    ];
}

/// The reason as a fallback event names it.
impl fmt::Display for NextReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CircuitOpened => "this attempt opened the circuit",
            Self::NotRetryable => "not retryable",
            Self::RetriesExhausted => "retries exhausted",
            Self::RetryAfterTooLong => "retry-after longer than the policy waits",
            Self::PastDeadline => "a retry would end past the deadline",
        })
    }
}

/// A failed attempt as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'a> {
    /// The attempt's error.
    pub error: &'a LlmError,
    /// 0 for the first attempt on this model.
    pub attempt: u32,
    /// Whether recording this failure opened the provider's circuit.
    pub circuit_opened: bool,
}

/// The next step after `failure`, at simulated time `now`, for a call whose deadline is
/// `deadline`. `jitter_unit` draws a number in `[0, 1)`; it is called only when a retry
/// is still possible (rule 6 needs it, and rules 1–3 end before it), so the seed's
/// draws do not depend on errors that never retry.
pub fn after_failure(
    failure: Failure<'_>,
    policy: &RetryPolicy,
    now: Duration,
    deadline: Duration,
    jitter_unit: impl FnOnce() -> f64,
) -> Step {
    let error = failure.error;
    if error.needs_larger_context() {
        return Step::LargerWindow;
    }
    if matches!(
        error,
        LlmError::BadRequest { .. } | LlmError::InvalidPrompt { .. }
    ) {
        return Step::Refuse;
    }
    if failure.circuit_opened {
        return Step::NextModel(NextReason::CircuitOpened);
    }
    if !error.is_retryable() {
        return Step::NextModel(NextReason::NotRetryable);
    }
    if failure.attempt >= policy.max_retries {
        return Step::NextModel(NextReason::RetriesExhausted);
    }
    let floor_ms = policy.backoff_floor_ms(failure.attempt);
    let jitter_ms = (floor_ms as f64 * policy.jitter * jitter_unit()) as u64;
    let retry_after_ms = error.retry_after_ms();
    if retry_after_ms.is_some_and(|asked| asked > policy.retry_after_max_ms) {
        return Step::NextModel(NextReason::RetryAfterTooLong);
    }
    let sleep_ms = (floor_ms + jitter_ms).max(retry_after_ms.unwrap_or(0));
    if now + Duration::from_millis(sleep_ms) >= deadline {
        return Step::NextModel(NextReason::PastDeadline);
    }
    Step::Retry {
        sleep_ms,
        floor_ms,
        jitter_ms,
        retry_after_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_limited(retry_after_ms: Option<u64>) -> LlmError {
        LlmError::RateLimit { retry_after_ms }
    }

    fn server() -> LlmError {
        LlmError::ServiceUnavailable {
            status: Some(503),
            message: "busy".into(),
        }
    }

    #[test]
    fn each_rule_decides_in_its_turn() {
        let policy = RetryPolicy {
            max_retries: 2,
            initial_backoff_ms: 1_000,
            backoff_multiplier: 2.0,
            backoff_max_ms: 30_000,
            jitter: 0.5,
            retry_after_max_ms: 10_000,
            ..RetryPolicy::default()
        };
        let overflow = LlmError::ContextOverflow {
            prompt_tokens: Some(9_000),
            limit: Some(8_192),
        };
        let bad = LlmError::BadRequest {
            status: Some(400),
            message: "no".into(),
        };
        let auth = LlmError::Auth {
            status: 401,
            message: "key".into(),
        };
        let (limited, long_wait) = (rate_limited(Some(4_000)), rate_limited(Some(20_000)));
        let busy = server();
        let second = Duration::from_secs(1);
        let far = Duration::from_secs(600);
        let retry = |sleep_ms, floor_ms, jitter_ms, retry_after_ms| Step::Retry {
            sleep_ms,
            floor_ms,
            jitter_ms,
            retry_after_ms,
        };
        // (error, attempt, circuit opened, now, deadline, jitter draw) → step
        let cases: [(&LlmError, u32, bool, Duration, Duration, f64, Step); 10] = [
            (&overflow, 0, false, second, far, 0.0, Step::LargerWindow),
            (&overflow, 2, true, second, far, 0.0, Step::LargerWindow),
            (&bad, 0, false, second, far, 0.0, Step::Refuse),
            (
                &busy,
                0,
                true,
                second,
                far,
                0.0,
                Step::NextModel(NextReason::CircuitOpened),
            ),
            (
                &auth,
                0,
                false,
                second,
                far,
                0.0,
                Step::NextModel(NextReason::NotRetryable),
            ),
            (
                &busy,
                2,
                false,
                second,
                far,
                0.0,
                Step::NextModel(NextReason::RetriesExhausted),
            ),
            (
                &long_wait,
                0,
                false,
                second,
                far,
                0.0,
                Step::NextModel(NextReason::RetryAfterTooLong),
            ),
            // Backoff 2 s + jitter 0.5 × 2 s × 0.5 = 2.5 s; the deadline is 3 s away.
            (
                &busy,
                1,
                false,
                second,
                second * 4,
                0.5,
                retry(2_500, 2_000, 500, None),
            ),
            (
                &busy,
                1,
                false,
                second,
                second * 3,
                0.99,
                Step::NextModel(NextReason::PastDeadline),
            ),
            // Retry-After (4 s) is longer than backoff plus jitter (1 s + 0.25 s): it wins.
            (
                &limited,
                0,
                false,
                second,
                far,
                0.5,
                retry(4_000, 1_000, 250, Some(4_000)),
            ),
        ];
        for (error, attempt, circuit_opened, now, deadline, unit, expected) in cases {
            let failure = Failure {
                error,
                attempt,
                circuit_opened,
            };
            let step = after_failure(failure, &policy, now, deadline, || unit);
            assert_eq!(step, expected, "{error:?} on attempt {attempt}");
        }
    }

    #[test]
    fn jitter_is_drawn_only_when_a_retry_is_still_possible() {
        let policy = RetryPolicy::default();
        let auth = LlmError::Auth {
            status: 401,
            message: "key".into(),
        };
        let busy = server();
        let mut draws = 0;
        for (error, attempt) in [(&auth, 0), (&busy, policy.max_retries), (&busy, 0)] {
            let failure = Failure {
                error,
                attempt,
                circuit_opened: false,
            };
            let _ = after_failure(failure, &policy, Duration::ZERO, Duration::MAX, || {
                draws += 1;
                0.0
            });
        }
        assert_eq!(draws, 1, "only the retryable error with retries left drew");
    }
}
