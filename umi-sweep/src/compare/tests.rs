//! The gate: a significant drop fails, the same report passes, an improvement passes;
//! the tests chosen and the Bonferroni divisor.

use super::*;
use crate::pass_k::TrialsReport;
use crate::report::{FailureEntry, REPORT_SCHEMA};
use crate::usage_report::UsageReport;

fn failures(seeds: impl Iterator<Item = u64>) -> Vec<FailureEntry> {
    seeds
        .map(|seed| FailureEntry {
            seed,
            class: "correctness".into(),
            message: "broke".into(),
            replay: "dst replay".into(),
        })
        .collect()
}

fn usage(tokens: impl Iterator<Item = u64>) -> UsageReport {
    let mut report = UsageReport::default();
    for value in tokens {
        report
            .quantities
            .entry("tokens".into())
            .or_default()
            .record(value);
    }
    report
}

fn scenario(name: &str, runs: u64, failed: &[u64], canary: bool) -> ScenarioReport {
    ScenarioReport {
        name: name.into(),
        canary,
        seeds_run: runs,
        seeds_failed: failed.len() as u64,
        failures: failures(failed.iter().copied()),
        usage: usage(0..runs),
        ..ScenarioReport::default()
    }
}

fn sweep(scenarios: Vec<ScenarioReport>) -> SweepReport {
    SweepReport {
        schema: REPORT_SCHEMA,
        seed_start: 1,
        seeds: 200,
        completed: true,
        scenarios,
        ..SweepReport::default()
    }
}

fn verdicts(comparison: &Comparison) -> Vec<Verdict> {
    comparison.scenarios.iter().map(|s| s.verdict).collect()
}

#[test]
fn the_same_report_passes_with_no_change() {
    let report = sweep(vec![
        scenario("a", 200, &[3, 9], false),
        scenario("canary", 200, &[1, 2, 5], true),
    ]);
    let comparison = compare(&report, &report, Thresholds::default());
    assert!(!comparison.regression);
    assert_eq!(verdicts(&comparison), [Verdict::NoChange, Verdict::Canary]);
    // Pass rate and tokens, per scenario.
    assert_eq!(comparison.tests_made, 4);
    assert!((comparison.alpha_per_test - 0.0025).abs() < 1e-15);
    assert_eq!(comparison.scenarios[0].pass_rate.test, TestUsed::McNemar);
    assert!(
        comparison
            .table()
            .contains("no change larger than the noise")
    );
    let json = serde_json::to_string(&comparison).unwrap();
    assert!(json.contains("\"test\":\"mcnemar\""), "{json}");
}

#[test]
fn a_significant_drop_regresses_and_names_the_scenario() {
    let before = sweep(vec![scenario("a", 200, &[], false)]);
    let failing: Vec<u64> = (1..=40).collect();
    let after = sweep(vec![scenario("a", 200, &failing, false)]);
    let comparison = compare(&before, &after, Thresholds::default());
    assert!(comparison.regression);
    assert_eq!(verdicts(&comparison), [Verdict::Regression]);
    assert_eq!(comparison.scenarios[0].pass_rate.test, TestUsed::McNemar);
    let table = comparison.table();
    assert!(table.contains("REGRESSION in a"), "{table}");
    assert!(table.contains("pass rate 1.000 → 0.800"), "{table}");
    // A drop within --max-pass-drop is a change, not a regression.
    let lenient = Thresholds {
        max_pass_drop: 0.25,
        ..Thresholds::default()
    };
    assert_eq!(
        verdicts(&compare(&before, &after, lenient)),
        [Verdict::Changed]
    );
    // The other way round it is an improvement, which never fails.
    let improved = compare(&after, &before, Thresholds::default());
    assert!(!improved.regression);
    assert_eq!(verdicts(&improved), [Verdict::Improvement]);
}

#[test]
fn truncated_failure_lists_fall_back_to_the_unpaired_tests() {
    let mut before = scenario("a", 200, &[], false);
    before.seeds_failed = 20;
    before.failures_truncated = 20;
    let after = scenario("a", 200, &[1, 2], false);
    let comparison = compare(
        &sweep(vec![before]),
        &sweep(vec![after]),
        Thresholds::default(),
    );
    assert_eq!(comparison.scenarios[0].pass_rate.test, TestUsed::ZTest);
    let mut tiny = scenario("a", 10, &[], false);
    tiny.seeds_failed = 3;
    let comparison = compare(
        &sweep(vec![tiny]),
        &sweep(vec![scenario("a", 10, &[], false)]),
        Thresholds::default(),
    );
    assert_eq!(comparison.scenarios[0].pass_rate.test, TestUsed::Fisher);
}

#[test]
fn a_canary_is_shown_but_never_gates() {
    let before = sweep(vec![scenario("canary", 200, &[], true)]);
    let failing: Vec<u64> = (1..=100).collect();
    let after = sweep(vec![scenario("canary", 200, &failing, true)]);
    let comparison = compare(&before, &after, Thresholds::default());
    assert!(comparison.scenarios[0].pass_rate.significant);
    assert!(!comparison.regression);
}

#[test]
fn a_cost_rise_past_the_threshold_regresses_and_a_fall_improves() {
    let before = sweep(vec![scenario("a", 200, &[], false)]);
    let mut dearer = scenario("a", 200, &[], false);
    dearer.usage = usage((0..200).map(|v| v * 2));
    let after = sweep(vec![dearer]);
    let comparison = compare(&before, &after, Thresholds::default());
    assert_eq!(verdicts(&comparison), [Verdict::Regression]);
    assert!(comparison.scenarios[0].reasons[0].contains("tokens p95 188 → 376 (+100.0%"));
    let lenient = Thresholds {
        max_cost_increase_percent: 150.0,
        ..Thresholds::default()
    };
    assert_eq!(
        verdicts(&compare(&before, &after, lenient)),
        [Verdict::Changed]
    );
    assert_eq!(
        verdicts(&compare(&after, &before, Thresholds::default())),
        [Verdict::Improvement]
    );
}

#[test]
fn pass_hat_k_is_tested_on_tasks_when_both_ran_trials() {
    let trials = |all_passed: u64| {
        let mut report = TrialsReport::new(4);
        for task in 0..100 {
            report.add_task(task, if task < all_passed { 4 } else { 2 }, vec![], None);
        }
        report
    };
    let with = |all_passed: u64| {
        let mut s = scenario("a", 400, &[], false);
        s.trials = Some(trials(all_passed));
        sweep(vec![s])
    };
    let comparison = compare(&with(90), &with(50), Thresholds::default());
    // Pass rate, pass^k, pass@1, tokens.
    assert_eq!(comparison.tests_made, 4);
    let scenario = &comparison.scenarios[0];
    let pass_hat_k = scenario.pass_hat_k.as_ref().unwrap();
    assert_eq!(
        (pass_hat_k.before_passed, pass_hat_k.after_passed),
        (90, 50)
    );
    assert!(pass_hat_k.significant);
    assert_eq!(scenario.verdict, Verdict::Regression);
    assert!(
        scenario.reasons[0].starts_with("pass^k 0.900 → 0.500"),
        "{:?}",
        scenario.reasons
    );
    let json = serde_json::to_string(&comparison).unwrap();
    assert!(json.contains("\"verdict\":\"regression\""), "{json}");
}
