//! BranchEpoch: how many of a path's branch points a run has passed, shared by the run's
//! kernel (which advances it at each branch step) and every RNG stream forked from the
//! run's root (which rekeys when it changes).
//!
//! A run of a seed alone has none: its streams carry no epoch and draw exactly as they
//! always did, at no cost. A run of a path with branches gives its root stream one, and
//! each stream checks it with one relaxed atomic load per draw; when the count moved, the
//! stream derives its key for the new epoch (its own key chained with each passed
//! branch's step and stream) and draws from the start of that fresh stream. A stream
//! forked before a branch point and one forked after it therefore agree on every draw
//! after it (see [`crate::path`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use crate::path::Branch;

/// Domain tag of a branch key (the RNG's own tags are `umi.rng.v1/...`).
const BRANCH_KEY_DOMAIN: &[u8] = b"umi.rng.v1/branch/";

/// The branch points of one run and how many the run has passed.
#[derive(Debug)]
pub(crate) struct BranchEpoch {
    branches: Vec<Branch>,
    passed: AtomicUsize,
}

impl BranchEpoch {
    /// Nothing passed yet. `branches` must be a checked path's (steps increasing).
    pub(crate) fn new(branches: Vec<Branch>) -> Self {
        Self {
            branches,
            passed: AtomicUsize::new(0),
        }
    }

    /// How many branch points the run has passed (0 until the first one's step).
    #[inline]
    pub(crate) fn current(&self) -> usize {
        self.passed.load(Ordering::Relaxed)
    }

    /// Called by the kernel with each step it takes: passes every branch point whose
    /// step is reached.
    pub(crate) fn on_step(&self, step: u64) {
        let mut passed = self.passed.load(Ordering::Relaxed);
        let before = passed;
        while passed < self.branches.len() && self.branches[passed].step <= step {
            passed += 1;
        }
        if passed != before {
            self.passed.store(passed, Ordering::Relaxed);
        }
    }

    /// The key of a stream whose own key is `key` in epoch `epoch`: `key` chained with
    /// the first `epoch` branches (epoch 0 is `key` itself).
    pub(crate) fn key_at(&self, key: &[u8; 32], epoch: usize) -> [u8; 32] {
        self.branches[..epoch].iter().fold(*key, |key, branch| {
            let mut hasher = Sha256::new();
            hasher.update(BRANCH_KEY_DOMAIN);
            hasher.update(key);
            hasher.update(branch.step.to_le_bytes());
            hasher.update(branch.stream.to_le_bytes());
            hasher.finalize().into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_pass_at_their_steps_and_keys_chain() {
        let epoch = BranchEpoch::new(vec![
            Branch { step: 3, stream: 1 },
            Branch { step: 5, stream: 2 },
        ]);
        let seen: Vec<usize> = (1..=6)
            .map(|step| {
                epoch.on_step(step);
                epoch.current()
            })
            .collect();
        assert_eq!(seen, [0, 0, 1, 1, 2, 2]);
        let key = [7; 32];
        assert_eq!(epoch.key_at(&key, 0), key);
        let one = epoch.key_at(&key, 1);
        assert_ne!(one, key);
        assert_ne!(epoch.key_at(&key, 2), one);
        let other = BranchEpoch::new(vec![Branch { step: 3, stream: 9 }]);
        assert_ne!(other.key_at(&key, 1), one, "the stream is in the key");
        let skipped = BranchEpoch::new(vec![Branch { step: 2, stream: 1 }]);
        skipped.on_step(10);
        assert_eq!(skipped.current(), 1, "a step past the point passes it");
    }
}
