//! What an exploration found ([`ExploreReport`]): what was reached and the path that
//! first reached each, what was declared and never reached, the first failure with its
//! replay line, and the frontier (the corpus) a later shard or night starts from. It is
//! the JSON `--report` writes and the shard file `--frontier` shares; [`render`] prints
//! it for people.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::RunPath;
use super::corpus::Entry;
use super::coverage::{Reached, Target};

/// Why an exploration stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It ran `runs_max` runs.
    RunsMax,
    /// Its wall-clock budget ran out.
    Budget,
    /// Nothing new for `stable_runs_max` runs in a row.
    Stable,
    /// It was asked to stop at the first failure, and one came.
    FirstFailure,
    /// A merge of shard reports (each stopped for its own reason).
    Merged,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::RunsMax => "the run limit",
            StopReason::Budget => "the time budget",
            StopReason::Stable => "stable coverage",
            StopReason::FirstFailure => "the first failure",
            StopReason::Merged => "merged shards",
        })
    }
}

/// The first failing run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundFailure {
    /// Its path.
    pub path: RunPath,
    /// The failure class (`correctness`).
    pub class: String,
    /// The failure's message.
    pub message: String,
    /// Its run index (from 0; the runs it took are `run + 1`).
    pub run: u64,
    /// The command that replays it.
    pub replay: String,
}

/// What an exploration found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExploreReport {
    /// The scenario.
    pub scenario: String,
    /// The explorer's seed.
    pub explorer_seed: u64,
    /// Whether it ran in swarm mode.
    pub swarm: bool,
    /// The shard (`2/4`), if it was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Runs folded in.
    pub runs: u64,
    /// Wall-clock time taken.
    pub elapsed: Duration,
    /// Why it stopped.
    pub stopped: StopReason,
    /// The first failing run.
    pub first_failure: Option<FoundFailure>,
    /// Every target reached, with the path that first reached it.
    pub reached: Vec<Reached>,
    /// The declared marks (the scenario's coverage marks and steering marks).
    pub declared: Vec<String>,
    /// Declared marks never hit.
    pub never_reached: Vec<String>,
    /// The corpus at the end: where a later exploration starts.
    pub frontier: Vec<Entry>,
}

/// The declared marks no entry of `reached` hit.
pub fn never_reached(declared: &[String], reached: &[Reached]) -> Vec<String> {
    declared
        .iter()
        .filter(|name| {
            !reached.iter().any(|r| match &r.target {
                Target::Mark { name: hit } | Target::Watermark { name: hit } => hit == *name,
                Target::Fault { .. } | Target::Failure { .. } => false,
            })
        })
        .cloned()
        .collect()
}

/// The report for people: a summary line, what was reached and how, what was never
/// reached, the first failure and its replay line.
pub fn render(report: &ExploreReport) -> String {
    let mut out = String::new();
    let shard = report
        .shard
        .as_ref()
        .map_or(String::new(), |shard| format!(" (shard {shard})"));
    let _ = writeln!(
        out,
        "explore {}{shard}: {} runs in {:.1}s, stopped on {}; {} reached",
        report.scenario,
        report.runs,
        report.elapsed.as_secs_f64(),
        report.stopped,
        report.reached.len()
    );
    for reached in &report.reached {
        let value = reached
            .value
            .map_or(String::new(), |value| format!(" = {value}"));
        let _ = writeln!(
            out,
            "  {}{value}: first at run {}, step {}, path {}",
            reached.target, reached.run, reached.step, reached.path
        );
    }
    if report.never_reached.is_empty() {
        let _ = writeln!(out, "never reached: none of the declared marks");
    } else {
        let _ = writeln!(out, "never reached ({}):", report.never_reached.len());
        for name in &report.never_reached {
            let _ = writeln!(out, "  {name:?}");
        }
    }
    match &report.first_failure {
        None => {
            let _ = writeln!(out, "no failure");
        }
        Some(failure) => {
            let _ = writeln!(
                out,
                "first failure ({}) at run {}, path {}:\n  {}\n  replay: {}",
                failure.class, failure.run, failure.path, failure.message, failure.replay
            );
        }
    }
    out
}
