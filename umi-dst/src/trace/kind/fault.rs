//! The injector's events: a fault injected, and every fault healed.

use std::fmt;

/// An event of the fault injector (`fault`, `fault.heal`).
#[derive(Debug, Clone, PartialEq)]
pub enum FaultEvent {
    /// `fault`: a fault was injected.
    Injected {
        /// The fault kind's name.
        kind: &'static str,
        /// The operation it hit.
        operation: String,
        /// The rule's index in the run's fault configs.
        rule: u32,
        /// Which of the rule's matching operations (1-based).
        ordinal: u64,
    },
    /// `fault.heal`: every fault off from now on.
    Heal,
}

/// `fault.heal`'s detail.
const HEAL_TEXT: &str = "all faults off";

impl FaultEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Injected { .. } => "fault",
            Self::Heal => "fault.heal",
        }
    }

    /// The detail where it is a constant.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::Injected { .. } => None,
            Self::Heal => Some(HEAL_TEXT),
        }
    }
}

impl fmt::Display for FaultEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Injected {
                kind,
                operation,
                rule,
                ordinal,
            } => write!(f, "{kind} on {operation} (rule {rule}:{ordinal})"),
            Self::Heal => f.write_str(HEAL_TEXT),
        }
    }
}
