//! What the explorer needs to know of one run of a path, whatever ran it: the failure, the
//! step at which each mark was first hit, each watermark with the step where it peaked
//! (`umi_dst::Watermark`),
//! the faults injected with their steps, the steps taken. [`PathRunner`] is the one thing
//! the engine calls, so it runs on a scenario ([`super::runner::ScenarioRunner`]) and, in
//! tests, on toy models that need no simulation.

use std::collections::BTreeMap;

use super::{RunPath, Watermark};

/// A fault injected on a run: its kind, the operation it fired on, the step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultAt {
    /// The fault kind (`llm.timeout`).
    pub kind: String,
    /// The operation (`llm.complete`).
    pub operation: String,
    /// The first step from which a branch keeps the injection.
    pub step: u64,
}

/// One run of a path, as the explorer sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathOutcome {
    /// The failure class (its `Display` name: `correctness`) and message, if it failed.
    pub failure: Option<(String, String)>,
    /// Every mark hit, with the step of its first hit: the first step from which a
    /// branch keeps it (the steps taken when it happened, plus one; see
    /// `umi_dst::Watermark`), as are the other steps here.
    pub mark_steps: BTreeMap<String, u64>,
    /// Every watermark, with its maximum and the step it was first reached.
    pub watermarks: BTreeMap<String, Watermark>,
    /// The faults injected, in order.
    pub faults: Vec<FaultAt>,
    /// Steps taken.
    pub steps: u64,
}

/// Runs one path (each run its own simulation; called from several threads at once).
pub trait PathRunner: Sync {
    /// Runs `path` to its end.
    fn run(&self, path: &RunPath) -> PathOutcome;
}
