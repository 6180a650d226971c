//! Whether two sweep reports can be compared at all, checked before any test is made.
//!
//! A difference between two sweeps means something only when they ran the same thing:
//! the same report format, the same seeds, the same mode (swarm, determinism checks,
//! trials per task), the same scenarios, and each the whole of its range (a sweep
//! stopped early, or one shard of a sharded sweep, ran a subset of the seeds, and its
//! subset differs from the other's). Anything else is refused with the field and both
//! values named. A different Umi version alone is only a warning: comparing two builds
//! is what the command is for.

use std::collections::BTreeSet;

use crate::report::SweepReport;

/// Why two reports cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotComparable {
    /// Different report formats.
    #[error(
        "report schema {before} vs {after}: rerun the older sweep with this build (the \
         reports were written by umi {before_version} and {after_version})"
    )]
    Schema {
        /// BEFORE's schema.
        before: u32,
        /// AFTER's schema.
        after: u32,
        /// BEFORE's Umi version (`?` when it has none).
        before_version: String,
        /// AFTER's Umi version.
        after_version: String,
    },
    /// A field of the sweep's identity differs.
    #[error(
        "the sweeps differ in {field}: {before} in BEFORE, {after} in AFTER (compare sweeps \
         of the same seeds in the same mode)"
    )]
    Differs {
        /// What differs.
        field: &'static str,
        /// BEFORE's value.
        before: String,
        /// AFTER's value.
        after: String,
    },
    /// The scenario lists differ.
    #[error(
        "the sweeps ran different scenarios: only in BEFORE: {}; only in AFTER: {}",
        names_or_none(only_before),
        names_or_none(only_after)
    )]
    Scenarios {
        /// Scenarios only BEFORE ran.
        only_before: Vec<String>,
        /// Scenarios only AFTER ran.
        only_after: Vec<String>,
    },
    /// A sweep that stopped before its last run.
    #[error(
        "{which} is an incomplete sweep (completed: false, {stopped}): it ran part of its \
         range; rerun it to the end (its report's `resume` says how)"
    )]
    Incomplete {
        /// `BEFORE` or `AFTER`.
        which: &'static str,
        /// Why it stopped, as the report says.
        stopped: String,
    },
    /// A resumed sweep's report (`--skip-runs`): the rest of a stopped sweep, not the
    /// whole range.
    #[error(
        "{which} is the report of a resumed sweep (its first {runs_skipped} runs are in the \
         stopped sweep's report): `dst merge` the two, then compare the merged report"
    )]
    Resumed {
        /// `BEFORE` or `AFTER`.
        which: &'static str,
        /// The runs the resume skipped.
        runs_skipped: u64,
    },
    /// One shard, or a merge of some shards, of a sharded sweep.
    #[error(
        "{which} is a partial shard report (shards {shards}; missing {missing}): merge every \
         shard with `dst merge --require-complete` first"
    )]
    PartialShard {
        /// `BEFORE` or `AFTER`.
        which: &'static str,
        /// The shards it covers.
        shards: String,
        /// The shards it lacks.
        missing: String,
    },
}

fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Checks that `before` and `after` can be compared; returns the warnings to print
/// (a different Umi version or price table).
pub fn check_comparable(
    before: &SweepReport,
    after: &SweepReport,
) -> Result<Vec<String>, NotComparable> {
    let version = |r: &SweepReport| {
        if r.umi_version.is_empty() {
            "?".to_owned()
        } else {
            r.umi_version.clone()
        }
    };
    if before.schema != after.schema {
        return Err(NotComparable::Schema {
            before: before.schema,
            after: after.schema,
            before_version: version(before),
            after_version: version(after),
        });
    }
    for (which, report) in [("BEFORE", before), ("AFTER", after)] {
        whole_sweep(which, report)?;
    }
    same_sweep(before, after)?;
    same_scenarios(before, after)?;
    let mut warnings = Vec::new();
    if before.umi_version != after.umi_version {
        warnings.push(format!(
            "the reports were written by different Umi versions ({} vs {}): compared anyway",
            version(before),
            version(after)
        ));
    }
    if before.prices != after.prices {
        warnings.push(format!(
            "the sweeps priced runs with different tables ({} vs {}): cost differences may \
             be the tables'",
            before.prices.as_deref().unwrap_or("none"),
            after.prices.as_deref().unwrap_or("none")
        ));
    }
    Ok(warnings)
}

/// Refuses a report that did not run its whole range: stopped early, or a partial
/// shard.
fn whole_sweep(which: &'static str, report: &SweepReport) -> Result<(), NotComparable> {
    if !report.completed {
        return Err(NotComparable::Incomplete {
            which,
            stopped: report
                .stopped
                .clone()
                .unwrap_or_else(|| "stopped before its last run".to_owned()),
        });
    }
    if report.runs_skipped > 0 {
        return Err(NotComparable::Resumed {
            which,
            runs_skipped: report.runs_skipped,
        });
    }
    let missing = missing_shards(&report.shards);
    if missing.is_empty() {
        return Ok(());
    }
    Err(NotComparable::PartialShard {
        which,
        shards: report.shards.join(" "),
        missing: missing.join(" "),
    })
}

/// The shards `i/n` of the sweep that `shards` (a report's labels) lacks: none for an
/// unsharded report or a complete merge. A label that is not `i/n` lacks the whole.
fn missing_shards(shards: &[String]) -> Vec<String> {
    if shards.is_empty() {
        return Vec::new();
    }
    let parsed: Vec<Option<(u64, u64)>> = shards
        .iter()
        .map(|label| {
            let (i, n) = label.split_once('/')?;
            let (i, n) = (i.parse::<u64>().ok()?, n.parse::<u64>().ok()?);
            (1..=n).contains(&i).then_some((i, n))
        })
        .collect();
    let counts: BTreeSet<u64> = parsed.iter().flatten().map(|(_, n)| *n).collect();
    let (Some(&count), 1, true) = (
        counts.first(),
        counts.len(),
        parsed.iter().all(Option::is_some),
    ) else {
        return vec!["the labels do not name shards of one sweep".to_owned()];
    };
    let present: BTreeSet<u64> = parsed.iter().flatten().map(|(i, _)| *i).collect();
    // At most as many missing shards as the report has labels short of the count,
    // listed up to a handful (a 1/1000 shard lacks 999).
    let missing_listed_max = 8;
    let missing: Vec<String> = (1..=count)
        .filter(|i| !present.contains(i))
        .take(missing_listed_max)
        .map(|i| format!("{i}/{count}"))
        .collect();
    let missing_total = count.saturating_sub(present.len() as u64);
    if missing_total > missing.len() as u64 {
        let mut listed = missing;
        listed.push(format!("and {} more", missing_total - listed.len() as u64));
        return listed;
    }
    missing
}

/// Refuses reports of different seed ranges or modes.
fn same_sweep(before: &SweepReport, after: &SweepReport) -> Result<(), NotComparable> {
    let differs = |field: &'static str, a: String, b: String| {
        (a != b).then_some(NotComparable::Differs {
            field,
            before: a,
            after: b,
        })
    };
    let trials = |r: &SweepReport| r.trials.map_or("none".to_owned(), |k| k.to_string());
    let checks = [
        differs(
            "seed_start",
            before.seed_start.to_string(),
            after.seed_start.to_string(),
        ),
        differs("seeds", before.seeds.to_string(), after.seeds.to_string()),
        differs("swarm", before.swarm.to_string(), after.swarm.to_string()),
        differs(
            "check_determinism",
            before.check_determinism.to_string(),
            after.check_determinism.to_string(),
        ),
        differs("trials", trials(before), trials(after)),
    ];
    match checks.into_iter().flatten().next() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Refuses reports of different scenario sets (order does not matter).
fn same_scenarios(before: &SweepReport, after: &SweepReport) -> Result<(), NotComparable> {
    let names = |r: &SweepReport| -> BTreeSet<String> {
        r.scenarios.iter().map(|s| s.name.clone()).collect()
    };
    let (a, b) = (names(before), names(after));
    if a == b {
        return Ok(());
    }
    Err(NotComparable::Scenarios {
        only_before: a.difference(&b).cloned().collect(),
        only_after: b.difference(&a).cloned().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ScenarioReport;

    fn report() -> SweepReport {
        SweepReport {
            schema: crate::report::REPORT_SCHEMA,
            umi_version: "0.1.0".into(),
            seed_start: 1,
            seeds: 100,
            completed: true,
            scenarios: ["a", "b"]
                .map(|name| ScenarioReport {
                    name: name.into(),
                    ..ScenarioReport::default()
                })
                .to_vec(),
            ..SweepReport::default()
        }
    }

    /// An edit of a report.
    type Change = dyn Fn(&mut SweepReport);

    fn refusal(change: &Change) -> String {
        let mut after = report();
        change(&mut after);
        check_comparable(&report(), &after)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn each_field_of_the_sweep_is_checked_and_named_with_both_values() {
        let table: [(&str, &Change); 9] = [
            ("report schema 2 vs 1", &|r| r.schema = 1),
            ("seed_start: 1 in BEFORE, 7 in AFTER", &|r| r.seed_start = 7),
            ("seeds: 100 in BEFORE, 40 in AFTER", &|r| r.seeds = 40),
            ("swarm: false in BEFORE, true in AFTER", &|r| r.swarm = true),
            ("check_determinism: false in BEFORE, true", &|r| {
                r.check_determinism = true;
            }),
            ("trials: none in BEFORE, 4 in AFTER", &|r| {
                r.trials = Some(4);
            }),
            ("only in BEFORE: b; only in AFTER: c", &|r| {
                r.scenarios[1].name = "c".into();
            }),
            (
                "AFTER is an incomplete sweep (completed: false, time budget)",
                &|r| {
                    r.completed = false;
                    r.stopped = Some("time budget".into());
                },
            ),
            (
                "AFTER is a partial shard report (shards 1/3 3/3; missing 2/3)",
                &|r| {
                    r.shards = vec!["1/3".into(), "3/3".into()];
                },
            ),
        ];
        for (expected, change) in table {
            let message = refusal(change);
            assert!(
                message.contains(expected),
                "{message}\nexpected: {expected}"
            );
        }
        assert!(refusal(&|r| r.schema = 1).contains("rerun the older sweep with this build"));
    }

    #[test]
    fn versions_and_prices_only_warn_and_whole_merges_pass() {
        let mut after = report();
        after.umi_version = "0.2.0".into();
        after.shards = vec!["2/2".into(), "1/2".into()];
        let warnings = check_comparable(&report(), &after).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("0.1.0 vs 0.2.0"), "{warnings:?}");
        after.prices = Some("prices.toml".into());
        assert_eq!(check_comparable(&report(), &after).unwrap().len(), 2);
        assert_eq!(missing_shards(&["1/1".to_owned()]), Vec::<String>::new());
        assert_eq!(missing_shards(&["1/1000".to_owned()]).len(), 9);
        assert_eq!(missing_shards(&["x".to_owned()]).len(), 1);
    }

    /// Pins the review's finding: a resume's report says `completed` (it made every run
    /// it planned) and names no shard, yet holds only the rest of the range.
    #[test]
    fn a_resumed_sweeps_report_is_not_the_whole_sweep() {
        let says = refusal(&|r| r.runs_skipped = 40);
        assert!(
            says.contains("AFTER is the report of a resumed sweep"),
            "{says}"
        );
        assert!(says.contains("first 40 runs"), "{says}");
    }
}
