//! `dst compare BEFORE AFTER`: which differences between two sweeps of the same seeds
//! are larger than the noise, and whether any is a regression beyond the thresholds
//! (so CI can gate a prompt or model change on it).
//!
//! Two reports are compared only when they ran the same thing ([`comparable`]). Then,
//! per scenario ([`stats`] has the tests):
//!
//! - **Pass rate** (1 − seeds_failed/seeds_run). Both sweeps ran the *same* seeds, so
//!   the outcomes are paired and McNemar's test (on the seeds that failed in one report
//!   only) is the stronger test; it needs every failing seed, which a report lists only
//!   up to `REPORT_FAILURES_KEPT_MAX`. When neither report truncated its list
//!   (`failures_truncated == 0`, every failure listed), McNemar's exact test is used;
//!   otherwise the unpaired two-proportion z-test with pooled variance, or Fisher's
//!   exact test when any expected count is below 5. The table says which, per scenario.
//!   Canaries are shown but never gate (their failures are the point).
//! - **pass^k and pass@1**, when both sweeps ran `--trials`: the same two-proportion
//!   test on the tasks whose every trial passed (pass^k) and on the trials passed
//!   (pass@1).
//! - **Usage**: each quantity's distribution by the two-sample Kolmogorov–Smirnov test
//!   over the bucketed CDFs (D is a lower bound of the unbucketed D, so the test is
//!   conservative; so it is on quantities with ties, such as call counts), with
//!   p50/p95/p99 before → after and their relative change.
//!
//! A change is significant when its p-value is below `alpha / m`, m the number of tests
//! made over every scenario (Bonferroni: the chance of any false alarm stays below
//! `alpha`, at the price of missing small changes when there are many tests).
//!
//! The gate: a non-canary scenario regresses when its pass rate or its pass^k drops
//! significantly and by more than `max_pass_drop`, or its cost p95 (`cost_micros`;
//! `tokens` when the sweeps were not priced) rises significantly and by more than
//! `max_cost_increase_percent`. Improvements are reported and never fail.

pub mod comparable;
pub mod stats;
mod table;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::distribution::Distribution;
use crate::pass_k::PassCounts;
use crate::report::{ScenarioReport, SweepReport};
use crate::usage_report::USAGE_QUANTITIES;
use stats::TestUsed;

pub use comparable::{NotComparable, check_comparable};

/// The thresholds and the significance level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A pass-rate (or pass^k) drop must be larger than this (a fraction, 0 to 1) to
    /// fail, besides significant.
    pub max_pass_drop: f64,
    /// A cost p95 rise must be larger than this many percent to fail, besides
    /// significant.
    pub max_cost_increase_percent: f64,
    /// The family-wise significance level, before the Bonferroni correction.
    pub alpha: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            max_pass_drop: 0.0,
            max_cost_increase_percent: 10.0,
            alpha: 0.01,
        }
    }
}

/// A proportion before and after, and the test of their difference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateChange {
    /// Successes before (passing seeds, tasks, trials).
    pub before_passed: u64,
    /// Out of.
    pub before_total: u64,
    /// Successes after.
    pub after_passed: u64,
    /// Out of.
    pub after_total: u64,
    /// The proportion before.
    pub before: f64,
    /// The proportion after.
    pub after: f64,
    /// after − before.
    pub delta: f64,
    /// The two-sided p-value.
    pub p_value: f64,
    /// The test that gave it.
    pub test: TestUsed,
    /// Whether `p_value` is below the corrected level.
    pub significant: bool,
}

/// p50, p95, p99 of a distribution (`None` when empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// The median.
    pub p50: Option<u64>,
    /// The 95th percentile.
    pub p95: Option<u64>,
    /// The 99th percentile.
    pub p99: Option<u64>,
}

impl Percentiles {
    fn of(distribution: &Distribution) -> Self {
        Self {
            p50: distribution.percentile(500),
            p95: distribution.percentile(950),
            p99: distribution.percentile(990),
        }
    }
}

/// One usage quantity before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantityChange {
    /// The quantity (`tokens`, `cost_micros`, ...).
    pub quantity: String,
    /// Runs counted before.
    pub before_count: u64,
    /// Runs counted after.
    pub after_count: u64,
    /// Before.
    pub before: Percentiles,
    /// After.
    pub after: Percentiles,
    /// p95's change in percent of before's (`None` when before's p95 is 0 or absent).
    pub p95_change_percent: Option<f64>,
    /// The KS statistic D over the buckets (`None`: one side counted nothing).
    pub ks_d: Option<f64>,
    /// Its p-value (`None`: no test made).
    pub p_value: Option<f64>,
    /// Whether `p_value` is below the corrected level.
    pub significant: bool,
}

/// What a scenario's changes amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A significant change past a threshold in the wrong direction: the gate fails.
    Regression,
    /// A significant pass-rate or pass^k rise, or cost fall, and no regression.
    Improvement,
    /// Significant changes, none past a threshold (or in usage quantities not gated).
    Changed,
    /// Nothing larger than the noise.
    NoChange,
    /// A canary: shown, never gated.
    Canary,
}

impl Verdict {
    /// How the table prints it.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Regression => "REGRESSION",
            Self::Improvement => "improvement",
            Self::Changed => "changed (within thresholds)",
            Self::NoChange => "no change",
            Self::Canary => "canary (not gated)",
        }
    }
}

/// One scenario before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioComparison {
    /// The scenario.
    pub name: String,
    /// Whether it is a canary (never gated).
    pub canary: bool,
    /// Its pass rate.
    pub pass_rate: RateChange,
    /// pass^k over tasks, when both sweeps ran trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_hat_k: Option<RateChange>,
    /// pass@1 over trials, when both sweeps ran trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_at_1: Option<RateChange>,
    /// Each usage quantity either report counted.
    pub quantities: Vec<QuantityChange>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, when it is a regression or an improvement (one line each).
    pub reasons: Vec<String>,
}

/// Two sweeps compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The thresholds and level used.
    pub thresholds: Thresholds,
    /// Tests made over every scenario (the Bonferroni divisor).
    pub tests_made: u64,
    /// The level each test is held to: alpha / tests_made.
    pub alpha_per_test: f64,
    /// Per scenario, in BEFORE's order.
    pub scenarios: Vec<ScenarioComparison>,
    /// Whether any scenario regressed (the exit code is then 1).
    pub regression: bool,
    /// Warnings (different Umi versions or price tables).
    pub warnings: Vec<String>,
}

/// Compares two comparable reports (check them with [`check_comparable`] first; a
/// scenario missing from `after` is skipped).
pub fn compare(before: &SweepReport, after: &SweepReport, thresholds: Thresholds) -> Comparison {
    let pairs: Vec<(&ScenarioReport, &ScenarioReport)> = before
        .scenarios
        .iter()
        .filter_map(|b| Some((b, after.scenarios.iter().find(|a| a.name == b.name)?)))
        .collect();
    let tests_made: u64 = pairs.iter().map(|(b, a)| tests_in(b, a)).sum();
    let alpha_per_test = thresholds.alpha / tests_made.max(1) as f64;
    let scenarios: Vec<ScenarioComparison> = pairs
        .iter()
        .map(|(b, a)| compare_scenario(b, a, alpha_per_test, &thresholds))
        .collect();
    Comparison {
        thresholds,
        tests_made,
        alpha_per_test,
        regression: scenarios.iter().any(|s| s.verdict == Verdict::Regression),
        scenarios,
        warnings: Vec::new(),
    }
}

/// The tests made on one scenario: its pass rate, pass^k and pass@1 when both ran
/// trials, and each usage quantity both counted.
fn tests_in(before: &ScenarioReport, after: &ScenarioReport) -> u64 {
    let trials = if before.trials.is_some() && after.trials.is_some() {
        2
    } else {
        0
    };
    let quantities = quantity_names(before, after)
        .iter()
        .filter(|q| before.usage.get(q).is_some() && after.usage.get(q).is_some())
        .count() as u64;
    1 + trials + quantities
}

/// The usage quantities either report counted: [`USAGE_QUANTITIES`]' order, then any
/// other by name.
fn quantity_names(before: &ScenarioReport, after: &ScenarioReport) -> Vec<String> {
    let counted: BTreeSet<&String> = before
        .usage
        .quantities
        .iter()
        .chain(&after.usage.quantities)
        .filter(|(_, d)| d.count > 0)
        .map(|(name, _)| name)
        .collect();
    let mut names: Vec<String> = USAGE_QUANTITIES
        .iter()
        .filter(|q| counted.iter().any(|c| c.as_str() == **q))
        .map(|q| (*q).to_owned())
        .collect();
    for name in counted {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

fn compare_scenario(
    before: &ScenarioReport,
    after: &ScenarioReport,
    alpha_per_test: f64,
    thresholds: &Thresholds,
) -> ScenarioComparison {
    let pass_rate = pass_rate_change(before, after, alpha_per_test);
    let (pass_hat_k, pass_at_1) = match (&before.trials, &after.trials) {
        (Some(b), Some(a)) => (
            Some(rate_change(
                pass_hat_k_counts(&b.all),
                pass_hat_k_counts(&a.all),
                alpha_per_test,
            )),
            Some(rate_change(
                pass_at_1_counts(&b.all),
                pass_at_1_counts(&a.all),
                alpha_per_test,
            )),
        ),
        _ => (None, None),
    };
    let quantities = quantity_names(before, after)
        .into_iter()
        .map(|name| quantity_change(name, before, after, alpha_per_test))
        .collect();
    let mut comparison = ScenarioComparison {
        name: before.name.clone(),
        canary: before.canary,
        pass_rate,
        pass_hat_k,
        pass_at_1,
        quantities,
        verdict: Verdict::NoChange,
        reasons: Vec::new(),
    };
    judge(&mut comparison, thresholds);
    comparison
}

/// Tasks whose every trial passed, of the tasks.
fn pass_hat_k_counts(counts: &PassCounts) -> (u64, u64) {
    let all = usize::try_from(counts.k())
        .ok()
        .and_then(|k| counts.tasks_by_passes.get(k))
        .copied()
        .unwrap_or(0);
    (all, counts.tasks())
}

/// Trials passed, of the trials.
fn pass_at_1_counts(counts: &PassCounts) -> (u64, u64) {
    let passed = counts
        .tasks_by_passes
        .iter()
        .enumerate()
        .map(|(c, n)| c as u64 * n)
        .sum();
    (passed, counts.tasks() * counts.k())
}

/// A proportion's change by the unpaired two-proportion test.
fn rate_change(before: (u64, u64), after: (u64, u64), alpha_per_test: f64) -> RateChange {
    let (p_value, test) = stats::two_proportions(before.0, before.1, after.0, after.1);
    rate(before, after, p_value, test, alpha_per_test)
}

fn rate(
    before: (u64, u64),
    after: (u64, u64),
    p_value: f64,
    test: TestUsed,
    alpha_per_test: f64,
) -> RateChange {
    let proportion = |(passed, total): (u64, u64)| {
        if total == 0 {
            0.0
        } else {
            passed as f64 / total as f64
        }
    };
    let (b, a) = (proportion(before), proportion(after));
    RateChange {
        before_passed: before.0,
        before_total: before.1,
        after_passed: after.0,
        after_total: after.1,
        before: b,
        after: a,
        delta: a - b,
        p_value,
        test,
        significant: p_value < alpha_per_test,
    }
}

/// The failing seeds, when the report lists every one.
fn every_failing_seed(report: &ScenarioReport) -> Option<BTreeSet<u64>> {
    let complete =
        report.failures_truncated == 0 && report.failures.len() as u64 == report.seeds_failed;
    complete.then(|| report.failures.iter().map(|f| f.seed).collect())
}

/// The pass rate's change: McNemar's exact test when both reports list every failing
/// seed of the same number of runs, else the two-proportion test.
fn pass_rate_change(
    before: &ScenarioReport,
    after: &ScenarioReport,
    alpha_per_test: f64,
) -> RateChange {
    let passed = |r: &ScenarioReport| (r.seeds_run.saturating_sub(r.seeds_failed), r.seeds_run);
    let paired = (before.seeds_run == after.seeds_run)
        .then(|| Some((every_failing_seed(before)?, every_failing_seed(after)?)))
        .flatten();
    match paired {
        Some((failed_before, failed_after)) => {
            let only_before = failed_before.difference(&failed_after).count() as u64;
            let only_after = failed_after.difference(&failed_before).count() as u64;
            let p_value = stats::mcnemar_exact(only_before, only_after);
            rate(
                passed(before),
                passed(after),
                p_value,
                TestUsed::McNemar,
                alpha_per_test,
            )
        }
        None => rate_change(passed(before), passed(after), alpha_per_test),
    }
}

fn quantity_change(
    quantity: String,
    before: &ScenarioReport,
    after: &ScenarioReport,
    alpha_per_test: f64,
) -> QuantityChange {
    let empty = Distribution::default();
    let b = before.usage.get(&quantity).unwrap_or(&empty);
    let a = after.usage.get(&quantity).unwrap_or(&empty);
    let ks = stats::kolmogorov_smirnov(b, a);
    let (before_p, after_p) = (Percentiles::of(b), Percentiles::of(a));
    QuantityChange {
        quantity,
        before_count: b.count,
        after_count: a.count,
        p95_change_percent: relative_change_percent(before_p.p95, after_p.p95),
        before: before_p,
        after: after_p,
        ks_d: ks.map(|k| k.d),
        p_value: ks.map(|k| k.p_value),
        significant: ks.is_some_and(|k| k.p_value < alpha_per_test),
    }
}

/// (after − before) in percent of before (`None` when before is 0 or either is absent).
pub fn relative_change_percent(before: Option<u64>, after: Option<u64>) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(a)) if b > 0 => Some((a as f64 - b as f64) * 100.0 / b as f64),
        _ => None,
    }
}

/// The quantity the cost gate watches: `cost_micros` when both priced, else `tokens`.
fn cost_quantity(comparison: &ScenarioComparison) -> Option<&QuantityChange> {
    let named = |name: &str| {
        comparison
            .quantities
            .iter()
            .find(|q| q.quantity == name && q.p_value.is_some())
    };
    named("cost_micros").or_else(|| named("tokens"))
}

/// Regressions and improvements, a line each.
#[derive(Default)]
struct Findings {
    regressions: Vec<String>,
    improvements: Vec<String>,
}

/// The pass rate's and pass^k's significant changes: a drop past `max_pass_drop` is a
/// regression, a rise an improvement.
fn judge_rates(comparison: &ScenarioComparison, thresholds: &Thresholds, found: &mut Findings) {
    let rates = [
        ("pass rate", Some(&comparison.pass_rate)),
        ("pass^k", comparison.pass_hat_k.as_ref()),
    ];
    for (what, change) in rates {
        let Some(change) = change.filter(|c| c.significant) else {
            continue;
        };
        let line = format!(
            "{what} {:.3} → {:.3} (Δ {:+.3}, p {}, {})",
            change.before,
            change.after,
            change.delta,
            table::p_text(change.p_value),
            change.test.short_name()
        );
        if -change.delta > thresholds.max_pass_drop {
            found.regressions.push(format!(
                "{line}: a drop larger than --max-pass-drop {}",
                thresholds.max_pass_drop
            ));
        } else if change.delta > 0.0 {
            found.improvements.push(line);
        }
    }
}

/// The cost p95's significant change: a rise past `max_cost_increase_percent` is a
/// regression, a fall an improvement.
fn judge_cost(comparison: &ScenarioComparison, thresholds: &Thresholds, found: &mut Findings) {
    let Some(cost) = cost_quantity(comparison).filter(|q| q.significant) else {
        return;
    };
    // From nothing to something is an unbounded rise.
    let rise_percent = match (cost.before.p95, cost.after.p95) {
        (Some(0), Some(after)) if after > 0 => f64::INFINITY,
        _ => cost.p95_change_percent.unwrap_or(0.0),
    };
    let line = format!(
        "{} p95 {} → {} ({}, KS p {})",
        cost.quantity,
        table::value_text(cost.before.p95),
        table::value_text(cost.after.p95),
        table::percent_text(cost.p95_change_percent),
        table::p_text(cost.p_value.unwrap_or(1.0))
    );
    if rise_percent > thresholds.max_cost_increase_percent {
        found.regressions.push(format!(
            "{line}: a rise larger than --max-cost-increase-percent {}",
            thresholds.max_cost_increase_percent
        ));
    } else if rise_percent < 0.0 {
        found.improvements.push(line);
    }
}

/// Sets the verdict and its reasons.
fn judge(comparison: &mut ScenarioComparison, thresholds: &Thresholds) {
    let mut found = Findings::default();
    judge_rates(comparison, thresholds, &mut found);
    judge_cost(comparison, thresholds, &mut found);
    let significant = |change: Option<&RateChange>| change.is_some_and(|c| c.significant);
    let any_significant = comparison.pass_rate.significant
        || significant(comparison.pass_hat_k.as_ref())
        || significant(comparison.pass_at_1.as_ref())
        || comparison.quantities.iter().any(|q| q.significant);
    comparison.verdict = if comparison.canary {
        Verdict::Canary
    } else if !found.regressions.is_empty() {
        Verdict::Regression
    } else if !found.improvements.is_empty() {
        Verdict::Improvement
    } else if any_significant {
        Verdict::Changed
    } else {
        Verdict::NoChange
    };
    comparison.reasons = match comparison.verdict {
        Verdict::Regression => found.regressions,
        Verdict::Improvement => found.improvements,
        Verdict::Changed | Verdict::NoChange | Verdict::Canary => Vec::new(),
    };
}

#[cfg(test)]
mod tests;
