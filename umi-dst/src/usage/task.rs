//! The task/trial split of a seed: pass^k needs the same task tried k times, each time
//! with the model's variation and the faults drawn afresh, and every try replayable
//! from one `u64`.
//!
//! A trial seed sets the top bit and packs the task into the middle bits and the trial
//! into the low [`TRIAL_BITS`]: `1 << 63 | task << 16 | trial`. A scenario draws its
//! workload (what the agent is asked) from
//! [`SimKernel::task_rng`](crate::SimKernel::task_rng), which forks from the
//! task alone, and everything else from the whole seed. A seed without the top bit is
//! its own task, trial 0, and `task_rng` is then exactly `rng`: no seed an ordinary
//! sweep runs changes meaning. See docs/adr/0014-task-and-trial-seeds.md.

use std::fmt;

/// Bits of a trial seed that hold the trial.
pub const TRIAL_BITS: u32 = 16;

/// Trials of one task a sweep may run.
pub const TRIALS_MAX: u64 = 1 << TRIAL_BITS;

/// The bit that marks a trial seed.
const TRIAL_FLAG: u64 = 1 << 63;

/// Tasks a trial seed can name (the bits between the flag and the trial).
pub const TASKS_MAX: u64 = 1 << (63 - TRIAL_BITS);

/// A seed's task and trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TaskTrial {
    /// The task: the workload's seed.
    pub task: u64,
    /// The trial, from 0; `None` for a seed that is not a trial seed.
    pub trial: Option<u64>,
}

impl fmt::Display for TaskTrial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.trial {
            Some(trial) => write!(f, "task {} trial {trial}", self.task),
            None => write!(f, "seed {}", self.task),
        }
    }
}

/// The seed of `trial` of `task`, or `None` when either is out of range (`task` below
/// [`TASKS_MAX`], `trial` below [`TRIALS_MAX`]).
pub fn trial_seed(task: u64, trial: u64) -> Option<u64> {
    (task < TASKS_MAX && trial < TRIALS_MAX).then_some(TRIAL_FLAG | task << TRIAL_BITS | trial)
}

/// What `seed` is: a trial of a task, or its own task.
pub fn split_seed(seed: u64) -> TaskTrial {
    if seed & TRIAL_FLAG == 0 {
        return TaskTrial {
            task: seed,
            trial: None,
        };
    }
    TaskTrial {
        task: (seed & !TRIAL_FLAG) >> TRIAL_BITS,
        trial: Some(seed & (TRIALS_MAX - 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_seeds_round_trip_and_plain_seeds_are_their_own_task() {
        for (task, trial) in [(0, 0), (1, 3), (TASKS_MAX - 1, TRIALS_MAX - 1)] {
            let seed = trial_seed(task, trial).unwrap();
            assert_eq!(
                split_seed(seed),
                TaskTrial {
                    task,
                    trial: Some(trial)
                }
            );
        }
        assert_eq!(trial_seed(TASKS_MAX, 0), None);
        assert_eq!(trial_seed(1, TRIALS_MAX), None);
        assert_eq!(
            split_seed(42),
            TaskTrial {
                task: 42,
                trial: None
            }
        );
        assert_eq!(trial_seed(1, 3), Some(0x8000_0000_0001_0003));
        assert_eq!(
            split_seed(0x8000_0000_0001_0003).to_string(),
            "task 1 trial 3"
        );
    }
}
