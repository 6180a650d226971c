//! The run's own events: its start, its configured and drawn faults, seeded yields,
//! coverage marks and third-party clients seen.

use std::fmt;

/// An event of the run itself (`sim.*`, `schedule.yield`, `cover`, `foreign`).
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// `sim.start`: the run's seed and epoch.
    Start {
        /// The seed.
        seed: u64,
        /// The simulated wall clock at the start, ms since the Unix epoch.
        epoch_ms: u64,
    },
    /// `sim.fault`: one configured fault rule, as its config reads.
    FaultRule {
        /// The rule's text.
        rule: String,
    },
    /// `sim.swarm`: what swarm testing drew for the run's rules.
    Swarm {
        /// Each draw's text.
        drawn: Vec<String>,
    },
    /// `schedule.yield`: a seeded interleaving point yielded.
    Yield {
        /// The point's label.
        label: String,
        /// How many times it yielded.
        yields: u64,
    },
    /// `cover`: a coverage mark was hit.
    Cover {
        /// The mark.
        mark: &'static str,
    },
    /// `foreign`: a third-party client seen in the run.
    Foreign {
        /// The client's name.
        client: String,
    },
}

impl RunEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Start { .. } => "sim.start",
            Self::FaultRule { .. } => "sim.fault",
            Self::Swarm { .. } => "sim.swarm",
            Self::Yield { .. } => "schedule.yield",
            Self::Cover { .. } => "cover",
            Self::Foreign { .. } => "foreign",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::FaultRule { rule: text } | Self::Foreign { client: text } => Some(text),
            Self::Cover { mark } => Some(mark),
            Self::Start { .. } | Self::Swarm { .. } | Self::Yield { .. } => None,
        }
    }
}

impl fmt::Display for RunEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start { seed, epoch_ms } => write!(f, "seed={seed} epoch_ms={epoch_ms}"),
            Self::FaultRule { rule: text } | Self::Foreign { client: text } => f.write_str(text),
            Self::Swarm { drawn } => f.write_str(&drawn.join(" ")),
            Self::Yield { label, yields } => write!(f, "{label} yields={yields}"),
            Self::Cover { mark } => f.write_str(mark),
        }
    }
}
