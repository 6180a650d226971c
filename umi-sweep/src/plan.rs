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
/// `i % scenarios` on the `i / scenarios`-th seed this shard owns. With `trials` k, the
/// range's seeds are tasks and each runs k times in a row (trial-major within the task,
/// so a task's trials are on one shard and finish close together), each on its trial
/// seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    seed_first: u64,
    seed_stride: u64,
    seeds: u64,
    scenarios: usize,
    trials: Option<u64>,
    /// Runs at the start of the plan not run (a resumed sweep's: what it did before).
    skip: usize,
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
            trials: None,
            skip: 0,
        }
    }

    /// The same plan with each seed a task run `k` times.
    pub(crate) fn with_trials(mut self, k: Option<u64>) -> Self {
        self.trials = k;
        self
    }

    /// The same plan without its first `runs` runs (`--skip-runs`: a resumed sweep).
    pub(crate) fn with_skip(mut self, runs: u64) -> Self {
        self.skip = usize::try_from(runs).unwrap_or(usize::MAX);
        self
    }

    /// Runs in the whole plan, skipped ones included.
    pub(crate) fn total_unskipped(&self) -> usize {
        usize::try_from(self.seeds.saturating_mul(self.trials.unwrap_or(1)))
            .unwrap_or(usize::MAX)
            .saturating_mul(self.scenarios)
    }

    /// Runs to make: the whole plan's less the skipped.
    pub(crate) fn total(&self) -> usize {
        self.total_unskipped().saturating_sub(self.skip)
    }

    /// Run `index` (counted after the skipped): (scenario index, seed): the trial seed
    /// in a trials plan.
    pub(crate) fn item(&self, index: usize) -> Option<(usize, u64)> {
        if index >= self.total() {
            return None;
        }
        let index = index + self.skip;
        let scenario = index % self.scenarios;
        let slot = (index / self.scenarios) as u64;
        let Some(k) = self.trials else {
            return Some((scenario, self.seed_first + slot * self.seed_stride));
        };
        let task = self.seed_first + (slot / k) * self.seed_stride;
        // The options checked every task fits a trial seed.
        umi_dst::usage::trial_seed(task, slot % k).map(|seed| (scenario, seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_dst::usage::split_seed;

    #[test]
    fn a_trials_plan_runs_each_task_k_times_on_its_shard() {
        let plan = Plan::new(5, 4, Some(Shard { index: 1, count: 2 }), 2).with_trials(Some(3));
        assert_eq!(plan.total(), 2 * 3 * 2);
        let runs: Vec<(usize, String)> = (0..plan.total())
            .map(|i| {
                let (scenario, seed) = plan.item(i).unwrap();
                (scenario, split_seed(seed).to_string())
            })
            .collect();
        assert_eq!(runs[0], (0, "task 6 trial 0".to_owned()));
        assert_eq!(runs[1], (1, "task 6 trial 0".to_owned()));
        assert_eq!(runs[5], (1, "task 6 trial 2".to_owned()));
        assert_eq!(runs[6], (0, "task 8 trial 0".to_owned()));
        assert_eq!(plan.item(plan.total()), None);
    }

    #[test]
    fn a_skipping_plan_makes_the_rest_of_the_runs_in_order() {
        let whole = Plan::new(1, 10, Some(Shard { index: 2, count: 3 }), 3);
        let rest = whole.with_skip(4);
        assert_eq!(rest.total(), whole.total() - 4);
        let runs: Vec<_> = (0..rest.total()).map(|i| rest.item(i)).collect();
        let tail: Vec<_> = (4..whole.total()).map(|i| whole.item(i)).collect();
        assert_eq!(runs, tail);
        assert_eq!(whole.with_skip(100).total(), 0);
    }
}
