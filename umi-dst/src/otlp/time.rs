//! Simulated time as OTLP timestamps: nanoseconds since the Unix epoch, counted from the
//! run's simulated epoch (`SIM_EPOCH_UNIX_MS_DEFAULT`, 2024-01-01T00:00:00Z, unless the
//! run's `sim.start` says another), so a span's time is the same on every run of a
//! seed and a backend shows the run where its simulated wall clock says it happened.

use std::time::Duration;

use crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT;

/// Nanoseconds per millisecond.
const NANOS_PER_MS: u64 = 1_000_000;

/// The default simulated epoch in Unix nanoseconds.
pub const SIM_EPOCH_UNIX_NANOS: u64 = SIM_EPOCH_UNIX_MS_DEFAULT * NANOS_PER_MS;

/// `at` (simulated time since the run started) as Unix nanoseconds, for a run whose
/// simulated wall clock started at `epoch_unix_ms`. Saturates instead of wrapping (a
/// timestamp past year 2554 is not one a run reaches).
pub fn unix_nanos(epoch_unix_ms: u64, at: Duration) -> u64 {
    let at_nanos = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
    epoch_unix_ms
        .saturating_mul(NANOS_PER_MS)
        .saturating_add(at_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_time_counts_from_the_epoch() {
        assert_eq!(
            unix_nanos(SIM_EPOCH_UNIX_MS_DEFAULT, Duration::ZERO),
            1_704_067_200_000_000_000
        );
        assert_eq!(
            unix_nanos(SIM_EPOCH_UNIX_MS_DEFAULT, Duration::from_micros(1_500)),
            SIM_EPOCH_UNIX_NANOS + 1_500_000
        );
        assert_eq!(unix_nanos(u64::MAX, Duration::from_secs(1)), u64::MAX);
    }
}
