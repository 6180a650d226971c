//! What an exploration may spend and when it stops ([`ExploreOptions`]), the named limits
//! of its corpus and energy, and its errors ([`ExploreError`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::plan::Shard;

/// Lineages kept per target by default: besides the run that reached it first, the
/// next runs that reach it themselves (after their last branch point) are kept in the
/// corpus too, until a target holds this many, since the first way there may lead
/// nowhere further (see [`super::coverage`]).
pub const LINEAGES_PER_TARGET: u64 = 4;
/// Lineages per target an exploration may ask for at most.
pub const LINEAGES_PER_TARGET_MAX: u64 = 64;
/// Entries the corpus keeps at most (the one with the least energy goes first).
pub const CORPUS_ENTRIES_MAX: usize = 4096;
/// Energy a new entry starts with: the runs branched from it before it must earn more.
pub const ENERGY_INITIAL: u64 = 16;
/// Energy an entry earns each time a run branched from it reaches something new.
pub const ENERGY_REWARD: u64 = 16;
/// The weight of an entry whose energy is spent, when picking.
pub const ENERGY_FLOOR: u64 = 1;
/// Energy an entry holds at most.
pub const ENERGY_MAX: u64 = 256;
/// Of every [`FRESH_SHARE_OF`] runs, this many run a fresh seed rather than a branch.
pub const FRESH_SHARE: u64 = 1;
/// See [`FRESH_SHARE`].
pub const FRESH_SHARE_OF: u64 = 5;
/// Runs planned at once and run in parallel; results are folded in plan order, so the
/// exploration is the same for any number of jobs.
pub const BATCH_RUNS: u64 = 16;
/// Branch streams are drawn below this (short replay lines).
pub const STREAM_BOUND: u64 = 1 << 32;
/// Frontier paths rerun at the start of a shard at most.
pub const FRONTIER_PATHS_MAX: usize = CORPUS_ENTRIES_MAX;
/// Runs an exploration takes at most, whatever is asked.
pub const RUNS_MAX: u64 = 100_000_000;

/// What an exploration may spend and when it stops.
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    /// Stop after this many runs.
    pub runs_max: u64,
    /// Stop after this much wall-clock time (checked between batches).
    pub budget: Duration,
    /// Stop when this many runs in a row reached nothing new (0: never).
    pub stable_runs_max: u64,
    /// Runs in parallel.
    pub jobs: usize,
    /// Seeds the explorer's own choices (which entry, which branch stream).
    pub explorer_seed: u64,
    /// Stop at the first failing run.
    pub stop_at_first_failure: bool,
    /// Run in swarm mode.
    pub swarm: bool,
    /// The first fresh seed (then every `shard.count`-th).
    pub seed_start: u64,
    /// This shard of several (fresh seeds and explorer seed of its own).
    pub shard: Option<Shard>,
    /// Where shards share their frontier: read at the start, this shard's written at the end.
    pub frontier: Option<PathBuf>,
    /// How `dst` is invoked, for replay lines.
    pub program: String,
    /// Lineages kept per target (1: only the run that reached it first).
    pub lineages_per_target: u64,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        Self {
            runs_max: 100_000,
            budget: Duration::from_secs(600),
            stable_runs_max: 0,
            jobs: 1,
            explorer_seed: 1,
            stop_at_first_failure: false,
            swarm: false,
            seed_start: 1,
            shard: None,
            frontier: None,
            program: "dst".to_owned(),
            lineages_per_target: LINEAGES_PER_TARGET,
        }
    }
}

/// Why an exploration could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// An option out of range.
    #[error("{option}: {reason}")]
    Option {
        /// The option (`--jobs`).
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A frontier or report file that cannot be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Reports of different scenarios merged.
    #[error("{path}: a report of scenario {found}, not {expected}")]
    Scenario {
        /// The file.
        path: PathBuf,
        /// The scenario of the files before it.
        expected: String,
        /// This one's.
        found: String,
    },
}

impl ExploreOptions {
    /// Refuses options out of range, naming the option.
    pub fn validate(&self) -> Result<(), ExploreError> {
        let bad = |option, reason: &str| {
            Err(ExploreError::Option {
                option,
                reason: reason.to_owned(),
            })
        };
        if self.runs_max == 0 || self.runs_max > RUNS_MAX {
            return bad("runs_max", &format!("need 1 to {RUNS_MAX}"));
        }
        if self.jobs == 0 {
            return bad("jobs", "need at least 1");
        }
        if !(1..=LINEAGES_PER_TARGET_MAX).contains(&self.lineages_per_target) {
            return bad(
                "lineages_per_target",
                &format!("need 1 to {LINEAGES_PER_TARGET_MAX}"),
            );
        }
        if self.budget.is_zero() {
            return bad("budget", "need more than zero");
        }
        Ok(())
    }
}
