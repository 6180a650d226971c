//! Which runs a sweep makes: shards of the seed range, and the numbering of runs.
//!
//! A shard owns the seeds whose offset from the start is its index modulo the shard
//! count, so the shards of one range are disjoint and cover it exactly. The runs are
//! numbered seed-major (every scenario of a seed, then the next seed) and computed from
//! their number, never stored, so a sweep's memory does not grow with its size and a
//! time budget cuts every scenario evenly.

/// A shard: the seeds whose offset from the start is `index` modulo `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u64,
    /// How many shards there are.
    pub count: u64,
}

impl Shard {
    /// Parses `i/n` (1-based, as CI matrices number jobs).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("shard {text:?} is not i/n"))?;
        let index: u64 = index
            .trim()
            .parse()
            .map_err(|_| format!("shard index {index:?} is not a number"))?;
        let count: u64 = count
            .trim()
            .parse()
            .map_err(|_| format!("shard count {count:?} is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {text:?}: need 1 <= i <= n"));
        }
        Ok(Self {
            index: index - 1,
            count,
        })
    }
}

/// The runs of a sweep, numbered seed-major without being stored: run `i` is scenario
/// `i % scenarios` on the `i / scenarios`-th seed this shard owns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    seed_first: u64,
    seed_stride: u64,
    seeds: u64,
    scenarios: usize,
}

impl Plan {
    pub(crate) fn new(
        seed_start: u64,
        seeds_in_range: u64,
        shard: Option<Shard>,
        scenarios: usize,
    ) -> Self {
        let shard = shard.unwrap_or(Shard { index: 0, count: 1 });
        let seeds = if seeds_in_range > shard.index {
            (seeds_in_range - shard.index - 1) / shard.count + 1
        } else {
            0
        };
        Self {
            seed_first: seed_start.saturating_add(shard.index),
            seed_stride: shard.count,
            seeds,
            scenarios,
        }
    }

    pub(crate) fn total(&self) -> usize {
        usize::try_from(self.seeds)
            .unwrap_or(usize::MAX)
            .saturating_mul(self.scenarios)
    }

    /// Run `index`: (scenario index, seed).
    pub(crate) fn item(&self, index: usize) -> Option<(usize, u64)> {
        (index < self.total()).then(|| {
            (
                index % self.scenarios,
                self.seed_first + (index / self.scenarios) as u64 * self.seed_stride,
            )
        })
    }
}
