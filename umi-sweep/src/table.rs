//! The sweep report as a table for people: a row per scenario, a line of what ran, then
//! each scenario's failures grouped by message, marks not hit, rules that never fired,
//! and canaries not found.

use std::fmt::Write as _;

use crate::groups::by_size;
use crate::human::{human_ms, human_us};
use crate::report::{ScenarioReport, SweepReport, truncation_note};

/// Failure groups the table shows per scenario (the JSON report has them all).
const TABLE_GROUPS_SHOWN_MAX: usize = 8;

impl SweepReport {
    /// A table for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        self.table_rows(&mut out);
        self.table_summary(&mut out);
        for s in &self.scenarios {
            table_notes(&mut out, s);
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

    /// The header and a row per scenario.
    fn table_rows(&self, out: &mut String) {
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
                let counts: Vec<String> = s
                    .failures_by_class
                    .iter()
                    .map(|(c, n)| format!("{c}:{n}"))
                    .collect();
                counts.join(",")
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
    }

    /// What ran: commit, seeds, shard, mode, jobs, runs done, wall time; why it stopped.
    fn table_summary(&self, out: &mut String) {
        let shards = if self.shards.is_empty() {
            String::new()
        } else {
            format!(" · shard {}", self.shards.join(","))
        };
        let _ = writeln!(
            out,
            "commit {} · seeds {}..={}{shards} · {}{} · jobs {} · {} of {} runs{} · {}",
            self.commit.as_deref().unwrap_or("unknown"),
            self.seed_start,
            self.seed_start.saturating_add(self.seeds.saturating_sub(1)),
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
        for death in &self.worker_deaths_unexplained {
            let _ = writeln!(out, "crash: {death}");
        }
    }
}

/// Below the rows, for one scenario: a canary's find, or the failure groups, the marks
/// not hit and the fault rules that never fired.
fn table_notes(out: &mut String, s: &ScenarioReport) {
    if s.canary {
        if let Some(f) = s.failures.first() {
            let _ = writeln!(
                out,
                "  {}: planted bug found in {} of {} seeds (first: seed {}; replay: {})",
                s.name, s.seeds_failed, s.seeds_run, f.seed, f.replay
            );
        }
        return;
    }
    table_failures(out, s);
    table_usage(out, s);
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

/// A scenario's spend (p50/p95/p99/max of each counted quantity), the models no price
/// covered, and its pass^k when the sweep ran trials.
fn table_usage(out: &mut String, s: &ScenarioReport) {
    let shown: Vec<String> = crate::usage_report::USAGE_QUANTITIES
        .iter()
        .filter(|name| **name != "models_used")
        .filter_map(|name| {
            let distribution = s.usage.get(name)?;
            (distribution.max > 0).then(|| format!("{name} {}", distribution.summary()))
        })
        .collect();
    if !shown.is_empty() {
        let _ = writeln!(
            out,
            "  {}: per run p50/p95/p99/max: {}",
            s.name,
            shown.join(" · ")
        );
    }
    if !s.usage.unpriced_models.is_empty() {
        let models: Vec<String> = s
            .usage
            .unpriced_models
            .iter()
            .map(|(model, runs)| format!("{model} ({runs} runs)"))
            .collect();
        let _ = writeln!(
            out,
            "  warning: {}: not in the price table, so those runs have no cost: {}",
            s.name,
            models.join(", ")
        );
    }
    if let Some(trials) = &s.trials {
        table_trials(out, &s.name, trials);
    }
}

/// A `--trials` sweep's pass^k for one scenario: the summary, per class, flaky tasks.
fn table_trials(out: &mut String, name: &str, trials: &crate::pass_k::TrialsReport) {
    let _ = writeln!(out, "  {name}: {}", trials.summary());
    for (class, counts) in &trials.by_class {
        let _ = writeln!(
            out,
            "    class {class}: {} tasks · pass@1 {} · pass^{} {}",
            counts.tasks(),
            counts
                .pass_at_1()
                .map_or("-".to_owned(), |p| format!("{p:.3}")),
            trials.k,
            counts
                .pass_hat(trials.k)
                .map_or("-".to_owned(), |p| format!("{p:.3}")),
        );
    }
    for flaky in trials.flaky.iter().take(TABLE_GROUPS_SHOWN_MAX) {
        let _ = writeln!(
            out,
            "    flaky task {}{}: passed {} of {} (failing trial seeds: {})",
            flaky.task,
            flaky
                .class
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            flaky.passed,
            trials.k,
            flaky
                .failed_seeds
                .iter()
                .map(|seed| format!("{seed:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
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
