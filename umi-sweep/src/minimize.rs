//! Minimization of a failing run: first the fewest branch points of its path, then the
//! smallest set of its injections, that still make it fail the same way.
//!
//! Delta debugging (Zeller's ddmin) twice. A failing *path* (a seed and the points where
//! its draws switched to other streams, ADR 0022) first loses branch points: each test
//! replays the seed with a subsequence of the branches (still in step order, so still a
//! path), and keeps it when the replay fails with the same class; a failure that needs
//! none of them minimizes to the seed alone. Then, with that path fixed, the injections
//! its run recorded: each test replays it allowing only a subset of them
//! (`SimConfig::only_injections`): the decisions of every fault rule stay aligned with
//! the operations they were drawn for, so switching injections off changes nothing else
//! until the code under test behaves differently. A seed alone (no branches) skips the
//! first part and minimizes exactly as before paths existed. The result is printed as a
//! `dst replay` command.

use umi_dst::RunPath;
use umi_dst::failure_class::FailureClass;
use umi_dst::fault::{Injection, InjectionId};
use umi_dst::scenario::{Scenario, run_path};
use umi_dst::simulation::SeedRun;

/// Replays one minimization may run.
pub const MINIMIZE_RUNS_MAX: usize = 2_000;

/// The outcome of a minimization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minimized {
    /// The failure class kept while minimizing.
    pub class: FailureClass,
    /// The original failure's message.
    pub message: String,
    /// The path minimized from (a seed alone for a seed).
    pub original_path: RunPath,
    /// The path with the fewest branch points that still fails (the seed alone when no
    /// branch is needed); `original` and `minimal` are of its run.
    pub path: RunPath,
    /// Every injection of the run of `path`, all injections allowed.
    pub original: Vec<Injection>,
    /// The smallest failing subset found (empty: the path fails without any fault).
    pub minimal: Vec<InjectionId>,
    /// Replays run.
    pub runs: usize,
}

/// Why nothing was minimized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MinimizeError {
    /// The seed or path does not fail.
    #[error(
        "{} of {scenario} passes: there is nothing to minimize",
        run_name(path)
    )]
    Passes {
        /// The scenario.
        scenario: String,
        /// The seed or path.
        path: RunPath,
    },
}

/// `seed 7` for a seed alone, `path 7/412:9913` for a path with branches.
fn run_name(path: &RunPath) -> String {
    if path.is_seed_only() {
        format!("seed {}", path.seed)
    } else {
        format!("path {path}")
    }
}

/// Minimizes the faults of `scenario`'s failing `seed`.
pub fn minimize(
    scenario: &dyn Scenario,
    seed: u64,
    swarm: bool,
) -> Result<Minimized, MinimizeError> {
    minimize_path(scenario, &RunPath::from_seed(seed), swarm)
}

/// Minimizes `scenario`'s failing `path`: its branch points, then its faults.
pub fn minimize_path(
    scenario: &dyn Scenario,
    path: &RunPath,
    swarm: bool,
) -> Result<Minimized, MinimizeError> {
    minimize_path_with(scenario, path, &mut |path, only| {
        let only = only.map(<[InjectionId]>::to_vec);
        run_path(scenario, path, swarm, |mut config| {
            config.only_injections = only;
            config
        })
    })
}

/// [`minimize`] with the replays run by `replay` (given the injections it may allow,
/// `None` for all).
pub fn minimize_with(
    scenario: &dyn Scenario,
    seed: u64,
    replay: &mut dyn FnMut(Option<&[InjectionId]>) -> SeedRun,
) -> Result<Minimized, MinimizeError> {
    minimize_path_with(scenario, &RunPath::from_seed(seed), &mut |_, only| {
        replay(only)
    })
}

/// [`minimize_path`] with the replays run by `replay` (given the path to run and the
/// injections it may allow, `None` for all): `dst minimize` runs each under the
/// wall-clock watchdog.
pub fn minimize_path_with(
    scenario: &dyn Scenario,
    path: &RunPath,
    replay: &mut dyn FnMut(&RunPath, Option<&[InjectionId]>) -> SeedRun,
) -> Result<Minimized, MinimizeError> {
    let full = replay(path, None);
    let Some((class, message)) = full.failure.clone() else {
        return Err(MinimizeError::Passes {
            scenario: scenario.name().to_owned(),
            path: path.clone(),
        });
    };
    let mut runs = 1;
    let same_class = |run: &SeedRun| run.failure.as_ref().is_some_and(|(c, _)| *c == class);
    let fewest = fewest_branches(path, &mut |candidate| {
        runs += 1;
        same_class(&replay(candidate, None))
    });
    let base = if fewest == *path {
        full
    } else {
        runs += 1;
        replay(&fewest, None)
    };
    let mut fails = |subset: &[InjectionId]| -> bool {
        runs += 1;
        same_class(&replay(&fewest, Some(subset)))
    };
    let ids: Vec<InjectionId> = base.injections.iter().map(|i| i.id).collect();
    let minimal = if fails(&[]) {
        Vec::new()
    } else {
        ddmin(ids, &mut fails)
    };
    Ok(Minimized {
        class,
        message,
        original_path: path.clone(),
        path: fewest,
        original: base.injections,
        minimal,
        runs,
    })
}

/// The path with the fewest of `path`'s branch points (a subsequence of them, so still in
/// step order) for which `fails` holds, given that it holds for `path`: the seed alone
/// when that fails, else ddmin over the branches. A seed alone runs no test.
pub fn fewest_branches(path: &RunPath, fails: &mut dyn FnMut(&RunPath) -> bool) -> RunPath {
    if path.is_seed_only() {
        return path.clone();
    }
    let with = |branches: &[umi_dst::Branch]| RunPath {
        seed: path.seed,
        branches: branches.to_vec(),
    };
    if fails(&with(&[])) {
        return with(&[]);
    }
    with(&ddmin(path.branches.clone(), &mut |subset| {
        fails(&with(subset))
    }))
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

    fn path(text: &str) -> RunPath {
        text.parse().unwrap()
    }

    /// A failure that needs only the middle one of three branches minimizes to a path
    /// with that branch alone; one that needs two keeps both, in step order.
    #[test]
    fn a_path_keeps_only_the_branches_its_failure_needs() {
        let three = path("7/40:11/200:22/300:33");
        let mut tests = Vec::new();
        let mut needs_200 = |candidate: &RunPath| {
            tests.push(candidate.to_string());
            candidate.branches.iter().any(|b| b.step == 200)
        };
        assert_eq!(fewest_branches(&three, &mut needs_200), path("7/200:22"));
        assert_eq!(tests[0], "7", "the seed alone is tried first");
        assert!(tests.len() <= 6, "{tests:?}");

        let mut needs_both_ends = |candidate: &RunPath| {
            let steps: Vec<u64> = candidate.branches.iter().map(|b| b.step).collect();
            steps.contains(&40) && steps.contains(&300)
        };
        assert_eq!(
            fewest_branches(&three, &mut needs_both_ends),
            path("7/40:11/300:33")
        );
    }

    /// A failure that needs no branch minimizes to the seed alone; a seed alone runs no
    /// test at all (its minimization is the fault schedule's only, as before paths).
    #[test]
    fn the_seed_alone_when_no_branch_is_needed_and_no_test_for_a_seed() {
        let mut always = |_: &RunPath| true;
        assert_eq!(
            fewest_branches(&path("7/40:11/200:22"), &mut always),
            path("7")
        );
        let mut never_called =
            |candidate: &RunPath| -> bool { panic!("a seed alone was tested as {candidate}") };
        assert_eq!(fewest_branches(&path("9"), &mut never_called), path("9"));
    }

    #[test]
    fn a_passing_path_is_named_as_a_path_and_a_seed_as_a_seed() {
        let passes = |text: &str| MinimizeError::Passes {
            scenario: "canary".to_owned(),
            path: path(text),
        };
        assert_eq!(
            passes("7").to_string(),
            "seed 7 of canary passes: there is nothing to minimize"
        );
        assert_eq!(
            passes("7/412:9913").to_string(),
            "path 7/412:9913 of canary passes: there is nothing to minimize"
        );
    }
}
