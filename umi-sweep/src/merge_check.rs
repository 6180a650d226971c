//! What `dst merge` checks before it adds shard reports together.
//!
//! Merging once checked nothing: the same shard given twice doubled the counts and read
//! as complete, a missing shard read as complete, and default and swarm shards merged
//! together overwrote each other's per-seed hashes. Each report carries its sweep's
//! identity (commit, seed range, mode, scenarios) and its shard (`i/n`); merging refuses
//! reports of different sweeps or modes and duplicate shards, and says which shards are
//! missing.

use std::collections::BTreeSet;

use crate::report::SweepReport;

/// Why reports cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Two reports come from different sweeps (or modes).
    #[error(
        "report {other} is not a shard of the same sweep as report {first}: its {field} is \
         {other_value}, not {first_value} (merge each sweep, and each mode, on its own)"
    )]
    DifferentSweeps {
        /// The first report's position (1-based, in the order given).
        first: usize,
        /// The other report's position.
        other: usize,
        /// What differs.
        field: &'static str,
        /// The first report's value.
        first_value: String,
        /// The other report's value.
        other_value: String,
    },
    /// The same shard given twice.
    #[error("shard {shard} is given twice (reports {first} and {other})")]
    Duplicate {
        /// The shard, `i/n`.
        shard: String,
        /// The first report holding it.
        first: usize,
        /// The second.
        other: usize,
    },
    /// A report that is not a shard (no `--shard`), or whose shard does not parse.
    #[error("report {report} is {what}, not a shard of a sharded sweep")]
    NotAShard {
        /// The report's position.
        report: usize,
        /// What it is.
        what: String,
    },
}

/// Which shards of the sweep the reports cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardCoverage {
    /// Shards in the sweep (`n` of `i/n`); 1 for a single unsharded report.
    pub count: u64,
    /// The shards no report covers, `i/n`.
    pub missing: Vec<String>,
}

/// Checks that `reports` are distinct shards of one sweep; returns what they cover.
pub fn check_shards(reports: &[SweepReport]) -> Result<ShardCoverage, MergeError> {
    let Some(first) = reports.first() else {
        return Ok(ShardCoverage {
            count: 0,
            missing: Vec::new(),
        });
    };
    for (position, report) in reports.iter().enumerate().skip(1) {
        same_sweep(first, report, position)?;
    }
    if reports.len() == 1 && first.shards.is_empty() {
        return Ok(ShardCoverage {
            count: 1,
            missing: Vec::new(),
        });
    }
    let mut count = None;
    let mut seen: Vec<(u64, usize)> = Vec::new();
    for (position, report) in reports.iter().enumerate() {
        let (index, of) = shard_label(report, position)?;
        if *count.get_or_insert(of) != of {
            return Err(MergeError::DifferentSweeps {
                first: 1,
                other: position + 1,
                field: "shard count",
                first_value: count.unwrap_or(of).to_string(),
                other_value: of.to_string(),
            });
        }
        if let Some((_, earlier)) = seen.iter().find(|(i, _)| *i == index) {
            return Err(MergeError::Duplicate {
                shard: format!("{index}/{of}"),
                first: earlier + 1,
                other: position + 1,
            });
        }
        seen.push((index, position));
    }
    let count = count.unwrap_or(1);
    let present: BTreeSet<u64> = seen.iter().map(|(i, _)| *i).collect();
    let missing = (1..=count)
        .filter(|i| !present.contains(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    Ok(ShardCoverage { count, missing })
}

/// Refuses `report` (at `position`, 0-based) when it is of another sweep than `first`:
/// another commit, seed range, mode or scenario list.
fn same_sweep(
    first: &SweepReport,
    report: &SweepReport,
    position: usize,
) -> Result<(), MergeError> {
    let differs = |field: &'static str, a: String, b: String| {
        (a != b).then(|| MergeError::DifferentSweeps {
            first: 1,
            other: position + 1,
            field,
            first_value: a,
            other_value: b,
        })
    };
    let scenarios = |r: &SweepReport| {
        r.scenarios
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
            .join(",")
    };
    let checks = [
        differs(
            "commit",
            format!("{:?}", first.commit),
            format!("{:?}", report.commit),
        ),
        differs(
            "seed range",
            format!("{}+{}", first.seed_start, first.seeds),
            format!("{}+{}", report.seed_start, report.seeds),
        ),
        differs("mode", mode(first).to_owned(), mode(report).to_owned()),
        differs("scenario list", scenarios(first), scenarios(report)),
        differs(
            "trials per task",
            format!("{:?}", first.trials),
            format!("{:?}", report.trials),
        ),
        differs(
            "price table",
            format!("{:?}", first.prices),
            format!("{:?}", report.prices),
        ),
        differs(
            "report schema",
            first.schema.to_string(),
            report.schema.to_string(),
        ),
    ];
    match checks.into_iter().flatten().next() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The shard `i/n` a report (at `position`, 0-based) says it is; a whole sweep, a merge,
/// or a label that is not `i/n` with `1 <= i <= n` is refused.
fn shard_label(report: &SweepReport, position: usize) -> Result<(u64, u64), MergeError> {
    let [shard] = report.shards.as_slice() else {
        return Err(MergeError::NotAShard {
            report: position + 1,
            what: if report.shards.is_empty() {
                "a whole sweep".to_owned()
            } else {
                format!("already a merge of {}", report.shards.join(" "))
            },
        });
    };
    shard
        .split_once('/')
        .and_then(|(i, n)| Some((i.parse::<u64>().ok()?, n.parse::<u64>().ok()?)))
        .filter(|(i, n)| (1..=*n).contains(i))
        .ok_or_else(|| MergeError::NotAShard {
            report: position + 1,
            what: format!("labelled shard {shard:?}"),
        })
}

fn mode(report: &SweepReport) -> &'static str {
    if report.swarm { "swarm" } else { "default" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(label: &str) -> SweepReport {
        SweepReport {
            commit: Some("abc".into()),
            seed_start: 1,
            seeds: 100,
            shards: vec![label.to_owned()],
            ..SweepReport::default()
        }
    }

    /// Shards of another k (review: merging them added pass counts of different lengths),
    /// another price table or another report schema are not the same sweep.
    #[test]
    fn shards_of_other_trials_prices_or_schemas_are_refused() {
        type Change = fn(&mut SweepReport);
        let cases: [(&str, Change); 3] = [
            ("trials per task", |r| r.trials = Some(8)),
            ("price table", |r| r.prices = Some("other.toml".into())),
            ("report schema", |r| r.schema = 1),
        ];
        for (field, change) in cases {
            let mut other = shard("2/2");
            change(&mut other);
            let error = check_shards(&[shard("1/2"), other]).unwrap_err();
            assert!(error.to_string().contains(field), "{field}: {error}");
        }
    }

    #[test]
    fn complete_partial_duplicate_and_foreign_shards() {
        let all = [shard("1/3"), shard("2/3"), shard("3/3")];
        assert_eq!(check_shards(&all).unwrap().missing, Vec::<String>::new());

        let partial = [shard("1/3"), shard("3/3")];
        assert_eq!(check_shards(&partial).unwrap().missing, ["2/3"]);

        let twice = [shard("1/2"), shard("1/2")];
        assert!(matches!(
            check_shards(&twice),
            Err(MergeError::Duplicate { .. })
        ));

        let mut swarm = shard("2/2");
        swarm.swarm = true;
        let error = check_shards(&[shard("1/2"), swarm]).unwrap_err();
        assert!(
            error.to_string().contains("mode is swarm, not default"),
            "{error}"
        );

        let mut other_range = shard("2/2");
        other_range.seed_start = 1_000;
        assert!(check_shards(&[shard("1/2"), other_range]).is_err());

        let mut whole = shard("1/2");
        whole.shards.clear();
        assert!(matches!(
            check_shards(&[shard("1/2"), whole]),
            Err(MergeError::NotAShard { .. })
        ));
        assert!(check_shards(&[shard("1/2"), shard("2/3")]).is_err());
        assert!(check_shards(&[shard("0/2")]).is_err());
    }
}
