//! What `dst merge` checks before it adds shard reports together.
//!
//! Merging once checked nothing: the same shard given twice doubled the counts and read
//! as complete, a missing shard read as complete, and default and swarm shards merged
//! together overwrote each other's per-seed hashes. Each report carries its sweep's
//! identity (commit, seed range, mode, scenarios) and its shard (`i/n`); merging refuses
//! reports of different sweeps or modes and runs given twice, and says which shards and
//! which runs are missing.
//!
//! A shard may come in several reports: one stopped early (a time budget, a signal) and
//! the resumes its `resume` command ran (`--skip-runs`: the same range and shard, from
//! the first run not made). Each report covers the runs numbered
//! `runs_skipped .. runs_skipped + runs_done` of its shard's plan; the reports of a shard
//! must not overlap (a run counted twice) and, for the merge to be complete, must leave
//! no gap.

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
    /// The same runs of a shard given twice (the same shard twice, or a resume that
    /// overlaps).
    #[error("shard {shard} is given twice: reports {first} and {other} both made its runs {runs}")]
    Duplicate {
        /// The shard, `i/n`.
        shard: String,
        /// The runs both made, `from..to` in the shard's numbering.
        runs: String,
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

/// Which shards and runs of the sweep the reports cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardCoverage {
    /// Shards in the sweep (`n` of `i/n`); 1 for an unsharded sweep.
    pub count: u64,
    /// The shards no report covers, `i/n`.
    pub missing: Vec<String>,
    /// The runs of the shards present that no report made.
    pub gaps: Vec<RunGap>,
    /// Runs in the plans of the shards present (each shard's whole plan, however many
    /// reports it came in).
    pub runs_planned: u64,
}

/// Runs of a shard no report made: `runs_from..runs_to` of its `runs_total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunGap {
    /// The shard, `i/n`.
    pub shard: String,
    /// The first run not made.
    pub runs_from: u64,
    /// One past the last.
    pub runs_to: u64,
    /// Runs in the shard's plan.
    pub runs_total: u64,
}

impl ShardCoverage {
    /// Whether every run of every shard is in a report, once.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.gaps.is_empty()
    }

    /// What is missing, for people: the shards, then the runs of the shards present
    /// (empty when complete).
    pub fn describe_missing(&self) -> String {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!(
                "{} of {} shards missing: {}",
                self.missing.len(),
                self.count,
                self.missing.join(", ")
            ));
        }
        for gap in &self.gaps {
            parts.push(format!(
                "shard {}: runs {}..{} of {} not made (run its report's resume command)",
                gap.shard, gap.runs_from, gap.runs_to, gap.runs_total
            ));
        }
        parts.join("; ")
    }
}

/// One report's share of its shard: the runs it made, in the shard's numbering.
struct Share {
    shard: u64,
    runs_from: u64,
    runs_to: u64,
    runs_total: u64,
    position: usize,
}

/// Checks that `reports` are shards of one sweep (a shard possibly in several reports,
/// stopped and resumed) that make no run twice; returns what they cover.
pub fn check_shards(reports: &[SweepReport]) -> Result<ShardCoverage, MergeError> {
    let Some(first) = reports.first() else {
        return Ok(ShardCoverage {
            count: 0,
            missing: Vec::new(),
            gaps: Vec::new(),
            runs_planned: 0,
        });
    };
    for (position, report) in reports.iter().enumerate().skip(1) {
        same_sweep(first, report, position)?;
    }
    let unsharded = reports.iter().all(|r| r.shards.is_empty());
    let mut count = None;
    let mut shares = Vec::new();
    for (position, report) in reports.iter().enumerate() {
        let (index, of) = if unsharded {
            (1, 1)
        } else {
            shard_label(report, position)?
        };
        if *count.get_or_insert(of) != of {
            return Err(MergeError::DifferentSweeps {
                first: 1,
                other: position + 1,
                field: "shard count",
                first_value: count.unwrap_or(of).to_string(),
                other_value: of.to_string(),
            });
        }
        shares.push(Share {
            shard: index,
            runs_from: report.runs_skipped,
            runs_to: report.runs_skipped.saturating_add(report.runs_done),
            runs_total: report.runs_skipped.saturating_add(report.runs_planned),
            position,
        });
    }
    coverage(count.unwrap_or(1), shares)
}

/// The coverage of each shard's shares: overlaps refused, gaps listed.
fn coverage(count: u64, mut shares: Vec<Share>) -> Result<ShardCoverage, MergeError> {
    shares.sort_by_key(|s| (s.shard, s.runs_from, s.runs_to));
    let mut out = ShardCoverage {
        count,
        missing: Vec::new(),
        gaps: Vec::new(),
        runs_planned: 0,
    };
    for index in 1..=count {
        let label = format!("{index}/{count}");
        let mine: Vec<&Share> = shares.iter().filter(|s| s.shard == index).collect();
        let Some(first) = mine.first() else {
            out.missing.push(label);
            continue;
        };
        let runs_total = first.runs_total;
        if let Some(other) = mine.iter().find(|s| s.runs_total != runs_total) {
            return Err(MergeError::DifferentSweeps {
                first: first.position + 1,
                other: other.position + 1,
                field: "runs in the shard",
                first_value: runs_total.to_string(),
                other_value: other.runs_total.to_string(),
            });
        }
        out.runs_planned = out.runs_planned.saturating_add(runs_total);
        let mut made_to = 0;
        let mut previous: Option<&Share> = None;
        // A report that made no run overlaps nothing (a resume stopped before its first).
        for share in mine.into_iter().filter(|s| s.runs_to > s.runs_from) {
            if let Some(before) = previous.filter(|b| share.runs_from < b.runs_to) {
                return Err(MergeError::Duplicate {
                    shard: label,
                    runs: format!("{}..{}", share.runs_from, before.runs_to.min(share.runs_to)),
                    first: before.position.min(share.position) + 1,
                    other: before.position.max(share.position) + 1,
                });
            }
            if share.runs_from > made_to {
                out.gaps
                    .push(gap(&label, made_to, share.runs_from, runs_total));
            }
            made_to = made_to.max(share.runs_to);
            previous = Some(share);
        }
        if made_to < runs_total {
            out.gaps.push(gap(&label, made_to, runs_total, runs_total));
        }
    }
    Ok(out)
}

fn gap(shard: &str, runs_from: u64, runs_to: u64, runs_total: u64) -> RunGap {
    RunGap {
        shard: shard.to_owned(),
        runs_from,
        runs_to,
        runs_total,
    }
}

/// Checks `reports` ([`check_shards`]) and merges them: counts summed, the merged report
/// complete only when every run of every shard is in it, its plan the shards' whole
/// plans (a shard's stopped report and its resumes count as one).
pub fn merge(reports: &[SweepReport]) -> Result<(SweepReport, ShardCoverage), MergeError> {
    let coverage = check_shards(reports)?;
    let mut merged = SweepReport::merge(reports);
    merged.completed = coverage.is_complete();
    merged.runs_planned = coverage.runs_planned;
    merged.runs_skipped = 0;
    let mut seen = BTreeSet::new();
    merged.shards.retain(|shard| seen.insert(shard.clone()));
    Ok((merged, coverage))
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
            runs_planned: 10,
            runs_done: 10,
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

    /// A shard's report with its runs `from..to` of `total` made.
    fn share(label: &str, from: u64, to: u64, total: u64) -> SweepReport {
        SweepReport {
            runs_skipped: from,
            runs_done: to - from,
            runs_planned: total - from,
            ..shard(label)
        }
    }

    #[test]
    fn a_stopped_shard_and_its_resumes_are_one_shard() {
        let whole = |label| share(label, 0, 30, 30);
        let resumed = [
            share("1/2", 0, 7, 30),
            share("1/2", 7, 20, 30),
            share("1/2", 20, 30, 30),
        ];
        let mut reports = vec![whole("2/2")];
        reports.extend(resumed.iter().cloned());
        let coverage = check_shards(&reports).unwrap();
        assert!(coverage.is_complete(), "{coverage:?}");
        assert_eq!(coverage.runs_planned, 60);

        // Without the last resume: its runs are missing, and said.
        let coverage = check_shards(&reports[..3]).unwrap();
        assert!(!coverage.is_complete());
        assert_eq!(
            coverage.describe_missing(),
            "shard 1/2: runs 20..30 of 30 not made (run its report's resume command)"
        );
        // A gap in the middle, and a shard missing altogether.
        let coverage = check_shards(&[resumed[0].clone(), resumed[2].clone()]).unwrap();
        assert_eq!(coverage.missing, ["2/2"]);
        assert_eq!(
            (coverage.gaps[0].runs_from, coverage.gaps[0].runs_to),
            (7, 20)
        );

        // A resume that overlaps the stopped report makes runs twice: refused.
        let error = check_shards(&[share("1/2", 0, 8, 30), share("1/2", 7, 30, 30)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shard 1/2 is given twice: reports 1 and 2 both made its runs 7..8"
        );
    }
}
