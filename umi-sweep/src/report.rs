//! The sweep report: per scenario, what ran, what failed and why, which faults and
//! marks were hit, and how fast; as a table, as JSON, and as JUnit XML (`junit.rs`).
//! Shard reports merge into one.
//!
//! A report's size does not grow with the sweep: it lists the failures of the smallest
//! `REPORT_FAILURES_KEPT_MAX` failing seeds per scenario and counts the rest in
//! `failures_truncated`, naming the seed file that holds every one (`seeds_file`); the
//! table groups failures by message (`groups.rs`) with counts over all of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::groups::{FailureGroup, add_group};
pub use crate::human::{human_ms, human_us};
use crate::pass_k::TrialsReport;
use crate::usage_report::UsageReport;
use umi_dst::failure_class::{EXIT_CODE_CANARY_NOT_FOUND, FailureClass};

/// Failures listed per scenario in a report (the counts and groups cover all of them).
pub const REPORT_FAILURES_KEPT_MAX: usize = 200;

/// Unexplained worker deaths listed in a report ([`SweepReport::worker_deaths_unexplained`]).
pub const REPORT_DEATHS_KEPT_MAX: usize = crate::worker::WORKER_DEATHS_KEPT_MAX;

/// One failing seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureEntry {
    /// The seed.
    pub seed: u64,
    /// `correctness`, `crash`, `liveness` or `nondeterminism`.
    pub class: String,
    /// What broke.
    pub message: String,
    /// The command that replays it.
    pub replay: String,
}

/// What one scenario did in a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ScenarioReport {
    /// The scenario.
    pub name: String,
    /// Its goal.
    pub goal: String,
    /// Whether it is the canary.
    pub canary: bool,
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds that failed (for the canary: that found the bug).
    pub seeds_failed: u64,
    /// Failures by class.
    pub failures_by_class: BTreeMap<String, u64>,
    /// The failures of the smallest failing seeds (at most `REPORT_FAILURES_KEPT_MAX`),
    /// by seed.
    pub failures: Vec<FailureEntry>,
    /// Failing seeds not in `failures` (the list is capped; `seeds_file` has them all
    /// when recording was on).
    #[serde(default)]
    pub failures_truncated: u64,
    /// Where every failing seed was recorded, if it was (`None`: recording off, or the
    /// canary's seeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds_file: Option<String>,
    /// Failures grouped by class and message (digits normalised), with counts.
    #[serde(default)]
    pub failure_groups: Vec<FailureGroup>,
    /// Failures past the group limit.
    #[serde(default)]
    pub failures_ungrouped: u64,
    /// Faults injected, by kind.
    pub faults_injected: BTreeMap<String, u64>,
    /// The marks the scenario must hit.
    pub marks_required: Vec<String>,
    /// Marks hit, with counts.
    pub marks_hit: BTreeMap<String, u64>,
    /// Simulated time covered, in ms.
    pub sim_time_ms: u64,
    /// Wall time spent in its seeds (summed over workers), in microseconds.
    pub wall_us: u64,
    /// XOR of SHA-256(seed, trace hash) over its seeds: equal digests, equal runs, in any
    /// order and across shards.
    pub trace_digest: String,
    /// The scenario's fault rules as they print, in config order.
    #[serde(default)]
    pub rules: Vec<String>,
    /// For each rule, the operations it reached over the seeds run (a rule at zero could
    /// not have fired: its filter names an operation the scenario never performs).
    #[serde(default)]
    pub rule_reach: Vec<u64>,
    /// Per-seed trace hashes, when asked for (`--hashes`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trace_hashes: BTreeMap<u64, String>,
    /// What its runs spent: a distribution per counted quantity.
    #[serde(default)]
    pub usage: UsageReport,
    /// pass@1, pass@k and pass^k, when the sweep ran `--trials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<TrialsReport>,
}

impl ScenarioReport {
    /// A report of the same scenario with nothing counted yet (what merging starts from).
    fn empty_like(&self) -> ScenarioReport {
        ScenarioReport {
            name: self.name.clone(),
            goal: self.goal.clone(),
            canary: self.canary,
            marks_required: self.marks_required.clone(),
            rules: self.rules.clone(),
            rule_reach: vec![0; self.rule_reach.len()],
            trials: self.trials.as_ref().map(|t| TrialsReport::new(t.k)),
            ..ScenarioReport::default()
        }
    }

    /// Adds another shard's report of this scenario: counts summed, failures and groups
    /// joined (a group past the limit counts as ungrouped). The digest is the caller's.
    fn absorb(&mut self, other: &ScenarioReport) {
        for (total, n) in self.rule_reach.iter_mut().zip(&other.rule_reach) {
            *total += n;
        }
        self.seeds_run += other.seeds_run;
        self.seeds_failed += other.seeds_failed;
        for (class, n) in &other.failures_by_class {
            *self.failures_by_class.entry(class.clone()).or_insert(0) += n;
        }
        self.failures.extend(other.failures.iter().cloned());
        self.failures_ungrouped += other.failures_ungrouped;
        for group in &other.failure_groups {
            if !add_group(&mut self.failure_groups, group) {
                self.failures_ungrouped += group.count;
            }
        }
        if self.seeds_file.is_none() {
            self.seeds_file.clone_from(&other.seeds_file);
        }
        for (kind, n) in &other.faults_injected {
            *self.faults_injected.entry(kind.clone()).or_insert(0) += n;
        }
        for (mark, n) in &other.marks_hit {
            *self.marks_hit.entry(mark.clone()).or_insert(0) += n;
        }
        self.sim_time_ms += other.sim_time_ms;
        self.wall_us += other.wall_us;
        self.trace_hashes
            .extend(other.trace_hashes.iter().map(|(k, v)| (*k, v.clone())));
        self.usage.merge(&other.usage);
        match (&mut self.trials, &other.trials) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.trials = Some(theirs.clone()),
            _ => {}
        }
    }

    /// Marks required but not hit.
    pub fn marks_missing(&self) -> Vec<String> {
        self.marks_required
            .iter()
            .filter(|m| !self.marks_hit.contains_key(*m))
            .cloned()
            .collect()
    }

    /// The rules that reached no operation in any seed run, as they print.
    pub fn rules_unreached(&self) -> Vec<String> {
        if self.seeds_run == 0 {
            return Vec::new();
        }
        umi_dst::simulation::unreached_rules_named(&self.rules, &self.rule_reach)
    }

    /// Failures that count as regressions (none for the canary).
    pub fn regressions(&self) -> u64 {
        if self.canary { 0 } else { self.seeds_failed }
    }

    /// Seeds per second of worker time.
    pub fn seeds_per_second(&self) -> f64 {
        self.seeds_run as f64 / (self.wall_us.max(1) as f64 / 1e6)
    }

    /// Simulated time per unit of wall time.
    pub fn sim_to_wall(&self) -> f64 {
        self.sim_time_ms as f64 * 1000.0 / self.wall_us.max(1) as f64
    }
}

/// Folds `(seed, trace hash)` into a digest (XOR of SHA-256s, so order does not matter).
pub fn fold_digest(digest: &mut [u8; 32], seed: u64, trace_hash: &str) {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(trace_hash.as_bytes());
    for (byte, mixed) in digest.iter_mut().zip(hasher.finalize()) {
        *byte ^= mixed;
    }
}

/// Hex of a digest.
pub fn digest_hex(digest: &[u8; 32]) -> String {
    umi_core::hex::lower(digest)
}

fn parse_digest(hex: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (index, slot) in out.iter_mut().enumerate() {
        *slot = hex
            .get(index * 2..index * 2 + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    out
}

/// The report format's version: 2 added `schema`, `umi_version`, usage distributions,
/// prices and trials. A report without the field is version 1.
pub const REPORT_SCHEMA: u32 = 2;

fn schema_v1() -> u32 {
    1
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SweepReport {
    /// The report format's version ([`REPORT_SCHEMA`] when written by this build).
    #[serde(default = "schema_v1")]
    pub schema: u32,
    /// The Umi version that wrote it.
    #[serde(default)]
    pub umi_version: String,
    /// The price table costs were computed with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<String>,
    /// Trials per task, when the sweep ran `--trials` (its seed range is then a range of
    /// tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u64>,
    /// The commit the sweep ran on, if known.
    pub commit: Option<String>,
    /// The first seed of the range.
    pub seed_start: u64,
    /// Seeds in the range (before sharding).
    pub seeds: u64,
    /// The shard, `i/n`, if sharded (several when merged).
    pub shards: Vec<String>,
    /// Whether swarm mode was on.
    pub swarm: bool,
    /// Whether each seed ran twice with its trace hashes compared.
    #[serde(default)]
    pub check_determinism: bool,
    /// Worker threads.
    pub jobs: usize,
    /// (scenario, seed) runs planned (after those skipped).
    pub runs_planned: u64,
    /// Runs at the start of the shard's plan this sweep skipped (`--skip-runs`: a resumed
    /// sweep's); its runs are those numbered from here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runs_skipped: u64,
    /// Runs done.
    pub runs_done: u64,
    /// Round trips to worker processes, each a batch of runs (0 when the runs were
    /// threads of the sweep's process): `runs_done` over this is the runs per batch.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub worker_round_trips: u64,
    /// Worker processes that died in a batch of runs none of which died when run again
    /// alone in a new worker (a kill from outside, the kernel's OOM killer, or state that
    /// earlier runs left in the worker): for each, what the death was and which runs the
    /// batch held, at most [`REPORT_DEATHS_KEPT_MAX`]. Every run of the batch has its
    /// result from the second worker; any such death makes the sweep exit as a crash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_deaths_unexplained: Vec<String>,
    /// Whether every planned run finished (false after a time budget or a kill).
    pub completed: bool,
    /// Wall time of the sweep, in ms.
    pub wall_ms: u64,
    /// Where failing seeds were recorded (`None`: recording was off, or no cargo project
    /// was found to hold a `seeds/`).
    #[serde(default)]
    pub seeds_dir: Option<String>,
    /// Seeds this sweep added to the corpus files there.
    #[serde(default)]
    pub seeds_recorded: u64,
    /// Why the sweep stopped before its last run (`time budget`, `interrupted
    /// (SIGINT)`, `terminated (SIGTERM)`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The command that runs the rest of the range, when the sweep stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// Per scenario.
    pub scenarios: Vec<ScenarioReport>,
}

impl SweepReport {
    /// Failures that count as regressions, over all scenarios.
    pub fn regressions(&self) -> u64 {
        self.scenarios.iter().map(ScenarioReport::regressions).sum()
    }

    /// Canaries that ran and found nothing.
    pub fn canaries_missed(&self) -> Vec<String> {
        self.scenarios
            .iter()
            .filter(|s| s.canary && s.seeds_run > 0 && s.seeds_failed == 0)
            .map(|s| s.name.clone())
            .collect()
    }

    /// The most severe class among the regressions (canaries' failures are expected and
    /// do not count), if any failed.
    pub fn most_severe_regression(&self) -> Option<FailureClass> {
        self.scenarios
            .iter()
            .filter(|s| !s.canary)
            .flat_map(|s| s.failures_by_class.iter())
            .filter(|(_, count)| **count > 0)
            .filter_map(|(class, _)| FailureClass::from_name(class))
            .max()
    }

    /// The class the sweep's unexplained worker deaths count as, if it had any: a crash
    /// ([`Self::worker_deaths_unexplained`]).
    pub fn worker_death_class(&self) -> Option<FailureClass> {
        (!self.worker_deaths_unexplained.is_empty()).then_some(FailureClass::Crash)
    }

    /// The process exit code: 0; the most severe regression class's
    /// ([`FailureClass::exit_code`]), a crash's when a worker died unexplained;
    /// [`EXIT_CODE_CANARY_NOT_FOUND`] for a missed canary.
    pub fn exit_code(&self) -> i32 {
        if let Some(class) = self.most_severe_regression().max(self.worker_death_class()) {
            return class.exit_code();
        }
        if !self.canaries_missed().is_empty() {
            return EXIT_CODE_CANARY_NOT_FOUND;
        }
        0
    }

    /// Adds another shard's run-level fields: counts summed, the longest wall time and
    /// the most jobs kept, completeness and-ed, modes or-ed.
    fn absorb_run(&mut self, report: &SweepReport) {
        self.commit = self.commit.take().or_else(|| report.commit.clone());
        self.schema = self.schema.max(report.schema);
        if self.umi_version.is_empty() {
            self.umi_version.clone_from(&report.umi_version);
        }
        self.prices = self.prices.take().or_else(|| report.prices.clone());
        self.trials = self.trials.or(report.trials);
        self.seed_start = report.seed_start;
        self.seeds = self.seeds.max(report.seeds);
        self.shards.extend(report.shards.iter().cloned());
        self.swarm |= report.swarm;
        self.check_determinism |= report.check_determinism;
        self.jobs = self.jobs.max(report.jobs);
        self.runs_planned += report.runs_planned;
        self.runs_done += report.runs_done;
        self.worker_round_trips += report.worker_round_trips;
        self.worker_deaths_unexplained
            .extend(report.worker_deaths_unexplained.iter().cloned());
        self.worker_deaths_unexplained
            .truncate(REPORT_DEATHS_KEPT_MAX);
        self.completed &= report.completed;
        self.wall_ms = self.wall_ms.max(report.wall_ms);
    }

    /// Combines shard reports of the same sweep (scenarios in the order they first
    /// appear).
    pub fn merge(reports: &[SweepReport]) -> SweepReport {
        let mut out = SweepReport {
            completed: true,
            ..SweepReport::default()
        };
        let mut order: Vec<String> = Vec::new();
        let mut by_name: BTreeMap<String, ScenarioReport> = BTreeMap::new();
        let mut digests: BTreeMap<String, [u8; 32]> = BTreeMap::new();
        for report in reports {
            out.absorb_run(report);
            for scenario in &report.scenarios {
                if !order.contains(&scenario.name) {
                    order.push(scenario.name.clone());
                }
                by_name
                    .entry(scenario.name.clone())
                    .or_insert_with(|| scenario.empty_like())
                    .absorb(scenario);
                let digest = digests.entry(scenario.name.clone()).or_insert([0; 32]);
                for (byte, other) in digest.iter_mut().zip(parse_digest(&scenario.trace_digest)) {
                    *byte ^= other;
                }
            }
        }
        for name in order {
            let Some(mut scenario) = by_name.remove(&name) else {
                continue;
            };
            scenario.failures.sort_by_key(|f| f.seed);
            scenario.failures.truncate(REPORT_FAILURES_KEPT_MAX);
            scenario.failures_truncated = scenario
                .seeds_failed
                .saturating_sub(scenario.failures.len() as u64);
            scenario.trace_digest = digest_hex(&digests[&name]);
            out.scenarios.push(scenario);
        }
        out
    }
}

/// `count` correctness failures of seeds 0, 1, ... with a message that needs escaping
/// (for the tests of the report and its exports).
#[cfg(test)]
pub(crate) fn correctness_failures(count: u64) -> Vec<FailureEntry> {
    (0..count)
        .map(|seed| FailureEntry {
            seed,
            class: "correctness".into(),
            message: "x <y>".into(),
            replay: "dst replay".into(),
        })
        .collect()
}

/// What a report says when it lists only some failures: how many are missing and where
/// the full list is.
pub fn truncation_note(s: &ScenarioReport) -> String {
    let whereabouts = match &s.seeds_file {
        Some(file) => format!("every failing seed is in {file}"),
        None => "recording was off, so no file lists them all (sweep again with recording on)"
            .to_owned(),
    };
    format!(
        "the report lists {} of {} failures (the smallest seeds; {} truncated); {whereabouts}",
        s.failures.len(),
        s.seeds_failed,
        s.failures_truncated
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str, failed: u64, canary: bool) -> ScenarioReport {
        let mut digest = [0u8; 32];
        fold_digest(&mut digest, 1, "abc");
        ScenarioReport {
            name: name.into(),
            canary,
            seeds_run: 10,
            seeds_failed: failed,
            failures_by_class: if failed > 0 {
                [("correctness".to_owned(), failed)].into_iter().collect()
            } else {
                BTreeMap::new()
            },
            failures: correctness_failures(failed),
            trace_digest: digest_hex(&digest),
            ..ScenarioReport::default()
        }
    }

    #[test]
    fn exit_codes_follow_the_classes_and_the_canary() {
        let clean = SweepReport {
            scenarios: vec![scenario("a", 0, false), scenario("canary", 3, true)],
            ..SweepReport::default()
        };
        assert_eq!(clean.exit_code(), 0);
        let failing = SweepReport {
            scenarios: vec![scenario("a", 2, false)],
            ..SweepReport::default()
        };
        assert_eq!(failing.exit_code(), 10);
        let missed = SweepReport {
            scenarios: vec![scenario("canary", 0, true)],
            ..SweepReport::default()
        };
        assert_eq!(missed.exit_code(), 20);
        assert!(missed.table().contains("CANARY NOT FOUND"));
    }

    /// A worker death no run of its batch explained (`process_pool.rs`) is a crash of the
    /// sweep: its code unless a more severe class failed, shown in the table, and kept
    /// (bounded) when shards merge, with the round trips summed.
    #[test]
    fn an_unexplained_worker_death_is_a_crash() {
        let death = "a worker died in a batch of 2 runs (...): signal 9 (SIGKILL)".to_owned();
        let with_death = |scenarios: Vec<ScenarioReport>| SweepReport {
            scenarios,
            worker_round_trips: 7,
            worker_deaths_unexplained: vec![death.clone()],
            ..SweepReport::default()
        };
        assert_eq!(with_death(vec![scenario("a", 0, false)]).exit_code(), 11);
        assert_eq!(with_death(vec![scenario("a", 2, false)]).exit_code(), 11);
        assert_eq!(
            with_death(vec![scenario("canary", 0, true)]).exit_code(),
            11
        );
        let mut nondeterministic = scenario("a", 1, false);
        nondeterministic.failures_by_class = BTreeMap::from([("nondeterminism".to_owned(), 1)]);
        assert_eq!(with_death(vec![nondeterministic]).exit_code(), 13);
        assert!(
            with_death(Vec::new())
                .table()
                .contains(&format!("crash: {death}"))
        );
        let shards: Vec<SweepReport> = (0..=REPORT_DEATHS_KEPT_MAX)
            .map(|_| with_death(Vec::new()))
            .collect();
        let merged = SweepReport::merge(&shards);
        assert_eq!(merged.worker_round_trips, 7 * shards.len() as u64);
        assert_eq!(
            merged.worker_deaths_unexplained.len(),
            REPORT_DEATHS_KEPT_MAX
        );
        assert_eq!(
            SweepReport::merge(&shards[..2]).worker_deaths_unexplained,
            [death.clone(), death]
        );
    }

    #[test]
    fn the_most_severe_regression_class_sets_the_exit_code() {
        let with_classes = |classes: &[(&str, u64)], canary: bool| {
            let mut report = scenario("s", 1, canary);
            report.failures_by_class = classes.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect();
            SweepReport {
                scenarios: vec![report],
                ..SweepReport::default()
            }
        };
        for (classes, code) in [
            (&[("correctness", 3)][..], 10),
            (&[("correctness", 3), ("liveness", 1)][..], 12),
            (&[("liveness", 1), ("crash", 1)][..], 11),
            (&[("crash", 5), ("nondeterminism", 1)][..], 13),
            (&[("crash", 0), ("correctness", 1)][..], 10),
        ] {
            assert_eq!(
                with_classes(classes, false).exit_code(),
                code,
                "{classes:?}"
            );
        }
        // A canary's failures are expected: they set no code.
        assert_eq!(with_classes(&[("crash", 2)], true).exit_code(), 0);
    }

    #[test]
    fn merging_sums_counts_and_xors_digests() {
        let a = SweepReport {
            shards: vec!["1/2".into()],
            runs_done: 10,
            runs_planned: 10,
            completed: true,
            scenarios: vec![scenario("s", 1, false)],
            ..SweepReport::default()
        };
        let b = SweepReport {
            shards: vec!["2/2".into()],
            runs_done: 10,
            runs_planned: 10,
            completed: true,
            scenarios: vec![scenario("s", 2, false)],
            ..SweepReport::default()
        };
        let merged = SweepReport::merge(&[a, b]);
        assert_eq!(merged.scenarios[0].seeds_run, 20);
        assert_eq!(merged.scenarios[0].seeds_failed, 3);
        assert_eq!(
            merged.scenarios[0].trace_digest,
            "0".repeat(64),
            "the same seed twice cancels out"
        );
        assert_eq!(merged.shards, ["1/2", "2/2"]);
    }
}
