//! The collector: the main thread's side of a sweep. It folds each run's outcome into its
//! scenario's report, records failing seeds in the corpus, and writes the report while
//! the sweep runs.
//!
//! Nothing it keeps grows with the number of seeds: counts and digests are fixed-size,
//! the failures listed are the `REPORT_FAILURES_KEPT_MAX` smallest seeds per scenario
//! (the rest counted as truncated), groups are bounded (`groups.rs`), and each scenario's
//! seed file is appended through one `CorpusRecorder` (its index is bounded by the
//! corpus line limit). Only `--hashes` keeps a value per seed, as asked.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine measures wall time and runs worker threads, outside every simulation"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::groups::{add_group, single};
use crate::options::SweepOptions;
use crate::progress::Progress;
use crate::replay_command::ReplayCommand;
use crate::report::{
    FailureEntry, REPORT_FAILURES_KEPT_MAX, ScenarioReport, SweepReport, digest_hex, fold_digest,
};
use crate::worker::{Outcome, RunEnd, Shared};
use umi_dst::corpus::{AppendOutcome, CorpusRecorder, SeedMeaning, corpus_path};
use umi_dst::failure_class::FailureClass;
use umi_dst::fault::FaultStats;
use umi_dst::micros_saturating;
use umi_dst::scenario::Scenario;

/// Failures printed one by one as they happen; after these, the table's groups say the
/// rest.
const FAIL_LINES_PRINTED_MAX: u64 = 20;

/// A scenario's seed file, opened when its first failing seed is recorded.
enum Recording {
    /// Not recorded (recording off, or the canary's seeds).
    Off,
    /// No failing seed yet.
    Unopened(std::path::PathBuf),
    /// Appending.
    Open(Box<CorpusRecorder>),
    /// The file could not be opened or written (said once); no more attempts.
    Failed,
}

/// Folds outcomes into the report.
pub(crate) struct Collector {
    digests: Vec<[u8; 32]>,
    /// Runs recorded as hangs (their late results, if any, are dropped).
    pub(crate) hung: BTreeSet<usize>,
    /// Regressions (non-canary failures) so far.
    pub(crate) failures: u64,
    pub(crate) progress: Progress,
    pub(crate) report: SweepReport,
    recordings: Vec<Recording>,
    /// Whether a failed periodic report write was reported (it is, once).
    write_failure_said: bool,
    /// Tasks of a `--trials` sweep with trials still running, by (scenario, task);
    /// bounded by the runs in flight (a task's trials are numbered together).
    trials_pending: BTreeMap<(usize, u64), PendingTask>,
}

/// A task whose trials have not all reported.
#[derive(Default)]
struct PendingTask {
    done: u64,
    passed: u64,
    failed_seeds: Vec<u64>,
    class: Option<String>,
}

impl Collector {
    pub(crate) fn new(
        report: SweepReport,
        selected: &[Arc<dyn Scenario>],
        options: &SweepOptions,
        progress: Progress,
    ) -> Self {
        let mut report = report;
        let recordings = selected
            .iter()
            .zip(&mut report.scenarios)
            .map(|(scenario, entry)| {
                let recorded = !scenario.is_canary() || options.record_canary;
                match options.seeds_dir.as_deref().filter(|_| recorded) {
                    Some(dir) => match corpus_path(dir, scenario.name()) {
                        Ok(path) => {
                            entry.seeds_file = Some(path.display().to_string());
                            Recording::Unopened(path)
                        }
                        Err(_) => Recording::Off,
                    },
                    None => Recording::Off,
                }
            })
            .collect();
        Self {
            digests: vec![[0u8; 32]; selected.len()],
            hung: BTreeSet::new(),
            failures: 0,
            progress,
            report,
            recordings,
            write_failure_said: false,
            trials_pending: BTreeMap::new(),
        }
    }

    pub(crate) fn record(
        &mut self,
        Outcome { index, run, wall }: Outcome,
        shared: &Shared,
        selected: &[Arc<dyn Scenario>],
        options: &SweepOptions,
    ) {
        let Some((scenario_index, seed)) = shared.plan.item(index) else {
            return;
        };
        let entry = &mut self.report.scenarios[scenario_index];
        entry.seeds_run += 1;
        entry.wall_us += micros_saturating(wall);
        let mut injected = None;
        let mut task_class = None;
        let failure = match run {
            RunEnd::Finished(run) => {
                let scenario = selected[scenario_index].as_ref();
                let prices = options.prices.clone().or_else(|| scenario.prices());
                fold_run(entry, &run, prices.as_deref());
                task_class.clone_from(&run.usage.task_class);
                let hash = run.trace_hash.to_string();
                fold_digest(&mut self.digests[scenario_index], seed, &hash);
                if options.keep_hashes {
                    entry.trace_hashes.insert(seed, hash);
                }
                injected = Some(run.fault_stats);
                run.failure
                    .map(|(class, message)| (class.name().to_owned(), message))
            }
            unfinished @ RunEnd::Panicked(_)
            | unfinished @ RunEnd::Hung(_)
            | unfinished @ RunEnd::Died(_) => unfinished
                .unfinished_failure()
                .map(|(class, message)| (class.name().to_owned(), message)),
        };
        if options.trials.is_some() {
            self.count_trial(scenario_index, seed, failure.is_none(), task_class);
        }
        if let Some((class, message)) = failure {
            let scenario = selected[scenario_index].as_ref();
            self.fail(scenario_index, scenario, seed, &class, &message, options);
            self.record_seed(
                scenario_index,
                seed,
                &class,
                &message,
                injected.as_ref(),
                options,
            );
        }
        self.report.runs_done += 1;
    }

    /// Counts one trial of a `--trials` sweep; when its task's last trial is in, adds the
    /// task to the scenario's pass^k.
    fn count_trial(
        &mut self,
        scenario_index: usize,
        seed: u64,
        passed: bool,
        class: Option<String>,
    ) {
        let entry = &mut self.report.scenarios[scenario_index];
        let Some(trials) = entry.trials.as_mut() else {
            return;
        };
        let task = umi_dst::usage::split_seed(seed).task;
        let pending = self
            .trials_pending
            .entry((scenario_index, task))
            .or_default();
        pending.done += 1;
        if passed {
            pending.passed += 1;
        } else {
            pending.failed_seeds.push(seed);
        }
        if pending.class.is_none() {
            pending.class = class;
        }
        if pending.done < trials.k {
            return;
        }
        if let Some(mut done) = self.trials_pending.remove(&(scenario_index, task)) {
            done.failed_seeds.sort_unstable();
            trials.add_task(task, done.passed, done.failed_seeds, done.class);
        }
    }

    /// Counts a failure: its class, its group, the list (if among the smallest seeds),
    /// and a line on the terminal for the first few.
    fn fail(
        &mut self,
        scenario_index: usize,
        scenario: &dyn Scenario,
        seed: u64,
        class: &str,
        message: &str,
        options: &SweepOptions,
    ) {
        // Defense in depth: clients redact their own secrets from their errors; what
        // still looks like a credential stays out of the table, report and seeds.
        let message = umi_core::llm::secrets::redact_patterns(message);
        let replay = ReplayCommand::new(&options.program, scenario.name(), seed)
            .swarm(options.swarm)
            .check_determinism(FailureClass::from_name(class) == Some(FailureClass::Nondeterminism))
            .to_string();
        let entry = &mut self.report.scenarios[scenario_index];
        entry.seeds_failed += 1;
        *entry.failures_by_class.entry(class.to_owned()).or_insert(0) += 1;
        if !add_group(
            &mut entry.failure_groups,
            &single(class, &message, seed, &replay),
        ) {
            entry.failures_ungrouped += 1;
        }
        if !scenario.is_canary() {
            self.failures += 1;
            if self.failures <= FAIL_LINES_PRINTED_MAX {
                self.progress.say(&format!(
                    "FAIL {} seed {seed} ({class}): {}\n     replay: {replay}",
                    scenario.name(),
                    message.lines().next().unwrap_or("")
                ));
            }
            if self.failures == FAIL_LINES_PRINTED_MAX {
                self.progress
                    .say("dst: further failures are not printed one by one; the table groups them");
            }
        }
        keep_smallest(
            &mut entry.failures,
            FailureEntry {
                seed,
                class: class.to_owned(),
                message,
                replay,
            },
            REPORT_FAILURES_KEPT_MAX,
        );
    }

    /// Appends a failing seed to its scenario's seed file (opened on first use; a file
    /// that cannot be opened or written is said once and recording for it stops).
    fn record_seed(
        &mut self,
        scenario_index: usize,
        seed: u64,
        class: &str,
        message: &str,
        injected: Option<&FaultStats>,
        options: &SweepOptions,
    ) {
        let slot = &mut self.recordings[scenario_index];
        if let Recording::Unopened(path) = slot {
            *slot = match CorpusRecorder::open(path) {
                Ok(recorder) => Recording::Open(Box::new(recorder)),
                Err(error) => {
                    self.progress.say(&format!(
                        "dst: cannot record failing seeds: {error}; no more seeds of this scenario will be recorded"
                    ));
                    Recording::Failed
                }
            };
        }
        let Recording::Open(recorder) = slot else {
            return;
        };
        let message = umi_core::llm::secrets::redact_patterns(message);
        let comment = format!("{class}: {}", message.lines().next().unwrap_or(""));
        let meaning = FailureClass::from_name(class).map_or_else(SeedMeaning::default, |c| {
            SeedMeaning::found(options.swarm, c, injected)
        });
        match recorder.record(seed, &meaning, &comment) {
            Ok(AppendOutcome::Added) => self.report.seeds_recorded += 1,
            Ok(AppendOutcome::AlreadyPresent) => {}
            Err(error) => {
                self.progress.say(&format!(
                    "dst: cannot record seed {seed}: {error}; no more seeds of this scenario will be recorded"
                ));
                *slot = Recording::Failed;
            }
        }
    }

    fn stamp(&mut self, started: Instant) {
        self.report.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        for (entry, digest) in self.report.scenarios.iter_mut().zip(&self.digests) {
            entry.trace_digest = digest_hex(digest);
            entry.failures_truncated = entry
                .seeds_failed
                .saturating_sub(entry.failures.len() as u64);
        }
    }

    /// Rewrites the report during the sweep; a failure is said once (the sweep goes on,
    /// and the final write is the caller's to check).
    pub(crate) fn write(&mut self, path: &Path, started: Instant) {
        self.stamp(started);
        self.report.completed = false;
        if let Err(error) = write_report(path, &self.report)
            && !self.write_failure_said
        {
            self.write_failure_said = true;
            self.progress.say(&format!(
                "dst: cannot write the report to {}: {error} (the sweep goes on; said once)",
                path.display()
            ));
        }
    }

    /// The report, with every seed file synced.
    pub(crate) fn finish(mut self, started: Instant) -> SweepReport {
        for recording in &mut self.recordings {
            if let Recording::Open(recorder) = recording
                && let Err(error) = recorder.sync()
            {
                self.progress
                    .say(&format!("dst: cannot sync recorded seeds: {error}"));
            }
        }
        self.progress.finish();
        self.stamp(started);
        self.report
    }
}

/// Adds a run's faults, marks, rule reach and simulated time to its scenario.
fn fold_run(
    entry: &mut ScenarioReport,
    run: &umi_dst::simulation::SeedRun,
    prices: Option<&umi_dst::usage::PriceTable>,
) {
    entry.usage.fold(&run.usage, prices);
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
}

/// Inserts `entry` into `kept` (sorted by seed) if it is among the `max` smallest seeds,
/// so the list is the same whatever order the workers finished in.
pub(crate) fn keep_smallest(kept: &mut Vec<FailureEntry>, entry: FailureEntry, max: usize) {
    let at = kept.partition_point(|f| f.seed < entry.seed);
    if at >= max {
        return;
    }
    kept.insert(at, entry);
    kept.truncate(max);
}

/// Writes the JSON report atomically (a temporary file renamed over it).
pub(crate) fn write_report(path: &Path, report: &SweepReport) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temp, json)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_seeds_are_kept_in_any_order() {
        let entry = |seed| FailureEntry {
            seed,
            class: "crash".into(),
            message: String::new(),
            replay: String::new(),
        };
        for order in [[5u64, 1, 9, 3, 7], [9, 7, 5, 3, 1], [1, 3, 5, 7, 9]] {
            let mut kept = Vec::new();
            for seed in order {
                keep_smallest(&mut kept, entry(seed), 3);
            }
            let seeds: Vec<u64> = kept.iter().map(|f| f.seed).collect();
            assert_eq!(seeds, [1, 3, 5], "{order:?}");
        }
    }
}
