//! Fault-schedule minimization: the smallest set of a failing seed's injections that
//! still makes it fail.
//!
//! Delta debugging (Zeller's ddmin) over the injections the failing run recorded. Each
//! test replays the seed allowing only a subset of the injections
//! (`SimConfig::only_injections`): the decisions of every fault rule stay aligned with
//! the operations they were drawn for, so switching injections off changes nothing else
//! until the code under test behaves differently. A subset "still fails" when the replay
//! fails with the same class. The result is printed as a `dst replay` command.

use umi_dst::fault::{Injection, InjectionId};
use umi_dst::scenario::Scenario;
use umi_dst::scenario::run_one;
use umi_dst::simulation::SeedRun;
use umi_dst::simulation::report::FailureClass;

/// Replays one minimization may run.
pub const MINIMIZE_RUNS_MAX: usize = 2_000;

/// The outcome of a minimization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minimized {
    /// The failure class kept while minimizing.
    pub class: FailureClass,
    /// The original failure's message.
    pub message: String,
    /// Every injection of the original failing run.
    pub original: Vec<Injection>,
    /// The smallest failing subset found (empty: the seed fails without any fault).
    pub minimal: Vec<InjectionId>,
    /// Replays run.
    pub runs: usize,
}

/// Why nothing was minimized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MinimizeError {
    /// The seed does not fail.
    #[error("seed {seed} of {scenario} passes: there is nothing to minimize")]
    Passes {
        /// The scenario.
        scenario: String,
        /// The seed.
        seed: u64,
    },
}

/// Minimizes the faults of `scenario`'s failing `seed`.
pub fn minimize(
    scenario: &dyn Scenario,
    seed: u64,
    swarm: bool,
) -> Result<Minimized, MinimizeError> {
    minimize_with(scenario, seed, &mut |only| {
        let only = only.map(<[InjectionId]>::to_vec);
        run_one(scenario, seed, swarm, |mut config| {
            config.only_injections = only;
            config
        })
    })
}

/// [`minimize`] with the replays run by `replay` (given the injections it may allow,
/// `None` for all): `dst minimize` runs each under the wall-clock watchdog.
pub fn minimize_with(
    scenario: &dyn Scenario,
    seed: u64,
    replay: &mut dyn FnMut(Option<&[InjectionId]>) -> SeedRun,
) -> Result<Minimized, MinimizeError> {
    let full = replay(None);
    let Some((class, message)) = full.failure.clone() else {
        return Err(MinimizeError::Passes {
            scenario: scenario.name().to_owned(),
            seed,
        });
    };
    let mut runs = 1;
    let mut fails = |subset: &[InjectionId]| -> bool {
        runs += 1;
        replay(Some(subset))
            .failure
            .is_some_and(|(c, _)| c == class)
    };
    let ids: Vec<InjectionId> = full.injections.iter().map(|i| i.id).collect();
    let minimal = if fails(&[]) {
        Vec::new()
    } else {
        ddmin(ids, &mut fails)
    };
    Ok(Minimized {
        class,
        message,
        original: full.injections,
        minimal,
        runs,
    })
}

/// Zeller's ddmin: a 1-minimal failing subset of `items` (within `MINIMIZE_RUNS_MAX`
/// tests).
fn ddmin<T: Clone + PartialEq>(items: Vec<T>, fails: &mut impl FnMut(&[T]) -> bool) -> Vec<T> {
    let mut current = items;
    let mut granularity = 2usize;
    let mut tests = 0usize;
    while current.len() >= 2 && tests < MINIMIZE_RUNS_MAX {
        let size = current.len().div_ceil(granularity);
        let chunks: Vec<Vec<T>> = current.chunks(size).map(<[T]>::to_vec).collect();
        let mut reduced = false;
        for chunk in &chunks {
            tests += 1;
            if fails(chunk) {
                current = chunk.clone();
                granularity = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && chunks.len() > 2 {
            for chunk in &chunks {
                let complement: Vec<T> = current
                    .iter()
                    .filter(|item| !chunk.contains(item))
                    .cloned()
                    .collect();
                tests += 1;
                if fails(&complement) {
                    current = complement;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_pair_that_fails() {
        let mut calls = 0;
        let mut fails = |subset: &[u32]| {
            calls += 1;
            subset.contains(&3) && subset.contains(&7)
        };
        let minimal = ddmin((0..20).collect(), &mut fails);
        assert_eq!(minimal, vec![3, 7]);
        assert!(calls < 100, "{calls} tests");
    }
}
