//! Worker processes, the parent's side: each slot of the sweep is a driver thread that
//! owns one long-lived worker process (this binary re-executed with the hidden
//! `__sweep-worker` command, `process_worker.rs`), takes run numbers from the shared
//! counter as worker threads do, sends each run as a JSON line on the worker's stdin
//! and reads its result from the worker's stdout (`wire.rs`).
//!
//! When the worker dies mid-run (an abort, a stack overflow, a failed allocation under
//! `--seed-memory-max`, `exit`, a signal from outside), the driver records that run as a
//! crash naming the signal or exit status and what the worker's stderr said
//! (`crash.rs`), starts a new worker and goes on. A run past the seed timeout is
//! declared hung by the engine's watchdog, which kills the worker (`kill_hung`): the
//! driver then sees its worker gone, leaves the run to the watchdog's report, and starts
//! a new one. Workers are in their own process group, so a Ctrl-C at the terminal
//! reaches only the parent, which decides; a worker ends with its parent, however the
//! parent ends (`parent_watch.rs`: on Linux the kernel kills it when the driver thread
//! that spawned it exits, which is why a driver owns its worker to the end).
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

use crate::crash::{Death, describe_death};
use crate::limit_in_force;
use crate::outcome::{Outcome, RunEnd};
use crate::process_worker::worker_arguments;
use crate::wire::{
    LineEnd, RESULT_PREFIX, RUN_START_MARK, ReplyEnd, RunRequest, WIRE_LINE_BYTES_MAX,
    parse_reply_line, read_line_bounded,
};
use crate::worker::{Shared, WORKER_THREAD_PREFIX};

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

    /// Queues `request` on the worker's stdin; `false` when the worker is gone.
    fn send(&mut self, request: &RunRequest) -> bool {
        let Ok(mut line) = serde_json::to_vec(request) else {
            return false; // a request of plain fields always serializes
        };
        line.push(b'\n');
        self.stdin
            .write_all(&line)
            .and_then(|()| self.stdin.flush())
            .is_ok()
    }

    /// Waits for the result of run `index`, the oldest one sent; `Err` when the worker
    /// is gone (or said something that is not a result), with what it said, if anything.
    fn receive(&mut self, index: usize) -> Result<ReplyEnd, Option<String>> {
        let mut buffer = Vec::new();
        loop {
            let end = read_line_bounded(&mut self.stdout, &mut buffer, WIRE_LINE_BYTES_MAX)
                .map_err(|_| None)?;
            let text = String::from_utf8_lossy(&buffer);
            match end {
                LineEnd::Eof => return Err(None),
                LineEnd::TooLong if text.contains(RESULT_PREFIX) => {
                    return Err(Some(format!(
                        "the worker's result was longer than {WIRE_LINE_BYTES_MAX} bytes"
                    )));
                }
                LineEnd::TooLong => {} // scenario output
                LineEnd::Complete => match parse_reply_line(&text) {
                    None => {} // scenario output
                    Some(Err(error)) => return Err(Some(error)),
                    Some(Ok(reply)) if reply.index == index => return Ok(reply.end),
                    Some(Ok(_)) => {} // not this run's: printed by seed code, ignored
                },
            }
        }
    }

    /// Ends the worker (killed if still running) and returns how it died and the tail
    /// of its stderr.
    fn end(mut self) -> (Death, Vec<String>) {
        let status = {
            let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
            // Already dead in a crash; idle or wedged otherwise.
            let _ = child.kill();
            child.wait()
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
        (status.map_or(Death::Unknown, Death::of), tail)
    }
}

/// Keeps the last lines of a worker's stderr since its current run started (which must
/// be read, or a chatty seed would block on a full pipe).
fn keep_tail(stderr: impl std::io::Read, tail: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    while let Ok(LineEnd::Complete | LineEnd::TooLong) =
        read_line_bounded(&mut reader, &mut line, WORKER_STDERR_LINE_BYTES_MAX)
    {
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if line.starts_with(RUN_START_MARK.as_bytes()) {
            tail.clear(); // a new run: what came before was an earlier run's
            continue;
        }
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
    let mut worker: Option<Worker> = None;
    let mut claimed = Claimed::default();
    loop {
        claimed.top_up(shared);
        let Some(index) = claimed.front() else {
            break;
        };
        let end = match running(&mut worker, shared, slot, processes, seed_timeout) {
            Err(error) => Some(RunEnd::Died(format!(
                "cannot start a worker process: {error}"
            ))),
            Ok(running) => {
                let started = claimed.send_all(running);
                set_slot(shared, slot, Some((index, started)));
                let reply = running.receive(index);
                // The watchdog clears a hung run's slot (and kills its worker) under
                // this lock: a cleared slot means the watchdog has reported the run.
                let hung = !take_slot(shared, slot, index);
                let end = settle(reply, hung, &mut worker, shared, slot, processes);
                if worker.is_none() {
                    claimed.worker_gone(); // the runs queued behind go to the next worker
                }
                end
            }
        };
        let started = claimed.pop_front();
        if let Some(run) = end {
            let outcome = Outcome {
                index,
                run,
                wall: started.elapsed(),
            };
            // Blocks while the queue is full; fails once the sweep has ended.
            if results.send(outcome).is_err() {
                break;
            }
        }
    }
    if worker.is_some() {
        retire(&mut worker, shared, slot);
    }
}

/// Runs a driver has claimed and keeps queued on its worker's stdin at once: the one
/// running and the next, so the worker starts the next seed as soon as it has written a
/// result instead of waiting for the parent to read it and answer (on a 2-core machine
/// that round trip cost a `canary` seed about 40 µs, nearly as much as the seed).
const DRIVER_RUNS_QUEUED_MAX: usize = 2;

/// A driver's claimed runs, oldest first: the worker runs them in this order.
#[derive(Default)]
struct Claimed {
    requests: VecDeque<RunRequest>,
    /// How many of `requests` (from the front) the current worker has been sent.
    sent: usize,
    /// When the front run became the worker's: sent to an idle worker, or the result
    /// before it read. A run's wall time is counted from here, not from its claim.
    front_started: Option<Instant>,
}

impl Claimed {
    /// Claims runs from the shared counter until `DRIVER_RUNS_QUEUED_MAX` are held or
    /// none is left (every claimed run still produces exactly one outcome).
    fn top_up(&mut self, shared: &Shared) {
        while self.requests.len() < DRIVER_RUNS_QUEUED_MAX {
            let index = shared.next.fetch_add(1, Ordering::Relaxed);
            let Some((scenario, seed)) = shared.plan.item(index) else {
                return;
            };
            self.requests.push_back(RunRequest {
                index,
                scenario: shared.scenarios[scenario].name().to_owned(),
                seed,
                swarm: shared.swarm,
                check_determinism: shared.check_determinism,
            });
        }
    }

    fn front(&self) -> Option<usize> {
        self.requests.front().map(|request| request.index)
    }

    /// Sends `worker` every held run it has not been sent, and returns when the front
    /// run started. A failed send is left for `receive` to find (the worker is gone).
    fn send_all(&mut self, worker: &mut Worker) -> Instant {
        assert!(self.sent <= self.requests.len(), "sent more runs than held");
        if self.sent == 0 {
            self.front_started = Some(Instant::now());
        }
        for request in self.requests.iter().skip(self.sent) {
            if !worker.send(request) {
                break;
            }
            self.sent += 1;
        }
        *self.front_started.get_or_insert_with(Instant::now)
    }

    /// The worker was retired: none of the held runs has been sent to the next one.
    fn worker_gone(&mut self) {
        self.sent = 0;
    }

    /// Forgets the front run (its outcome is settled) and returns when it started; the
    /// next run starts now, if the worker already has it.
    fn pop_front(&mut self) -> Instant {
        let popped = self.requests.pop_front();
        assert!(popped.is_some(), "a driver settled a run it did not hold");
        self.sent = self.sent.saturating_sub(1);
        let now = Instant::now();
        let started = self.front_started.take().unwrap_or(now);
        if self.sent > 0 {
            self.front_started = Some(now);
        }
        started
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
            retire(worker, shared, slot);
            None
        }
        Ok(ReplyEnd::Finished(summary)) => Some(
            summary
                .into_run()
                .map_or_else(RunEnd::Died, |run| RunEnd::Finished(Box::new(run))),
        ),
        Ok(ReplyEnd::Panicked(message)) => Some(RunEnd::Panicked(message)),
        Err(said) => {
            let (death, tail) = retire(worker, shared, slot);
            (!hung).then(|| {
                let limit = limit_in_force::describe(
                    processes
                        .memory_max_bytes
                        .zip(processes.memory_max_text.as_deref()),
                    limit_in_force::inherited_bytes(),
                );
                let message = describe_death(death, &tail, limit.as_deref());
                RunEnd::Died(match said {
                    Some(said) => format!("{said}; {message}"),
                    None => message,
                })
            })
        }
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

/// Ends the slot's worker and forgets it.
fn retire(worker: &mut Option<Worker>, shared: &Shared, slot: usize) -> (Death, Vec<String>) {
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
        .map_or((Death::Unknown, Vec::new()), Worker::end)
}

fn set_slot(shared: &Shared, slot: usize, value: Option<(usize, Instant)>) {
    shared.slots.lock().unwrap_or_else(PoisonError::into_inner)[slot] = value;
}

/// Frees the slot if it still holds run `index`; `false` if the watchdog took it.
fn take_slot(shared: &Shared, slot: usize, index: usize) -> bool {
    let mut slots = shared.slots.lock().unwrap_or_else(PoisonError::into_inner);
    if slots[slot].is_some_and(|(running, _)| running == index) {
        slots[slot] = None;
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crash reports the stderr of its own run only: with the next run queued, the
    /// parent cannot clear the tail when it reads a result (the worker may already have
    /// written the next run's first lines), so the worker's run-start mark does it.
    #[test]
    fn a_run_start_mark_forgets_the_earlier_runs_stderr() {
        let stderr = format!("first run\n{RUN_START_MARK}\nsecond run\nits panic\n");
        let tail = Mutex::new(VecDeque::new());
        keep_tail(stderr.as_bytes(), &tail);
        let kept: Vec<String> = tail.into_inner().unwrap().into_iter().collect();
        assert_eq!(kept, ["second run", "its panic"]);
    }

    #[test]
    fn the_tail_keeps_the_last_lines_of_a_long_run() {
        let stderr: String = (0..WORKER_STDERR_TAIL_LINES_MAX + 3)
            .map(|i| format!("line {i}\n"))
            .collect();
        let tail = Mutex::new(VecDeque::new());
        keep_tail(stderr.as_bytes(), &tail);
        let kept = tail.into_inner().unwrap();
        assert_eq!(kept.len(), WORKER_STDERR_TAIL_LINES_MAX);
        assert_eq!(kept.front().map(String::as_str), Some("line 3"));
    }

    /// The bookkeeping of queued runs: a settled run leaves the next one started if the
    /// worker had it, and a retired worker's queued runs are sent again to the next.
    #[test]
    fn queued_runs_are_resent_after_a_worker_is_retired() {
        let request = |index| RunRequest {
            index,
            scenario: "s".into(),
            seed: 1,
            swarm: false,
            check_determinism: false,
        };
        let mut claimed = Claimed {
            requests: VecDeque::from([request(0), request(1)]),
            sent: 2,
            front_started: Some(Instant::now()),
        };
        claimed.pop_front();
        assert_eq!((claimed.front(), claimed.sent), (Some(1), 1));
        assert!(
            claimed.front_started.is_some(),
            "run 1 was already queued: it runs"
        );
        claimed.worker_gone();
        claimed.pop_front();
        assert_eq!((claimed.front(), claimed.sent), (None, 0));
        assert!(
            claimed.front_started.is_none(),
            "nothing runs until it is sent"
        );
    }
}
