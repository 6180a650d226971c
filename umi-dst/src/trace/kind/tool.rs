//! SimTools' events: a call, and arguments its schema refuses.

use std::fmt;

/// An event of a simulated tool (`tool.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// `tool.call`: a simulated tool was called.
    Call {
        /// The tool.
        name: String,
        /// The call's id.
        call_id: String,
        /// What happened, as the outcome's `Debug` text.
        outcome: String,
        /// The call's latency.
        latency_ms: u64,
        /// Whether the tool's effect ran.
        ran: bool,
    },
    /// `tool.invalid_params`: arguments the tool's schema refuses.
    InvalidParams {
        /// The tool.
        tool: String,
        /// The call's id.
        call_id: String,
        /// Where, as a JSON path.
        path: String,
        /// Why.
        reason: String,
    },
}

impl ToolEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Call { .. } => "tool.call",
            Self::InvalidParams { .. } => "tool.invalid_params",
        }
    }
}

impl fmt::Display for ToolEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Call {
                name,
                call_id,
                outcome,
                latency_ms,
                ran,
            } => write!(
                f,
                "{name} {call_id} outcome={outcome} latency_ms={latency_ms} ran={ran}"
            ),
            Self::InvalidParams {
                tool,
                call_id,
                path,
                reason,
            } => write!(f, "{tool} {call_id} at {path}: {reason}"),
        }
    }
}
