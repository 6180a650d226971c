//! Why a sweep stopped early, and the command that runs the rest of its range.
//!
//! A time budget, SIGINT or SIGTERM stops a sweep the same way: no run starts after it,
//! and the runs already claimed finish (or are recorded as hangs after the seed
//! timeout). Runs are claimed in order, so a stopped sweep has done exactly the runs
//! numbered below `runs_done`. Runs are numbered seed-major, so every seed before
//! `runs_done / scenarios` (in the shard's order) is done, and the rest of the range is
//! again a range: from `seed_start + done_seeds × shards`, with the same shard. The seed
//! the sweep stopped in may have run some of its scenarios already: the resume runs
//! them again (at most one seed's worth of scenarios).

use crate::options::SweepOptions;

/// Why a sweep stopped before its last run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `--time-budget` ran out.
    TimeBudget,
    /// A signal (its number: 2 SIGINT, 15 SIGTERM) asked the sweep to stop.
    Signal(usize),
}

impl StopReason {
    /// How the report names it.
    pub fn describe(self) -> String {
        match self {
            Self::TimeBudget => "time budget".to_owned(),
            Self::Signal(2) => "interrupted (SIGINT)".to_owned(),
            Self::Signal(15) => "terminated (SIGTERM)".to_owned(),
            Self::Signal(number) => format!("signal {number}"),
        }
    }
}

/// The range that holds every run not done: `(seed_start, seeds)` for the same shard,
/// or `None` when nothing is left.
pub fn resume_range(
    seed_start: u64,
    seeds: u64,
    shard_count: u64,
    scenarios: usize,
    runs_done: u64,
) -> Option<(u64, u64)> {
    let seeds_done_in_shard = runs_done / (scenarios.max(1) as u64);
    let skipped = seeds_done_in_shard.checked_mul(shard_count.max(1))?;
    if skipped >= seeds {
        return None;
    }
    Some((seed_start.checked_add(skipped)?, seeds - skipped))
}

/// The `sweep` command that runs the rest of a stopped sweep, or `None` if nothing is
/// left. It repeats the options that choose the runs and their meaning (scenarios,
/// shard, swarm, determinism check, seed timeout, recording); `--jobs`, `--report` and
/// `--junit` are the caller's to add.
pub fn resume_command(options: &SweepOptions, scenarios: usize, runs_done: u64) -> Option<String> {
    let shard_count = options.shard.map_or(1, |s| s.count);
    let (start, seeds) = resume_range(
        options.seed_start,
        options.seeds,
        shard_count,
        scenarios,
        runs_done,
    )?;
    let mut command = format!(
        "{} sweep --seed-start {start} --seeds {seeds}",
        options.program
    );
    if let Some(shard) = options.shard {
        command.push_str(&format!(" --shard {}/{}", shard.index + 1, shard.count));
    }
    for scenario in &options.scenarios {
        command.push_str(&format!(" --scenario {scenario}"));
    }
    if options.swarm {
        command.push_str(" --swarm");
    }
    if options.check_determinism {
        command.push_str(" --check-determinism");
    }
    if options.seed_timeout != SweepOptions::default().seed_timeout {
        command.push_str(&format!(
            " --seed-timeout {}ms",
            options.seed_timeout.as_millis()
        ));
    }
    match &options.seeds_dir {
        None => command.push_str(" --no-record"),
        Some(dir) => command.push_str(&format!(" --seeds-dir {}", dir.display())),
    }
    if options.record_canary {
        command.push_str(" --record-canary");
    }
    if options.keep_hashes {
        command.push_str(" --hashes");
    }
    Some(command)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shard;

    #[test]
    fn the_rest_of_the_range_starts_at_the_first_unfinished_seed() {
        // (seed_start, seeds, shards, scenarios, runs_done) -> range left
        type Case = ((u64, u64, u64, usize, u64), Option<(u64, u64)>);
        let cases: &[Case] = &[
            ((1, 100, 1, 1, 0), Some((1, 100))),
            ((1, 100, 1, 1, 40), Some((41, 60))),
            ((1, 100, 1, 3, 40), Some((14, 87))), // seed 14 ran 1 of its 3 scenarios
            ((1, 100, 1, 3, 300), None),
            ((1, 100, 4, 1, 10), Some((41, 60))), // shard i/4 did its first 10 seeds
            ((1, 10, 4, 1, 3), None),
            ((u64::MAX - 9, 10, 1, 1, 5), Some((u64::MAX - 4, 5))),
        ];
        for &((start, seeds, shards, scenarios, done), expected) in cases {
            assert_eq!(
                resume_range(start, seeds, shards, scenarios, done),
                expected,
                "{start} {seeds} {shards} {scenarios} {done}"
            );
        }
    }

    /// The resumed shard's seeds are exactly the seeds the stopped shard had not done.
    #[test]
    fn a_resumed_shard_runs_the_seeds_left_and_no_others() {
        let (start, seeds, count) = (5u64, 23u64, 3u64);
        for index in 0..count {
            let shard_seeds = |start: u64, seeds: u64| -> Vec<u64> {
                (0..seeds)
                    .filter(|offset| offset % count == index)
                    .map(|offset| start + offset)
                    .collect()
            };
            let all = shard_seeds(start, seeds);
            for done in 0..all.len() {
                let (resume_start, resume_seeds) =
                    resume_range(start, seeds, count, 1, done as u64).unwrap();
                assert_eq!(shard_seeds(resume_start, resume_seeds), all[done..]);
            }
        }
    }

    #[test]
    fn the_command_repeats_what_chooses_the_runs() {
        let options = SweepOptions::default()
            .with_seed_start(1)
            .with_seeds(100)
            .with_shard(Shard { index: 1, count: 4 })
            .with_swarm(true)
            .with_scenarios(vec!["canary".into()]);
        assert_eq!(
            resume_command(&options, 1, 10).as_deref(),
            Some(
                "dst sweep --seed-start 41 --seeds 60 --shard 2/4 --scenario canary --swarm --no-record"
            )
        );
        assert_eq!(resume_command(&options, 1, 25), None);
    }
}
