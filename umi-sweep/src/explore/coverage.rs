//! What an exploration has reached: marks, watermark maxima, (fault kind, operation)
//! combinations and failure classes ([`Target`]), each with the path and run that first
//! got there. A run's novelties are the targets it reached first (or, for a watermark, a
//! higher value), each with the step where it got there: the points to branch from.
//!
//! Besides them, a run may bring a new *lineage* to a target reached before: it got
//! there itself (after its last branch point, so not inherited from the path it branched
//! from) with a history no kept lineage of that target had (the set of marks and fault
//! combinations the run reached at earlier steps), while the target holds fewer than
//! `lineages_max` lineages. The first run to reach a stepping stone may have got there in
//! a way that leads nowhere (a payment that stalled without paying, where the bug needs
//! one that paid); the next stones are then first reached on that dead lineage, and a
//! run reaching them by the other way brings no new target. A few lineages per target,
//! told apart by what came before, let that other way be kept and branched from too.

use std::collections::{BTreeMap, BTreeSet};
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

/// A target a run reached first (or on a new lineage), and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Novelty {
    /// What.
    pub target: Target,
    /// The step where the run got there.
    pub step: u64,
    /// Reached first (or a higher watermark); `false`: a new lineage to a target
    /// reached before.
    pub first: bool,
}

/// The marks and fault combinations a run reached before a target.
type History = BTreeSet<Target>;

/// Every target reached so far, and the lineages kept to each.
#[derive(Clone, Debug)]
pub struct Coverage {
    reached: BTreeMap<Target, Reached>,
    lineages: BTreeMap<Target, Vec<History>>,
    lineages_max: u64,
}

impl Default for Coverage {
    fn default() -> Self {
        Self::new(1)
    }
}

impl Coverage {
    /// Nothing reached yet; each target keeps up to `lineages_max` lineages (1: only
    /// the first reach).
    pub fn new(lineages_max: u64) -> Self {
        Self {
            reached: BTreeMap::new(),
            lineages: BTreeMap::new(),
            lineages_max,
        }
    }

    /// Records `outcome` (run `run` of `path`) and returns what it reached first, and
    /// the targets it brings a new lineage to: reached at a step after the path's last
    /// branch point (its own reach, not its parent's), the target's best value for a
    /// watermark, with a history no kept lineage had, while the target holds fewer than
    /// `lineages_max` lineages.
    pub fn absorb(&mut self, outcome: &PathOutcome, path: &RunPath, run: u64) -> Vec<Novelty> {
        let found = targets(outcome);
        let mut novelties = Vec::new();
        for (target, value, step) in &found {
            let (first, best) = match (self.reached.get(target), value) {
                (None, _) => (true, false),
                (Some(old), Some(value)) => (
                    old.value.is_some_and(|best| *value > best),
                    old.value == Some(*value),
                ),
                (Some(_), None) => (false, true),
            };
            let history = history(&found, *step);
            let lineages = self.lineages.entry(target.clone()).or_default();
            if first {
                *lineages = vec![history];
                let reached = Reached {
                    target: target.clone(),
                    value: *value,
                    path: path.clone(),
                    run,
                    step: *step,
                };
                self.reached.insert(target.clone(), reached);
            } else if best
                && *step > path.last_step()
                && lineages.len() < usize::try_from(self.lineages_max).unwrap_or(usize::MAX)
                && !lineages.contains(&history)
            {
                lineages.push(history);
            } else {
                continue;
            }
            novelties.push(Novelty {
                target: target.clone(),
                step: *step,
                first,
            });
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

/// The marks and fault combinations among `found` reached before `step`.
fn history(found: &[(Target, Option<u64>, u64)], step: u64) -> History {
    found
        .iter()
        .filter(|(target, _, at)| {
            *at < step && matches!(target, Target::Mark { .. } | Target::Fault { .. })
        })
        .map(|(target, _, _)| target.clone())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::Branch;

    fn marks(marks: &[(&str, u64)]) -> PathOutcome {
        PathOutcome {
            mark_steps: marks
                .iter()
                .map(|(name, step)| ((*name).to_owned(), *step))
                .collect(),
            steps: 400,
            ..PathOutcome::default()
        }
    }

    fn lineages_of(novelties: &[Novelty]) -> Vec<(String, bool)> {
        novelties
            .iter()
            .map(|novelty| (novelty.target.to_string(), novelty.first))
            .collect()
    }

    #[test]
    fn a_target_keeps_a_lineage_per_history_up_to_its_limit() {
        let mut coverage = Coverage::new(2);
        let seed = RunPath::from_seed;
        let first = coverage.absorb(&marks(&[("a", 10), ("b", 20)]), &seed(1), 0);
        let firsts = [
            ("mark \"a\"".to_owned(), true),
            ("mark \"b\"".to_owned(), true),
        ];
        assert_eq!(lineages_of(&first), firsts);
        // The same history: nothing.
        let same = coverage.absorb(&marks(&[("a", 10), ("b", 20)]), &seed(2), 1);
        assert_eq!(lineages_of(&same), []);
        // `b` after `x` as well: a new lineage of `b` (and `x` a first reach).
        let other = marks(&[("a", 10), ("x", 15), ("b", 20)]);
        let novelties = coverage.absorb(&other, &seed(3), 2);
        // (In target order.)
        let expected = [
            ("mark \"b\"".to_owned(), false),
            ("mark \"x\"".to_owned(), true),
        ];
        assert_eq!(lineages_of(&novelties), expected);
        // Inherited (reached before the path's last branch point): not its own lineage.
        let branched = seed(4)
            .then(Branch {
                step: 30,
                stream: 1,
            })
            .unwrap();
        let inherited = marks(&[("y", 5), ("b", 20)]);
        let novelties = coverage.absorb(&inherited, &branched, 3);
        assert_eq!(lineages_of(&novelties), [("mark \"y\"".to_owned(), true)]);
        // Its own, with a new history, but `b` holds its two lineages already.
        let novelties = coverage.absorb(&marks(&[("z", 5), ("b", 20)]), &seed(5), 4);
        assert_eq!(lineages_of(&novelties), [("mark \"z\"".to_owned(), true)]);
    }

    #[test]
    fn one_lineage_per_target_keeps_only_first_reaches() {
        let mut coverage = Coverage::new(1);
        coverage.absorb(&marks(&[("a", 10)]), &RunPath::from_seed(1), 0);
        let novelties = coverage.absorb(&marks(&[("x", 5), ("a", 10)]), &RunPath::from_seed(2), 1);
        assert_eq!(lineages_of(&novelties), [("mark \"x\"".to_owned(), true)]);
    }
}
