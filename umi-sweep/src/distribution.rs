//! A distribution of one counted quantity over a sweep's runs (tokens, cost, calls,
//! time to the answer), kept so that shard reports merge *exactly*: a log-linear
//! histogram (every value below 128 in its own bucket, above that 64 buckets per power
//! of two), with the exact count, sum, min and max. Two shards' histograms add bucket
//! by bucket into the histogram the whole sweep would have built, so a merged p99 is
//! the p99 of the whole sweep, never an average of percentiles.
//!
//! A percentile is the lower bound of the bucket holding its rank (nearest rank):
//! exact below 128, within 1/64 (1.6%) of the true value above, and never outside the
//! exact min and max. The size is bounded by the value range (at most
//! `DISTRIBUTION_BUCKETS_MAX` buckets), not by the number of runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Values below this have a bucket each.
const EXACT_BELOW: u64 = 128;

/// Significant bits kept above [`EXACT_BELOW`] (64 buckets per power of two).
const MANTISSA_BITS: u32 = 6;

/// Buckets a distribution can hold: 128 exact, then 64 for each power of two up to 2⁶⁴.
pub const DISTRIBUTION_BUCKETS_MAX: usize = 128 + 57 * 64;

/// Runs' values of one quantity, mergeable exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    /// Values recorded.
    pub count: u64,
    /// Their sum (saturating).
    pub sum: u64,
    /// The smallest (0 when empty).
    pub min: u64,
    /// The largest.
    pub max: u64,
    /// Values by bucket: the bucket's lower bound, and how many fell in it.
    pub buckets: BTreeMap<u64, u64>,
}

/// The lower bound of the bucket `value` falls in.
pub fn bucket_of(value: u64) -> u64 {
    if value < EXACT_BELOW {
        return value;
    }
    let shift = (63 - value.leading_zeros()) - MANTISSA_BITS;
    (value >> shift) << shift
}

impl Distribution {
    /// Adds one value.
    pub fn record(&mut self, value: u64) {
        self.min = if self.count == 0 {
            value
        } else {
            self.min.min(value)
        };
        self.max = self.max.max(value);
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        *self.buckets.entry(bucket_of(value)).or_insert(0) += 1;
        debug_assert!(self.buckets.len() <= DISTRIBUTION_BUCKETS_MAX);
    }

    /// Adds every value of `other` (what the union of their runs would have built).
    pub fn merge(&mut self, other: &Distribution) {
        if other.count == 0 {
            return;
        }
        self.min = if self.count == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = self.max.max(other.max);
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        for (bucket, n) in &other.buckets {
            let slot = self.buckets.entry(*bucket).or_insert(0);
            *slot = slot.saturating_add(*n);
        }
    }

    /// The value at `permille` ‰ (500: the median, 990: p99) by nearest rank, or `None`
    /// when empty.
    pub fn percentile(&self, permille: u64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        assert!(permille <= 1000, "a percentile is at most 1000 permille");
        // Nearest rank: the smallest value with at least ⌈p × count⌉ values at or below.
        let rank = (u128::from(permille) * u128::from(self.count))
            .div_ceil(1000)
            .max(1);
        let mut seen: u128 = 0;
        for (bucket, n) in &self.buckets {
            seen += u128::from(*n);
            if seen >= rank {
                return Some((*bucket).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// The mean, rounded down (`None` when empty).
    pub fn mean(&self) -> Option<u64> {
        self.sum.checked_div(self.count)
    }

    /// `p50 p95 p99 max` in one short line (`-` when empty).
    pub fn summary(&self) -> String {
        match (
            self.percentile(500),
            self.percentile(950),
            self.percentile(990),
        ) {
            (Some(p50), Some(p95), Some(p99)) => format!("{p50}/{p95}/{p99}/{}", self.max),
            _ => "-".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_low_and_within_a_64th_high() {
        for value in [0, 1, 127] {
            assert_eq!(bucket_of(value), value);
        }
        assert_eq!(bucket_of(128), 128);
        assert_eq!(bucket_of(129), 128);
        assert_eq!(bucket_of(130), 130);
        for value in [1_000, 123_456, u64::MAX / 3, u64::MAX] {
            let bucket = bucket_of(value);
            assert!(bucket <= value && value - bucket <= value / 64, "{value}");
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut d = Distribution::default();
        assert_eq!(d.percentile(500), None);
        for value in 1..=100 {
            d.record(value);
        }
        assert_eq!(d.percentile(500), Some(50));
        assert_eq!(d.percentile(950), Some(95));
        assert_eq!(d.percentile(990), Some(99));
        assert_eq!(d.percentile(1000), Some(100));
        assert_eq!(d.percentile(0), Some(1));
        assert_eq!((d.min, d.max, d.mean()), (1, 100, Some(50)));
        assert_eq!(d.summary(), "50/95/99/100");
    }

    #[test]
    fn merged_shards_equal_the_whole() {
        let values: Vec<u64> = (0..5_000u64).map(|i| (i * 7_919) % 100_003).collect();
        let mut whole = Distribution::default();
        let mut shards = [
            Distribution::default(),
            Distribution::default(),
            Distribution::default(),
        ];
        for (index, value) in values.iter().enumerate() {
            whole.record(*value);
            shards[index % 3].record(*value);
        }
        let mut merged = Distribution::default();
        for shard in &shards {
            merged.merge(shard);
        }
        assert_eq!(merged, whole);
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let exact_p99 = sorted[(sorted.len() * 99).div_ceil(100) - 1];
        let p99 = merged.percentile(990).unwrap();
        assert!(
            p99 <= exact_p99 && exact_p99 - p99 <= exact_p99 / 64,
            "{p99} vs {exact_p99}"
        );
    }
}
