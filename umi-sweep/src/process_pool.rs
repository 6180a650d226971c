//! Worker processes, the parent's side: each slot of the sweep is a driver thread that
//! owns one long-lived worker process (this binary re-executed with the hidden
//! `__sweep-worker` command, `process_worker.rs`), takes run numbers from the shared
//! counter as worker threads do (about 16 ms of them at a time, `batch.rs`),
//! sends them as a JSON line on the worker's stdin and reads their results from the
//! worker's stdout (`wire.rs`).
//!
//! When the worker dies mid-run (an abort, a stack overflow, a failed allocation under
//! `--seed-memory-max`, `exit`, a signal from outside), the driver records that run as a
//! crash naming the signal or exit status and what the worker's stderr said
//! (`crash.rs`), starts a new worker and goes on. A worker that writes a whole line
//! that starts as a result and is not one broke the protocol while alive: the driver
//! ends it, and the crash says the sweep ended it (`ending.rs`). A run past the seed
//! timeout is declared hung by the engine's watchdog, which kills the worker
//! (`kill_hung`): the driver then sees its worker gone, leaves the run to the watchdog's
//! report, and starts a new one. A worker that dies or hangs in a batch of runs has sent none of their
//! results: the driver runs the batch again one run at a time, as above, so the run
//! that dies (seeds are deterministic) is the one named. A hang in a batch so takes two
//! seed timeouts to report. A death that does not come again (a kill from outside, the
//! OOM killer) costs no run, since every run of the batch gets its result from the
//! second worker; it is reported for the batch (`worker_deaths_unexplained`). Workers
//! are in their own process group, so a Ctrl-C at the terminal reaches only the parent,
//! which decides; a worker ends with its parent, however the parent ends
//! (`parent_watch.rs`: on Linux the kernel kills it when the driver thread that spawned
//! it exits, which is why a driver owns its worker to the end).
//!
//! Harness code outside every simulation: it spawns processes and threads and reads the
//! wall clock.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine runs worker processes and measures wall time, outside every simulation"
)]

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use umi_dst::micros_saturating;

use crate::batch::{BatchSizer, share_wall};
use crate::crash::{Death, describe_death};
use crate::ending::{Ending, Heard, dismiss, hear, kill_and_reap};
use crate::limit_in_force;
use crate::outcome::{Outcome, RunEnd};
use crate::process_worker::worker_arguments;
use crate::wire::{
    LineEnd, ReplyEnd, RunReply, RunRequest, WIRE_LINE_BYTES_MAX, read_line_bounded,
};
use crate::worker::{InFlight, Shared, WORKER_THREAD_PREFIX};

/// Lines of a worker's stderr kept for a crash's report (the last ones).
pub const WORKER_STDERR_TAIL_LINES_MAX: usize = 16;

/// Bytes of one stderr line kept.
const WORKER_STDERR_LINE_BYTES_MAX: usize = 4096;

/// The address space mimalloc reserves at a time in a worker under a memory limit (its
/// `MIMALLOC_ARENA_RESERVE` syntax).
const WORKER_ARENA_RESERVE: &str = "16MiB";

/// How a sweep starts its worker processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerProcesses {
    /// The binary to re-execute: one whose `main` is `umi_sweep::cli::main` over
    /// the same scenarios (the running `dst`, `std::env::current_exe()`).
    pub program: PathBuf,
    /// The address-space limit of each worker, in bytes (`--seed-memory-max`).
    pub memory_max_bytes: Option<u64>,
    /// The limit as the user gave it (`4GiB`), for messages.
    pub memory_max_text: Option<String>,
}

/// One running worker process.
struct Worker {
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn spawn(
        processes: &WorkerProcesses,
        seed_timeout: Duration,
        slot: usize,
    ) -> std::io::Result<Self> {
        let mut command = Command::new(&processes.program);
        command
            .args(worker_arguments(
                processes.memory_max_bytes,
                seed_timeout,
                std::process::id(),
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if processes.memory_max_bytes.is_some() {
            // The worker limits its own address space once it has started; mimalloc (the
            // `dst` binary's allocator) reserves 1 GiB of address space at start-up by
            // default, which alone would exceed a limit like `--seed-memory-max 256MiB`
            // and leave the worker unable to allocate anything. Small reservations keep
            // the limit about the seed's memory. Other allocators ignore the variable.
            command.env("MIMALLOC_ARENA_RESERVE", WORKER_ARENA_RESERVE);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0); // the terminal's Ctrl-C is the parent's to handle
        }
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("a worker process without its pipes"));
        };
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_reader = std::thread::Builder::new()
            .name(format!("{WORKER_THREAD_PREFIX}{slot}-stderr"))
            .spawn(move || keep_tail(stderr, &tail))?;
        Ok(Self {
            child: Arc::new(Mutex::new(child)),
            stdin,
            stdout: BufReader::new(stdout),
            stderr_tail,
            stderr_reader: Some(stderr_reader),
        })
    }

    /// Sends `batch` and waits for its results: every run's, in the order of the batch,
    /// or `Err` when the worker is gone (or said something that is not a result) before
    /// it sent them all, with what it said, if anything. A worker writes a batch's
    /// results together, so a worker that dies in a batch has sent none of them.
    fn run(&mut self, batch: &[RunRequest]) -> Result<Vec<RunReply>, Option<String>> {
        self.stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let mut line = serde_json::to_vec(batch).map_err(|error| Some(error.to_string()))?;
        line.push(b'\n');
        if self
            .stdin
            .write_all(&line)
            .and_then(|()| self.stdin.flush())
            .is_err()
        {
            return Err(None);
        }
        let mut replies = Vec::with_capacity(batch.len());
        let mut buffer = Vec::new();
        while let Some(request) = batch.get(replies.len()) {
            let end = read_line_bounded(&mut self.stdout, &mut buffer, WIRE_LINE_BYTES_MAX)
                .map_err(|_| None)?;
            match hear(end, &String::from_utf8_lossy(&buffer), request.index) {
                Heard::Reply(reply) => replies.push(reply),
                Heard::Other => {}
                Heard::Died => return Err(None),
                Heard::Broke(said) => return Err(Some(said)),
            }
        }
        Ok(replies)
    }

    /// Ends the worker (killed if still running) and returns how it died and the tail
    /// of its stderr. A worker `Dismissed` for breaking the protocol is still running,
    /// so the kill that ends it is the sweep's own and is not reported as its death.
    fn end(mut self, ending: Ending) -> (Death, Vec<String>) {
        let death = {
            let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
            match ending {
                Ending::Dismissed => dismiss(&mut child),
                // Already dead in a crash, or idle or wedged: its death as it is.
                Ending::Gone => kill_and_reap(&mut child),
            }
        };
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join(); // ends at the pipe's end, now that the process is gone
        }
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        (death, tail)
    }
}

/// Keeps the last lines of a worker's stderr (which must be read, or a chatty seed
/// would block on a full pipe).
fn keep_tail(stderr: std::process::ChildStderr, tail: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    while let Ok(LineEnd::Complete | LineEnd::TooLong | LineEnd::Cut) =
        read_line_bounded(&mut reader, &mut line, WORKER_STDERR_LINE_BYTES_MAX)
    {
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == WORKER_STDERR_TAIL_LINES_MAX {
            tail.pop_front();
        }
        tail.push_back(String::from_utf8_lossy(&line).trim_end().to_owned());
    }
}

/// Starts the driver thread of `slot`.
pub(crate) fn spawn_driver(
    shared: &Arc<Shared>,
    slot: usize,
    results: mpsc::SyncSender<Outcome>,
    processes: Arc<WorkerProcesses>,
    seed_timeout: Duration,
) {
    let shared = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name(format!("dst-driver-{slot}"))
        .spawn(move || drive(&shared, slot, &results, &processes, seed_timeout));
    assert!(spawned.is_ok(), "cannot spawn a sweep driver: {spawned:?}");
}

fn drive(
    shared: &Shared,
    slot: usize,
    results: &mpsc::SyncSender<Outcome>,
    processes: &WorkerProcesses,
    seed_timeout: Duration,
) {
    let context = Driving {
        shared,
        slot,
        processes,
        seed_timeout,
    };
    let mut worker: Option<Worker> = None;
    let mut sizer = BatchSizer::default();
    let jobs = shared
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len();
    let total = shared.plan.total();
    loop {
        let claimed = shared.next.load(Ordering::Relaxed);
        let len = sizer.next_len(total.saturating_sub(claimed), jobs);
        let first = shared.next.fetch_add(len, Ordering::Relaxed);
        let batch: Vec<RunRequest> = (first..first.saturating_add(len))
            .map_while(|index| {
                let (scenario, seed) = shared.plan.item(index)?;
                Some(RunRequest {
                    index,
                    scenario: shared.scenarios[scenario].name().to_owned(),
                    seed,
                    swarm: shared.swarm,
                    check_determinism: shared.check_determinism,
                })
            })
            .collect();
        if batch.is_empty() {
            break;
        }
        let outcomes = if batch.len() == 1 {
            context
                .run_alone(&mut worker, &batch[0], &mut sizer)
                .into_iter()
                .collect()
        } else {
            context.run_batch(&mut worker, &batch, &mut sizer)
        };
        for outcome in outcomes {
            // Blocks while the queue is full; fails once the sweep has ended.
            if results.send(outcome).is_err() {
                if worker.is_some() {
                    retire(&mut worker, shared, slot, Ending::Gone);
                }
                return;
            }
        }
    }
    if worker.is_some() {
        retire(&mut worker, shared, slot, Ending::Gone);
    }
}

/// What a driver runs its runs with.
struct Driving<'a> {
    shared: &'a Shared,
    slot: usize,
    processes: &'a WorkerProcesses,
    seed_timeout: Duration,
}

impl Driving<'_> {
    /// Runs `request` alone: its outcome, or `None` when the watchdog has reported it
    /// as hung. `sizer` learns how long the run took in its worker.
    fn run_alone(
        &self,
        worker: &mut Option<Worker>,
        request: &RunRequest,
        sizer: &mut BatchSizer,
    ) -> Option<Outcome> {
        let (shared, slot, processes) = (self.shared, self.slot, self.processes);
        let started = Instant::now();
        let run = match running(worker, shared, slot, processes, self.seed_timeout) {
            Err(error) => Some(RunEnd::Died(format!(
                "cannot start a worker process: {error}"
            ))),
            Ok(running) => {
                set_slot(shared, slot, Some(InFlight::run(request.index)));
                shared.round_trips.fetch_add(1, Ordering::Relaxed);
                let reply = running
                    .run(std::slice::from_ref(request))
                    .map(|mut replies| {
                        let reply = replies.remove(0);
                        sizer.observe(reply.wall_us);
                        reply.end
                    });
                // The watchdog clears a hung run's slot (and kills its worker) under
                // this lock: a cleared slot means the watchdog has reported the run.
                let hung = !take_slot(shared, slot, request.index);
                settle(reply, hung, worker, shared, slot, processes)
            }
        }?;
        Some(Outcome {
            index: request.index,
            run,
            wall: started.elapsed(),
        })
    }

    /// Runs `batch` (more than one run) in one round trip: each run's outcome, its wall
    /// time a share of the batch's. When the worker dies or hangs in the batch (or
    /// cannot start), the batch's runs all go again one at a time
    /// ([`Self::run_batch_again`]).
    fn run_batch(
        &self,
        worker: &mut Option<Worker>,
        batch: &[RunRequest],
        sizer: &mut BatchSizer,
    ) -> Vec<Outcome> {
        let (shared, slot, processes) = (self.shared, self.slot, self.processes);
        let first = batch[0].index;
        let started = Instant::now();
        let replies = match running(worker, shared, slot, processes, self.seed_timeout) {
            Err(_) => BatchEnd::Unsent,
            Ok(running) => {
                // The watchdog's clock starts once the worker is there, as a run alone's.
                set_slot(
                    shared,
                    slot,
                    Some(InFlight {
                        index: first,
                        since: Instant::now(),
                        batch: true,
                    }),
                );
                shared.round_trips.fetch_add(1, Ordering::Relaxed);
                let replies = running.run(batch);
                // A cleared slot: the watchdog killed the worker of a batch past the
                // seed timeout, and reported nothing.
                match (replies, take_slot(shared, slot, first)) {
                    (Ok(replies), true) => BatchEnd::Answered(replies),
                    (Err(said), true) => BatchEnd::Died(said),
                    (_, false) => BatchEnd::Hung,
                }
            }
        };
        let BatchEnd::Answered(replies) = replies else {
            return self.run_batch_again(worker, batch, sizer, &replies, started.elapsed());
        };
        let walls_us: Vec<u64> = replies.iter().map(|reply| reply.wall_us).collect();
        for wall_us in &walls_us {
            sizer.observe(*wall_us);
        }
        replies
            .into_iter()
            .zip(share_wall(started.elapsed(), &walls_us))
            .map(|(reply, wall)| Outcome {
                index: reply.index,
                run: finished(reply.end),
                wall,
            })
            .collect()
    }

    /// Runs again, one at a time in a new worker, each run of a `batch` that `failed`
    /// after `lost` of wall time, which the runs' outcomes share. Seeds are
    /// deterministic, so the run that killed the worker kills the next one and is named
    /// (or hangs again and is reported by the watchdog). A death that no run explains
    /// so is kept for the report ([`Shared::keep_death`]).
    fn run_batch_again(
        &self,
        worker: &mut Option<Worker>,
        batch: &[RunRequest],
        sizer: &mut BatchSizer,
        failed: &BatchEnd,
        lost: Duration,
    ) -> Vec<Outcome> {
        let (shared, slot) = (self.shared, self.slot);
        let died = match (failed, worker.is_some()) {
            (BatchEnd::Died(said), true) => {
                let (death, tail) = retire(worker, shared, slot, Ending::after(said.as_deref()));
                Some(describe_death_said(
                    death,
                    &tail,
                    said.as_deref(),
                    self.processes,
                ))
            }
            (_, true) => {
                retire(worker, shared, slot, Ending::Gone);
                None
            }
            (_, false) => None,
        };
        // The sizer starts over from the runs alone.
        *sizer = BatchSizer::default();
        let mut outcomes: Vec<Outcome> = batch
            .iter()
            .filter_map(|request| self.run_alone(worker, request, sizer))
            .collect();
        let walls_us: Vec<u64> = outcomes
            .iter()
            .map(|outcome| micros_saturating(outcome.wall))
            .collect();
        for (outcome, share) in outcomes.iter_mut().zip(share_wall(lost, &walls_us)) {
            outcome.wall += share;
        }
        let explained = outcomes.len() < batch.len()
            || outcomes
                .iter()
                .any(|outcome| matches!(outcome.run, RunEnd::Died(_)));
        if let Some(death) = died
            && !explained
        {
            shared.keep_death(format!(
                "a worker died in a batch of {} runs ({}), none of which died when run again alone: {death}",
                batch.len(),
                describe_runs(batch)
            ));
        }
        outcomes
    }
}

/// A batch's runs, scenario by scenario in the order they come: `12 seeds of canary
/// (143140 to 143151), ...` (a batch's runs are consecutive in the plan, so each
/// scenario's seeds are too, trials aside).
fn describe_runs(batch: &[RunRequest]) -> String {
    let mut scenarios: Vec<(&str, u64, u64, usize)> = Vec::new();
    for request in batch {
        match scenarios
            .iter_mut()
            .find(|(name, ..)| *name == request.scenario)
        {
            Some((_, low, high, count)) => {
                *low = (*low).min(request.seed);
                *high = (*high).max(request.seed);
                *count += 1;
            }
            None => scenarios.push((&request.scenario, request.seed, request.seed, 1)),
        }
    }
    let described: Vec<String> = scenarios
        .into_iter()
        .map(|(name, low, high, count)| match count {
            1 => format!("seed {low} of {name}"),
            _ => format!("{count} seeds of {name} ({low} to {high})"),
        })
        .collect();
    described.join(", ")
}

/// How a batch's round trip ended.
enum BatchEnd {
    /// Every run's result, in the batch's order.
    Answered(Vec<RunReply>),
    /// The worker died (or said something that is not a result), with what it said.
    Died(Option<String>),
    /// The watchdog killed the worker past the seed timeout.
    Hung,
    /// No worker could be started.
    Unsent,
}

/// What a reply the worker sent says about its run.
fn finished(end: ReplyEnd) -> RunEnd {
    match end {
        ReplyEnd::Finished(summary) => summary
            .into_run()
            .map_or_else(RunEnd::Died, |run| RunEnd::Finished(Box::new(run))),
        ReplyEnd::Panicked(message) => RunEnd::Panicked(message),
    }
}

/// How a run the worker replied to (or died in) ended; `None` when the watchdog has
/// already reported it as hung. A worker that died or whose run hung is retired.
fn settle(
    reply: Result<ReplyEnd, Option<String>>,
    hung: bool,
    worker: &mut Option<Worker>,
    shared: &Shared,
    slot: usize,
    processes: &WorkerProcesses,
) -> Option<RunEnd> {
    match reply {
        Ok(_) if hung => {
            retire(worker, shared, slot, Ending::Gone);
            None
        }
        Ok(end) => Some(finished(end)),
        Err(said) => {
            let (death, tail) = retire(worker, shared, slot, Ending::after(said.as_deref()));
            (!hung).then(|| {
                RunEnd::Died(describe_death_said(
                    death,
                    &tail,
                    said.as_deref(),
                    processes,
                ))
            })
        }
    }
}

/// What a worker's death says: what the worker said, if anything, then the death, its
/// stderr's tail and the memory limit in force.
fn describe_death_said(
    death: Death,
    tail: &[String],
    said: Option<&str>,
    processes: &WorkerProcesses,
) -> String {
    let limit = limit_in_force::describe(
        processes
            .memory_max_bytes
            .zip(processes.memory_max_text.as_deref()),
        limit_in_force::inherited_bytes(),
    );
    let message = describe_death(death, tail, limit.as_deref());
    match said {
        Some(said) => format!("{said}; {message}"),
        None => message,
    }
}

/// The slot's worker, started if it has none.
fn running<'a>(
    worker: &'a mut Option<Worker>,
    shared: &Shared,
    slot: usize,
    processes: &WorkerProcesses,
    seed_timeout: Duration,
) -> std::io::Result<&'a mut Worker> {
    if worker.is_none() {
        let started = Worker::spawn(processes, seed_timeout, slot)?;
        let mut killers = shared
            .killers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if killers.len() <= slot {
            killers.resize(slot + 1, None);
        }
        killers[slot] = Some(Arc::clone(&started.child));
        *worker = Some(started);
    }
    worker
        .as_mut()
        .ok_or_else(|| std::io::Error::other("no worker process"))
}

/// Ends the slot's worker (`ending` says why) and forgets it.
fn retire(
    worker: &mut Option<Worker>,
    shared: &Shared,
    slot: usize,
    ending: Ending,
) -> (Death, Vec<String>) {
    if let Some(killer) = shared
        .killers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_mut(slot)
    {
        *killer = None;
    }
    worker
        .take()
        .map_or((Death::Unknown, Vec::new()), |worker| worker.end(ending))
}

fn set_slot(shared: &Shared, slot: usize, value: Option<InFlight>) {
    shared.slots.lock().unwrap_or_else(PoisonError::into_inner)[slot] = value;
}

/// Frees the slot if it still holds run `index`; `false` if the watchdog took it.
fn take_slot(shared: &Shared, slot: usize, index: usize) -> bool {
    let mut slots = shared.slots.lock().unwrap_or_else(PoisonError::into_inner);
    if slots[slot].is_some_and(|running| running.index == index) {
        slots[slot] = None;
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(index: usize, scenario: &str, seed: u64) -> RunRequest {
        RunRequest {
            index,
            scenario: scenario.to_owned(),
            seed,
            swarm: false,
            check_determinism: false,
        }
    }

    #[test]
    fn a_batch_is_described_scenario_by_scenario() {
        let batch = [
            request(40, "canary", 11),
            request(41, "wire_faults", 11),
            request(42, "canary", 12),
            request(43, "wire_faults", 12),
            request(44, "canary", 13),
        ];
        assert_eq!(
            describe_runs(&batch),
            "3 seeds of canary (11 to 13), 2 seeds of wire_faults (11 to 12)"
        );
        assert_eq!(describe_runs(&batch[..1]), "seed 11 of canary");
    }
}
