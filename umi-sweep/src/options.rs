//! What a sweep is asked to do (`SweepOptions`, where its seeds run, the limits on its
//! size), the scenarios it selects, and the replay command of a failing run: the leaf the
//! engine, the collector, the resume command and the command line all read, so none of
//! them reaches into the engine for it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use crate::plan::Shard;
use crate::process_pool::WorkerProcesses;
use crate::progress::ProgressStyle;
use umi_dst::scenario::Scenario;

/// Seeds per scenario a sweep runs unless told otherwise (the README's main job, and
/// the range whose coverage marks a test checks). Separate from, and larger than, the
/// `cargo test` default (`umi_dst::constants::SEED_COUNT_DEFAULT`): a sweep is the job
/// that spends cores on many seeds, a test run is the one that must stay quick.
pub const SWEEP_SEEDS_DEFAULT: u64 = 1_000;

/// Runs one sweep may plan.
pub const SWEEP_RUNS_MAX: u64 = 100_000_000;

/// Worker threads one sweep may use.
pub const SWEEP_JOBS_MAX: usize = 256;

const _: () = assert!(SWEEP_SEEDS_DEFAULT <= SWEEP_RUNS_MAX);

/// Results that may wait for the collector: a worker whose result finds the queue full
/// waits, so a collector slowed by recording holds the workers back instead of letting
/// results pile up in memory.
pub const SWEEP_RESULTS_QUEUED_MAX: usize = 256;

/// What to sweep, and how: `SweepOptions::default()`, then the `with_` methods for what
/// differs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SweepOptions {
    /// The first seed.
    pub seed_start: u64,
    /// How many seeds.
    pub seeds: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Run only this shard of the seeds.
    pub shard: Option<Shard>,
    /// Swarm mode: the seed switches each scenario's fault kinds on and off.
    pub swarm: bool,
    /// Run each seed twice and compare trace hashes (a difference is nondeterminism).
    pub check_determinism: bool,
    /// Run only these scenarios (all when empty).
    pub scenarios: Vec<String>,
    /// Stop starting runs after this much wall time.
    pub time_budget: Option<Duration>,
    /// A run without a result after this much wall time is a hang.
    pub seed_timeout: Duration,
    /// Record failing seeds in `<dir>/<scenario>.seeds`.
    pub seeds_dir: Option<PathBuf>,
    /// Record the canary's seeds too (harness tests only).
    pub record_canary: bool,
    /// Keep every seed's trace hash in the report.
    pub keep_hashes: bool,
    /// Where to (re)write the JSON report during and after the sweep.
    pub report_path: Option<PathBuf>,
    /// Progress output.
    pub progress: ProgressStyle,
    /// The command name in replay commands (`dst`, or your own binary's).
    pub program: String,
    /// Set to a non-zero value (the `dst` command stores the signal's number: 2 for
    /// SIGINT, 15 for SIGTERM) to stop the sweep as the time budget does.
    pub interrupt: Option<Arc<AtomicUsize>>,
    /// Where seeds run: worker threads in this process (the default for the library,
    /// `cargo test`, and `dst sweep --in-process`) or worker processes (`dst sweep`).
    pub isolation: Isolation,
    /// The price table run costs are computed with (else each scenario's own, if any).
    pub prices: Option<Arc<umi_dst::usage::PriceTable>>,
    /// Run each task of the seed range this many times, each with its own trial seed
    /// ([`umi_dst::usage::trial_seed`]), and report pass@1, pass@k and pass^k.
    pub trials: Option<u64>,
    /// Runs at the start of this shard's plan not to make (`--skip-runs`): those a
    /// stopped sweep of the same range already made (its `resume` command says how many).
    pub skip_runs: u64,
}

/// Where a sweep's seeds run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Worker threads in this process: a panic is caught, but an abort, a stack
    /// overflow, running out of memory or `exit` ends the whole sweep.
    #[default]
    Threads,
    /// Long-lived worker processes (this binary re-executed): whatever a seed does to
    /// its process costs one worker, and the seed is recorded as a crash.
    Processes(Arc<WorkerProcesses>),
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self {
            seed_start: 1,
            seeds: SWEEP_SEEDS_DEFAULT,
            jobs: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            shard: None,
            swarm: false,
            check_determinism: false,
            scenarios: Vec::new(),
            time_budget: None,
            seed_timeout: Duration::from_secs(60),
            seeds_dir: None,
            record_canary: false,
            keep_hashes: false,
            report_path: None,
            progress: ProgressStyle::Auto,
            program: "dst".into(),
            interrupt: None,
            isolation: Isolation::Threads,
            prices: None,
            trials: None,
            skip_runs: 0,
        }
    }
}

impl SweepOptions {
    /// Sets the first seed.
    pub const fn with_seed_start(mut self, seed_start: u64) -> Self {
        self.seed_start = seed_start;
        self
    }

    /// Sets how many seeds.
    pub const fn with_seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// Sets the worker count.
    pub const fn with_jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    /// Sets swarm mode (the seed switches each scenario's fault kinds on and off).
    pub const fn with_swarm(mut self, swarm: bool) -> Self {
        self.swarm = swarm;
        self
    }

    /// Sets whether each seed runs twice and its trace hashes are compared.
    pub const fn with_check_determinism(mut self, check_determinism: bool) -> Self {
        self.check_determinism = check_determinism;
        self
    }

    /// Runs only these scenarios (all when empty).
    pub fn with_scenarios(mut self, scenarios: Vec<String>) -> Self {
        self.scenarios = scenarios;
        self
    }

    /// Sets the wall time after which a run without a result is a hang.
    pub const fn with_seed_timeout(mut self, seed_timeout: Duration) -> Self {
        self.seed_timeout = seed_timeout;
        self
    }

    /// Sets whether the canary's seeds are recorded too (harness tests only).
    pub const fn with_record_canary(mut self, record_canary: bool) -> Self {
        self.record_canary = record_canary;
        self
    }

    /// Sets whether every seed's trace hash is kept in the report.
    pub const fn with_keep_hashes(mut self, keep_hashes: bool) -> Self {
        self.keep_hashes = keep_hashes;
        self
    }

    /// Sets the progress output.
    pub const fn with_progress(mut self, progress: ProgressStyle) -> Self {
        self.progress = progress;
        self
    }

    /// Sets where seeds run.
    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Computes run costs with `prices`.
    pub fn with_prices(mut self, prices: Arc<umi_dst::usage::PriceTable>) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Runs each task `k` times (see [`SweepOptions::trials`]).
    pub const fn with_trials(mut self, k: u64) -> Self {
        self.trials = Some(k);
        self
    }

    /// Runs only this shard of the seeds.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Skips the first `runs` runs of the plan (a resumed sweep: the runs a stopped
    /// sweep of the same range and shard already made).
    pub const fn with_skip_runs(mut self, runs: u64) -> Self {
        self.skip_runs = runs;
        self
    }

    /// Stops starting runs after this much wall time.
    pub fn with_time_budget(mut self, time_budget: Duration) -> Self {
        self.time_budget = Some(time_budget);
        self
    }

    /// Records failing seeds in `<dir>/<scenario>.seeds`.
    pub fn with_seeds_dir(mut self, seeds_dir: PathBuf) -> Self {
        self.seeds_dir = Some(seeds_dir);
        self
    }

    /// (Re)writes the JSON report here during and after the sweep.
    pub fn with_report_path(mut self, report_path: PathBuf) -> Self {
        self.report_path = Some(report_path);
        self
    }

    /// Stops the sweep as the time budget does once this turns non-zero.
    pub fn with_interrupt(mut self, interrupt: Arc<AtomicUsize>) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// Sets the command name in replay commands (`dst`, or your own binary's).
    pub fn with_program(mut self, program: impl Into<String>) -> Self {
        self.program = program.into();
        self
    }
}

/// A sweep that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A scenario filter names no scenario.
    #[error("unknown scenario {name:?}; known: {}", known.join(", "))]
    UnknownScenario {
        /// The name given.
        name: String,
        /// The scenarios there are.
        known: Vec<String>,
    },
    /// Options out of range.
    #[error("invalid sweep options: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
}

/// The scenarios `names` selects (all when empty).
pub fn select(
    scenarios: &[Arc<dyn Scenario>],
    names: &[String],
) -> Result<Vec<Arc<dyn Scenario>>, SweepError> {
    let selected = select_by_name(scenarios, names)?;
    for scenario in &selected {
        // A fault rule that can fire nowhere is refused here, before any seed runs (a
        // seed would otherwise crash on the invalid config and be recorded).
        if let Err(error) = scenario.config(1, false).validate() {
            return Err(SweepError::Invalid {
                reason: format!("scenario {}: {error}", scenario.name()),
            });
        }
    }
    Ok(selected)
}

fn select_by_name(
    scenarios: &[Arc<dyn Scenario>],
    names: &[String],
) -> Result<Vec<Arc<dyn Scenario>>, SweepError> {
    if names.is_empty() {
        return Ok(scenarios
            .iter()
            .filter(|s| !s.only_when_named())
            .cloned()
            .collect());
    }
    names
        .iter()
        .map(|name| {
            scenarios
                .iter()
                .find(|s| s.name() == name)
                .cloned()
                .ok_or_else(|| SweepError::UnknownScenario {
                    name: name.clone(),
                    known: scenarios.iter().map(|s| s.name().to_owned()).collect(),
                })
        })
        .collect()
}

/// The commit the sweep runs on: `DST_COMMIT`, `GITHUB_SHA`, or `git rev-parse`.
pub fn current_commit() -> Option<String> {
    for var in ["DST_COMMIT", "GITHUB_SHA"] {
        if let Ok(value) = std::env::var(var)
            && !value.is_empty()
        {
            return Some(value.chars().take(12).collect());
        }
    }
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
