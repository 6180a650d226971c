//! Running scenarios over many seeds, in parallel.
//!
//! Work is numbered (scenario, seed) runs, seed-major so that a sweep cut short by its
//! time budget has still covered every scenario (`plan.rs`). Worker threads take run
//! numbers from a shared counter (`worker.rs`); each run is one seed on its own
//! single-threaded simulated runtime, so the number of workers never changes a seed's
//! result (a test checks `--jobs 1` and `--jobs 2` give identical trace hashes).
//!
//! The main thread collects results, records failing seeds in the corpus (atomically),
//! prints progress, rewrites the JSON report every few seconds (so a sweep killed
//! midway leaves a report saying how far it got), and watches the workers: a run that
//! produces no result within `seed_timeout` of wall time (a loop that never yields,
//! blocking I/O) is recorded as a liveness failure and its worker replaced, so a hang
//! never stops the sweep.
//!
//! This is harness code outside any simulation: it may read the wall clock and spawn
//! threads, which `clippy.toml` otherwise forbids.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine measures wall time and runs worker threads, outside every simulation"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::plan::Plan;
pub use super::plan::Shard;
use super::progress::Progress;
pub use super::progress::ProgressStyle;
use super::report::{
    FailureEntry, REPORT_FAILURES_KEPT_MAX, ScenarioReport, SweepReport, digest_hex, fold_digest,
};
use super::scenario::Scenario;
use super::worker::{Outcome, QuietWorkers, Shared, spawn_worker, watchdog};
use crate::corpus::{AppendOutcome, SeedCorpus, SeedMeaning, corpus_path};
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
        return Ok(scenarios.to_vec());
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

fn write_atomically(path: &Path, text: &str) {
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    if std::fs::write(&temp, text).is_ok() {
        let _ = std::fs::rename(&temp, path);
    }
}

/// Runs the sweep.
pub fn run(
    scenarios: &[Arc<dyn Scenario>],
    options: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let selected = select(scenarios, &options.scenarios)?;
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
    let planned = options.seeds.saturating_mul(selected.len() as u64);
    if planned > SWEEP_RUNS_MAX {
        return Err(SweepError::Invalid {
            reason: format!("{planned} runs, over the limit of {SWEEP_RUNS_MAX}"),
        });
    }
    let plan = Plan::new(options, selected.len());
    let total = plan.total();
    let shared = Arc::new(Shared {
        plan,
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        slots: Mutex::new(vec![None; options.jobs]),
        retired: Mutex::new(BTreeSet::new()),
        scenarios: selected.clone(),
        swarm: options.swarm,
        check_determinism: options.check_determinism,
    });
    let report = SweepReport {
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
    };
    let _quiet = QuietWorkers::install();
    let (sender, results) = mpsc::channel();
    for slot in 0..options.jobs {
        spawn_worker(&shared, slot, sender.clone());
    }
    let started = Instant::now();
    let mut collector = Collector {
        digests: vec![[0u8; 32]; selected.len()],
        hung: BTreeSet::new(),
        failures: 0,
        progress: Progress::new(options.progress, total as u64),
        report,
    };
    if let Some(path) = &options.report_path {
        collector.write(path, started, false); // a report exists from the start
    }
    let mut last_report = Instant::now();
    while (collector.report.runs_done as usize) < total {
        if options
            .time_budget
            .is_some_and(|budget| started.elapsed() >= budget)
        {
            shared.stop.store(true, Ordering::Relaxed);
        }
        match results.recv_timeout(TICK) {
            Ok(outcome) if collector.hung.contains(&outcome.index) => {} // recorded as a hang already
            Ok(outcome) => collector.record(outcome, &shared, &selected, options),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for hung in watchdog(&shared, &collector.hung, options.seed_timeout) {
            collector.hung.insert(hung.index);
            collector.record(hung, &shared, &selected, options);
            let slot = {
                let mut slots = shared.slots.lock().unwrap_or_else(PoisonError::into_inner);
                slots.push(None);
                slots.len() - 1
            };
            spawn_worker(&shared, slot, sender.clone());
        }
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
            collector.write(path, started, false);
        }
        let idle = shared
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .all(Option::is_none);
        if shared.stop.load(Ordering::Relaxed) && idle {
            // The budget ran out and no run is in flight: record what already finished.
            while let Ok(outcome) = results.try_recv() {
                if !collector.hung.contains(&outcome.index) {
                    collector.record(outcome, &shared, &selected, options);
                }
            }
            break;
        }
    }
    let mut report = collector.finish(started);
    report.completed = report.runs_done == total as u64;
    if let Some(path) = &options.report_path
        && let Ok(json) = serde_json::to_string_pretty(&report)
    {
        write_atomically(path, &json);
    }
    Ok(report)
}

/// Folds outcomes into the report.
struct Collector {
    digests: Vec<[u8; 32]>,
    /// Runs recorded as hangs (their late results, if any, are dropped).
    hung: BTreeSet<usize>,
    failures: u64,
    progress: Progress,
    report: SweepReport,
}

impl Collector {
    fn record(
        &mut self,
        Outcome { index, run, wall }: Outcome,
        shared: &Shared,
        selected: &[Arc<dyn Scenario>],
        options: &SweepOptions,
    ) {
        let Some((scenario_index, seed)) = shared.plan.item(index) else {
            return;
        };
        let scenario = &selected[scenario_index];
        let entry = &mut self.report.scenarios[scenario_index];
        entry.seeds_run += 1;
        entry.wall_us += u64::try_from(wall.as_micros()).unwrap_or(u64::MAX);
        let mut injected = None;
        let failure = match run {
            Ok(run) => {
                injected = Some(run.fault_stats.clone());
                for (kind, count) in &run.fault_stats.injected_by_kind {
                    *entry
                        .faults_injected
                        .entry(kind.name().to_owned())
                        .or_insert(0) += count;
                }
                for (mark, count) in &run.marks {
                    *entry.marks_hit.entry(mark.clone()).or_insert(0) += count;
                }
                // A scenario's `config` may add rules to its profile: count what it ran.
                if entry.rule_reach.len() < run.rule_reach.len() {
                    entry.rule_reach.resize(run.rule_reach.len(), 0);
                    entry.rules.clone_from(&run.faults);
                }
                for (total, reached) in entry.rule_reach.iter_mut().zip(&run.rule_reach) {
                    *total += reached;
                }
                entry.sim_time_ms += u64::try_from(run.sim_elapsed.as_millis()).unwrap_or(u64::MAX);
                let hash = run.trace_hash.to_string();
                fold_digest(&mut self.digests[scenario_index], seed, &hash);
                if options.keep_hashes {
                    entry.trace_hashes.insert(seed, hash);
                }
                run.failure
                    .map(|(class, message)| (class.name().to_owned(), message))
            }
            Err(message) if message.starts_with("HANG ") => Some((
                FailureClass::Liveness.name().to_owned(),
                message.trim_start_matches("HANG ").to_owned(),
            )),
            Err(message) => Some((
                FailureClass::Crash.name().to_owned(),
                format!("harness panicked: {message}"),
            )),
        };
        if let Some((class, message)) = failure {
            // Defense in depth: clients redact their own secrets from their errors; what
            // still looks like a credential stays out of the table, report and seeds.
            let message = umi_core::llm::secrets::redact_patterns(&message);
            entry.seeds_failed += 1;
            *entry.failures_by_class.entry(class.clone()).or_insert(0) += 1;
            let replay = replay_command(
                &options.program,
                scenario.name(),
                seed,
                options.swarm,
                FailureClass::from_name(&class),
            );
            if !scenario.is_canary() {
                self.failures += 1;
                self.progress.say(&format!(
                    "FAIL {} seed {seed} ({class}): {}\n     replay: {replay}",
                    scenario.name(),
                    message.lines().next().unwrap_or("")
                ));
            }
            if entry.failures.len() < REPORT_FAILURES_KEPT_MAX {
                entry.failures.push(FailureEntry {
                    seed,
                    class: class.clone(),
                    message: message.clone(),
                    replay,
                });
            }
            if let Some(dir) = &options.seeds_dir
                && (!scenario.is_canary() || options.record_canary)
                && let Ok(path) = corpus_path(dir, scenario.name())
            {
                let comment = format!("{class}: {}", message.lines().next().unwrap_or(""));
                let meaning = FailureClass::from_name(&class)
                    .map_or_else(SeedMeaning::default, |c| {
                        SeedMeaning::found(options.swarm, c, injected.as_ref())
                    });
                match SeedCorpus::append_with(&path, seed, &meaning, &comment) {
                    Ok(AppendOutcome::Added) => self.report.seeds_recorded += 1,
                    Ok(AppendOutcome::AlreadyPresent) => {}
                    Err(error) => self
                        .progress
                        .say(&format!("dst: cannot record seed {seed}: {error}")),
                }
            }
        }
        self.report.runs_done += 1;
    }

    fn stamp(&mut self, started: Instant) {
        self.report.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        for (entry, digest) in self.report.scenarios.iter_mut().zip(&self.digests) {
            entry.trace_digest = digest_hex(digest);
        }
    }

    fn write(&mut self, path: &Path, started: Instant, completed: bool) {
        self.stamp(started);
        self.report.completed = completed;
        if let Ok(json) = serde_json::to_string_pretty(&self.report) {
            write_atomically(path, &json);
        }
    }

    fn finish(mut self, started: Instant) -> SweepReport {
        self.progress.finish();
        self.stamp(started);
        for entry in &mut self.report.scenarios {
            entry.failures.sort_by_key(|f| f.seed);
        }
        self.report
    }
}
