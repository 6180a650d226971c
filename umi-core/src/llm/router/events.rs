//! What the router did, as events: each is recorded in the environment's trace (its
//! [`RouterEvent::kind`] and its `Display` text) and handed to the router's observer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::policy::NextReason;
use crate::llm::error::LlmError;

/// Something the router did.
#[derive(Debug, Clone, PartialEq)]
pub enum RouterEvent {
    /// An attempt starts.
    Attempt {
        /// The routed call (numbered from 1 per router).
        call: u64,
        /// The model.
        model: String,
        /// Which attempt on this model (0 first).
        attempt: u32,
    },
    /// An attempt failed.
    Failed {
        /// The call.
        call: u64,
        /// The model.
        model: String,
        /// Which attempt.
        attempt: u32,
        /// The error.
        error: LlmError,
    },
    /// An attempt succeeded (for a stream: its first event arrived); the call is answered.
    Succeeded {
        /// The call.
        call: u64,
        /// The model.
        model: String,
        /// Which attempt.
        attempt: u32,
    },
    /// The router sleeps before retrying.
    Backoff {
        /// The call.
        call: u64,
        /// The model to retry.
        model: String,
        /// The sleep.
        sleep_ms: u64,
        /// The backoff without jitter.
        floor_ms: u64,
        /// The Retry-After asked for, if any.
        retry_after_ms: Option<u64>,
    },
    /// The router moves to another model.
    Fallback {
        /// The call.
        call: u64,
        /// The model given up on.
        from: String,
        /// The next model, if any.
        to: Option<String>,
        /// Why.
        reason: FallbackReason,
    },
    /// A model was skipped: its provider is cooling down.
    Skipped {
        /// The call.
        call: u64,
        /// The model.
        model: String,
        /// Until when (environment time, ms).
        until_ms: u64,
    },
    /// A provider's circuit opened.
    CircuitOpened {
        /// The provider.
        provider: String,
        /// Until when (environment time, ms).
        until_ms: u64,
    },
}

/// Why the router left a model: the policy's decision after a failed attempt, or what
/// ended the model's turn before one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackReason {
    /// The retry policy moved on ([`crate::llm::router::policy::after_failure`]).
    Policy(NextReason),
    /// The prompt overflowed this model's context window.
    ContextOverflow {
        /// The model's window, in tokens.
        window_tokens: u32,
    },
    /// The breaker refused the attempt: the provider is cooling down.
    CircuitCooling,
    /// The call's deadline had passed before the next attempt.
    DeadlinePassed,
    /// The call had made its most attempts (`ROUTER_ATTEMPTS_MAX`).
    AttemptsCapped,
}

/// The reason as the event's line shows it (in parentheses).
impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Policy(reason) => write!(f, "{reason}"),
            Self::ContextOverflow { window_tokens } => {
                write!(f, "context overflow in a window of {window_tokens}")
            }
            Self::CircuitCooling => f.write_str("circuit cooling down"),
            Self::DeadlinePassed => f.write_str("deadline passed"),
            Self::AttemptsCapped => f.write_str("attempts capped"),
        }
    }
}

/// Receives every router event with its environment time.
pub type RouterObserver = Arc<dyn Fn(&RouterEvent, Duration) + Send + Sync>;

impl RouterEvent {
    /// The event's kind in a trace (`router.attempt`, `router.failed`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Attempt { .. } => "router.attempt",
            Self::Failed { .. } => "router.failed",
            Self::Succeeded { .. } => "router.ok",
            Self::Backoff { .. } => "router.backoff",
            Self::Fallback { .. } => "router.fallback",
            Self::Skipped { .. } => "router.skip",
            Self::CircuitOpened { .. } => "router.circuit",
        }
    }
}

/// One line, as the trace shows it after the event's kind.
impl fmt::Display for RouterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Attempt {
                call,
                model,
                attempt,
            }
            | Self::Succeeded {
                call,
                model,
                attempt,
            } => write!(f, "call={call} {model}#{attempt}"),
            Self::Failed {
                call,
                model,
                attempt,
                error,
            } => write!(f, "call={call} {model}#{attempt} {}: {error}", error.kind()),
            Self::Backoff {
                call,
                model,
                sleep_ms,
                floor_ms,
                retry_after_ms,
            } => write!(
                f,
                "call={call} {model} sleep={sleep_ms} floor={floor_ms} retry_after={retry_after_ms:?}"
            ),
            Self::Fallback {
                call,
                from,
                to,
                reason,
            } => write!(
                f,
                "call={call} {from} -> {} ({reason})",
                to.as_deref().unwrap_or("(none)")
            ),
            Self::Skipped {
                call,
                model,
                until_ms,
            } => write!(f, "call={call} {model} cooling until {until_ms}"),
            Self::CircuitOpened { provider, until_ms } => {
                write!(f, "{provider} open until {until_ms}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_one_line_each() {
        let cases = [
            (
                RouterEvent::Backoff {
                    call: 3,
                    model: "openai/gpt-4o".into(),
                    sleep_ms: 1_250,
                    floor_ms: 1_000,
                    retry_after_ms: Some(1_250),
                },
                "router.backoff",
                "call=3 openai/gpt-4o sleep=1250 floor=1000 retry_after=Some(1250)",
            ),
            (
                RouterEvent::Fallback {
                    call: 3,
                    from: "openai/gpt-4o".into(),
                    to: None,
                    reason: FallbackReason::Policy(NextReason::RetriesExhausted),
                },
                "router.fallback",
                "call=3 openai/gpt-4o -> (none) (retries exhausted)",
            ),
            (
                RouterEvent::CircuitOpened {
                    provider: "openai".into(),
                    until_ms: 30_000,
                },
                "router.circuit",
                "openai open until 30000",
            ),
        ];
        for (event, kind, text) in cases {
            assert_eq!(event.kind(), kind);
            assert_eq!(event.to_string(), text);
        }
    }

    /// Each way of leaving a model reads as its own reason in the fallback's line (they
    /// all read "retries exhausted or not retryable" once).
    #[test]
    fn each_fallback_reason_has_its_own_text() {
        let cases = [
            (
                FallbackReason::Policy(NextReason::CircuitOpened),
                "this attempt opened the circuit",
            ),
            (
                FallbackReason::Policy(NextReason::NotRetryable),
                "not retryable",
            ),
            (
                FallbackReason::Policy(NextReason::RetriesExhausted),
                "retries exhausted",
            ),
            (
                FallbackReason::Policy(NextReason::RetryAfterTooLong),
                "retry-after longer than the policy waits",
            ),
            (
                FallbackReason::Policy(NextReason::PastDeadline),
                "a retry would end past the deadline",
            ),
            (
                FallbackReason::ContextOverflow {
                    window_tokens: 8_000,
                },
                "context overflow in a window of 8000",
            ),
            (FallbackReason::CircuitCooling, "circuit cooling down"),
            (FallbackReason::DeadlinePassed, "deadline passed"),
            (FallbackReason::AttemptsCapped, "attempts capped"),
        ];
        for reason in NextReason::ALL {
            let reason = FallbackReason::Policy(reason);
            assert!(
                cases.iter().any(|(r, _)| *r == reason),
                "{reason:?} untested"
            );
        }
        let mut texts = std::collections::BTreeSet::new();
        for (reason, text) in cases {
            let event = RouterEvent::Fallback {
                call: 1,
                from: "a/m".into(),
                to: Some("b/m".into()),
                reason,
            };
            assert_eq!(event.to_string(), format!("call=1 a/m -> b/m ({text})"));
            assert!(texts.insert(text), "{text} twice");
        }
    }
}
