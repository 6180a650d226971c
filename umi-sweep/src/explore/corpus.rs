//! The explorer's corpus: the paths that reached something new, each with the steps to
//! branch from (the first step from which a branch keeps each novelty), and an energy: the branches it may still
//! spawn. A pick spends one; a branch that reaches something new earns its parent
//! [`ENERGY_REWARD`], so productive entries get more runs. A path that already holds
//! [`PATH_BRANCHES_MAX`] branches is not added.

use serde::{Deserialize, Serialize};
use umi_dst::DeterministicRng;

use super::options::{
    CORPUS_ENTRIES_MAX, ENERGY_FLOOR, ENERGY_INITIAL, ENERGY_MAX, ENERGY_REWARD, STREAM_BOUND,
};
use super::{Branch, PATH_BRANCHES_MAX, RunPath};

/// A path that reached something new.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The path.
    pub path: RunPath,
    /// The steps to branch from (after the last branch of `path`), ascending.
    pub branch_steps: Vec<u64>,
    /// Branches it may still spawn.
    pub energy: u64,
    /// The run that added it.
    pub run: u64,
}

/// A branch planned from an entry.
#[derive(Clone, Debug)]
pub struct Planned {
    /// The path to run.
    pub path: RunPath,
    /// The corpus index of the entry it branched from (`None`: a fresh seed).
    pub parent: Option<usize>,
}

/// The corpus.
#[derive(Debug, Default)]
pub struct Corpus {
    entries: Vec<Entry>,
}

impl Corpus {
    /// Adds `path` (run `run`), to branch at each of `novelty_steps` (the first step
    /// from which a branch keeps the novelty; after the path's last branch).
    pub fn add(&mut self, path: RunPath, novelty_steps: &[u64], run: u64) {
        let after = path.last_step().saturating_add(1);
        let mut branch_steps: Vec<u64> = novelty_steps
            .iter()
            .map(|step| (*step).max(after))
            .collect();
        branch_steps.sort_unstable();
        branch_steps.dedup();
        if branch_steps.is_empty() || path.branches.len() >= PATH_BRANCHES_MAX {
            return;
        }
        let entry = Entry {
            path,
            branch_steps,
            energy: ENERGY_INITIAL,
            run,
        };
        // Full: the entry with the least energy makes room, in place (the indices of
        // branches planned but not yet folded stay valid).
        let weakest = (0..self.entries.len()).min_by_key(|&i| self.entries[i].energy);
        match weakest {
            Some(weakest) if self.entries.len() >= CORPUS_ENTRIES_MAX => {
                self.entries[weakest] = entry;
            }
            _ => self.entries.push(entry),
        }
    }

    /// Rewards entry `index` for a productive branch.
    pub fn reward(&mut self, index: usize) {
        if let Some(entry) = self.entries.get_mut(index) {
            entry.energy = entry.energy.saturating_add(ENERGY_REWARD).min(ENERGY_MAX);
        }
    }

    /// Picks an entry by energy (one without energy weighs [`ENERGY_FLOOR`]: spent
    /// entries fall behind productive ones but are never dropped, since the run that
    /// would go past them may be rare) and plans a branch of it at one of its branch
    /// steps, on a fresh stream; `None` when the corpus is empty.
    pub fn plan_branch(&mut self, rng: &mut DeterministicRng) -> Option<Planned> {
        let weights: Vec<u64> = self
            .entries
            .iter()
            .map(|entry| entry.energy.max(ENERGY_FLOOR))
            .collect();
        let index = rng.weighted_index(&weights)?;
        let entry = &mut self.entries[index];
        entry.energy = entry.energy.saturating_sub(1);
        let step = *rng.choose(&entry.branch_steps)?;
        let stream = rng.below(STREAM_BOUND);
        let path = entry.path.then(Branch { step, stream }).ok()?;
        Some(Planned {
            path,
            parent: Some(index),
        })
    }

    /// The entries, in the order they were added.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_entry_is_still_picked() {
        let mut corpus = Corpus::default();
        corpus.add(RunPath::from_seed(3), &[100], 0);
        let mut rng = DeterministicRng::new(1);
        for _ in 0..(ENERGY_INITIAL + 5) {
            let planned = corpus.plan_branch(&mut rng).unwrap();
            assert_eq!(planned.parent, Some(0));
            assert_eq!(planned.path.branches[0].step, 100);
        }
    }
}
