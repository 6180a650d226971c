//! SimStorage's events: a reopen, a delay, a rotted value.

use std::fmt;
use std::time::Duration;

/// An event of simulated storage (`storage.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum StorageEvent {
    /// `storage.reopen`: a simulated disk reopened its database.
    Reopen {
        /// Which storage.
        backend: &'static str,
    },
    /// `storage.slow`: a storage operation was delayed.
    Slow {
        /// The operation.
        operation: String,
        /// The delay.
        delay: Duration,
    },
    /// `storage.rot`: a stored value's checksum was flipped.
    Rot {
        /// The value's key.
        key: String,
    },
}

impl StorageEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Reopen { .. } => "storage.reopen",
            Self::Slow { .. } => "storage.slow",
            Self::Rot { .. } => "storage.rot",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::Reopen { backend } => Some(backend),
            Self::Rot { key } => Some(key),
            Self::Slow { .. } => None,
        }
    }
}

impl fmt::Display for StorageEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reopen { backend } => f.write_str(backend),
            Self::Slow { operation, delay } => write!(f, "{operation} +{} ms", delay.as_millis()),
            Self::Rot { key } => f.write_str(key),
        }
    }
}
