//! The clocks' events: a wall-clock jump and a sleep.

use std::fmt;
use std::time::Duration;

/// An event of the simulated clocks (`clock.jump`, `sleep`).
#[derive(Debug, Clone, PartialEq)]
pub enum ClockEvent {
    /// `clock.jump`: the wall clock jumped (the `clock.jump` fault).
    Jump {
        /// The jump, ms (negative: backwards).
        delta_ms: i64,
    },
    /// `sleep`: code slept on the environment's clock.
    Sleep {
        /// How long.
        duration: Duration,
    },
}

impl ClockEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Jump { .. } => "clock.jump",
            Self::Sleep { .. } => "sleep",
        }
    }
}

impl fmt::Display for ClockEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Jump { delta_ms } => write!(f, "{delta_ms:+} ms"),
            Self::Sleep { duration } => write!(f, "{} ms", duration.as_millis()),
        }
    }
}
