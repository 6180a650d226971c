//! `dst compare BEFORE AFTER`: two sweep reports of the same seeds compared scenario by
//! scenario (`crate::compare`), a table of what changed beyond the noise, and an exit
//! code CI can gate a prompt or model change on: 0 no regression, 1 a regression past
//! the thresholds, 2 reports that cannot be read or compared.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command's output"
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use umi_dst::failure_class::EXIT_CODE_ERROR;

use super::{exit, fail};
use crate::compare::{Thresholds, check_comparable, compare};
use crate::report::SweepReport;

/// `dst compare`'s flags.
#[derive(Args)]
pub(super) struct CompareArgs {
    /// The report of the sweep before the change (JSON, from `dst sweep --report` or
    /// `dst merge --output`).
    before: PathBuf,
    /// The report of the same sweep after the change.
    after: PathBuf,
    /// Fail when a pass rate (or pass^k) drops significantly by more than this
    /// fraction (0 to 1; default 0: any significant drop fails).
    #[arg(long, default_value_t = 0.0, value_parser = fraction_arg)]
    max_pass_drop: f64,
    /// Fail when the cost p95 (cost_micros; tokens when the sweeps were not priced)
    /// rises significantly by more than this many percent.
    #[arg(long, default_value_t = 10.0, value_parser = non_negative_arg)]
    max_cost_increase_percent: f64,
    /// The significance level over all the tests made (Bonferroni-corrected: each test
    /// is held to alpha divided by their number).
    #[arg(long, default_value_t = 0.01, value_parser = alpha_arg)]
    alpha: f64,
    /// Write the verdicts as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn number(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("{text:?} is not a finite number"))
    }
}

fn fraction_arg(text: &str) -> Result<f64, String> {
    let value = number(text)?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "{value} is not a fraction from 0 to 1 (0.05 is five points)"
        ))
    }
}

fn non_negative_arg(text: &str) -> Result<f64, String> {
    let value = number(text)?;
    if value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("{value} is negative"))
    }
}

fn alpha_arg(text: &str) -> Result<f64, String> {
    let value = number(text)?;
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(format!(
            "{value} is not a significance level (between 0 and 1, exclusive)"
        ))
    }
}

/// Why a report could not be loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("{path}: cannot read it: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: not a sweep report: {error}")]
    Parse {
        path: String,
        error: serde_json::Error,
    },
}

/// Reads and parses a report; the error names the file (and serde's line and column).
fn load(path: &Path) -> Result<SweepReport, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Read {
        path: path.display().to_string(),
        error,
    })?;
    serde_json::from_str(&text).map_err(|error| LoadError::Parse {
        path: path.display().to_string(),
        error,
    })
}

/// Runs `dst compare`.
pub(super) fn run(args: &CompareArgs) -> ExitCode {
    let (before, after) = match (load(&args.before), load(&args.after)) {
        (Ok(before), Ok(after)) => (before, after),
        (Err(error), _) | (_, Err(error)) => return fail(&error.to_string()),
    };
    let warnings = match check_comparable(&before, &after) {
        Ok(warnings) => warnings,
        Err(error) => {
            return fail(&format!(
                "{} and {} cannot be compared: {error}",
                args.before.display(),
                args.after.display()
            ));
        }
    };
    let thresholds = Thresholds {
        max_pass_drop: args.max_pass_drop,
        max_cost_increase_percent: args.max_cost_increase_percent,
        alpha: args.alpha,
    };
    let mut comparison = compare(&before, &after, thresholds);
    comparison.warnings = warnings;
    println!(
        "dst compare: BEFORE {}, AFTER {}: seeds {}..={} ({} seeds{}), {} mode{}",
        args.before.display(),
        args.after.display(),
        before.seed_start,
        before
            .seed_start
            .saturating_add(before.seeds.saturating_sub(1)),
        before.seeds,
        before
            .trials
            .map_or(String::new(), |k| format!(" as tasks, {k} trials each")),
        if before.swarm { "swarm" } else { "default" },
        if before.check_determinism {
            ", determinism checked"
        } else {
            ""
        }
    );
    print!("{}", comparison.table());
    if let Some(path) = &args.json {
        let written = serde_json::to_string_pretty(&comparison)
            .map_err(|error| error.to_string())
            .and_then(|json| std::fs::write(path, json).map_err(|error| error.to_string()));
        if let Err(error) = written {
            return fail(&format!("{}: {error}", path.display()));
        }
    }
    if comparison.regression {
        eprintln!("error: {}", comparison.result_line());
        return exit(EXIT_CODE_ERROR);
    }
    ExitCode::SUCCESS
}
