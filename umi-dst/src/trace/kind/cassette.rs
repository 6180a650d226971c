//! A replayed cassette's events: an exchange replayed, replaced by a fault, cut, or
//! missing.

use std::fmt;

/// An event of cassette replay (`cassette.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum CassetteEvent {
    /// `cassette.fault`: a fault replaced a recorded exchange.
    Fault {
        /// The fault kind's name, if one decided it.
        fault: Option<&'static str>,
        /// The exchange's index in the cassette.
        exchange: usize,
    },
    /// `cassette.replay`: a recorded exchange replayed.
    Replay {
        /// The exchange's index in the cassette.
        exchange: usize,
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
        /// The response's status.
        status: u16,
        /// The response body's length.
        body_bytes: usize,
        /// How the recorded response ended, as its `Debug` text.
        end: String,
    },
    /// `cassette.miss`: no recorded exchange matches a request.
    Miss {
        /// The miss, as it reads.
        miss: String,
    },
    /// `cassette.cut`: a replayed body cut by a fault.
    Cut {
        /// The fault kind's name.
        fault: &'static str,
        /// Bytes passed before the cut.
        after_bytes: u64,
    },
}

impl CassetteEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fault { .. } => "cassette.fault",
            Self::Replay { .. } => "cassette.replay",
            Self::Miss { .. } => "cassette.miss",
            Self::Cut { .. } => "cassette.cut",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::Miss { miss } => Some(miss),
            Self::Fault { .. } | Self::Replay { .. } | Self::Cut { .. } => None,
        }
    }
}

impl fmt::Display for CassetteEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fault { fault, exchange } => {
                write!(f, "{} replaces exchange {exchange}", fault.unwrap_or("-"))
            }
            Self::Replay {
                exchange,
                method,
                path,
                status,
                body_bytes,
                end,
            } => write!(
                f,
                "exchange {exchange} {method} {path} -> {status} ({body_bytes} bytes, {end})"
            ),
            Self::Miss { miss } => f.write_str(miss),
            Self::Cut { fault, after_bytes } => write!(f, "{fault} after {after_bytes} bytes"),
        }
    }
}
