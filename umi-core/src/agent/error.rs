//! How an agent run ends when it does not end with an answer.

use crate::llm::LlmError;

/// An agent run that did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model kept calling tools for `iterations` turns.
    #[error("no answer after {iterations} iterations")]
    MaxIterations {
        /// Turns taken.
        iterations: u32,
    },
    /// The model repeats itself (the same calls) or stagnates (no new results).
    #[error("loop detected: {reason}")]
    LoopDetected {
        /// What repeated.
        reason: String,
    },
    /// The context still overflows after trimming all that may be trimmed.
    #[error("context exhausted after {attempts} trim(s): prompt of {} tokens over the limit of {}",
        prompt_tokens.map_or_else(|| "?".to_owned(), |n| n.to_string()),
        limit.map_or_else(|| "?".to_owned(), |n| n.to_string()))]
    ContextExhausted {
        /// Trims made.
        attempts: u32,
        /// The prompt's size at the last overflow, if known.
        prompt_tokens: Option<u32>,
        /// The window, if known.
        limit: Option<u32>,
    },
    /// The model failed (after the router's retries and fallbacks, if any).
    #[error("model failed: {0}")]
    Provider(#[from] LlmError),
    /// The configuration or the input is not usable.
    #[error("invalid agent configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// A bug: an invariant of the loop broke.
    #[error("internal error: {reason}")]
    Internal {
        /// What broke.
        reason: String,
    },
}
