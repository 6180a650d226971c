//! Worker threads (`--in-process`, and the library's default): each takes the next run number, runs that seed of that scenario on a
//! fresh simulated runtime (twice, to compare traces, when asked), and sends the outcome
//! to the main thread over a bounded queue (a worker whose result finds the queue full
//! waits: the recorder sets the pace, and memory stays flat); the watchdog declares runs
//! without a result hung.
//!
//! A run is in flight (in its worker's slot) from the moment it is claimed until its
//! result is ready, not while the result waits for room in the queue, so a worker held
//! back by a slow recorder is never taken for a hang.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine measures wall time and runs worker threads, outside every simulation"
)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) use crate::outcome::{Outcome, RunEnd};
use crate::plan::Plan;
use umi_dst::failure_class::FailureClass;
use umi_dst::scenario::{Scenario, run_one};
use umi_dst::simulation::determinism::compare_runs;
use umi_dst::simulation::{SeedRun, panic_message};

/// Unexplained worker deaths kept for the report (the report lists as many,
/// `report::REPORT_DEATHS_KEPT_MAX`).
pub(crate) const WORKER_DEATHS_KEPT_MAX: usize = 100;

/// What the workers share with the main thread.
pub(crate) struct Shared {
    pub(crate) plan: Plan,
    /// The next run number to claim; at or past the plan's total, nothing is left.
    pub(crate) next: AtomicUsize,
    /// Per slot, what it is running and since when.
    pub(crate) slots: Mutex<Vec<Option<InFlight>>>,
    /// Slots whose worker was declared hung (and replaced): if it ever finishes, it stops.
    pub(crate) retired: Mutex<BTreeSet<usize>>,
    /// Per slot, the worker process running its runs (worker processes only), which the
    /// watchdog kills when its run hangs.
    pub(crate) killers: Mutex<Vec<Option<Arc<Mutex<std::process::Child>>>>>,
    /// Round trips to worker processes so far (each a batch of runs).
    pub(crate) round_trips: AtomicU64,
    /// Worker deaths no run of their batch explained, for the report (at most
    /// [`WORKER_DEATHS_KEPT_MAX`]).
    pub(crate) deaths_unexplained: Mutex<Vec<String>>,
    pub(crate) scenarios: Vec<Arc<dyn Scenario>>,
    pub(crate) swarm: bool,
    pub(crate) check_determinism: bool,
}

/// What a slot is running: one run, or a batch of runs sent to its worker process
/// (`batch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InFlight {
    /// The run's number in the plan (a batch's first).
    pub(crate) index: usize,
    pub(crate) since: Instant,
    /// A batch of more than one run: past the seed timeout its worker is killed and
    /// nothing is reported, for its driver runs every run of the batch again one at a
    /// time, and the one that hangs is reported then.
    pub(crate) batch: bool,
}

impl InFlight {
    /// One run, from now.
    pub(crate) fn run(index: usize) -> Self {
        Self {
            index,
            since: Instant::now(),
            batch: false,
        }
    }
}

impl Shared {
    /// Stops handing out runs and returns how many were claimed: each of those still
    /// produces exactly one outcome (a result, or a hang from the watchdog).
    pub(crate) fn stop(&self) -> usize {
        let total = self.plan.total();
        self.next.fetch_max(total, Ordering::Relaxed).min(total)
    }

    /// Keeps `death` for the report, unless [`WORKER_DEATHS_KEPT_MAX`] are kept already.
    pub(crate) fn keep_death(&self, death: String) {
        let mut deaths = self
            .deaths_unexplained
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if deaths.len() < WORKER_DEATHS_KEPT_MAX {
            deaths.push(death);
        }
    }
}

/// Runs one seed, twice if `check_determinism` (both with full traces): two runs that
/// differ make it a nondeterminism failure, whatever else happened, whose message shows
/// where they diverged ([`umi_dst::simulation::determinism::compare_runs`], the check
/// `Simulation` runs too).
pub(crate) fn run_checked(
    scenario: &dyn Scenario,
    seed: u64,
    swarm: bool,
    check_determinism: bool,
) -> SeedRun {
    let with_trace = |mut config: umi_dst::SimConfig| {
        config.trace_full |= check_determinism;
        // No sweep report shows a run's last events (`dst replay` does, running the seed
        // again): keeping them cost each seed a copy of every event and the text of the
        // last 40 (issue 41). The trace hash is over every event either way.
        config.trace_tail_events = 0;
        config
    };
    let mut first = run_one(scenario, seed, swarm, with_trace);
    if check_determinism {
        let second = run_one(scenario, seed, swarm, with_trace);
        if let Some(found) = compare_runs(&first, &second) {
            first.failure = Some((FailureClass::Nondeterminism, found.describe()));
        }
        // The traces were kept for the comparison only: the outcome stays small.
        first.full_trace = None;
    }
    first
}

pub(crate) fn spawn_worker(shared: &Arc<Shared>, slot: usize, results: mpsc::SyncSender<Outcome>) {
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("{WORKER_THREAD_PREFIX}{slot}"))
        .spawn(move || {
            loop {
                let index = shared.next.fetch_add(1, Ordering::Relaxed);
                let Some((scenario, seed)) = shared.plan.item(index) else {
                    break;
                };
                shared.slots.lock().unwrap_or_else(PoisonError::into_inner)[slot] =
                    Some(InFlight::run(index));
                let started = Instant::now();
                let scenario = shared.scenarios[scenario].clone();
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_checked(
                        scenario.as_ref(),
                        seed,
                        shared.swarm,
                        shared.check_determinism,
                    )
                }))
                .map_or_else(
                    |payload| RunEnd::Panicked(panic_message(&*payload)),
                    |run| RunEnd::Finished(Box::new(run)),
                );
                if shared
                    .retired
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(&slot)
                {
                    break; // declared hung and replaced; its late result is not wanted
                }
                shared.slots.lock().unwrap_or_else(PoisonError::into_inner)[slot] = None;
                // Blocks while the queue is full; fails once the sweep has ended.
                if results
                    .send(Outcome {
                        index,
                        run,
                        wall: started.elapsed(),
                    })
                    .is_err()
                {
                    break;
                }
            }
        });
    assert!(spawned.is_ok(), "cannot spawn a sweep worker: {spawned:?}");
}

/// The name every sweep thread's name starts with (workers, their stderr readers, the
/// parent watch).
pub(crate) const WORKER_THREAD_PREFIX: &str = "dst-worker-";

/// Silences panic messages from worker threads (their panics are reported as crashes);
/// every other thread keeps the hook it had.
///
/// The quiet hook is installed once per process and never taken down: it wraps the hook
/// found at the first sweep and passes every panic outside a `dst-worker-` thread to it,
/// so it is invisible to the rest of the program. Restoring a hook when a sweep ends
/// cannot be done right while sweeps overlap (tests run them on parallel threads): each
/// would put back what it saw, and the last to end wins. Taking the hook down at the end
/// of a sweep used to drop the user's hook for the default one (the regression test
/// `a_sweep_keeps_the_users_panic_hook`).
pub(crate) fn silence_worker_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !is_worker_thread(std::thread::current().name()) {
                previous(info);
            }
        }));
    });
}

/// Whether a thread of this name is a sweep worker, whose panics are reported as crashes.
fn is_worker_thread(name: Option<&str>) -> bool {
    name.is_some_and(|name| name.starts_with(WORKER_THREAD_PREFIX))
}

/// Runs in flight past `timeout`: recorded as hangs (their slot freed for a replacement).
pub(crate) fn watchdog(
    shared: &Shared,
    hung_already: &BTreeSet<usize>,
    timeout: Duration,
) -> Vec<Outcome> {
    let mut slots = shared.slots.lock().unwrap_or_else(PoisonError::into_inner);
    let mut retired = shared
        .retired
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let mut hung = Vec::new();
    for (number, slot) in slots.iter_mut().enumerate() {
        if let Some(InFlight {
            index,
            since,
            batch,
        }) = *slot
            && since.elapsed() > timeout
            && !hung_already.contains(&index)
        {
            *slot = None;
            if batch {
                // Its driver sees the slot taken and runs the batch again one run at a
                // time: the run that hangs is reported then, by its own index.
                kill_hung(shared, number);
                continue;
            }
            retired.insert(number);
            // A worker process is killed with the slots locked, so its driver, which
            // checks the slot under the same lock, never mistakes the kill for a crash
            // of a later run.
            kill_hung(shared, number);
            let message = format!(
                "no result after {:.1} s of wall time: a hang (a loop that never yields, or blocking I/O)",
                timeout.as_secs_f64()
            );
            hung.push(Outcome {
                index,
                run: RunEnd::Hung(message),
                wall: since.elapsed(),
            });
        }
    }
    hung
}

/// Kills the worker process of `slot`, if it has one (the engine's watchdog, with the
/// slots locked, for a run it declared hung).
fn kill_hung(shared: &Shared, slot: usize) {
    let killers = shared
        .killers
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(Some(child)) = killers.get(slot) {
        let _ = child.lock().unwrap_or_else(PoisonError::into_inner).kill();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{is_worker_thread, silence_worker_panics};

    /// Regression: a sweep ended by taking the panic hook down, which left the default
    /// hook in place of whatever the program had installed. A hook installed before a
    /// sweep still sees the panics of other threads after it.
    #[test]
    fn a_sweep_keeps_the_users_panic_hook() {
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&seen);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("users-hook-probe") {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
        silence_worker_panics();
        silence_worker_panics();
        let probe = std::thread::Builder::new()
            .name("users-hook-probe".to_owned())
            .spawn(|| panic!("a panic the user's hook must see"))
            .expect("spawn the probe thread");
        assert!(probe.join().is_err());
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn only_sweep_threads_are_silenced() {
        assert!(is_worker_thread(Some("dst-worker-3")));
        assert!(is_worker_thread(Some("dst-worker-3-stderr")));
        assert!(!is_worker_thread(Some("main")));
        assert!(!is_worker_thread(None));
    }
}
