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
//! The text is read by [`RunPath`]'s own parser (`crate::path`); what this module adds is
//! what a branch means here.

use sha2::{Digest, Sha256};

use crate::path::RunPath;

/// The run seed of the request at arrival `step` (from 1) of a scope on `path`, whose
/// unbranched run seed is `run_seed`: `run_seed` itself before the first branch.
pub(crate) fn run_seed_at(path: &RunPath, run_seed: u64, step: u64) -> u64 {
    path.branches
        .iter()
        .take_while(|branch| branch.step <= step)
        .fold(run_seed, |seed, branch| mix(seed, branch.stream))
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

    fn path(text: &str) -> RunPath {
        text.parse().unwrap()
    }

    #[test]
    fn a_branch_changes_the_run_seeds_from_its_step_on_and_chains() {
        let seed_only = path("7");
        assert_eq!(run_seed_at(&seed_only, 42, 1), 42);
        assert_eq!(run_seed_at(&seed_only, 42, 1_000), 42);
        let branched = path("7/3:9913/5:55");
        assert_eq!(run_seed_at(&branched, 42, 1), 42);
        assert_eq!(run_seed_at(&branched, 42, 2), 42);
        let third = run_seed_at(&branched, 42, 3);
        assert_ne!(third, 42);
        assert_eq!(run_seed_at(&branched, 42, 4), third);
        assert_ne!(run_seed_at(&branched, 42, 5), third);
        assert_ne!(run_seed_at(&path("7/3:9914"), 42, 3), third);
    }
}
