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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::collect::{Collector, write_report};
use crate::options::{
    Isolation, SWEEP_JOBS_MAX, SWEEP_RESULTS_QUEUED_MAX, SWEEP_RUNS_MAX, SweepError, SweepOptions,
    current_commit, select,
};
use crate::plan::Plan;
use crate::process_pool::spawn_driver;
use crate::progress::{Progress, ProgressStyle};
use crate::report::{ScenarioReport, SweepReport};
use crate::resume::{StopReason, resume_command};
use crate::worker::{Shared, silence_worker_panics, spawn_worker, watchdog};
use umi_dst::scenario::Scenario;

/// How often the main thread wakes to watch workers and report progress.
const SWEEP_WAKE_INTERVAL_MS: u64 = 200;

/// How long the main thread lets results gather after taking a small batch (fewer than
/// [`COLLECT_PAUSE_BATCH_MAX`]): the progress line is at most this much later, and the
/// queue (`SWEEP_RESULTS_QUEUED_MAX`) holds far more than a pause's worth of results
/// unless results come faster than that batch per pause, when there is no pause.
const COLLECT_PAUSE_US: u64 = 1_000;

/// A batch this large or larger means the main thread is behind: no pause after it.
const COLLECT_PAUSE_BATCH_MAX: usize = SWEEP_RESULTS_QUEUED_MAX / 4;

/// How often the JSON report is rewritten during a sweep.
const REPORT_WRITE_INTERVAL_MS: u64 = 5_000;

/// Runs the sweep.
pub fn run(
    scenarios: &[Arc<dyn Scenario>],
    options: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let selected = select(scenarios, &options.scenarios)?;
    validate(options, selected.len())?;
    let plan = Plan::new(
        options.seed_start,
        options.seeds,
        options.shard,
        selected.len(),
    )
    .with_trials(options.trials)
    .with_skip(options.skip_runs);
    if options.skip_runs > 0 && plan.total() == 0 {
        return Err(SweepError::Invalid {
            reason: format!(
                "--skip-runs {} skips every one of the {} runs",
                options.skip_runs,
                plan.total_unskipped()
            ),
        });
    }
    let total = plan.total();
    let shared = Arc::new(Shared {
        plan,
        next: AtomicUsize::new(0),
        slots: Mutex::new(vec![None; options.jobs]),
        retired: Mutex::new(BTreeSet::new()),
        killers: Mutex::new(Vec::new()),
        round_trips: AtomicU64::new(0),
        deaths_unexplained: Mutex::new(Vec::new()),
        scenarios: selected.clone(),
        swarm: options.swarm,
        check_determinism: options.check_determinism,
    });
    silence_worker_panics();
    let (sender, results) = mpsc::sync_channel(SWEEP_RESULTS_QUEUED_MAX);
    start_workers(&shared, options, &sender);
    let sweep = Running {
        shared: &shared,
        selected: &selected,
        options,
        sender: &sender,
        started: Instant::now(),
        total,
    };
    let progress = Progress::new(options.progress, total as u64);
    let mut collector = Collector::new(
        empty_report(options, &selected, total),
        &selected,
        options,
        progress,
    );
    let stopped = sweep.collect(&mut collector, &results);
    Ok(sweep.finish(collector, stopped))
}

/// One worker per job slot: a thread, or a thread driving a worker process.
fn start_workers(
    shared: &Arc<Shared>,
    options: &SweepOptions,
    sender: &mpsc::SyncSender<crate::worker::Outcome>,
) {
    for slot in 0..options.jobs {
        match &options.isolation {
            Isolation::Threads => spawn_worker(shared, slot, sender.clone()),
            Isolation::Processes(processes) => spawn_driver(
                shared,
                slot,
                sender.clone(),
                Arc::clone(processes),
                options.seed_timeout,
            ),
        }
    }
}

/// A sweep under way: what its main thread collects from, and for.
struct Running<'a> {
    shared: &'a Arc<Shared>,
    selected: &'a [Arc<dyn Scenario>],
    options: &'a SweepOptions,
    /// The workers' queue (the watchdog hands it to replacement workers).
    sender: &'a mpsc::SyncSender<crate::worker::Outcome>,
    started: Instant,
    /// Runs planned.
    total: usize,
}

impl Running<'_> {
    /// Takes outcomes until every run that will produce one has (all of them, until a
    /// budget or a signal stops the sweep and fixes the number), watching for hangs and
    /// rewriting the report every [`REPORT_WRITE_INTERVAL_MS`]. Returns why it stopped early, if it did.
    fn collect(
        &self,
        collector: &mut Collector,
        results: &mpsc::Receiver<crate::worker::Outcome>,
    ) -> Option<StopReason> {
        let (options, selected) = (self.options, self.selected);
        if let Some(path) = &options.report_path {
            collector.write(path, self.started); // a report exists from the start
        }
        let mut last_report = Instant::now();
        let mut target = self.total;
        let mut stopped = None;
        while (collector.report.runs_done as usize) < target {
            if stopped.is_none()
                && let Some(reason) = stop_reason(options, self.started)
            {
                stopped = Some(reason);
                target = self.shared.stop();
            }
            match results.recv_timeout(Duration::from_millis(SWEEP_WAKE_INTERVAL_MS)) {
                Ok(first) => {
                    // Everything already waiting, then the watchdog.
                    let waiting = results.try_iter().take(SWEEP_RESULTS_QUEUED_MAX);
                    let mut batch = 0;
                    for outcome in std::iter::once(first).chain(waiting) {
                        batch += 1;
                        if !collector.hung.contains(&outcome.index) {
                            collector.record(outcome, self.shared, selected, options);
                        }
                    }
                    if batch < COLLECT_PAUSE_BATCH_MAX
                        && (collector.report.runs_done as usize) < target
                    {
                        // Let the next results gather: a worker whose result finds this
                        // thread asleep (not waiting on the queue) wakes nobody, so cheap
                        // seeds cost no wake-up of this thread each (issue 41). A larger
                        // batch means this thread is behind: it goes straight on.
                        std::thread::sleep(Duration::from_micros(COLLECT_PAUSE_US));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            retire_hung(self.shared, collector, selected, options, self.sender);
            let done = collector.report.runs_done;
            let failures = collector.failures;
            collector
                .progress
                .update(done, self.total as u64, failures, self.started);
            if let Some(path) = &options.report_path
                && last_report.elapsed() >= Duration::from_millis(REPORT_WRITE_INTERVAL_MS)
            {
                last_report = Instant::now();
                stamp_workers(self.shared, &mut collector.report);
                collector.write(path, self.started);
            }
        }
        stopped
    }

    /// The final report: complete or not, why it stopped, how to resume; written to
    /// `--report`.
    fn finish(&self, collector: Collector, stopped: Option<StopReason>) -> SweepReport {
        let mut report = collector.finish(self.started);
        stamp_workers(self.shared, &mut report);
        report.completed = report.runs_done == self.total as u64;
        if !report.completed {
            report.stopped = stopped.map(StopReason::describe);
            // A trials sweep resumes task by task, which the command does not yet say.
            if self.options.trials.is_none() {
                report.resume = resume_command(self.options, self.selected.len(), report.runs_done);
            }
        }
        if let Some(path) = &self.options.report_path
            && let Err(error) = write_report(path, &report)
        {
            report_write_failed(path, &error, self.options.progress);
        }
        report
    }
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
    if let Some(k) = options.trials {
        if options.skip_runs > 0 {
            // pass^k counts a task only when all its k trials are in one report, and a
            // skip can fall inside a task: the stopped report and the resume would each
            // drop that task and still merge as complete.
            return Err(SweepError::Invalid {
                reason: "--skip-runs cannot resume a --trials sweep (a task's trials must stay in one report); run the rest of the tasks as a sweep of their own".into(),
            });
        }
        let last_task = options.seed_start + (options.seeds - 1);
        if k == 0 || k > umi_dst::usage::TRIALS_MAX {
            return Err(SweepError::Invalid {
                reason: format!("--trials {k} is outside 1..={}", umi_dst::usage::TRIALS_MAX),
            });
        }
        if last_task >= umi_dst::usage::TASKS_MAX {
            return Err(SweepError::Invalid {
                reason: format!(
                    "with --trials the seed range names tasks, and task {last_task} is past the last task a trial seed can hold ({})",
                    umi_dst::usage::TASKS_MAX - 1
                ),
            });
        }
    }
    let planned = options
        .seeds
        .saturating_mul(scenarios as u64)
        .saturating_mul(options.trials.unwrap_or(1));
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
    sender: &mpsc::SyncSender<crate::worker::Outcome>,
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

/// Copies the worker processes' figures into `report`: round trips, and the deaths no
/// run explained.
fn stamp_workers(shared: &Shared, report: &mut SweepReport) {
    report.worker_round_trips = shared.round_trips.load(Ordering::Relaxed);
    report.worker_deaths_unexplained.clone_from(
        &shared
            .deaths_unexplained
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
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
        schema: crate::report::REPORT_SCHEMA,
        umi_version: env!("CARGO_PKG_VERSION").to_owned(),
        prices: options.prices.as_ref().map(|p| {
            p.source
                .as_ref()
                .map_or_else(|| "(given)".to_owned(), |s| s.display().to_string())
        }),
        trials: options.trials,
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
        runs_skipped: options.skip_runs,
        runs_done: 0,
        worker_round_trips: 0,
        worker_deaths_unexplained: Vec::new(),
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
                trials: options.trials.map(crate::pass_k::TrialsReport::new),
                ..ScenarioReport::default()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the review's finding: a skip inside a trials sweep can split a task's trials
    /// between two reports, and pass^k would drop that task from both while the merge
    /// reads complete. The combination is refused before a run starts.
    #[test]
    fn a_trials_sweep_cannot_skip_runs() {
        let trials = SweepOptions::default().with_seeds(10).with_trials(3);
        assert!(validate(&trials, 2).is_ok());
        let error = validate(&trials.with_skip_runs(5), 2)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--skip-runs cannot resume a --trials sweep"),
            "{error}"
        );
        let plain = SweepOptions::default().with_seeds(10).with_skip_runs(5);
        assert!(validate(&plain, 2).is_ok());
    }
}
