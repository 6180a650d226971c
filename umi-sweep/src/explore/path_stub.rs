//! A stand-in for `umi_dst::{RunPath, Branch}` (issue 40's core, SCHEMA.md section 1),
//! with the same names, fields and text form, so the explorer compiles before the core
//! lands; replaced by a re-export when it does.

use std::fmt;
use std::str::FromStr;

/// Branch points a path holds at most.
pub const PATH_BRANCHES_MAX: usize = 64;

/// From `step` on, every stream of the run draws from `stream` as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Branch {
    /// The kernel step from which the branch is in force (>= 1).
    pub step: u64,
    /// The stream drawn from from then on.
    pub stream: u64,
}

/// A seed and the points where its draws switched to other streams.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunPath {
    /// The seed.
    pub seed: u64,
    /// The branch points, by increasing step.
    pub branches: Vec<Branch>,
}

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A part of the text is not what a path holds.
    #[error("path {text:?}: {reason}")]
    Text {
        /// The whole text.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A branch at or before the last one, at step 0, or one too many.
    #[error("branch at step {step}: {reason}")]
    Branch {
        /// The step of the refused branch.
        step: u64,
        /// Why.
        reason: String,
    },
}

impl RunPath {
    /// The seed alone.
    pub fn from_seed(seed: u64) -> RunPath {
        RunPath {
            seed,
            branches: Vec::new(),
        }
    }

    /// This path with `branch` after its last one.
    pub fn then(&self, branch: Branch) -> Result<RunPath, PathError> {
        let last = self.branches.last().map_or(0, |b| b.step);
        let reason = if branch.step == 0 {
            Some("steps start at 1".to_owned())
        } else if branch.step <= last {
            Some(format!("not after the last branch, at step {last}"))
        } else if self.branches.len() >= PATH_BRANCHES_MAX {
            Some(format!("a path holds at most {PATH_BRANCHES_MAX} branches"))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(PathError::Branch {
                step: branch.step,
                reason,
            });
        }
        let mut path = self.clone();
        path.branches.push(branch);
        Ok(path)
    }

    /// Whether the path is its seed alone.
    pub fn is_seed_only(&self) -> bool {
        self.branches.is_empty()
    }
}

impl fmt::Display for RunPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.seed)?;
        for branch in &self.branches {
            write!(f, "/{}:{}", branch.step, branch.stream)?;
        }
        Ok(())
    }
}

impl FromStr for RunPath {
    type Err = PathError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| PathError::Text {
            text: text.to_owned(),
            reason,
        };
        let mut parts = text.trim().split('/');
        let seed = parts.next().unwrap_or_default();
        let seed = seed
            .parse()
            .map_err(|_| bad(format!("seed {seed:?} is not a number")))?;
        let mut path = RunPath::from_seed(seed);
        for part in parts {
            let (step, stream) = part
                .split_once(':')
                .ok_or_else(|| bad(format!("branch {part:?} is not step:stream")))?;
            let step = step
                .parse()
                .map_err(|_| bad(format!("step {step:?} is not a number")))?;
            let stream = stream
                .parse()
                .map_err(|_| bad(format!("stream {stream:?} is not a number")))?;
            path = path.then(Branch { step, stream })?;
        }
        Ok(path)
    }
}

impl serde::Serialize for RunPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RunPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
