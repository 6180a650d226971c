//! Runs go to a worker process in batches: how many at a time, and how a batch's wall
//! time is shared among its runs.
//!
//! A round trip to a worker process (a request line written, the worker woken, its
//! result line written, the driver woken) cost about 50 µs of CPU on the 2-core VM the
//! nightly is sized on, most of it the kernel switching between the processes: canary
//! ran at 10,700 seeds a second in worker processes and 24,500 on threads (issue 41's
//! fifth round). Sending a few milliseconds of runs in one line, and reading their
//! results in one line each written together, pays that once per batch instead of once
//! per run.
//!
//! The batch is sized from the runs the driver has seen: about
//! [`BATCH_WALL_TARGET_US`] of them, at most [`BATCH_RUNS_MAX`], one run until the
//! driver has seen one finish, and never more than a share of what is left so the last
//! runs of a sweep spread over every slot. Seeds are deterministic, so what a batch
//! changes is only how runs travel: when a worker dies or hangs in a batch, the driver
//! runs every run of the batch again one at a time, where the run that dies dies again
//! and is named as before; a death no run repeats is reported for the batch
//! (`process_pool.rs`).
//!
//! Pure functions; the table tests below reach every decision.

use std::time::Duration;

use umi_dst::micros_saturating;

/// The wall time a batch of runs aims at, in microseconds: long enough that a round trip
/// is a small part of it, short enough that a stop (Ctrl-C, `--time-budget`) waits for
/// no one. Batches of 16 ms made the default sweep about 3% cheaper than batches of 4 ms
/// (3.86 → 3.74 core-hours for 10⁶ seeds of every scenario, medians of three alternated).
pub(crate) const BATCH_WALL_TARGET_US: u64 = 16_000;

/// The most runs one batch holds (also the most a worker accepts in one request).
pub(crate) const BATCH_RUNS_MAX: usize = 256;

/// Of the runs left, the share one batch may take is one in `BATCH_TAIL_SHARES × jobs`,
/// so the sweep's last runs are spread over every slot.
const BATCH_TAIL_SHARES: usize = 2;

/// The weight of the latest run in the running mean, as `1 / RUN_WALL_MEAN_WEIGHT`.
const RUN_WALL_MEAN_WEIGHT: u64 = 8;

/// A driver's view of how long its runs take: a running mean of their wall time.
#[derive(Debug, Default)]
pub(crate) struct BatchSizer {
    /// The running mean of a run's wall time in the worker, in microseconds; `None`
    /// until a run has finished.
    run_wall_us_mean: Option<u64>,
}

impl BatchSizer {
    /// Counts a finished run that took `wall_us` in its worker.
    pub(crate) fn observe(&mut self, wall_us: u64) {
        let wall_us = wall_us.max(1);
        self.run_wall_us_mean = Some(match self.run_wall_us_mean {
            None => wall_us,
            Some(mean) => {
                mean.saturating_mul(RUN_WALL_MEAN_WEIGHT - 1)
                    .saturating_add(wall_us)
                    / RUN_WALL_MEAN_WEIGHT
            }
        });
    }

    /// How many runs to claim next, with `runs_left` unclaimed in the plan and `jobs`
    /// slots taking them: at least one.
    pub(crate) fn next_len(&self, runs_left: usize, jobs: usize) -> usize {
        let Some(mean) = self.run_wall_us_mean else {
            return 1;
        };
        let wanted = usize::try_from(BATCH_WALL_TARGET_US / mean.max(1)).unwrap_or(usize::MAX);
        let tail = runs_left / (BATCH_TAIL_SHARES * jobs.max(1));
        wanted.min(tail).clamp(1, BATCH_RUNS_MAX)
    }
}

/// Each run's share of a batch's wall time (as the driver measured it, round trip
/// included), in proportion to the wall time the worker measured for it; evenly when
/// the worker measured nothing. The shares add up to `batch` (to the microsecond), so a
/// scenario's reported wall time, and the seeds per core-second `dst size` is fed,
/// still counts every microsecond the sweep spent.
pub(crate) fn share_wall(batch: Duration, runs_wall_us: &[u64]) -> Vec<Duration> {
    let batch_us = micros_saturating(batch);
    let count = runs_wall_us.len() as u64;
    let measured: u64 = runs_wall_us
        .iter()
        .fold(0, |sum, us| sum.saturating_add(*us));
    let mut given = 0u64;
    let mut shares = Vec::with_capacity(runs_wall_us.len());
    for (position, run_us) in runs_wall_us.iter().enumerate() {
        let last = position + 1 == runs_wall_us.len();
        let share = if last {
            batch_us.saturating_sub(given)
        } else if measured == 0 {
            batch_us / count
        } else {
            let exact = u128::from(batch_us) * u128::from(*run_us) / u128::from(measured);
            u64::try_from(exact).unwrap_or(u64::MAX)
        };
        given = given.saturating_add(share);
        shares.push(Duration::from_micros(share));
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_sized_from_the_runs_seen() {
        let mut sizer = BatchSizer::default();
        // Nothing seen: one run, whatever is left.
        assert_eq!(sizer.next_len(1_000_000, 2), 1);
        sizer.observe(100);
        // 16,000 µs of 100 µs runs.
        assert_eq!(sizer.next_len(1_000_000, 2), 160);
        // Runs of a microsecond (or of none) fill a batch to its limit.
        let mut quick = BatchSizer::default();
        quick.observe(0);
        assert_eq!(quick.next_len(1_000_000, 2), BATCH_RUNS_MAX);
        // A run longer than the target goes alone.
        let mut slow = BatchSizer::default();
        slow.observe(BATCH_WALL_TARGET_US * 3);
        assert_eq!(slow.next_len(1_000_000, 2), 1);
    }

    #[test]
    fn the_last_runs_are_spread_over_the_slots() {
        let mut sizer = BatchSizer::default();
        sizer.observe(10);
        assert_eq!(sizer.next_len(10_000, 2), BATCH_RUNS_MAX);
        // 40 left over 2 slots: 10 a batch, not the 256 the run time allows.
        assert_eq!(sizer.next_len(40, 2), 10);
        assert_eq!(sizer.next_len(40, 4), 5);
        // Fewer left than slots: one at a time.
        assert_eq!(sizer.next_len(3, 2), 1);
        assert_eq!(sizer.next_len(0, 2), 1);
        assert_eq!(sizer.next_len(40, 0), 20);
    }

    #[test]
    fn the_mean_follows_the_runs() {
        let mut sizer = BatchSizer::default();
        sizer.observe(800);
        assert_eq!(sizer.next_len(1_000_000, 1), 20);
        // Much quicker runs pull the mean down over a few batches, not at once.
        sizer.observe(80);
        assert_eq!(sizer.run_wall_us_mean, Some((800 * 7 + 80) / 8));
        for _ in 0..64 {
            sizer.observe(80);
        }
        assert_eq!(sizer.next_len(1_000_000, 1), 200);
    }

    #[test]
    fn wall_shares_add_up_to_the_batch() {
        let table: [(u64, &[u64], &[u64]); 5] = [
            // batch µs, runs' own µs, shares µs
            (1_000, &[100, 300], &[250, 750]),
            (1_000, &[0, 0, 0], &[333, 333, 334]),
            (10, &[1, 1, 1], &[3, 3, 4]),
            (500, &[42], &[500]),
            (0, &[5, 5], &[0, 0]),
        ];
        for (batch_us, runs, expected) in table {
            let shares = share_wall(Duration::from_micros(batch_us), runs);
            let shares_us: Vec<u64> = shares
                .iter()
                .map(|share| u64::try_from(share.as_micros()).unwrap())
                .collect();
            assert_eq!(shares_us, expected, "batch {batch_us} µs over {runs:?}");
            assert_eq!(shares_us.iter().sum::<u64>(), batch_us);
        }
        assert!(share_wall(Duration::from_micros(7), &[]).is_empty());
    }
}
