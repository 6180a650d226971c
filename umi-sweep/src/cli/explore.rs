//! `dst explore`: guided exploration of one scenario (see [`crate::explore`]), or
//! `dst explore --merge DIR` to combine the shard files of a frontier directory. Prints
//! what was reached and how, what was never reached, and the first failure with its
//! replay line; `--report` writes the JSON.
//!
//! Exit codes: 0 when no failure was found (or a canary's was: that is its job), the
//! failure class's code when one was, 20 when a canary's planted bug was not found, 2
//! for bad arguments, 1 when a file cannot be read or written.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use umi_dst::failure_class::{EXIT_CODE_CANARY_NOT_FOUND, EXIT_CODE_ERROR, FailureClass};
use umi_dst::scenario::Scenario;
use umi_dst::simulation::settings::parse_seed;
use umi_dst::simulation::settings::positive_duration_arg;

use super::{exit, fail};
use crate::explore::frontier::{merge, read_dir, write_report};
use crate::explore::options::RUNS_MAX;
use crate::explore::{ExploreError, ExploreOptions, ExploreReport, explore, render};
use crate::options::select;
use crate::plan::Shard;

/// `dst explore`'s arguments.
#[derive(Args)]
pub(crate) struct ExploreArgs {
    /// The scenario to explore.
    #[arg(long, required_unless_present = "merge")]
    scenario: Option<String>,
    /// Stop after this many runs.
    #[arg(long, default_value = "100000", value_parser = clap::value_parser!(u64).range(1..=RUNS_MAX))]
    runs: u64,
    /// Stop after this much wall-clock time (`30s`, `10m`, `1h`).
    #[arg(long, default_value = "10m", value_parser = positive_duration_arg)]
    budget: Duration,
    /// Stop when this many runs in a row reached nothing new (default: never).
    #[arg(long, default_value = "0")]
    stable_runs: u64,
    /// Runs in parallel (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Seeds the explorer's choices: the same seed explores the same paths.
    #[arg(long, default_value = "1", value_parser = parse_seed)]
    explorer_seed: u64,
    /// Stop at the first failing run.
    #[arg(long)]
    until_failure: bool,
    /// Run in swarm mode (each seed a random subset of the fault kinds).
    #[arg(long)]
    swarm: bool,
    /// Write the JSON report here.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Explore as shard K of N (1-based; `auto/N` takes K from JOB_COMPLETION_INDEX):
    /// fresh seeds and explorer choices of its own, the frontier shared through
    /// --frontier.
    #[arg(long, value_name = "K/N", value_parser = shard_arg, requires = "frontier")]
    shard: Option<Shard>,
    /// The first fresh seed (shard K of N takes every N-th from the K-th).
    #[arg(long, default_value = "1", value_parser = parse_seed)]
    seed_start: u64,
    /// The frontier directory: the reports there are rerun first, and this run's is
    /// written there (`explore-<scenario>[-<k>-of-<n>].json`).
    #[arg(long, value_name = "DIR")]
    frontier: Option<PathBuf>,
    /// Combine the reports in DIR (shard files) into one, print it and write it to
    /// --report; runs nothing.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["scenario", "shard", "frontier"])]
    merge: Option<PathBuf>,
    /// Run even though this `dst` was built without debug assertions.
    #[arg(long)]
    allow_no_debug_assertions: bool,
}

/// `--shard K/N` or `auto/N`, as `dst sweep` takes it.
fn shard_arg(text: &str) -> Result<Shard, String> {
    super::sweep::shard(Some(text))?.ok_or_else(|| format!("shard {text:?} is not K/N"))
}

/// Runs `dst explore`.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: &ExploreArgs, program: &str) -> ExitCode {
    if let Some(dir) = &args.merge {
        return finish(read_dir(dir).and_then(|files| merge(&files)), args, false);
    }
    if let Err(error) = super::assertions::check(args.allow_no_debug_assertions) {
        return fail(&error);
    }
    let name = args.scenario.clone().unwrap_or_default();
    let selected = match select(scenarios, std::slice::from_ref(&name)) {
        Ok(selected) => selected,
        Err(error) => return fail(&error.to_string()),
    };
    let scenario = selected[0].as_ref();
    let options = ExploreOptions {
        runs_max: args.runs,
        budget: args.budget,
        stable_runs_max: args.stable_runs,
        jobs: args.jobs.map_or_else(
            || crate::SweepOptions::default().jobs,
            |jobs| usize::try_from(jobs).unwrap_or(1),
        ),
        explorer_seed: args.explorer_seed,
        stop_at_first_failure: args.until_failure,
        swarm: args.swarm,
        shard: args.shard,
        seed_start: args.seed_start,
        frontier: args.frontier.clone(),
        program: program.to_owned(),
        lineages_per_target: crate::explore::options::LINEAGES_PER_TARGET,
    };
    finish(explore(scenario, &options), args, scenario.is_canary())
}

/// Prints the report (or the error), writes `--report`, and picks the exit code.
fn finish(
    report: Result<ExploreReport, ExploreError>,
    args: &ExploreArgs,
    canary: bool,
) -> ExitCode {
    let report = match report {
        Ok(report) => report,
        Err(error @ ExploreError::Option { .. }) => return fail(&error.to_string()),
        Err(error) => {
            eprintln!("error: {error}");
            return exit(EXIT_CODE_ERROR);
        }
    };
    print!("{}", render(&report));
    if let Some(path) = &args.report
        && let Err(error) = write_report(path, &report)
    {
        eprintln!("error: {error}");
        return exit(EXIT_CODE_ERROR);
    }
    match (&report.first_failure, canary) {
        (None, false) | (Some(_), true) => ExitCode::SUCCESS,
        (None, true) => exit(EXIT_CODE_CANARY_NOT_FOUND),
        (Some(failure), false) => exit(
            FailureClass::from_name(&failure.class)
                .map_or(EXIT_CODE_ERROR, FailureClass::exit_code),
        ),
    }
}
