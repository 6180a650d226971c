//! `dst merge`: the JSON reports of a sweep's shards combined into one, after checking
//! they belong together (`merge_check`), with `--require-complete` and `--fail-on-new`
//! for CI.
#![allow(clippy::print_stdout, reason = "a command's output")]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use umi_dst::corpus::{SeedCorpus, SeedMeaning, corpus_path};
use umi_dst::failure_class::{EXIT_CODE_CANARY_NOT_FOUND, FailureClass};

use super::{default_seeds_dir, exit, fail, write_html, write_junit};
use crate::report::SweepReport;

/// `dst merge`'s flags.
#[derive(Args)]
pub(super) struct MergeArgs {
    /// The shard reports (JSON).
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Write the merged JSON report here.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the merged report as one self-contained HTML page here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Fail only on failures whose seeds are not already in the seed corpus.
    #[arg(long)]
    fail_on_new: bool,
    /// Exit 2 when a shard of the sweep is missing (the merged report says which).
    #[arg(long)]
    require_complete: bool,
    /// The seed corpus for --fail-on-new (default: as `sweep --seeds-dir`'s).
    #[arg(long)]
    seeds_dir: Option<PathBuf>,
}

/// Runs `dst merge`.
pub(super) fn run(args: &MergeArgs) -> ExitCode {
    let reports = match load(&args.reports) {
        Ok(reports) => reports,
        Err(error) => return fail(&error),
    };
    let (merged, coverage) = match crate::merge_check::merge(&reports) {
        Ok(merged) => merged,
        Err(error) => return fail(&error.to_string()),
    };
    print!("{}", merged.table());
    if !coverage.is_complete() {
        println!("INCOMPLETE: {}", coverage.describe_missing());
    }
    if let Err(error) = write(&merged, args) {
        return fail(&error);
    }
    if args.require_complete && !coverage.is_complete() {
        return fail(&format!(
            "--require-complete: {}",
            coverage.describe_missing()
        ));
    }
    if !args.fail_on_new {
        return exit(merged.exit_code());
    }
    let dir = args.seeds_dir.clone().or_else(default_seeds_dir);
    let new = match print_new_failures(&merged, dir.as_ref()) {
        Ok(new) => new,
        Err(error) => return fail(&error),
    };
    if new > 0 {
        println!("{new} new failure(s)");
    }
    exit(fail_on_new_exit_code(&merged, new))
}

/// `--fail-on-new`'s exit code, with `new` of the merged failures not in the corpus: a
/// missed canary's; else, with new failures, the most severe class among the
/// regressions (a new failure is one), at least correctness; else 0. A worker that died
/// where no run died again (`worker_deaths_unexplained`) is a crash of the sweep, new or
/// not: it counts as a regression of class crash.
fn fail_on_new_exit_code(merged: &SweepReport, new: usize) -> i32 {
    if !merged.canaries_missed().is_empty() {
        return EXIT_CODE_CANARY_NOT_FOUND;
    }
    let unexplained = merged.worker_death_class();
    if new == 0 {
        return unexplained.map_or(0, FailureClass::exit_code);
    }
    merged
        .most_severe_regression()
        .max(unexplained)
        .unwrap_or(FailureClass::Correctness)
        .exit_code()
}

/// Reads and parses the shard reports; the error names the file.
fn load(paths: &[PathBuf]) -> Result<Vec<SweepReport>, String> {
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .map_err(|error| format!("{}: {error}", path.display()))?;
            serde_json::from_str::<SweepReport>(&text)
                .map_err(|error| format!("{}: not a sweep report: {error}", path.display()))
        })
        .collect()
}

/// Writes the merged JSON (`--output`), JUnit (`--junit`) and HTML (`--html`) reports.
fn write(merged: &SweepReport, args: &MergeArgs) -> Result<(), String> {
    if let Some(path) = &args.output {
        let json = serde_json::to_string_pretty(merged)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        std::fs::write(path, json).map_err(|error| format!("{}: {error}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        write_junit(path, merged).map_err(|error| format!("{}: {error}", path.display()))?;
    }
    if let Some(path) = &args.html {
        write_html(path, merged).map_err(|error| format!("--html {error}"))?;
    }
    Ok(())
}

/// Prints each listed failure whose seed the corpus in `dir` does not hold (`NEW`), and
/// each scenario whose unlisted failures could not be checked (`UNCHECKED`); returns how
/// many are new.
fn print_new_failures(merged: &SweepReport, dir: Option<&PathBuf>) -> Result<usize, String> {
    let mode = SeedMeaning {
        swarm: merged.swarm,
        ..SeedMeaning::default()
    };
    let mut new = 0;
    for scenario in merged.scenarios.iter().filter(|s| !s.canary) {
        let known = match dir.map(|d| corpus_path(d, &scenario.name)) {
            Some(Ok(path)) => SeedCorpus::load(&path).map_err(|error| error.to_string())?,
            _ => SeedCorpus::default(),
        };
        for failure in scenario
            .failures
            .iter()
            .filter(|f| !known.contains_in_mode(f.seed, &mode))
        {
            new += 1;
            println!(
                "NEW {} seed {} ({}): {}",
                scenario.name,
                failure.seed,
                failure.class,
                failure.message.lines().next().unwrap_or("")
            );
        }
        if scenario.failures_truncated > 0 {
            println!(
                "UNCHECKED {}: {} failing seed(s) are not listed in the reports, so --fail-on-new could not check them ({})",
                scenario.name,
                scenario.failures_truncated,
                crate::report::truncation_note(scenario)
            );
        }
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ScenarioReport;

    fn merged(
        failures_by_class: &[(&str, u64)],
        canary_missed: bool,
        deaths: usize,
    ) -> SweepReport {
        let scenario = ScenarioReport {
            name: "s".into(),
            seeds_run: 10,
            seeds_failed: failures_by_class.iter().map(|(_, n)| n).sum(),
            failures_by_class: failures_by_class
                .iter()
                .map(|(class, n)| ((*class).to_owned(), *n))
                .collect(),
            ..ScenarioReport::default()
        };
        let canary = ScenarioReport {
            name: "canary".into(),
            canary: true,
            seeds_run: 10,
            seeds_failed: u64::from(!canary_missed),
            ..ScenarioReport::default()
        };
        SweepReport {
            scenarios: vec![scenario, canary],
            worker_deaths_unexplained: vec!["a worker died".into(); deaths],
            ..SweepReport::default()
        }
    }

    /// Regression (issue 41's fifth round): `--fail-on-new`, which the nightly merges
    /// with, exited 0 on a sweep whose only trouble was a worker killed unexplained.
    #[test]
    fn fail_on_new_exits_by_new_failures_canaries_and_worker_deaths() {
        /// Failures by class, canary missed, unexplained deaths, new, the exit code.
        type Row = (&'static [(&'static str, u64)], bool, usize, usize, i32);
        let table: [Row; 7] = [
            (&[], false, 0, 0, 0),
            (&[("correctness", 2)], false, 0, 0, 0), // known failures only
            (&[("correctness", 2)], false, 0, 1, 10),
            (&[("liveness", 1)], false, 0, 1, 12),
            (&[], false, 1, 0, 11),
            (&[("correctness", 2)], false, 1, 1, 11),
            (
                &[("correctness", 2)],
                true,
                1,
                1,
                EXIT_CODE_CANARY_NOT_FOUND,
            ),
        ];
        for (classes, missed, deaths, new, code) in table {
            assert_eq!(
                fail_on_new_exit_code(&merged(classes, missed, deaths), new),
                code,
                "{classes:?} missed {missed} deaths {deaths} new {new}"
            );
        }
    }
}
