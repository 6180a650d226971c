//! A wall-clock watchdog for one seed at a time, outside the sweep's worker pool: the
//! `Simulation` runner (`cargo test`), `dst replay`, and each sweep worker process (as a
//! backstop should its parent die) watch every seed they run with one.
//!
//! A seed runs on a paused tokio runtime on the calling thread, so a body that never
//! yields (a busy loop, blocking I/O) stops simulated time and every in-simulation
//! bound with it; only the wall clock still moves. A thread cannot be stopped from
//! outside, and libtest cannot abandon a test thread either, so when a seed runs past
//! its limit the watchdog's own thread prints one report naming the seed, the limit and
//! the command that replays it, and ends the process with the liveness exit code (12):
//! a hanging seed fails with its name instead of hanging the test run.
//!
//! One thread serves many seeds: [`Watchdog::watch`] arms it for one seed and the
//! returned guard disarms it when dropped, so watching costs two channel messages per
//! seed, not a thread.
//!
//! This is harness code outside every simulation: it reads the wall clock and runs a
//! thread, which `clippy.toml` otherwise forbids.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the watchdog measures wall time on its own thread, outside every simulation"
)]

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::failure_class::FailureClass;

/// The variable that sets the wall-clock limit of one seed under `Simulation::run` and
/// `dst replay` (a duration like `90s`, `5m`, `500ms`).
pub const SEED_TIMEOUT_VAR: &str = "DST_SEED_TIMEOUT";

/// What the watchdog thread is told.
enum Order {
    /// Watch seed number `id` until `limit` has passed; then print `report` and exit.
    Arm {
        id: u64,
        limit: Duration,
        report: String,
    },
    /// Seed `id` ended in time.
    Disarm { id: u64 },
}

/// A thread that ends the process when a watched seed runs past its limit.
#[derive(Debug)]
pub struct Watchdog {
    orders: mpsc::Sender<Order>,
    next_id: u64,
}

/// Watches one seed until dropped.
#[derive(Debug)]
pub struct WatchGuard<'a> {
    watchdog: &'a Watchdog,
    id: u64,
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        // The thread is gone only if the process is ending anyway.
        let _ = self.watchdog.orders.send(Order::Disarm { id: self.id });
    }
}

impl Watchdog {
    /// Starts the watchdog's thread (it ends when the `Watchdog` is dropped). `None`
    /// when no thread can be spawned: the seeds then run unwatched, as before.
    pub fn start() -> Option<Self> {
        let (orders, received) = mpsc::channel();
        std::thread::Builder::new()
            .name("dst-seed-watchdog".into())
            .spawn(move || watch_loop(&received))
            .ok()?;
        Some(Self { orders, next_id: 0 })
    }

    /// Arms the watchdog for one seed, `what` (`seed 3`, `replay of seed 3 of
    /// wire_faults`): if the guard is still alive after `limit` of wall time, a report
    /// naming `what`, the limit and the command that replays it (`replay`) is printed on
    /// stderr and the process exits with code 12.
    pub fn watch(&mut self, what: &str, limit: Duration, replay: &str) -> WatchGuard<'_> {
        let report = hang_report(what, limit, replay);
        self.next_id += 1;
        let id = self.next_id;
        let _ = self.orders.send(Order::Arm { id, limit, report });
        WatchGuard { watchdog: self, id }
    }
}

fn watch_loop(orders: &mpsc::Receiver<Order>) {
    let mut armed: Option<(u64, Instant, String)> = None;
    loop {
        let order = match &armed {
            None => match orders.recv() {
                Ok(order) => order,
                Err(mpsc::RecvError) => return,
            },
            Some((_, deadline, report)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                match orders.recv_timeout(left) {
                    Ok(order) => order,
                    Err(mpsc::RecvTimeoutError::Timeout) => expire(report),
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        match order {
            Order::Arm { id, limit, report } => {
                let deadline = Instant::now().checked_add(limit);
                // A limit past the end of time never expires.
                armed = deadline.map(|deadline| (id, deadline, report));
            }
            Order::Disarm { id } => {
                if armed
                    .as_ref()
                    .is_some_and(|(armed_id, _, _)| *armed_id == id)
                {
                    armed = None;
                }
            }
        }
    }
}

fn expire(report: &str) -> ! {
    // Straight to the stream: libtest captures `eprintln!` on a test's threads (this
    // one inherits the capture), and the capture dies with the process.
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{report}");
    let _ = stderr.flush();
    std::process::exit(FailureClass::Liveness.exit_code())
}

/// The report of a seed that ran past `limit`: its name, the limit, what to do.
fn hang_report(what: &str, limit: Duration, replay: &str) -> String {
    format!(
        "error: {what} is still running after {} of wall time: a hang (a loop that never \
         yields, or blocking I/O; simulated time stops while it runs). Ending the process \
         (exit 12, liveness).\n  replay: {replay}\n  (the limit is {SEED_TIMEOUT_VAR}, e.g. \
         {SEED_TIMEOUT_VAR}=10m)",
        human_duration(limit)
    )
}

/// `1.5 s`, `250 ms`.
fn human_duration(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_seed_the_limit_and_the_replay() {
        let report = hang_report(
            "seed 7 of busy",
            Duration::from_millis(1500),
            "dst replay --scenario busy --seed 7",
        );
        assert!(report.contains("seed 7 of busy"), "{report}");
        assert!(report.contains("after 1.5 s of wall time"), "{report}");
        assert!(
            report.contains("replay: dst replay --scenario busy --seed 7"),
            "{report}"
        );
        assert!(report.contains("DST_SEED_TIMEOUT"), "{report}");
        assert!(hang_report("x", Duration::from_millis(250), "r").contains("250 ms"));
    }
}
