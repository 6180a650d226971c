//! LlmError: every way a language-model call can fail, typed, with the context needed
//! to act on it.
//!
//! The classification the router acts on lives here, not in message matching
//! (docs/adr/0004-llm-error-classification.md):
//!
//! | error | retry the same model | fall back to the next model |
//! | --- | --- | --- |
//! | timeout, server_timeout, rate_limit, service_unavailable, connection | yes | after retries |
//! | stream_truncated, empty_stream, invalid_response | yes | after retries |
//! | auth, model_not_found, json, response_too_large, too_many_tool_calls | no | yes |
//! | context_overflow | no | only to a model with a larger window |
//! | bad_request, invalid_prompt | no | no: the request itself is wrong |

use std::fmt;

use serde::{Deserialize, Serialize};

/// A failed language-model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LlmError {
    /// No answer within the deadline.
    #[error("timed out after {after_ms} ms")]
    Timeout {
        /// The deadline that passed, in ms.
        after_ms: u64,
    },
    /// The server said it timed out (HTTP 408 or 504, or a timeout error inside a
    /// stream), with its own words.
    #[error("the server timed out{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    ServerTimeout {
        /// The HTTP status, if there was one.
        status: Option<u16>,
        /// The server's message.
        message: String,
    },
    /// The provider does not serve the model asked for (or the key cannot see it).
    /// Another model may answer.
    #[error("model not found{}: {message}", status.map(|s| format!(" ({s})")).unwrap_or_default())]
    ModelNotFound {
        /// The HTTP status, if there was one.
        status: Option<u16>,
        /// The provider's message (it usually names the model).
        message: String,
    },
    /// The provider asked us to slow down (HTTP 429).
    #[error("rate limited{}", retry_after_ms.map(|ms| format!("; retry after {ms} ms")).unwrap_or_default())]
    RateLimit {
        /// How long the provider asked us to wait, if it said.
        retry_after_ms: Option<u64>,
    },
    /// The prompt does not fit the model's context window.
    #[error(
        "context overflow: prompt of {} tokens over the limit of {}",
        prompt_tokens.map_or_else(|| "?".to_owned(), |n| n.to_string()),
        limit.map_or_else(|| "?".to_owned(), |n| n.to_string())
    )]
    ContextOverflow {
        /// The prompt's size in tokens, when known.
        prompt_tokens: Option<u32>,
        /// The model's context window in tokens, when known.
        limit: Option<u32>,
    },
    /// The provider answered with something that is not a valid response.
    #[error("invalid response: {reason}{}", snippet_suffix(snippet))]
    InvalidResponse {
        /// What is wrong with it.
        reason: String,
        /// The start of what was received.
        snippet: String,
    },
    /// The provider is overloaded or down (HTTP 5xx).
    #[error("service unavailable{}: {message}", status.map(|s| format!(" ({s})")).unwrap_or_default())]
    ServiceUnavailable {
        /// The HTTP status, if there was one.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// JSON the model produced (tool arguments, JSON-mode output) does not parse.
    #[error("invalid JSON in {what}: {reason}{}", snippet_suffix(snippet))]
    Json {
        /// Which JSON (e.g. `arguments of tool call 0 (get_weather)`).
        what: String,
        /// The parser's complaint.
        reason: String,
        /// The start of the text.
        snippet: String,
    },
    /// The request is not one any model can answer (empty, too large, malformed).
    #[error("invalid prompt: {reason}")]
    InvalidPrompt {
        /// What is wrong with it.
        reason: String,
    },
    /// The credentials were refused (HTTP 401/403).
    #[error("authentication failed ({status}): {message}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request (HTTP 4xx other than the above).
    #[error("bad request{}: {message}", status.map(|s| format!(" ({s})")).unwrap_or_default())]
    BadRequest {
        /// The HTTP status, if there was one.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// No connection: refused, reset, DNS, TLS.
    #[error("connection failed: {reason}")]
    Connection {
        /// What happened.
        reason: String,
    },
    /// A stream ended after some events without its Done.
    #[error("stream ended after {events_received} event(s) without Done")]
    StreamTruncated {
        /// Events received before the end.
        events_received: u64,
    },
    /// A stream ended before producing anything at all.
    #[error("stream ended without producing any event")]
    EmptyStream,
    /// Every model the router tried failed (or the deadline passed); each attempt's error
    /// is kept, in order.
    #[error("{reason}: {}", attempts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Exhausted {
        /// Why the router gave up.
        reason: String,
        /// Every failed attempt, in order.
        attempts: Vec<FailedAttempt>,
    },
    /// The answer opened more tool calls than the limits allow: a runaway model, which
    /// another attempt on the same model is not expected to fix.
    #[error("the answer opened {calls} tool calls, over the limit of {limit}")]
    TooManyToolCalls {
        /// The calls opened (or the index reached, plus one).
        calls: u32,
        /// The most calls one answer may open.
        limit: u32,
    },
    /// The answer is larger than the limits allow.
    #[error("{what} is {bytes} bytes, over the limit of {limit}")]
    ResponseTooLarge {
        /// What grew too large (`text`, `arguments of tool call 1`).
        what: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

/// One failed attempt of a routed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedAttempt {
    /// The model (`provider/model-id`).
    pub model: String,
    /// Which attempt on that model (0 is the first).
    pub attempt: u32,
    /// What went wrong (`None`: skipped, the provider was cooling down).
    pub error: Option<Box<LlmError>>,
}

impl std::fmt::Display for FailedAttempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            Some(error) => write!(f, "{}#{} {}", self.model, self.attempt, error),
            None => write!(f, "{} skipped (cooling down)", self.model),
        }
    }
}

fn snippet_suffix(snippet: &str) -> String {
    if snippet.is_empty() {
        String::new()
    } else {
        format!(" (got {snippet:?})")
    }
}

/// Bytes of received text an error keeps, so a huge body does not flood a log.
pub const ERROR_SNIPPET_BYTES_MAX: usize = 200;

/// The start of `text`, at most `ERROR_SNIPPET_BYTES_MAX` bytes, cut at a char boundary.
pub fn snippet(text: &str) -> String {
    if text.len() <= ERROR_SNIPPET_BYTES_MAX {
        return text.to_owned();
    }
    let mut end = ERROR_SNIPPET_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl LlmError {
    /// Whether trying the same model again may succeed: transient conditions (rate
    /// limits, 5xx, timeouts, connection trouble, cut or garbled responses).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. }
                | Self::ServerTimeout { .. }
                | Self::RateLimit { .. }
                | Self::ServiceUnavailable { .. }
                | Self::Connection { .. }
                | Self::StreamTruncated { .. }
                | Self::EmptyStream
                | Self::InvalidResponse { .. }
        )
    }

    /// Whether another model may succeed where this one failed (after retries, for the
    /// retryable ones). False for errors in the request itself, and for context overflow,
    /// which may only move to a larger window (see [`LlmError::needs_larger_context`]).
    pub fn is_fallback_eligible(&self) -> bool {
        !matches!(
            self,
            Self::BadRequest { .. } | Self::InvalidPrompt { .. } | Self::ContextOverflow { .. }
        )
    }

    /// Whether only a model with a larger context window can take this request.
    pub fn needs_larger_context(&self) -> bool {
        matches!(self, Self::ContextOverflow { .. })
    }

    /// The wait the provider asked for, for a rate limit that named one.
    pub fn retry_after_ms(&self) -> Option<u64> {
        let Self::RateLimit { retry_after_ms } = self else {
            return None;
        };
        *retry_after_ms
    }

    /// The same error with every text in it (messages, reasons, snippets, the models
    /// and errors of a router's attempts) passed through `f`: how a client redacts its
    /// secrets from what it hands back.
    pub fn map_text(self, f: &dyn Fn(&str) -> String) -> Self {
        match self {
            Self::ServerTimeout { status, message } => Self::ServerTimeout {
                status,
                message: f(&message),
            },
            Self::ModelNotFound { status, message } => Self::ModelNotFound {
                status,
                message: f(&message),
            },
            Self::InvalidResponse { reason, snippet } => Self::InvalidResponse {
                reason: f(&reason),
                snippet: f(&snippet),
            },
            Self::ServiceUnavailable { status, message } => Self::ServiceUnavailable {
                status,
                message: f(&message),
            },
            Self::Json {
                what,
                reason,
                snippet,
            } => Self::Json {
                what: f(&what),
                reason: f(&reason),
                snippet: f(&snippet),
            },
            Self::InvalidPrompt { reason } => Self::InvalidPrompt { reason: f(&reason) },
            Self::Auth { status, message } => Self::Auth {
                status,
                message: f(&message),
            },
            Self::BadRequest { status, message } => Self::BadRequest {
                status,
                message: f(&message),
            },
            Self::Connection { reason } => Self::Connection { reason: f(&reason) },
            Self::ResponseTooLarge { what, bytes, limit } => Self::ResponseTooLarge {
                what: f(&what),
                bytes,
                limit,
            },
            Self::Exhausted { reason, attempts } => Self::Exhausted {
                reason: f(&reason),
                attempts: attempts
                    .into_iter()
                    .map(|attempt| FailedAttempt {
                        model: f(&attempt.model),
                        attempt: attempt.attempt,
                        error: attempt.error.map(|error| Box::new(error.map_text(f))),
                    })
                    .collect(),
            },
            textless @ (Self::Timeout { .. }
            | Self::RateLimit { .. }
            | Self::ContextOverflow { .. }
            | Self::StreamTruncated { .. }
            | Self::EmptyStream
            | Self::TooManyToolCalls { .. }) => textless,
        }
    }

    /// The error's kind, a `Copy` value to match on (its name, `rate_limit`, is what
    /// traces and counters print).
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            Self::Timeout { .. } => LlmErrorKind::Timeout,
            Self::ServerTimeout { .. } => LlmErrorKind::ServerTimeout,
            Self::ModelNotFound { .. } => LlmErrorKind::ModelNotFound,
            Self::RateLimit { .. } => LlmErrorKind::RateLimit,
            Self::ContextOverflow { .. } => LlmErrorKind::ContextOverflow,
            Self::InvalidResponse { .. } => LlmErrorKind::InvalidResponse,
            Self::ServiceUnavailable { .. } => LlmErrorKind::ServiceUnavailable,
            Self::Json { .. } => LlmErrorKind::Json,
            Self::InvalidPrompt { .. } => LlmErrorKind::InvalidPrompt,
            Self::Auth { .. } => LlmErrorKind::Auth,
            Self::BadRequest { .. } => LlmErrorKind::BadRequest,
            Self::Connection { .. } => LlmErrorKind::Connection,
            Self::StreamTruncated { .. } => LlmErrorKind::StreamTruncated,
            Self::EmptyStream => LlmErrorKind::EmptyStream,
            Self::ResponseTooLarge { .. } => LlmErrorKind::ResponseTooLarge,
            Self::TooManyToolCalls { .. } => LlmErrorKind::TooManyToolCalls,
            Self::Exhausted { .. } => LlmErrorKind::Exhausted,
        }
    }
}

/// What kind of [`LlmError`] an error is, without its details: for matching
/// (`error.kind() == LlmErrorKind::RateLimit`) and for traces (`Display` prints the
/// snake-case name, `rate_limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// [`LlmError::Timeout`].
    Timeout,
    /// [`LlmError::ServerTimeout`].
    ServerTimeout,
    /// [`LlmError::ModelNotFound`].
    ModelNotFound,
    /// [`LlmError::RateLimit`].
    RateLimit,
    /// [`LlmError::ContextOverflow`].
    ContextOverflow,
    /// [`LlmError::InvalidResponse`].
    InvalidResponse,
    /// [`LlmError::ServiceUnavailable`].
    ServiceUnavailable,
    /// [`LlmError::Json`].
    Json,
    /// [`LlmError::InvalidPrompt`].
    InvalidPrompt,
    /// [`LlmError::Auth`].
    Auth,
    /// [`LlmError::BadRequest`].
    BadRequest,
    /// [`LlmError::Connection`].
    Connection,
    /// [`LlmError::StreamTruncated`].
    StreamTruncated,
    /// [`LlmError::EmptyStream`].
    EmptyStream,
    /// [`LlmError::ResponseTooLarge`].
    ResponseTooLarge,
    /// [`LlmError::TooManyToolCalls`].
    TooManyToolCalls,
    /// [`LlmError::Exhausted`].
    Exhausted,
}

impl LlmErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 17] = [
        Self::Timeout,
        Self::ServerTimeout,
        Self::ModelNotFound,
        Self::RateLimit,
        Self::ContextOverflow,
        Self::InvalidResponse,
        Self::ServiceUnavailable,
        Self::Json,
        Self::InvalidPrompt,
        Self::Auth,
        Self::BadRequest,
        Self::Connection,
        Self::StreamTruncated,
        Self::EmptyStream,
        Self::ResponseTooLarge,
        Self::TooManyToolCalls,
        Self::Exhausted,
    ];

    /// The snake-case name (`rate_limit`), as traces print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::ServerTimeout => "server_timeout",
            Self::ModelNotFound => "model_not_found",
            Self::RateLimit => "rate_limit",
            Self::ContextOverflow => "context_overflow",
            Self::InvalidResponse => "invalid_response",
            Self::ServiceUnavailable => "service_unavailable",
            Self::Json => "json",
            Self::InvalidPrompt => "invalid_prompt",
            Self::Auth => "auth",
            Self::BadRequest => "bad_request",
            Self::Connection => "connection",
            Self::StreamTruncated => "stream_truncated",
            Self::EmptyStream => "empty_stream",
            Self::ResponseTooLarge => "response_too_large",
            Self::TooManyToolCalls => "too_many_tool_calls",
            Self::Exhausted => "exhausted",
        }
    }
}

impl fmt::Display for LlmErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant has its kind, and the kinds' names are the snake-case names traces
    /// have always printed, each once.
    #[test]
    fn kinds_are_copy_values_with_the_trace_names() {
        let names: std::collections::BTreeSet<&str> =
            LlmErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), LlmErrorKind::ALL.len());
        let rate_limit = LlmError::RateLimit {
            retry_after_ms: None,
        };
        let kind = rate_limit.kind();
        assert_eq!(kind, LlmErrorKind::RateLimit);
        assert_eq!(kind.to_string(), "rate_limit");
        assert_eq!(LlmError::EmptyStream.kind().as_str(), "empty_stream");
        assert!(
            names
                .iter()
                .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        );
    }

    #[test]
    fn classification_matches_the_adr() {
        let transient = [
            LlmError::Timeout { after_ms: 1 },
            LlmError::RateLimit {
                retry_after_ms: Some(5),
            },
            LlmError::ServiceUnavailable {
                status: Some(503),
                message: String::new(),
            },
            LlmError::Connection {
                reason: "reset".into(),
            },
            LlmError::StreamTruncated { events_received: 3 },
            LlmError::EmptyStream,
            LlmError::InvalidResponse {
                reason: "x".into(),
                snippet: String::new(),
            },
        ];
        for error in &transient {
            assert!(error.is_retryable(), "{error}");
            assert!(error.is_fallback_eligible(), "{error}");
        }
        let never_retry = [
            LlmError::BadRequest {
                status: Some(400),
                message: String::new(),
            },
            LlmError::Auth {
                status: 401,
                message: String::new(),
            },
            LlmError::ContextOverflow {
                prompt_tokens: Some(9),
                limit: Some(8),
            },
            LlmError::InvalidPrompt {
                reason: "empty".into(),
            },
        ];
        for error in &never_retry {
            assert!(!error.is_retryable(), "{error}");
        }
        assert!(
            LlmError::Auth {
                status: 401,
                message: String::new()
            }
            .is_fallback_eligible()
        );
        assert!(!never_retry[0].is_fallback_eligible());
        assert!(!never_retry[2].is_fallback_eligible());
        assert!(never_retry[2].needs_larger_context());
    }

    #[test]
    fn messages_carry_their_context() {
        let overflow = LlmError::ContextOverflow {
            prompt_tokens: Some(9000),
            limit: Some(8192),
        };
        assert_eq!(
            overflow.to_string(),
            "context overflow: prompt of 9000 tokens over the limit of 8192"
        );
        let rate = LlmError::RateLimit {
            retry_after_ms: Some(1500),
        };
        assert_eq!(rate.to_string(), "rate limited; retry after 1500 ms");
        assert_eq!(rate.retry_after_ms(), Some(1500));
        let json = LlmError::Json {
            what: "arguments".into(),
            reason: "EOF".into(),
            snippet: "{\"a\":".into(),
        };
        assert!(json.to_string().contains("(got \"{\\\"a\\\":\")"), "{json}");
    }

    #[test]
    fn snippets_are_bounded() {
        let long = "é".repeat(500);
        let cut = snippet(&long);
        assert!(cut.len() <= ERROR_SNIPPET_BYTES_MAX + "…".len());
        assert_eq!(snippet("short"), "short");
    }
}
