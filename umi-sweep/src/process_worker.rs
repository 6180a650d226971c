//! A sweep worker process: the `dst` binary re-executed by its parent's sweep
//! (`process_pool.rs`) with the hidden `__sweep-worker` command. It limits its own
//! address space (`--seed-memory-max`), then runs one request at a time from stdin (a
//! batch of runs, `batch.rs`), each a seed of the same scenarios its parent has, and
//! writes each run's result as a prefixed JSON line on stdout (`wire.rs`), the batch's
//! lines together once its last run has finished. It ends when its stdin ends.
//!
//! Anything a seed does to this process (an abort, a stack overflow, a failed
//! allocation, `exit`) ends only this worker; its parent sees the death, records the
//! seed as a crash and starts another worker. A panic is caught here, as in a worker
//! thread. A worker ends with its parent (`parent_watch.rs`). Each run is also watched
//! by this process's own wall-clock watchdog, at twice the parent's seed timeout: the
//! parent kills a hung worker first, so this is a last resort should both other ways
//! fail.
//!
//! Harness code outside every simulation (wall time, a watchdog thread).
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::print_stderr,
    reason = "a worker process measures wall time and says on stderr why it cannot work"
)]

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use crate::batch::BATCH_RUNS_MAX;
use crate::memory_limit;
use crate::parent_watch;
use crate::wire::{
    LineEnd, ReplyEnd, RunReply, RunRequest, RunSummary, WIRE_LINE_BYTES_MAX, read_line_bounded,
    reply_line,
};
use crate::worker::run_checked;
use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, process_exit_code};
use umi_dst::micros_saturating;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::Watchdog;
use umi_dst::simulation::panic_message;

/// The name of the hidden command that makes the binary a sweep worker.
pub(crate) const WORKER_COMMAND: &str = "__sweep-worker";

/// Added to twice the seed timeout before a worker ends itself (the parent's watchdog
/// ticks every 200 ms and must always act first).
const SELF_WATCHDOG_GRACE_MS: u64 = 5_000;

/// The worker's arguments, as the parent passes them.
#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// Limit this process's address space to this many bytes.
    #[arg(long)]
    memory_max_bytes: Option<u64>,
    /// The parent's seed timeout, in milliseconds.
    #[arg(long)]
    seed_timeout_ms: u64,
    /// The parent's process id: the worker ends when its parent is no longer this one.
    #[arg(long)]
    parent_pid: Option<u32>,
}

/// The arguments after the program name that start a worker.
pub(crate) fn worker_arguments(
    memory_max_bytes: Option<u64>,
    seed_timeout: Duration,
    parent_pid: u32,
) -> Vec<String> {
    let mut args = vec![
        WORKER_COMMAND.to_owned(),
        "--seed-timeout-ms".to_owned(),
        seed_timeout.as_millis().to_string(),
        "--parent-pid".to_owned(),
        parent_pid.to_string(),
    ];
    if let Some(bytes) = memory_max_bytes {
        args.extend(["--memory-max-bytes".to_owned(), bytes.to_string()]);
    }
    args
}

/// Serves run requests from stdin until it ends.
pub(crate) fn serve(scenarios: &[Arc<dyn Scenario>], args: &WorkerArgs) -> ExitCode {
    parent_watch::die_with_parent(args.parent_pid);
    if let Some(bytes) = args.memory_max_bytes
        && let Err(error) = memory_limit::apply(bytes)
    {
        eprintln!("dst worker: cannot limit memory to {bytes} bytes: {error}");
        return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
    }
    let self_limit = Duration::from_millis(args.seed_timeout_ms)
        .saturating_mul(2)
        .saturating_add(Duration::from_millis(SELF_WATCHDOG_GRACE_MS));
    let mut watchdog = Watchdog::start();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    // What the watchdog names the run (a buffer reused from run to run).
    let mut what = String::new();
    // The batch's result lines, written together (a buffer reused from batch to batch).
    let mut replies = String::new();
    loop {
        match read_line_bounded(&mut input, &mut line, WIRE_LINE_BYTES_MAX) {
            Ok(LineEnd::Eof | LineEnd::Cut) => return ExitCode::SUCCESS, // the driver ended
            Ok(LineEnd::Complete) => {}
            Ok(LineEnd::TooLong) => {
                eprintln!("dst worker: a request line over {WIRE_LINE_BYTES_MAX} bytes");
                return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
            }
            Err(error) => {
                eprintln!("dst worker: cannot read requests: {error}");
                return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
            }
        }
        let batch: Vec<RunRequest> = match serde_json::from_slice(&line) {
            Ok(batch) => batch,
            Err(error) => {
                eprintln!("dst worker: a request that is not one ({error})");
                return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
            }
        };
        if batch.len() > BATCH_RUNS_MAX {
            eprintln!(
                "dst worker: a batch of {} runs, over the limit of {BATCH_RUNS_MAX}",
                batch.len()
            );
            return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
        }
        replies.clear();
        for request in &batch {
            let _watched = watchdog.as_mut().map(|watchdog| {
                what.clear();
                let _ = write!(
                    what,
                    "dst worker: seed {} of {}",
                    request.seed, request.scenario
                );
                watchdog.watch(&what, self_limit, "its parent's table")
            });
            replies.push_str(&reply_line(&run(scenarios, request)));
        }
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(replies.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::SUCCESS; // the parent is gone
        }
    }
}

fn run(scenarios: &[Arc<dyn Scenario>], request: &RunRequest) -> RunReply {
    let started = Instant::now();
    let end = match scenarios.iter().find(|s| s.name() == request.scenario) {
        None => ReplyEnd::Panicked(format!(
            "the worker has no scenario {:?} (a different binary?)",
            request.scenario
        )),
        Some(scenario) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_checked(
                scenario.as_ref(),
                request.seed,
                request.swarm,
                request.check_determinism,
            )
        }))
        .map_or_else(
            |payload| ReplyEnd::Panicked(panic_message(&*payload)),
            |run| ReplyEnd::Finished(Box::new(RunSummary::of(&run))),
        ),
    };
    RunReply {
        index: request.index,
        wall_us: micros_saturating(started.elapsed()),
        end,
    }
}
