//! What an exploration has reached: marks, watermark maxima, (fault kind, operation)
//! combinations and failure classes ([`Target`]), each with the path and run that first
//! got there. A run's novelties are the targets it reached first (or, for a watermark, a
//! higher value), each with the step where it got there: the points to branch from.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::RunPath;
use super::outcome::PathOutcome;

/// Something a run can reach.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A coverage or steering mark was hit.
    Mark {
        /// The mark's name.
        name: String,
    },
    /// A `maximize!` mark's value (the best is in [`Reached::value`]).
    Watermark {
        /// The mark's name.
        name: String,
    },
    /// A fault of a kind injected on an operation.
    Fault {
        /// The fault kind.
        fault: String,
        /// The operation.
        operation: String,
    },
    /// A failure of a class.
    Failure {
        /// The class (`correctness`).
        class: String,
    },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Mark { name } => write!(f, "mark {name:?}"),
            Target::Watermark { name } => write!(f, "watermark {name:?}"),
            Target::Fault { fault, operation } => write!(f, "fault {fault} on {operation}"),
            Target::Failure { class } => write!(f, "failure ({class})"),
        }
    }
}

/// A target reached, and how it was first reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reached {
    /// What was reached.
    pub target: Target,
    /// For a watermark, the best value (reached first by `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// The path that first reached it.
    pub path: RunPath,
    /// That path's run index in the exploration (from 0).
    pub run: u64,
    /// The step at which that run got there.
    pub step: u64,
}

/// A target a run reached first, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Novelty {
    /// What.
    pub target: Target,
    /// The step where the run got there.
    pub step: u64,
}

/// Every target reached so far.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    reached: BTreeMap<Target, Reached>,
}

impl Coverage {
    /// Records `outcome` (run `run` of `path`) and returns what it reached first.
    pub fn absorb(&mut self, outcome: &PathOutcome, path: &RunPath, run: u64) -> Vec<Novelty> {
        let mut novelties = Vec::new();
        for (target, value, step) in targets(outcome) {
            let new = match (self.reached.get(&target), value) {
                (None, _) => true,
                (Some(old), Some(value)) => old.value.is_some_and(|best| value > best),
                (Some(_), None) => false,
            };
            if new {
                novelties.push(Novelty {
                    target: target.clone(),
                    step,
                });
                let reached = Reached {
                    target: target.clone(),
                    value,
                    path: path.clone(),
                    run,
                    step,
                };
                self.reached.insert(target, reached);
            }
        }
        novelties
    }

    /// Records a target reached elsewhere (a merged shard's), keeping the better one.
    pub fn insert(&mut self, reached: Reached) {
        let keep_old = self
            .reached
            .get(&reached.target)
            .is_some_and(|old| old.value.unwrap_or(0) >= reached.value.unwrap_or(0));
        if !keep_old {
            self.reached.insert(reached.target.clone(), reached);
        }
    }

    /// Whether `target` was reached.
    pub fn contains(&self, target: &Target) -> bool {
        self.reached.contains_key(target)
    }

    /// Every target reached, in target order.
    pub fn reached(&self) -> Vec<Reached> {
        self.reached.values().cloned().collect()
    }
}

/// Every target `outcome` reached: (target, watermark value, step).
fn targets(outcome: &PathOutcome) -> Vec<(Target, Option<u64>, u64)> {
    let mut found = Vec::new();
    for (name, step) in &outcome.mark_steps {
        found.push((Target::Mark { name: name.clone() }, None, *step));
    }
    for (name, peak) in &outcome.watermarks {
        let target = Target::Watermark { name: name.clone() };
        found.push((target, Some(peak.value), peak.step));
    }
    let mut faults: BTreeMap<Target, u64> = BTreeMap::new();
    for fault in &outcome.faults {
        let target = Target::Fault {
            fault: fault.kind.clone(),
            operation: fault.operation.clone(),
        };
        faults.entry(target).or_insert(fault.step);
    }
    found.extend(
        faults
            .into_iter()
            .map(|(target, step)| (target, None, step)),
    );
    if let Some((class, _)) = &outcome.failure {
        let target = Target::Failure {
            class: class.clone(),
        };
        found.push((target, None, outcome.steps));
    }
    found
}
