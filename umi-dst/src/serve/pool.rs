//! The threads that run the server's simulations.
//!
//! Each request is answered by a simulation on a paused runtime of its own, which cannot
//! run on the server's async workers (a runtime inside a runtime), so it runs on one of a
//! few long-lived OS threads, one per core. Long-lived matters: a simulation on a warm
//! thread costs a fifth of one on a fresh or rarely used thread (tokio's blocking pool
//! hands work to whichever of its many threads is idle, whose allocator caches are
//! cold), and at `--time-scale 0` that cost is most of a request's.
//!
//! Running the simulation on the request's own worker inside
//! `tokio::task::block_in_place` instead (no hop to a pool thread and back) was measured
//! and not kept (issue 41): tokio hands the worker's core to another thread on every
//! call, so with 8 and 64 clients a request cost 25-45% more CPU (whole: 105 and 125 µs
//! against 78 and 80; streamed: 168 and 195 against 137 and 143, the serve bench's
//! `cpu/request`), and one client's added p50 did not move (82 against 79 µs).
//!
//! Jobs wait in a queue bounded by the server's concurrency limit (a request holds its
//! permit while its job waits), so the queue can never grow past what the server admitted.
//! A job that panics is caught on its thread; its request sees the pool's error, and the
//! thread takes the next job.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the real server's own threads, outside every simulation (each job builds its own)"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// Simulation threads at most, whatever the core count says.
pub(crate) const SIMULATION_THREADS_MAX: usize = 64;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why a job produced no result.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum PoolError {
    /// The queue was full: more jobs than the server admitted (a bug) or all threads gone.
    #[error("the simulation queue is full ({capacity} jobs)")]
    Full { capacity: usize },
    /// The job panicked outside the simulation's own panic handling, or the pool stopped.
    #[error("the simulation thread ended without an answer")]
    Lost,
}

/// A fixed set of simulation threads fed from one bounded queue.
#[derive(Debug)]
pub(crate) struct SimulationPool {
    sender: SyncSender<Job>,
    capacity: usize,
}

impl SimulationPool {
    /// Starts `threads` threads (at least one, at most [`SIMULATION_THREADS_MAX`]) behind
    /// a queue of `capacity` jobs.
    pub(crate) fn start(threads: usize, capacity: usize) -> Self {
        assert!(capacity > 0, "a pool needs room for one job");
        let threads = threads.clamp(1, SIMULATION_THREADS_MAX);
        let (sender, receiver) = sync_channel::<Job>(capacity);
        let receiver = Arc::new(Mutex::new(receiver));
        for index in 0..threads {
            let receiver = receiver.clone();
            // A thread that cannot start leaves the others to do its share; with none,
            // every job reports `Lost` (its sender is dropped with the job).
            let _ = std::thread::Builder::new()
                .name(format!("umi-serve-sim-{index}"))
                .spawn(move || work(&receiver));
        }
        Self { sender, capacity }
    }

    /// The number of threads for this machine: one per core.
    pub(crate) fn threads_default() -> usize {
        std::thread::available_parallelism().map_or(1, usize::from)
    }

    /// Runs `job` on a simulation thread and waits for its result.
    pub(crate) async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (done, result) = oneshot::channel();
        let boxed: Job = Box::new(move || {
            let _ = done.send(job());
        });
        match self.sender.try_send(boxed) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(PoolError::Full {
                    capacity: self.capacity,
                });
            }
            Err(TrySendError::Disconnected(_)) => return Err(PoolError::Lost),
        }
        result.await.map_err(|_| PoolError::Lost)
    }
}

/// A thread's loop: the next job, until the pool is dropped.
fn work(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let receiver = receiver.lock().unwrap_or_else(PoisonError::into_inner);
            match receiver.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        // The job's result sender is dropped with it on a panic: its caller sees `Lost`.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real runtime: the pool is `dst serve`'s, real threads outside any simulation.
    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn jobs_run_on_the_pools_named_threads_and_return_their_results() {
        let pool = SimulationPool::start(2, 8);
        let names = runtime().block_on(async {
            let mut names = Vec::new();
            for _ in 0..4 {
                let name = pool
                    .run(|| std::thread::current().name().map(str::to_owned))
                    .await
                    .expect("the job runs");
                names.push(name.expect("pool threads are named"));
            }
            names
        });
        assert!(
            names.iter().all(|n| n.starts_with("umi-serve-sim-")),
            "{names:?}"
        );
    }

    #[test]
    fn a_panicking_job_is_lost_and_the_thread_takes_the_next() {
        let pool = SimulationPool::start(1, 4);
        runtime().block_on(async {
            let lost = pool.run(|| -> u8 { panic!("a bug in a job") }).await;
            assert_eq!(lost, Err(PoolError::Lost));
            assert_eq!(
                pool.run(|| 7).await,
                Ok(7),
                "the one thread survived the panic"
            );
        });
    }

    #[test]
    fn a_full_queue_refuses_instead_of_growing() {
        let pool = SimulationPool::start(1, 1);
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let (started, has_started) = std::sync::mpsc::channel::<()>();
        runtime().block_on(async {
            // One job holds the thread; one fills the queue; the third is refused.
            let busy = pool.run(move || {
                let _ = started.send(());
                hold.recv().is_ok()
            });
            futures::pin_mut!(busy);
            assert!(futures::poll!(&mut busy).is_pending());
            has_started.recv().expect("the thread takes the first job");
            let queued = pool.run(|| true);
            futures::pin_mut!(queued);
            assert!(futures::poll!(&mut queued).is_pending());
            let refused = pool.run(|| true);
            assert_eq!(refused.await, Err(PoolError::Full { capacity: 1 }));
            release.send(()).expect("the busy job is waiting");
            assert_eq!(busy.await, Ok(true));
            assert_eq!(queued.await, Ok(true));
        });
    }
}
