//! Durations as whole microseconds, the unit of every trace timestamp, report field and
//! worker reply (`at_us`, `wall_us`, `sim_elapsed_us`). One conversion, so every place
//! saturates the same way: a duration past `u64::MAX` microseconds (584,000 years) reads
//! as `u64::MAX` instead of wrapping or panicking.

use std::time::Duration;

/// `duration` in whole microseconds, `u64::MAX` for a duration longer than that.
pub fn micros_saturating(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_microseconds_and_saturation() {
        assert_eq!(micros_saturating(Duration::from_nanos(1_999)), 1);
        assert_eq!(micros_saturating(Duration::from_secs(2)), 2_000_000);
        assert_eq!(micros_saturating(Duration::MAX), u64::MAX);
    }
}
