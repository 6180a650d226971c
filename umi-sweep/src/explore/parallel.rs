//! Runs a batch of paths over `jobs` threads (each run its own simulation) and returns
//! the outcomes in batch order, so what the explorer folds does not depend on which
//! thread finished first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::RunPath;
use super::outcome::{PathOutcome, PathRunner};

/// The outcomes of `paths`, in order, run by up to `jobs` threads.
pub fn run_batch(runner: &dyn PathRunner, paths: &[RunPath], jobs: usize) -> Vec<PathOutcome> {
    let threads = jobs.clamp(1, paths.len().max(1));
    if threads == 1 {
        return paths.iter().map(|path| runner.run(path)).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<PathOutcome>>> = Mutex::new(vec![None; paths.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(index) else { break };
                    let outcome = runner.run(path);
                    let mut slots = slots
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    slots[index] = Some(outcome);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}
