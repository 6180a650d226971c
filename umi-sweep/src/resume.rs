//! Why a sweep stopped early, and the command that runs the rest of its range.
//!
//! A time budget, SIGINT or SIGTERM stops a sweep the same way: no run starts after it,
//! and the runs already claimed finish (or are recorded as hangs after the seed
//! timeout). Runs are claimed in order, so a stopped sweep has done exactly the runs
//! numbered below `runs_done` (counted after those it skipped itself). The rest is the
//! same range and shard without those runs: `--skip-runs` the runs done so far, so the
//! resume makes every run not made and no other (the seed the sweep stopped in
//! included: its scenarios already run are not run again), and `dst merge` takes the
//! stopped shard's report and its resume's as one shard (`merge_check`).

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

/// The `--skip-runs` of the sweep that makes every run of the plan not made yet, or
/// `None` when nothing is left: `runs_skipped` skipped and `runs_done` made after them,
/// of `runs_total` in the shard's whole plan.
pub fn resume_skip(runs_total: u64, runs_skipped: u64, runs_done: u64) -> Option<u64> {
    let made = runs_skipped.checked_add(runs_done)?;
    (made < runs_total).then_some(made)
}

/// The `sweep` command that runs the rest of a stopped sweep, or `None` if nothing is
/// left: the same range and shard with `--skip-runs`. It repeats the options that choose
/// the runs and their meaning (scenarios, shard, swarm, determinism check, seed timeout,
/// recording); `--jobs`, `--report` and `--junit` are the caller's to add.
pub fn resume_command(options: &SweepOptions, scenarios: usize, runs_done: u64) -> Option<String> {
    let plan = crate::plan::Plan::new(options.seed_start, options.seeds, options.shard, scenarios);
    let skip = resume_skip(plan.total_unskipped() as u64, options.skip_runs, runs_done)?;
    let mut command = format!(
        "{} sweep --seed-start {} --seeds {}",
        options.program, options.seed_start, options.seeds
    );
    if let Some(shard) = options.shard {
        command.push_str(&format!(" --shard {}/{}", shard.index + 1, shard.count));
    }
    command.push_str(&format!(" --skip-runs {skip}"));
    for scenario in &options.scenarios {
        command.push_str(&format!(" --scenario {scenario}"));
    }
    push_meaning(&mut command, options);
    Some(command)
}

/// The options that give the runs their meaning and where their seeds go.
fn push_meaning(command: &mut String, options: &SweepOptions) {
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
    // The price table is part of a sweep's identity (`dst merge` refuses reports priced
    // differently); one given in code has no file to name, which the caller is told.
    if let Some(prices) = &options.prices {
        match &prices.source {
            Some(path) => command.push_str(&format!(" --prices {}", path.display())),
            None => command.push_str(" --prices <the same price table>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shard;

    #[test]
    fn the_rest_starts_at_the_first_run_not_made() {
        // (runs in the plan, skipped, done) -> --skip-runs of the rest
        type Case = ((u64, u64, u64), Option<u64>);
        let cases: &[Case] = &[
            ((300, 0, 0), Some(0)),
            ((300, 0, 40), Some(40)), // mid-seed with 3 scenarios: seed 14's third run next
            ((300, 40, 10), Some(50)),
            ((300, 0, 300), None),
            ((300, 290, 10), None),
            ((u64::MAX, u64::MAX, 1), None),
        ];
        for &((total, skipped, done), expected) in cases {
            assert_eq!(
                resume_skip(total, skipped, done),
                expected,
                "{total} {skipped} {done}"
            );
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
                "dst sweep --seed-start 1 --seeds 100 --shard 2/4 --skip-runs 10 --scenario canary --swarm --no-record"
            )
        );
        assert_eq!(resume_command(&options, 1, 25), None);
        let resumed = options.with_skip_runs(10);
        assert_eq!(
            resume_command(&resumed, 1, 5).as_deref(),
            Some(
                "dst sweep --seed-start 1 --seeds 100 --shard 2/4 --skip-runs 15 --scenario canary --swarm --no-record"
            )
        );
        assert_eq!(resume_command(&resumed, 1, 15), None);
    }

    /// Pins the review's finding: a priced sweep's resume left out `--prices`, so
    /// `dst merge` refused the two reports as different sweeps.
    #[test]
    fn the_command_repeats_the_price_table() {
        let table = umi_dst::usage::PriceTable {
            source: Some("scenarios/prices.toml".into()),
            ..umi_dst::usage::PriceTable::default()
        };
        let options = SweepOptions::default()
            .with_seeds(10)
            .with_prices(std::sync::Arc::new(table));
        let command = resume_command(&options, 1, 3).unwrap();
        assert!(
            command.ends_with(" --prices scenarios/prices.toml"),
            "{command}"
        );
        let given = options.with_prices(std::sync::Arc::default());
        let command = resume_command(&given, 1, 3).unwrap();
        assert!(
            command.ends_with(" --prices <the same price table>"),
            "{command}"
        );
    }
}
