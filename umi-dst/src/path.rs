//! RunPath: a run named by its seed plus the points where its draws were switched to
//! other streams, and its one text form (`7`, `7/412:9913`, `7/412:9913/1200:55`).
//!
//! A seed alone fixes a whole run. Guided exploration (`dst explore`) builds on runs that
//! reached something new by replaying them up to the moment they got there and drawing
//! what follows from a fresh stream: that is a *branch* `(step, stream)`. From the step
//! its kernel step counter reaches `step` on, every RNG stream of the run (every
//! [`DeterministicRng`](crate::DeterministicRng) forked from the run's root, before or
//! after that point) draws from a key derived from its own key and `stream`, chained with
//! the earlier branches; before it, the run is exactly the seed's. So a path replays
//! exactly up to its last branch point, and a path with no branches means exactly what
//! its seed means (it prints as the seed alone).
//!
//! The text form is what replay lines, `DST_PATH`, `dst replay --path`, the seed corpus
//! and reports hold; serde reads and writes a path as that string. A malformed path is a
//! typed [`PathError`] naming the part that is wrong, never a panic.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::seed_text::parse_seed;

/// The most branch points one path may hold.
pub const PATH_BRANCHES_MAX: usize = 64;

/// One branch point: from kernel step `step` on (1 and up), every stream of the run draws
/// from a key derived from its own and `stream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Branch {
    /// The kernel step at which the branch takes effect (the draws of that step's call
    /// are already the branch's).
    pub step: u64,
    /// The stream every draw switches to (mixed into each stream's key).
    pub stream: u64,
}

/// A run: its seed and its branch points, in increasing step order.
///
/// A seed alone fixes a whole run. Guided exploration (`dst explore`) builds on runs that
/// reached something new by replaying them up to the moment they got there and drawing
/// what follows from a fresh stream: that is a *branch* `(step, stream)`. From the step
/// its kernel step counter reaches `step` on, every RNG stream of the run (every
/// [`DeterministicRng`](crate::DeterministicRng) forked from the run's root, before or
/// after that point) draws from a key derived from its own key and `stream`, chained with
/// the earlier branches; before it, the run is exactly the seed's. So a path replays
/// exactly up to its last branch point, and a path with no branches means exactly what
/// its seed means (it prints as the seed alone).
///
/// The text form (`7`, `7/412:9913`, `7/412:9913/1200:55`) is what replay lines,
/// `DST_PATH`, `dst replay --path`, the seed corpus and reports hold; serde reads and
/// writes a path as that string. A malformed path is a typed [`PathError`] naming the
/// part that is wrong, never a panic.
///
/// A mark's first hit and a fault's injection record a step too: the first step from
/// which a branch keeps it (the steps the run had taken when it happened, plus one; a
/// branch there replays everything up to and including it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunPath {
    /// The seed.
    pub seed: u64,
    /// The branch points, steps strictly increasing, each at least 1.
    pub branches: Vec<Branch>,
}

/// A path that cannot be: which part is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The text is empty.
    #[error("empty path (expected SEED or SEED/STEP:STREAM/..., e.g. 7/412:9913)")]
    Empty,
    /// The seed part does not parse.
    #[error("path seed `{text}` {reason}")]
    Seed {
        /// The seed part as given.
        text: String,
        /// Why it is not a seed.
        reason: String,
    },
    /// A branch part is not `STEP:STREAM`.
    #[error("path branch {index} `{text}` is not STEP:STREAM (e.g. 412:9913)")]
    BranchForm {
        /// The branch's position, from 1.
        index: usize,
        /// The branch part as given.
        text: String,
    },
    /// A branch's step does not parse.
    #[error("path branch {index}: step `{text}` {reason}")]
    Step {
        /// The branch's position, from 1.
        index: usize,
        /// The step as given.
        text: String,
        /// Why it is not a step.
        reason: String,
    },
    /// A branch's stream does not parse.
    #[error("path branch {index}: stream `{text}` {reason}")]
    Stream {
        /// The branch's position, from 1.
        index: usize,
        /// The stream as given.
        text: String,
        /// Why it is not a stream.
        reason: String,
    },
    /// A branch at step 0 (the run's settings are drawn before any step).
    #[error("path branch {index}: step 0 (branch steps start at 1)")]
    StepZero {
        /// The branch's position, from 1.
        index: usize,
    },
    /// A branch's step is not after the one before it.
    #[error("path branch {index}: step {step} is not after the previous branch's step {previous}")]
    NotIncreasing {
        /// The branch's position, from 1.
        index: usize,
        /// Its step.
        step: u64,
        /// The step of the branch before it.
        previous: u64,
    },
    /// More branches than [`PATH_BRANCHES_MAX`].
    #[error("path has {count} branches; at most {limit}")]
    TooMany {
        /// Branches given.
        count: usize,
        /// [`PATH_BRANCHES_MAX`].
        limit: usize,
    },
}

impl RunPath {
    /// The path of the seed alone: exactly what the seed means.
    pub fn from_seed(seed: u64) -> RunPath {
        RunPath {
            seed,
            branches: Vec::new(),
        }
    }

    /// The path `seed` with `branches`, checked (steps from 1, strictly increasing, at
    /// most [`PATH_BRANCHES_MAX`]).
    pub fn new(seed: u64, branches: Vec<Branch>) -> Result<RunPath, PathError> {
        check_branches(&branches)?;
        Ok(RunPath { seed, branches })
    }

    /// This path with one more branch point after its last.
    pub fn then(&self, branch: Branch) -> Result<RunPath, PathError> {
        let mut branches = self.branches.clone();
        branches.push(branch);
        RunPath::new(self.seed, branches)
    }

    /// Whether the path is its seed alone.
    pub fn is_seed_only(&self) -> bool {
        self.branches.is_empty()
    }

    /// The step of the last branch point (0 for a seed alone): the run is a replay of its
    /// prefix up to there.
    pub fn last_step(&self) -> u64 {
        self.branches.last().map_or(0, |branch| branch.step)
    }
}

/// Checks branch points as a path holds them: steps from 1, strictly increasing, at most
/// [`PATH_BRANCHES_MAX`] of them. The error names the first bad branch (from 1).
pub(crate) fn check_branches(branches: &[Branch]) -> Result<(), PathError> {
    if branches.len() > PATH_BRANCHES_MAX {
        return Err(PathError::TooMany {
            count: branches.len(),
            limit: PATH_BRANCHES_MAX,
        });
    }
    let mut previous = 0;
    for (position, branch) in branches.iter().enumerate() {
        let index = position + 1;
        if branch.step == 0 {
            return Err(PathError::StepZero { index });
        }
        if branch.step <= previous {
            return Err(PathError::NotIncreasing {
                index,
                step: branch.step,
                previous,
            });
        }
        previous = branch.step;
    }
    Ok(())
}

impl From<u64> for RunPath {
    fn from(seed: u64) -> Self {
        RunPath::from_seed(seed)
    }
}

impl fmt::Display for RunPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.seed)?;
        for branch in &self.branches {
            write!(f, "/{branch}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Branch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.step, self.stream)
    }
}

impl FromStr for RunPath {
    type Err = PathError;

    /// Reads the text form; surrounding spaces are ignored, numbers are decimal or
    /// `0x` hex (as seeds are everywhere).
    fn from_str(text: &str) -> Result<Self, PathError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PathError::Empty);
        }
        let mut parts = text.split('/');
        let seed_text = parts.next().unwrap_or_default();
        let seed = parse_seed(seed_text).map_err(|reason| PathError::Seed {
            text: seed_text.to_owned(),
            reason,
        })?;
        let mut branches = Vec::new();
        for (position, part) in parts.enumerate() {
            if position >= PATH_BRANCHES_MAX {
                return Err(PathError::TooMany {
                    count: text.split('/').count() - 1,
                    limit: PATH_BRANCHES_MAX,
                });
            }
            branches.push(parse_branch(position + 1, part)?);
        }
        RunPath::new(seed, branches)
    }
}

/// Branch `index` (from 1) from its `STEP:STREAM` text.
fn parse_branch(index: usize, text: &str) -> Result<Branch, PathError> {
    let Some((step_text, stream_text)) = text.split_once(':') else {
        return Err(PathError::BranchForm {
            index,
            text: text.to_owned(),
        });
    };
    if step_text.trim().is_empty() || stream_text.contains(':') {
        return Err(PathError::BranchForm {
            index,
            text: text.to_owned(),
        });
    }
    let step = parse_number(step_text).map_err(|reason| PathError::Step {
        index,
        text: step_text.to_owned(),
        reason,
    })?;
    let stream = parse_number(stream_text).map_err(|reason| PathError::Stream {
        index,
        text: stream_text.to_owned(),
        reason,
    })?;
    Ok(Branch { step, stream })
}

/// A step or stream number: what a seed may be (decimal or `0x` hex), said of a number.
fn parse_number(text: &str) -> Result<u64, String> {
    parse_seed(text).map_err(|reason| reason.replace("is not a seed", "is not a number"))
}

impl Serialize for RunPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RunPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch(step: u64, stream: u64) -> Branch {
        Branch { step, stream }
    }

    #[test]
    fn text_forms_round_trip() {
        let cases = [
            ("7", RunPath::from_seed(7)),
            (
                "7/412:9913",
                RunPath::new(7, vec![branch(412, 9913)]).unwrap(),
            ),
            (
                "7/412:9913/1200:55",
                RunPath::new(7, vec![branch(412, 9913), branch(1200, 55)]).unwrap(),
            ),
            (
                "18446744073709551615/1:0",
                RunPath::new(u64::MAX, vec![branch(1, 0)]).unwrap(),
            ),
        ];
        for (text, path) in cases {
            assert_eq!(text.parse::<RunPath>().as_ref(), Ok(&path), "{text}");
            assert_eq!(path.to_string(), text);
            let json = serde_json::to_string(&path).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<RunPath>(&json).unwrap(), path);
        }
        assert_eq!(
            " 0x10/0x2:3 ".parse::<RunPath>().unwrap().to_string(),
            "16/2:3"
        );
        assert!(RunPath::from_seed(3).is_seed_only());
        assert!(!"3/1:1".parse::<RunPath>().unwrap().is_seed_only());
    }

    #[test]
    fn bad_input_names_the_part() {
        let cases: [(&str, &str); 12] = [
            ("", "empty path"),
            ("x", "path seed `x` is not a seed"),
            ("99999999999999999999", "larger than the largest seed"),
            ("7/", "branch 1 `` is not STEP:STREAM"),
            ("7/412", "branch 1 `412` is not STEP:STREAM"),
            ("7/412:1:2", "branch 1 `412:1:2` is not STEP:STREAM"),
            ("7/:5", "branch 1 `:5` is not STEP:STREAM"),
            ("7/1:2/abc:3", "branch 2: step `abc` is not a number"),
            ("7/1:zz", "branch 1: stream `zz` is not a number"),
            ("7/0:1", "branch 1: step 0"),
            (
                "7/5:1/5:2",
                "branch 2: step 5 is not after the previous branch's step 5",
            ),
            ("7/9:1/3:2", "branch 2: step 3 is not after"),
        ];
        for (text, expected) in cases {
            let error = text.parse::<RunPath>().unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let many: String = (1..=PATH_BRANCHES_MAX as u64 + 1)
            .map(|step| format!("/{step}:1"))
            .collect();
        let error = format!("7{many}").parse::<RunPath>().unwrap_err();
        assert_eq!(
            error,
            PathError::TooMany {
                count: PATH_BRANCHES_MAX + 1,
                limit: PATH_BRANCHES_MAX
            }
        );
        let at_limit: String = (1..=PATH_BRANCHES_MAX as u64)
            .map(|step| format!("/{step}:1"))
            .collect();
        assert!(format!("7{at_limit}").parse::<RunPath>().is_ok());
        assert!(serde_json::from_str::<RunPath>("\"7/0:1\"").is_err());
    }

    #[test]
    fn then_appends_only_later_branches() {
        let seed = RunPath::from_seed(4);
        let one = seed.then(branch(10, 1)).unwrap();
        assert_eq!(one.to_string(), "4/10:1");
        assert_eq!(one.last_step(), 10);
        assert_eq!(seed.last_step(), 0);
        assert_eq!(
            one.then(branch(10, 2)),
            Err(PathError::NotIncreasing {
                index: 2,
                step: 10,
                previous: 10
            })
        );
        assert_eq!(
            seed.then(branch(0, 2)),
            Err(PathError::StepZero { index: 1 })
        );
        assert_eq!(one.then(branch(11, 2)).unwrap().to_string(), "4/10:1/11:2");
    }
}
