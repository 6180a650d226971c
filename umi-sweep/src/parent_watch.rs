//! A sweep worker process ends when its parent does, however the parent ended: a second
//! Ctrl-C (which exits at once from the signal handler, `signals.rs`), SIGKILL, the
//! out-of-memory killer, a panic that aborts. Nothing a user started outlives the
//! command they stopped, and a busy-looping seed does not keep a core spinning until
//! the worker's own watchdog (twice the seed timeout) ends it.
//!
//! Two mechanisms, both on the worker's side so they hold for every way the parent can
//! die (a parent-side kill would run only where the parent still runs code):
//!
//! - On Linux the worker asks the kernel for SIGKILL when its parent dies
//!   (`PR_SET_PDEATHSIG`, through rustix's safe wrapper: no unsafe code here). The
//!   kernel sends it when the parent *thread* that spawned the worker exits: that is a
//!   driver thread (`process_pool.rs`), which owns its worker for its whole life and
//!   ends it before it returns, so a live worker is never left by a driver that is
//!   still needed; a driver that panics takes its worker with it.
//! - Everywhere on unix, a thread polls the parent's id ([`PARENT_POLL_MS`]) and ends
//!   the worker once it changes (the worker was reparented): the fallback where there
//!   is no death signal, immune to the thread caveat, as `getppid` names the process.
//!
//! The parent passes its process id (`--parent-pid`), so a parent that died between the
//! spawn and the request for the death signal is noticed at once.
//!
//! Harness code outside every simulation (a thread that sleeps in wall time).
#![allow(
    clippy::disallowed_methods,
    clippy::print_stderr,
    reason = "a worker process's watch over its parent sleeps in wall time and says why it ends"
)]

/// How often a worker checks that its parent is still there.
pub(crate) const PARENT_POLL_MS: u64 = 200;

/// The exit status of a worker that ended because its parent had.
const EXIT_CODE_PARENT_GONE: i32 = 1;

/// Ends this worker when its parent, `parent_pid` (this process's parent now when
/// `None`), ends. Returns at once; a parent already gone ends the worker here.
#[cfg(unix)]
pub(crate) fn die_with_parent(parent_pid: Option<u32>) {
    use crate::worker::WORKER_THREAD_PREFIX;
    use std::os::unix::process::parent_id;
    request_death_signal();
    let parent = parent_pid.unwrap_or_else(parent_id);
    if parent_id() != parent {
        parent_gone(); // it died before the death signal was asked for
    }
    let watch = std::thread::Builder::new()
        .name(format!("{WORKER_THREAD_PREFIX}parent-watch"))
        .spawn(move || {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(PARENT_POLL_MS));
                if parent_id() != parent {
                    parent_gone();
                }
            }
        });
    if let Err(error) = watch {
        eprintln!("dst worker: cannot watch for its parent's end ({error})");
    }
}

/// Elsewhere a worker ends when its stdin does (its parent gone) between runs.
#[cfg(not(unix))]
pub(crate) fn die_with_parent(_parent_pid: Option<u32>) {}

/// Asks the kernel to kill this process when its parent (thread) dies (Linux only).
#[cfg(unix)]
fn request_death_signal() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Signal, set_parent_process_death_signal};
        if let Err(error) = set_parent_process_death_signal(Some(Signal::KILL)) {
            eprintln!("dst worker: no death signal from its parent ({error}); polling instead");
        }
    }
}

/// Ends this worker: there is no one left to report to.
#[cfg(unix)]
fn parent_gone() -> ! {
    std::process::exit(EXIT_CODE_PARENT_GONE)
}
