//! Paths over `dst serve`: a request may name a path instead of a bare seed
//! (`x-umi-seed: 7/3:9913`, `/seed/7/3:9913/...`), the same text as a simulation's
//! `RunPath` (docs/adr/0022-paths-and-steering.md), where a branch's step is the
//! request's arrival ordinal in its scope, counted from 1 (model and MCP requests alike,
//! the order `aim.rs` counts in). `7/3:9913` is seed 7 for the scope's first two
//! requests, and from the third on every request's run seed is drawn from stream 9913:
//! its run seed (from the seed, the endpoint, what is asked and the occurrence, as
//! always) mixed with 9913. Later branches chain on earlier ones.
//!
//! A path with no branches is exactly the seed: nothing is mixed, so every seed means
//! what it meant. Like aimed ordinals (docs/adr/0020-aimed-faults-over-serve.md), a
//! branch depends on the order a scope's requests arrive in: an agent that sends one
//! request at a time replays a path exactly.
//!
//! Parsing here is a local stand-in for `umi_dst::RunPath`'s (same grammar), kept until
//! the two are merged.

use sha2::{Digest, Sha256};

use crate::seed_text::parse_seed;

/// The most branches a path holds.
pub(crate) const PATH_BRANCHES_MAX: usize = 64;

/// One branch: from arrival `step` (from 1) on, every request draws from `stream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Branch {
    pub(crate) step: u64,
    pub(crate) stream: u64,
}

/// A seed and the branches taken from it, in increasing step order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct ServePath {
    pub(crate) seed: u64,
    pub(crate) branches: Vec<Branch>,
}

impl ServePath {
    /// Reads `7`, `7/3:9913`, `7/3:9913/12:55` (numbers decimal or `0x` hex).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.trim().split('/');
        let seed_text = parts.next().unwrap_or_default();
        let seed = parse_seed(seed_text).map_err(|e| format!("the seed {seed_text:?} {e}"))?;
        let mut path = Self {
            seed,
            branches: Vec::new(),
        };
        for part in parts {
            path.push(parse_branch(part)?)
                .map_err(|reason| format!("branch {part:?}: {reason}"))?;
        }
        Ok(path)
    }

    /// Adds `branch` after the others: its step must be past the last one's, and at
    /// least 1.
    pub(crate) fn push(&mut self, branch: Branch) -> Result<(), String> {
        if branch.step == 0 {
            return Err("a branch's step counts arrivals from 1".to_owned());
        }
        if let Some(last) = self.branches.last()
            && branch.step <= last.step
        {
            return Err(format!(
                "steps must increase (this one follows step {})",
                last.step
            ));
        }
        if self.branches.len() == PATH_BRANCHES_MAX {
            return Err(format!("a path holds at most {PATH_BRANCHES_MAX} branches"));
        }
        self.branches.push(branch);
        Ok(())
    }

    /// The run seed of the request at arrival `step` (from 1) whose unbranched run seed
    /// is `run_seed`: `run_seed` itself before the first branch.
    pub(crate) fn run_seed_at(&self, run_seed: u64, step: u64) -> u64 {
        self.branches
            .iter()
            .take_while(|branch| branch.step <= step)
            .fold(run_seed, |seed, branch| mix(seed, branch.stream))
    }
}

impl std::fmt::Display for ServePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.seed)?;
        for branch in &self.branches {
            write!(f, "/{}:{}", branch.step, branch.stream)?;
        }
        Ok(())
    }
}

/// `STEP:STREAM`.
pub(crate) fn parse_branch(text: &str) -> Result<Branch, String> {
    let Some((step, stream)) = text.split_once(':') else {
        return Err(format!(
            "branch {text:?}: expected STEP:STREAM (e.g. 3:9913: from the 3rd request on, stream 9913)"
        ));
    };
    let step = parse_seed(step).map_err(|e| format!("branch {text:?}: the step {e}"))?;
    let stream = parse_seed(stream).map_err(|e| format!("branch {text:?}: the stream {e}"))?;
    Ok(Branch { step, stream })
}

/// `seed` drawn from `stream`.
fn mix(seed: u64, stream: u64) -> u64 {
    let digest = Sha256::new()
        .chain_update(b"umi.serve.branch.v1")
        .chain_update(seed.to_le_bytes())
        .chain_update(stream.to_le_bytes())
        .finalize();
    u64::from_le_bytes(
        digest[..8]
            .try_into()
            .expect("a SHA-256 digest has 8 bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_and_print_as_run_paths_do() {
        for text in ["7", "7/3:9913", "7/3:9913/12:55"] {
            assert_eq!(ServePath::parse(text).unwrap().to_string(), text);
        }
        let hex = ServePath::parse("0x10/0x2:1").unwrap();
        assert_eq!(hex.to_string(), "16/2:1");
        let table = [
            ("x", "the seed \"x\""),
            ("7/3", "expected STEP:STREAM"),
            ("7/0:1", "counts arrivals from 1"),
            ("7/3:1/3:2", "steps must increase (this one follows step 3)"),
            ("7/3:y", "the stream"),
            ("7/", "expected STEP:STREAM"),
        ];
        for (text, says) in table {
            let error = ServePath::parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        let long: String = (1..=65).map(|step| format!("/{step}:1")).collect();
        let error = ServePath::parse(&format!("1{long}")).unwrap_err();
        assert!(error.contains("at most 64"), "{error}");
    }

    #[test]
    fn a_branch_changes_the_run_seeds_from_its_step_on_and_chains() {
        let seed_only = ServePath::parse("7").unwrap();
        assert_eq!(seed_only.run_seed_at(42, 1), 42);
        assert_eq!(seed_only.run_seed_at(42, 1_000), 42);
        let path = ServePath::parse("7/3:9913/5:55").unwrap();
        assert_eq!(path.run_seed_at(42, 1), 42);
        assert_eq!(path.run_seed_at(42, 2), 42);
        let third = path.run_seed_at(42, 3);
        assert_ne!(third, 42);
        assert_eq!(path.run_seed_at(42, 4), third);
        assert_ne!(path.run_seed_at(42, 5), third);
        let other = ServePath::parse("7/3:9914").unwrap();
        assert_ne!(other.run_seed_at(42, 3), third);
    }
}
