//! The sweep report: per scenario, what ran, what failed and why, which faults and
//! marks were hit, and how fast; as a table, as JSON, and as JUnit XML (`junit.rs`).
//! Shard reports merge into one.
//!
//! A report's size does not grow with the sweep: it lists the failures of the smallest
//! `REPORT_FAILURES_KEPT_MAX` failing seeds per scenario and counts the rest in
//! `failures_truncated`, naming the seed file that holds every one (`seeds_file`); the
//! table groups failures by message (`groups.rs`) with counts over all of them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::groups::{FailureGroup, add_group, by_size};
use umi_dst::simulation::report::{EXIT_CODE_CANARY_NOT_FOUND, FailureClass};

/// Failures listed per scenario in a report (the counts and groups cover all of them).
pub const REPORT_FAILURES_KEPT_MAX: usize = 200;

/// Failure groups the table shows per scenario (the JSON report has them all).
const TABLE_GROUPS_SHOWN_MAX: usize = 8;

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
}

impl ScenarioReport {
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
    digest.iter().map(|b| format!("{b:02x}")).collect()
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

/// A whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SweepReport {
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
    /// (scenario, seed) runs planned.
    pub runs_planned: u64,
    /// Runs done.
    pub runs_done: u64,
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

    /// The process exit code: 0; the most severe regression class's
    /// ([`FailureClass::exit_code`]); [`EXIT_CODE_CANARY_NOT_FOUND`] for a missed canary.
    pub fn exit_code(&self) -> i32 {
        if let Some(class) = self.most_severe_regression() {
            return class.exit_code();
        }
        if !self.canaries_missed().is_empty() {
            return EXIT_CODE_CANARY_NOT_FOUND;
        }
        0
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
            out.commit = out.commit.or_else(|| report.commit.clone());
            out.seed_start = report.seed_start;
            out.seeds = out.seeds.max(report.seeds);
            out.shards.extend(report.shards.iter().cloned());
            out.swarm |= report.swarm;
            out.check_determinism |= report.check_determinism;
            out.jobs = out.jobs.max(report.jobs);
            out.runs_planned += report.runs_planned;
            out.runs_done += report.runs_done;
            out.completed &= report.completed;
            out.wall_ms = out.wall_ms.max(report.wall_ms);
            for scenario in &report.scenarios {
                if !order.contains(&scenario.name) {
                    order.push(scenario.name.clone());
                }
                let merged =
                    by_name
                        .entry(scenario.name.clone())
                        .or_insert_with(|| ScenarioReport {
                            name: scenario.name.clone(),
                            goal: scenario.goal.clone(),
                            canary: scenario.canary,
                            marks_required: scenario.marks_required.clone(),
                            rules: scenario.rules.clone(),
                            rule_reach: vec![0; scenario.rule_reach.len()],
                            ..ScenarioReport::default()
                        });
                for (total, n) in merged.rule_reach.iter_mut().zip(&scenario.rule_reach) {
                    *total += n;
                }
                merged.seeds_run += scenario.seeds_run;
                merged.seeds_failed += scenario.seeds_failed;
                for (class, n) in &scenario.failures_by_class {
                    *merged.failures_by_class.entry(class.clone()).or_insert(0) += n;
                }
                merged.failures.extend(scenario.failures.iter().cloned());
                merged.failures_ungrouped += scenario.failures_ungrouped;
                for group in &scenario.failure_groups {
                    if !add_group(&mut merged.failure_groups, group) {
                        merged.failures_ungrouped += group.count;
                    }
                }
                if merged.seeds_file.is_none() {
                    merged.seeds_file.clone_from(&scenario.seeds_file);
                }
                for (kind, n) in &scenario.faults_injected {
                    *merged.faults_injected.entry(kind.clone()).or_insert(0) += n;
                }
                for (mark, n) in &scenario.marks_hit {
                    *merged.marks_hit.entry(mark.clone()).or_insert(0) += n;
                }
                merged.sim_time_ms += scenario.sim_time_ms;
                merged.wall_us += scenario.wall_us;
                merged
                    .trace_hashes
                    .extend(scenario.trace_hashes.iter().map(|(k, v)| (*k, v.clone())));
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

    /// A table for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<28} {:>7} {:>7} {:<24} {:>8} {:>7} {:>12} {:>9} {:>9} {:>10}",
            "scenario",
            "seeds",
            "failed",
            "classes",
            "faults",
            "marks",
            "sim time",
            "wall",
            "seeds/s",
            "sim:wall"
        );
        for s in &self.scenarios {
            let classes = if s.failures_by_class.is_empty() {
                "-".to_owned()
            } else {
                s.failures_by_class
                    .iter()
                    .map(|(c, n)| format!("{c}:{n}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let marks = format!(
                "{}/{}",
                s.marks_required.len() - s.marks_missing().len(),
                s.marks_required.len()
            );
            let name = if s.canary {
                format!("{} (canary)", s.name)
            } else {
                s.name.clone()
            };
            let _ = writeln!(
                out,
                "{:<28} {:>7} {:>7} {:<24} {:>8} {:>7} {:>12} {:>9} {:>9.0} {:>9.0}x",
                name,
                s.seeds_run,
                s.seeds_failed,
                classes,
                s.faults_injected.values().sum::<u64>(),
                marks,
                human_ms(s.sim_time_ms),
                human_us(s.wall_us),
                s.seeds_per_second(),
                s.sim_to_wall()
            );
        }
        let _ = writeln!(
            out,
            "commit {} · seeds {}..={}{} · {}{} · jobs {} · {} of {} runs{} · {}",
            self.commit.as_deref().unwrap_or("unknown"),
            self.seed_start,
            self.seed_start.saturating_add(self.seeds.saturating_sub(1)),
            if self.shards.is_empty() {
                String::new()
            } else {
                format!(" · shard {}", self.shards.join(","))
            },
            if self.swarm {
                "swarm"
            } else {
                "default faults"
            },
            if self.check_determinism {
                " · determinism checked"
            } else {
                ""
            },
            self.jobs,
            self.runs_done,
            self.runs_planned,
            if self.completed { "" } else { " (incomplete)" },
            human_ms(self.wall_ms)
        );
        if let Some(reason) = &self.stopped {
            let _ = writeln!(out, "stopped early: {reason}");
        }
        for s in &self.scenarios {
            if s.canary {
                if let Some(f) = s.failures.first() {
                    let _ = writeln!(
                        out,
                        "  {}: planted bug found in {} of {} seeds (first: seed {}; replay: {})",
                        s.name, s.seeds_failed, s.seeds_run, f.seed, f.replay
                    );
                }
                continue;
            }
            table_failures(&mut out, s);
            let missing = s.marks_missing();
            if !missing.is_empty() && s.seeds_run > 0 {
                let _ = writeln!(out, "  {}: marks not hit: {}", s.name, missing.join(", "));
            }
            for rule in s.rules_unreached() {
                let _ = writeln!(
                    out,
                    "  warning: {}: {rule} reached no operation in {} seeds, so it never fired",
                    s.name, s.seeds_run
                );
            }
        }
        for name in self.canaries_missed() {
            let _ = writeln!(
                out,
                "  CANARY NOT FOUND: {name} ran {} seeds without finding its planted bug",
                self.scenarios
                    .iter()
                    .find(|s| s.name == name)
                    .map_or(0, |s| s.seeds_run)
            );
        }
        out
    }
}

pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// A scenario's failures in the table: its groups, largest first, with counts, the
/// smallest seeds and a replay command; and where the full list is when the report
/// lists only some.
fn table_failures(out: &mut String, s: &ScenarioReport) {
    let groups = by_size(&s.failure_groups);
    for group in groups.iter().take(TABLE_GROUPS_SHOWN_MAX) {
        let seeds: Vec<String> = group.seeds.iter().map(ToString::to_string).collect();
        let more = if group.count > group.seeds.len() as u64 {
            ", ..."
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {}: {} x {} {}\n    seeds {}{more}; replay: {}",
            s.name,
            group.count,
            group.class,
            group.example,
            seeds.join(", "),
            group.replay
        );
    }
    if groups.len() > TABLE_GROUPS_SHOWN_MAX || s.failures_ungrouped > 0 {
        let _ = writeln!(
            out,
            "  {}: {} more group(s) and {} failure(s) past the group limit (the JSON report lists the groups)",
            s.name,
            groups.len().saturating_sub(TABLE_GROUPS_SHOWN_MAX),
            s.failures_ungrouped
        );
    }
    if s.failures_truncated > 0 {
        let _ = writeln!(out, "  {}: {}", s.name, truncation_note(s));
    }
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

/// `0.42 ms`, then as [`human_ms`].
pub fn human_us(us: u64) -> String {
    if us < 1_000 {
        format!("{:.2} ms", us as f64 / 1000.0)
    } else {
        human_ms(us / 1000)
    }
}

/// `1.2 s`, `3m 4s`, `2h 13m`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000),
        _ => format!("{}h {}m", ms / 3_600_000, (ms % 3_600_000) / 60_000),
    }
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
            failures: (0..failed)
                .map(|seed| FailureEntry {
                    seed,
                    class: "correctness".into(),
                    message: "x <y>".into(),
                    replay: "dst replay".into(),
                })
                .collect(),
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
