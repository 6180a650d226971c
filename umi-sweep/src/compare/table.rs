//! A comparison as a table for people: the tests and the level, a row per scenario
//! (pass rate before → after, Δ, p, the test, the verdict), a line per significant
//! change beneath it, and the result.

use std::fmt::Write as _;

use super::{Comparison, QuantityChange, RateChange, ScenarioComparison, Verdict};

/// A p-value as the table prints it.
pub(super) fn p_text(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// An optional count as the table prints it (`-` when absent).
pub(super) fn value_text(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// A relative change as the table prints it (`n/a` when it has no base).
pub(super) fn percent_text(percent: Option<f64>) -> String {
    percent.map_or_else(|| "n/a".to_owned(), |p| format!("{p:+.1}%"))
}

impl Comparison {
    /// The table for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
        let _ = writeln!(
            out,
            "{} tests: pass rate by McNemar's exact test when both reports list every \
             failing seed (same seeds, paired), else a two-proportion z-test (Fisher's \
             exact when an expected count is below 5); pass^k and pass@1 by the same \
             two-proportion test; usage by a two-sample Kolmogorov-Smirnov test over the \
             buckets.\nalpha {} with a Bonferroni correction: significant when p < {} \
             per test. Gate: pass-rate or pass^k drop > {}, cost p95 rise > {}%.\n",
            self.tests_made,
            self.thresholds.alpha,
            p_text(self.alpha_per_test),
            self.thresholds.max_pass_drop,
            self.thresholds.max_cost_increase_percent
        );
        let _ = writeln!(
            out,
            "{:<30} {:>15} {:>8} {:>9} {:<8} verdict",
            "scenario", "pass rate", "Δ", "p", "test"
        );
        for scenario in &self.scenarios {
            scenario_lines(&mut out, scenario);
        }
        let _ = writeln!(out, "{}", self.result_line());
        out
    }

    /// The last line: the regressions by name, or that there are none.
    pub fn result_line(&self) -> String {
        let named = |verdict: Verdict| -> Vec<&str> {
            self.scenarios
                .iter()
                .filter(|s| s.verdict == verdict)
                .map(|s| s.name.as_str())
                .collect()
        };
        let regressed = named(Verdict::Regression);
        if !regressed.is_empty() {
            return format!("REGRESSION in {}", regressed.join(", "));
        }
        let improved = named(Verdict::Improvement);
        let changed = self
            .scenarios
            .iter()
            .any(|s| matches!(s.verdict, Verdict::Changed | Verdict::Improvement));
        match (improved.is_empty(), changed) {
            (false, _) => format!("no regression; improvement in {}", improved.join(", ")),
            (true, true) => "no regression (changes within the thresholds)".to_owned(),
            (true, false) => "no regression: no change larger than the noise".to_owned(),
        }
    }
}

/// A scenario's row and the lines of its significant changes and reasons.
fn scenario_lines(out: &mut String, scenario: &ScenarioComparison) {
    let rate = &scenario.pass_rate;
    let _ = writeln!(
        out,
        "{:<30} {:>15} {:>+8.3} {:>9} {:<8} {}",
        scenario.name,
        format!("{:.3} → {:.3}", rate.before, rate.after),
        rate.delta,
        p_text(rate.p_value),
        rate.test.short_name(),
        scenario.verdict.label()
    );
    let trials = [
        ("pass^k", scenario.pass_hat_k.as_ref()),
        ("pass@1", scenario.pass_at_1.as_ref()),
    ];
    for (what, change) in trials {
        if let Some(change) = change {
            rate_line(out, what, change);
        }
    }
    for quantity in scenario.quantities.iter().filter(|q| q.significant) {
        quantity_line(out, quantity);
    }
    for reason in &scenario.reasons {
        let _ = writeln!(out, "  {}: {reason}", scenario.verdict.label());
    }
}

fn rate_line(out: &mut String, what: &str, change: &RateChange) {
    let _ = writeln!(
        out,
        "  {what} {:.3} → {:.3} ({}/{} → {}/{}), Δ {:+.3}, p {} ({}){}",
        change.before,
        change.after,
        change.before_passed,
        change.before_total,
        change.after_passed,
        change.after_total,
        change.delta,
        p_text(change.p_value),
        change.test.short_name(),
        if change.significant {
            ": significant"
        } else {
            ""
        }
    );
}

fn quantity_line(out: &mut String, quantity: &QuantityChange) {
    let triple = |p: &super::Percentiles| {
        format!(
            "{}/{}/{}",
            value_text(p.p50),
            value_text(p.p95),
            value_text(p.p99)
        )
    };
    let change =
        |b: Option<u64>, a: Option<u64>| percent_text(super::relative_change_percent(b, a));
    let _ = writeln!(
        out,
        "  {} p50/p95/p99 {} → {} ({} / {} / {}), KS D {:.3}, p {}",
        quantity.quantity,
        triple(&quantity.before),
        triple(&quantity.after),
        change(quantity.before.p50, quantity.after.p50),
        change(quantity.before.p95, quantity.after.p95),
        change(quantity.before.p99, quantity.after.p99),
        quantity.ks_d.unwrap_or(0.0),
        p_text(quantity.p_value.unwrap_or(1.0))
    );
}
