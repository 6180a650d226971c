//! `dst explore`: guided exploration. Instead of seed after seed drawn blind, it keeps a
//! corpus of paths that reached something new (a mark, a higher watermark, a new (fault
//! kind, operation) combination, a new failure class) and branches them from the step
//! where each first got there: the same seed up to that step, a fresh stream after it
//! (a [`RunPath`]). Entries whose branches keep finding things get more runs (energy); a
//! share of runs stays on fresh seeds. It stops on a run limit, a wall-clock budget,
//! coverage stable for a stretch, or the first failure. See ADR 0024.
//!
//! - [`engine::explore_with`]: the loop, over any [`PathRunner`]; [`explore`] runs it on a
//!   scenario.
//! - [`coverage`]: targets and first reaches; [`corpus`]: entries and energy;
//!   [`parallel`]: a batch over `jobs` threads, folded in order.
//! - [`report`]: [`ExploreReport`] (JSON and text); [`frontier`]: shard files and merge.

pub mod corpus;
pub mod coverage;
pub mod engine;
pub mod frontier;
pub mod options;
pub mod outcome;
pub mod parallel;
pub mod report;
pub mod runner;

pub use coverage::{Reached, Target};
pub use engine::{Exploration, explore_with};
pub use options::{ExploreError, ExploreOptions};
pub use outcome::{FaultAt, PathOutcome, PathRunner};
pub use report::{ExploreReport, FoundFailure, StopReason, render};
pub use umi_dst::PATH_BRANCHES_MAX;
pub use umi_dst::Watermark;
pub use umi_dst::{Branch, PathError, RunPath};

use umi_dst::scenario::Scenario;

/// Explores `scenario`: reruns the frontier in `options.frontier` first (if any), then
/// branches and fresh seeds until a stop condition holds, and writes this shard's
/// frontier file there.
pub fn explore(
    scenario: &dyn Scenario,
    options: &ExploreOptions,
) -> Result<ExploreReport, ExploreError> {
    options.validate()?;
    let name = scenario.name();
    let frontier = match &options.frontier {
        Some(dir) => frontier::frontier_paths(dir, name)?,
        None => Vec::new(),
    };
    let exploration = Exploration {
        scenario: name.to_owned(),
        declared: declared(scenario),
        frontier,
    };
    let limit = crate::watched::seed_wall_timeout().map_err(|reason| ExploreError::Option {
        option: umi_dst::simulation::settings::SEED_TIMEOUT_VAR,
        reason,
    })?;
    let runner = runner::ScenarioRunner {
        scenario,
        swarm: options.swarm,
        limit,
        program: options.program.clone(),
    };
    let report = explore_with(&runner, &exploration, options)?;
    if let Some(dir) = &options.frontier {
        frontier::write_report(&frontier::shard_file(dir, name, options.shard), &report)?;
    }
    Ok(report)
}

/// The marks `scenario` declares: its coverage marks, then its steering marks.
pub fn declared(scenario: &dyn Scenario) -> Vec<String> {
    let steering = scenario.steering().iter().map(|mark| mark.name);
    let mut names: Vec<String> = Vec::new();
    for name in scenario.marks().iter().copied().chain(steering) {
        if !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
    }
    names
}
