//! Shards share a frontier through files: each shard writes its report to
//! `DIR/explore-<scenario>-<k>-of-<n>.json` and, when it starts, reruns the frontier
//! paths of the reports already there (another shard's, last night's), so no shard
//! starts from nothing. [`merge`] combines shard reports into one, as `dst merge` does
//! for sweeps: runs add up, each target keeps the best first reach, the first failure is
//! the one found in the fewest runs.

use std::path::{Path, PathBuf};

use super::RunPath;
use super::corpus::Entry;
use super::coverage::Coverage;
use super::options::{CORPUS_ENTRIES_MAX, ExploreError, FRONTIER_PATHS_MAX};
use super::report::{ExploreReport, StopReason, never_reached};
use crate::plan::Shard;

/// The file shard `shard` of `scenario` writes in a frontier directory.
pub fn shard_file(dir: &Path, scenario: &str, shard: Option<Shard>) -> PathBuf {
    let name = match shard {
        Some(shard) => format!(
            "explore-{scenario}-{}-of-{}.json",
            shard.index + 1,
            shard.count
        ),
        None => format!("explore-{scenario}.json"),
    };
    dir.join(name)
}

/// Reads a report; the error names the file and, for bad JSON, the line and column.
pub fn read_report(path: &Path) -> Result<ExploreReport, ExploreError> {
    let file = |reason: String| ExploreError::File {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|error| file(error.to_string()))?;
    serde_json::from_str(&text).map_err(|error| file(error.to_string()))
}

/// Writes `report` as JSON to `path` (creating its directory); the error names the file.
pub fn write_report(path: &Path, report: &ExploreReport) -> Result<(), ExploreError> {
    let file = |reason: String| ExploreError::File {
        path: path.to_owned(),
        reason,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|error| file(error.to_string()))?;
    }
    let json = serde_json::to_string_pretty(report).map_err(|error| file(error.to_string()))?;
    std::fs::write(path, json + "\n").map_err(|error| file(error.to_string()))
}

/// Every `*.json` report in `dir`, by file name.
pub fn read_dir(dir: &Path) -> Result<Vec<(PathBuf, ExploreReport)>, ExploreError> {
    let listing = std::fs::read_dir(dir).map_err(|error| ExploreError::File {
        path: dir.to_owned(),
        reason: error.to_string(),
    })?;
    let mut files: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| read_report(&path).map(|report| (path, report)))
        .collect()
}

/// The paths to rerun first: the frontier entries and first reaches of `scenario`'s
/// reports in `dir` (none when `dir` does not exist yet), deduplicated, at most
/// [`FRONTIER_PATHS_MAX`].
pub fn frontier_paths(dir: &Path, scenario: &str) -> Result<Vec<RunPath>, ExploreError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<RunPath> = Vec::new();
    for (_, report) in read_dir(dir)? {
        if report.scenario != scenario {
            continue;
        }
        let reached = report.reached.iter().map(|reached| &reached.path);
        for path in report
            .frontier
            .iter()
            .map(|entry| &entry.path)
            .chain(reached)
        {
            if paths.len() < FRONTIER_PATHS_MAX && !paths.contains(path) {
                paths.push(path.clone());
            }
        }
    }
    Ok(paths)
}

/// Combines the reports in `files` (all of one scenario; the error names the file that
/// is not).
pub fn merge(files: &[(PathBuf, ExploreReport)]) -> Result<ExploreReport, ExploreError> {
    let Some((_, first)) = files.first() else {
        return Err(ExploreError::Option {
            option: "--merge",
            reason: "no report (*.json) to merge".to_owned(),
        });
    };
    let mut merged = first.clone();
    merged.stopped = StopReason::Merged;
    merged.shard = None;
    let mut coverage = Coverage::default();
    let mut frontier: Vec<Entry> = Vec::new();
    for (path, report) in files {
        if report.scenario != first.scenario {
            return Err(ExploreError::Scenario {
                path: path.clone(),
                expected: first.scenario.clone(),
                found: report.scenario.clone(),
            });
        }
        report
            .reached
            .iter()
            .cloned()
            .for_each(|r| coverage.insert(r));
        for entry in &report.frontier {
            if frontier.len() < CORPUS_ENTRIES_MAX && !frontier.iter().any(|e| e.path == entry.path)
            {
                frontier.push(entry.clone());
            }
        }
        if !std::ptr::eq(report, first) {
            merged.runs += report.runs;
            merged.elapsed = merged.elapsed.max(report.elapsed);
            merged.swarm |= report.swarm;
            for name in &report.declared {
                if !merged.declared.contains(name) {
                    merged.declared.push(name.clone());
                }
            }
        }
        let fewer = |found: &super::report::FoundFailure| {
            merged
                .first_failure
                .as_ref()
                .is_none_or(|old| found.run < old.run)
        };
        if let Some(found) = report.first_failure.as_ref().filter(|found| fewer(found)) {
            merged.first_failure = Some(found.clone());
        }
    }
    merged.reached = coverage.reached();
    merged.never_reached = never_reached(&merged.declared, &merged.reached);
    merged.frontier = frontier;
    Ok(merged)
}
