//! What the router did, as events: each is recorded in the environment's trace (its
//! [`RouterEvent::kind`] and its `Display` text) and handed to the router's observer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
        reason: String,
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
                    reason: "retries exhausted".into(),
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
}
