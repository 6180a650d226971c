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
//! returned guard disarms it when dropped, so watching costs two short critical sections
//! per seed, not a thread, and wakes the thread only when it must look sooner than it
//! planned (see `State`).
//!
//! This is harness code outside every simulation: it reads the wall clock and runs a
//! thread, which `clippy.toml` otherwise forbids.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the watchdog measures wall time on its own thread, outside every simulation"
)]

use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::failure_class::FailureClass;

/// The variable that sets the wall-clock limit of one seed under `Simulation::run` and
/// `dst replay` (a duration like `90s`, `5m`, `500ms`).
pub const SEED_TIMEOUT_VAR: &str = "DST_SEED_TIMEOUT";

/// What the watchdog's thread and the seeds' side share, under one lock.
///
/// Arming and disarming only write here: the thread is woken only when it must act
/// sooner than it planned (it sleeps with no deadline, or until a later one) or when the
/// watchdog ends. A seed that ends in time leaves the thread asleep; it wakes at the
/// deadline it slept toward, finds that seed gone and sleeps toward the next one. So a
/// sweep worker's seeds cost no wake-up of another thread each (issue 41: two channel
/// messages per seed, each a futex wake, were about 5% of a cheap seed).
#[derive(Default)]
struct State {
    /// The seed being watched: its id, its deadline, and the report to print.
    armed: Option<(u64, Instant)>,
    /// The report of the armed seed (a buffer reused from seed to seed).
    report: String,
    /// When the thread will next look: `None` while it waits for an order with no
    /// deadline.
    wakes_at: Option<Instant>,
    /// The `Watchdog` was dropped: the thread ends.
    ended: bool,
}

/// The state and the condition variable the thread sleeps on.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is whole before the lock is released: a poisoned lock is whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A thread that ends the process when a watched seed runs past its limit.
pub struct Watchdog {
    shared: Arc<Shared>,
    next_id: u64,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

/// Watches one seed until dropped.
#[derive(Debug)]
pub struct WatchGuard<'a> {
    watchdog: &'a Watchdog,
    id: u64,
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        // No wake-up: the thread finds the seed gone when it next looks.
        let mut state = self.watchdog.shared.lock();
        if state.armed.is_some_and(|(id, _)| id == self.id) {
            state.armed = None;
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.lock().ended = true;
        self.shared.wake.notify_one();
    }
}

impl Watchdog {
    /// Starts the watchdog's thread (it ends when the `Watchdog` is dropped). `None`
    /// when no thread can be spawned: the seeds then run unwatched, as before.
    pub fn start() -> Option<Self> {
        Self::start_with(|report| expire(report))
    }

    /// [`Watchdog::start`] with what to do with an expired seed's report (the process
    /// ends in [`expire`]; tests record it instead).
    fn start_with(on_expiry: impl Fn(&str) + Send + 'static) -> Option<Self> {
        let shared = Arc::new(Shared::default());
        let watched = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("dst-seed-watchdog".into())
            .spawn(move || watch_loop(&watched, &on_expiry))
            .ok()?;
        Some(Self { shared, next_id: 0 })
    }

    /// Arms the watchdog for one seed, `what` (`seed 3`, `replay of seed 3 of
    /// wire_faults`): if the guard is still alive after `limit` of wall time, a report
    /// naming `what`, the limit and the command that replays it (`replay`) is printed on
    /// stderr and the process exits with code 12.
    pub fn watch(&mut self, what: &str, limit: Duration, replay: &str) -> WatchGuard<'_> {
        self.next_id += 1;
        let id = self.next_id;
        // A limit past the end of time never expires: nothing is armed.
        let deadline = Instant::now().checked_add(limit);
        let mut state = self.shared.lock();
        state.report.clear();
        write_hang_report(&mut state.report, what, limit, replay);
        state.armed = deadline.map(|deadline| (id, deadline));
        let sooner = match (deadline, state.wakes_at) {
            (Some(deadline), Some(wakes_at)) => deadline < wakes_at,
            (Some(_), None) => true,
            (None, _) => false,
        };
        drop(state);
        if sooner {
            self.shared.wake.notify_one();
        }
        WatchGuard { watchdog: self, id }
    }
}

/// The watchdog's thread: sleeps until the armed seed's deadline (or until told of one),
/// and hands the report of a seed still armed at its deadline to `on_expiry`.
fn watch_loop(shared: &Shared, on_expiry: &dyn Fn(&str)) {
    let mut state = shared.lock();
    loop {
        if state.ended {
            return;
        }
        match state.armed {
            None => {
                state.wakes_at = None;
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            Some((id, deadline)) => {
                let now = Instant::now();
                if now >= deadline {
                    on_expiry(&state.report);
                    // Reached only when `on_expiry` returns (tests): the seed is reported.
                    if state.armed.is_some_and(|(armed, _)| armed == id) {
                        state.armed = None;
                    }
                    continue;
                }
                state.wakes_at = Some(deadline);
                state = shared
                    .wake
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
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
#[cfg(test)]
fn hang_report(what: &str, limit: Duration, replay: &str) -> String {
    let mut report = String::new();
    write_hang_report(&mut report, what, limit, replay);
    report
}

/// Writes the report of a seed that ran past `limit` into `report`: its name, the limit,
/// what to do.
fn write_hang_report(report: &mut String, what: &str, limit: Duration, replay: &str) {
    // Writing to a `String` cannot fail.
    let _ = write!(
        report,
        "error: {what} is still running after {} of wall time: a hang (a loop that never \
         yields, or blocking I/O; simulated time stops while it runs). Ending the process \
         (exit 12, liveness).\n  replay: {replay}\n  (the limit is {SEED_TIMEOUT_VAR}, e.g. \
         {SEED_TIMEOUT_VAR}=10m)",
        human_duration(limit)
    );
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

    use std::sync::mpsc;

    /// A watchdog whose expiries are sent to the returned receiver instead of ending the
    /// process.
    fn recording() -> (Watchdog, mpsc::Receiver<String>) {
        let (sender, expired) = mpsc::channel();
        let sender = Mutex::new(sender);
        let watchdog = Watchdog::start_with(move |report| {
            let _ = sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .send(report.to_owned());
        })
        .expect("a watchdog thread");
        (watchdog, expired)
    }

    /// Generous: the expiries these tests wait for are due within milliseconds.
    const EXPIRY_WAIT: Duration = Duration::from_secs(30);

    /// A seed still armed at its deadline is reported, with its own report, once.
    #[test]
    fn a_seed_past_its_limit_is_reported() {
        let (mut watchdog, expired) = recording();
        let _guard = watchdog.watch("seed 5", Duration::from_millis(20), "replay 5");
        let report = expired
            .recv_timeout(EXPIRY_WAIT)
            .expect("the hang reported");
        assert!(report.contains("seed 5 is still running"), "{report}");
        assert!(report.contains("replay: replay 5"), "{report}");
        assert!(
            expired.recv_timeout(Duration::from_millis(100)).is_err(),
            "reported twice"
        );
    }

    /// Issue 41: disarming no longer wakes the thread, which may be asleep toward an
    /// earlier seed's deadline. A seed that ended in time is never reported, and a later
    /// seed with a shorter limit than the one the thread sleeps toward wakes it (else it
    /// would be reported only at the earlier seed's deadline).
    #[test]
    fn a_seed_that_ended_is_not_reported_and_a_sooner_deadline_wakes_the_thread() {
        let (mut watchdog, expired) = recording();
        for seed in 0..100 {
            // A limit no preemption of a loaded machine reaches between arming and dropping.
            let _guard = watchdog.watch(&format!("seed {seed}"), Duration::from_secs(5), "r");
        }
        let long = watchdog.watch("seed long", Duration::from_secs(3600), "r");
        // Time for the thread to go to sleep toward the long seed's deadline, an hour away
        // (if it has not yet, the test passes either way: this is not a timing check).
        std::thread::sleep(Duration::from_millis(50));
        drop(long);
        let short = watchdog.watch("seed short", Duration::from_millis(20), "r");
        let report = expired
            .recv_timeout(EXPIRY_WAIT)
            .expect("the short seed reported");
        assert!(report.contains("seed short is still running"), "{report}");
        drop(short);
        assert!(
            expired.recv_timeout(Duration::from_millis(100)).is_err(),
            "a seed that ended in time was reported"
        );
    }

    /// A limit past the end of time arms nothing; the next seed is still watched.
    #[test]
    fn an_endless_limit_never_expires() {
        let (mut watchdog, expired) = recording();
        drop(watchdog.watch("seed forever", Duration::MAX, "r"));
        let _guard = watchdog.watch("seed 2", Duration::from_millis(10), "r");
        let report = expired.recv_timeout(EXPIRY_WAIT).expect("seed 2 reported");
        assert!(report.contains("seed 2 is still running"), "{report}");
    }

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
