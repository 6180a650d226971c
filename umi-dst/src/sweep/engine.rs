//! Running scenarios over many seeds, in parallel.
//!
//! Work is numbered (scenario, seed) runs, seed-major so that a sweep cut short by its
//! time budget has still covered every scenario (`plan.rs`). Worker threads take run
//! numbers from a shared counter (`worker.rs`), or, with [`Isolation::Processes`]
//! (what `dst sweep` uses), driver threads do and hand each run to their own worker
//! process (`process_pool.rs`), so an abort, a stack overflow, running out of memory
//! or `exit` in a seed costs one worker process and is recorded as that seed's crash;
//! each run is one seed on its own
//! single-threaded simulated runtime, so the number of workers never changes a seed's
//! result (a test checks `--jobs 1` and `--jobs 2` give identical trace hashes).
//!
//! The main thread collects results over a bounded queue (`collect.rs`: workers wait
//! when it is full, so memory stays flat however fast seeds fail), records failing seeds
//! in the corpus (append-only, O(1) per seed), prints progress, rewrites the JSON report
//! every few seconds (so a sweep killed midway leaves a report saying how far it got),
//! and watches the workers: a run that produces no result within `seed_timeout` of wall
//! time (a loop that never yields, blocking I/O) is recorded as a liveness failure and
//! its worker replaced (a worker process is killed), so a hang never stops the sweep.
//!
//! A time budget or an interrupt (`SweepOptions::interrupt`, set by the `dst` command
//! on SIGINT and SIGTERM) stops the claiming of runs; the runs already claimed finish or
//! become hangs after the seed timeout, so the sweep ends within one seed timeout of
//! the stop, whatever the failure rate, having done exactly the runs numbered below its
//! `runs_done` (`resume.rs` prints the command for the rest).
//!
//! This is harness code outside any simulation: it may read the wall clock and spawn
//! threads, which `clippy.toml` otherwise forbids.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine measures wall time and runs worker threads, outside every simulation"
)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::collect::Collector;
pub use super::collect::write_report;
use super::plan::Plan;
pub use super::plan::Shard;
use super::process_pool::spawn_driver;
use super::progress::Progress;
pub use super::progress::ProgressStyle;
use super::report::{ScenarioReport, SweepReport};
pub use super::resume::{StopReason, resume_command};
use super::scenario::Scenario;
use super::worker::{QuietWorkers, Shared, spawn_worker, watchdog};
use crate::simulation::report::FailureClass;
use crate::simulation::{SeedRun, Simulation};

/// Seeds per scenario a sweep runs unless told otherwise (the README's main job, and
/// the range whose coverage marks a test checks).
pub const SWEEP_SEEDS_DEFAULT: u64 = 1_000;

/// Runs one sweep may plan.
pub const SWEEP_RUNS_MAX: u64 = 100_000_000;

/// Worker threads one sweep may use.
pub const SWEEP_JOBS_MAX: usize = 256;

const _: () = assert!(SWEEP_SEEDS_DEFAULT <= SWEEP_RUNS_MAX);

/// How often the main thread wakes to watch workers and report progress.
const TICK: Duration = Duration::from_millis(200);

/// How often the JSON report is rewritten during a sweep.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// Results that may wait for the collector: a worker whose result finds the queue full
/// waits, so a collector slowed by recording holds the workers back instead of letting
/// results pile up in memory.
pub const SWEEP_RESULTS_QUEUED_MAX: usize = 256;

/// What to sweep, and how.
#[derive(Debug, Clone)]
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
    Processes(Arc<super::process_pool::WorkerProcesses>),
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
        }
    }
}

/// A sweep that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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

/// Runs one seed of `scenario` (the unit of work; also what `replay` runs).
pub fn run_one(
    scenario: &dyn Scenario,
    seed: u64,
    swarm: bool,
    edit: impl FnOnce(crate::SimConfig) -> crate::SimConfig,
) -> SeedRun {
    let config = edit(scenario.config(seed, swarm));
    Simulation::new(config).run_seed(seed, &|sim| scenario.run(sim))
}

/// The replay command of a run that failed with `class` (a nondeterminism failure only
/// shows when the replay runs the seed twice).
pub fn replay_command(
    program: &str,
    scenario: &str,
    seed: u64,
    swarm: bool,
    class: Option<FailureClass>,
) -> String {
    format!(
        "{program} replay --scenario {scenario} --seed {seed}{}{}",
        if swarm { " --swarm" } else { "" },
        if class == Some(FailureClass::Nondeterminism) {
            " --check-determinism"
        } else {
            ""
        }
    )
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

/// Runs the sweep.
pub fn run(
    scenarios: &[Arc<dyn Scenario>],
    options: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let selected = select(scenarios, &options.scenarios)?;
    validate(options, selected.len())?;
    let plan = Plan::new(options, selected.len());
    let total = plan.total();
    let shared = Arc::new(Shared {
        plan,
        next: AtomicUsize::new(0),
        slots: Mutex::new(vec![None; options.jobs]),
        retired: Mutex::new(BTreeSet::new()),
        killers: Mutex::new(Vec::new()),
        scenarios: selected.clone(),
        swarm: options.swarm,
        check_determinism: options.check_determinism,
    });
    let report = empty_report(options, &selected, total);
    let _quiet = QuietWorkers::install();
    let (sender, results) = mpsc::sync_channel(SWEEP_RESULTS_QUEUED_MAX);
    for slot in 0..options.jobs {
        match &options.isolation {
            Isolation::Threads => spawn_worker(&shared, slot, sender.clone()),
            Isolation::Processes(processes) => spawn_driver(
                &shared,
                slot,
                sender.clone(),
                Arc::clone(processes),
                options.seed_timeout,
            ),
        }
    }
    let started = Instant::now();
    let progress = Progress::new(options.progress, total as u64);
    let mut collector = Collector::new(report, &selected, options, progress);
    if let Some(path) = &options.report_path {
        collector.write(path, started); // a report exists from the start
    }
    let mut last_report = Instant::now();
    // Runs that will produce an outcome: all of them, until a stop fixes the number.
    let mut target = total;
    let mut stopped = None;
    while (collector.report.runs_done as usize) < target {
        if stopped.is_none()
            && let Some(reason) = stop_reason(options, started)
        {
            stopped = Some(reason);
            target = shared.stop();
        }
        match results.recv_timeout(TICK) {
            Ok(first) => {
                // Everything already waiting, then the watchdog.
                for outcome in
                    std::iter::once(first).chain(results.try_iter().take(SWEEP_RESULTS_QUEUED_MAX))
                {
                    if !collector.hung.contains(&outcome.index) {
                        collector.record(outcome, &shared, &selected, options);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        retire_hung(&shared, &mut collector, &selected, options, &sender);
        collector.progress.update(
            collector.report.runs_done,
            total as u64,
            collector.failures,
            started,
        );
        if let Some(path) = &options.report_path
            && last_report.elapsed() >= REPORT_EVERY
        {
            last_report = Instant::now();
            collector.write(path, started);
        }
    }
    let mut report = collector.finish(started);
    report.completed = report.runs_done == total as u64;
    if !report.completed {
        report.stopped = stopped.map(StopReason::describe);
        report.resume = resume_command(options, selected.len(), report.runs_done);
    }
    if let Some(path) = &options.report_path
        && let Err(error) = write_report(path, &report)
    {
        report_write_failed(path, &error, options.progress);
    }
    Ok(report)
}

/// Options that cannot make a sweep.
fn validate(options: &SweepOptions, scenarios: usize) -> Result<(), SweepError> {
    if options.jobs == 0 || options.jobs > SWEEP_JOBS_MAX {
        return Err(SweepError::Invalid {
            reason: format!("jobs {} is outside 1..={SWEEP_JOBS_MAX}", options.jobs),
        });
    }
    if options.seeds == 0 {
        return Err(SweepError::Invalid {
            reason: format!("--seeds 0: give 1..={SWEEP_RUNS_MAX} seeds"),
        });
    }
    if options.seed_start.checked_add(options.seeds - 1).is_none() {
        return Err(SweepError::Invalid {
            reason: format!(
                "seeds {}..+{} run past the largest seed",
                options.seed_start, options.seeds
            ),
        });
    }
    if options.seed_timeout.is_zero() {
        return Err(SweepError::Invalid {
            reason: "--seed-timeout 0 makes every seed a hang; give at least 1ms".into(),
        });
    }
    let planned = options.seeds.saturating_mul(scenarios as u64);
    if planned > SWEEP_RUNS_MAX {
        return Err(SweepError::Invalid {
            reason: format!("{planned} runs, over the limit of {SWEEP_RUNS_MAX}"),
        });
    }
    Ok(())
}

/// Records the runs in flight past the seed timeout as hangs and replaces their workers.
fn retire_hung(
    shared: &Arc<Shared>,
    collector: &mut Collector,
    selected: &[Arc<dyn Scenario>],
    options: &SweepOptions,
    sender: &mpsc::SyncSender<super::worker::Outcome>,
) {
    for hung in watchdog(shared, &collector.hung, options.seed_timeout) {
        collector.hung.insert(hung.index);
        collector.record(hung, shared, selected, options);
        if options.isolation != Isolation::Threads {
            continue; // the hung worker process was killed; its driver starts another
        }
        let slot = {
            let mut slots = shared.slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.push(None);
            slots.len() - 1
        };
        spawn_worker(shared, slot, sender.clone());
    }
}

/// Why the sweep should stop now, if it should.
fn stop_reason(options: &SweepOptions, started: Instant) -> Option<StopReason> {
    if let Some(signal) = &options.interrupt {
        let number = signal.load(Ordering::Relaxed);
        if number != 0 {
            return Some(StopReason::Signal(number));
        }
    }
    options
        .time_budget
        .is_some_and(|budget| started.elapsed() >= budget)
        .then_some(StopReason::TimeBudget)
}

#[allow(
    clippy::print_stderr,
    reason = "a failed write is said where progress goes"
)]
fn report_write_failed(path: &std::path::Path, error: &std::io::Error, style: ProgressStyle) {
    if style != ProgressStyle::Quiet {
        eprintln!(
            "dst: cannot write the report to {}: {error}",
            path.display()
        );
    }
}

/// The report before any run: the sweep's identity and an empty entry per scenario.
fn empty_report(
    options: &SweepOptions,
    selected: &[Arc<dyn Scenario>],
    total: usize,
) -> SweepReport {
    SweepReport {
        commit: current_commit(),
        seed_start: options.seed_start,
        seeds: options.seeds,
        shards: options
            .shard
            .map(|s| format!("{}/{}", s.index + 1, s.count))
            .into_iter()
            .collect(),
        swarm: options.swarm,
        check_determinism: options.check_determinism,
        jobs: options.jobs,
        runs_planned: total as u64,
        runs_done: 0,
        completed: false,
        wall_ms: 0,
        seeds_dir: options.seeds_dir.as_ref().map(|d| d.display().to_string()),
        seeds_recorded: 0,
        stopped: None,
        resume: None,
        scenarios: selected
            .iter()
            .map(|s| ScenarioReport {
                name: s.name().to_owned(),
                goal: s.goal().to_owned(),
                canary: s.is_canary(),
                marks_required: s.marks().iter().map(|m| (*m).to_owned()).collect(),
                rules: s.faults().iter().map(ToString::to_string).collect(),
                rule_reach: vec![0; s.faults().len()],
                trace_digest: "0".repeat(64),
                ..ScenarioReport::default()
            })
            .collect(),
    }
}
