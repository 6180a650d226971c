//! The exploration loop: plan a batch of runs (frontier paths first, then branches of
//! corpus entries picked by energy, with a share of fresh seeds), run it over `jobs`
//! threads, fold the outcomes in plan order (coverage, corpus, first failure), until a
//! stop condition holds. Every choice draws from the explorer's own seeded RNG and the
//! batch size is fixed, so the same explorer seed explores the same paths for any number
//! of jobs (a wall-clock budget can only cut it shorter).
//!
//! Harness code outside any simulation: it reads the wall clock for its budget.
#![allow(
    clippy::disallowed_methods,
    reason = "the explorer's budget is wall time, outside every simulation"
)]

use std::collections::VecDeque;
use std::time::Instant;

use umi_dst::DeterministicRng;

use super::RunPath;
use super::corpus::{Corpus, Planned};
use super::coverage::{Coverage, Target};
use super::options::{BATCH_RUNS, ExploreError, ExploreOptions, FRESH_SHARE, FRESH_SHARE_OF};
use super::outcome::{PathOutcome, PathRunner};
use super::parallel::run_batch;
use super::report::{ExploreReport, FoundFailure, StopReason, never_reached};

/// What is explored, besides the options.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    /// The scenario's name (in the report and replay lines).
    pub scenario: String,
    /// The declared marks, to report those never reached.
    pub declared: Vec<String>,
    /// Paths to run first (a shared frontier).
    pub frontier: Vec<RunPath>,
}

/// The loop's state.
struct State {
    rng: DeterministicRng,
    coverage: Coverage,
    corpus: Corpus,
    queue: VecDeque<RunPath>,
    runs: u64,
    fresh_seeds: u64,
    stable_runs: u64,
    first_failure: Option<(RunPath, String, String, u64)>,
}

/// Explores with `runner` until a stop condition of `options` holds.
pub fn explore_with(
    runner: &dyn PathRunner,
    exploration: &Exploration,
    options: &ExploreOptions,
) -> Result<ExploreReport, ExploreError> {
    options.validate()?;
    let started = Instant::now();
    let shard_index = options.shard.map_or(0, |shard| shard.index);
    let mut state = State {
        rng: DeterministicRng::new(options.explorer_seed).fork_parts(&[
            umi_dst::streams::explore::SHARD.as_bytes(),
            &shard_index.to_le_bytes(),
        ]),
        coverage: Coverage::new(options.lineages_per_target),
        corpus: Corpus::default(),
        queue: exploration.frontier.iter().cloned().collect(),
        runs: 0,
        fresh_seeds: 0,
        stable_runs: 0,
        first_failure: None,
    };
    let stopped = loop {
        if let Some(reason) = state.stop_reason(options) {
            break reason;
        }
        if started.elapsed() >= options.budget {
            break StopReason::Budget;
        }
        let batch = state.plan_batch(options);
        let paths: Vec<RunPath> = batch.iter().map(|planned| planned.path.clone()).collect();
        let outcomes = run_batch(runner, &paths, options.jobs);
        for (planned, outcome) in batch.into_iter().zip(outcomes) {
            if state.stop_reason(options).is_some() {
                break;
            }
            state.fold(planned, &outcome);
        }
    };
    Ok(state.report(exploration, options, started, stopped))
}

impl State {
    /// The reason to stop now, if any (the budget aside).
    fn stop_reason(&self, options: &ExploreOptions) -> Option<StopReason> {
        if options.stop_at_first_failure && self.first_failure.is_some() {
            Some(StopReason::FirstFailure)
        } else if self.runs >= options.runs_max {
            Some(StopReason::RunsMax)
        } else if options.stable_runs_max > 0 && self.stable_runs >= options.stable_runs_max {
            Some(StopReason::Stable)
        } else {
            None
        }
    }

    /// The next batch: queued frontier paths, then branches and fresh seeds.
    fn plan_batch(&mut self, options: &ExploreOptions) -> Vec<Planned> {
        let size = BATCH_RUNS.min(options.runs_max - self.runs);
        (0..size).map(|_| self.plan_one(options)).collect()
    }

    fn plan_one(&mut self, options: &ExploreOptions) -> Planned {
        if let Some(path) = self.queue.pop_front() {
            return Planned { path, parent: None };
        }
        let fresh = self.rng.below(FRESH_SHARE_OF) < FRESH_SHARE;
        if !fresh && let Some(planned) = self.corpus.plan_branch(&mut self.rng) {
            return planned;
        }
        let (offset, stride) = options
            .shard
            .map_or((0, 1), |shard| (shard.index, shard.count));
        let seed = options
            .seed_start
            .wrapping_add(offset)
            .wrapping_add(self.fresh_seeds.wrapping_mul(stride));
        self.fresh_seeds += 1;
        Planned {
            path: RunPath::from_seed(seed),
            parent: None,
        }
    }

    /// Folds one run's outcome in.
    fn fold(&mut self, planned: Planned, outcome: &PathOutcome) {
        let run = self.runs;
        self.runs += 1;
        let novelties = self.coverage.absorb(outcome, &planned.path, run);
        if let Some((class, message)) = &outcome.failure
            && self.first_failure.is_none()
        {
            let found = (planned.path.clone(), class.clone(), message.clone(), run);
            self.first_failure = Some(found);
        }
        // Only a first reach is new coverage (and earns the parent energy); a new
        // lineage to a known target is kept in the corpus all the same.
        let first = novelties.iter().any(|novelty| novelty.first);
        if first {
            self.stable_runs = 0;
        } else {
            self.stable_runs += 1;
        }
        if novelties.is_empty() {
            return;
        }
        if let Some(parent) = planned.parent.filter(|_| first) {
            self.corpus.reward(parent);
        }
        let steps: Vec<u64> = novelties
            .iter()
            .filter(|novelty| !matches!(novelty.target, Target::Failure { .. }))
            .map(|novelty| novelty.step)
            .collect();
        self.corpus.add(planned.path, &steps, run);
    }

    fn report(
        self,
        exploration: &Exploration,
        options: &ExploreOptions,
        started: Instant,
        stopped: StopReason,
    ) -> ExploreReport {
        let reached = self.coverage.reached();
        let swarm = if options.swarm { " --swarm" } else { "" };
        let first_failure = self
            .first_failure
            .map(|(path, class, message, run)| FoundFailure {
                replay: format!(
                    "{} replay --scenario {} --path {path}{swarm}",
                    options.program, exploration.scenario
                ),
                path,
                class,
                message,
                run,
            });
        ExploreReport {
            scenario: exploration.scenario.clone(),
            explorer_seed: options.explorer_seed,
            swarm: options.swarm,
            shard: options
                .shard
                .map(|shard| format!("{}/{}", shard.index + 1, shard.count)),
            runs: self.runs,
            elapsed: started.elapsed(),
            stopped,
            first_failure,
            never_reached: never_reached(&exploration.declared, &reached),
            declared: exploration.declared.clone(),
            reached,
            frontier: self.corpus.entries().to_vec(),
        }
    }
}
