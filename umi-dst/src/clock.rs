//! SimClock: simulated time that moves by itself whenever every task is waiting.
//!
//! The Simulation runner gives each seed a current-thread tokio runtime started with
//! paused time. In that runtime tokio's clock only moves when nothing can run: then it
//! jumps straight to the next timer. A retry loop that backs off for an hour finishes in
//! microseconds, and the order in which timers fire is fixed by their deadlines, not by
//! the machine's speed. docs/adr/0001-determinism.md records why this, rather than a
//! custom executor or libc interception.
//!
//! On top of tokio's clock, SimClock adds a wall-clock *epoch* (so timestamps are the
//! same on every replay) and a wall-clock *offset* that `clock.jump` faults move, the way
//! NTP can move a real system clock while monotonic time goes steadily on.
//!
//! A SimClock must be created inside the simulation's runtime (the runner does this);
//! outside a paused runtime tokio's clock is the real one.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

mod paced;
pub use paced::Paced;

/// The longest delay tokio's `sleep` takes as asked (it caps longer ones here, about 30
/// years, so the deadline cannot overflow).
const SLEEP_MAX: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Simulated time for one run. Cheap to clone; clones share the clock.
#[derive(Clone, Debug)]
pub struct SimClock {
    inner: Arc<ClockInner>,
}

#[derive(Debug)]
struct ClockInner {
    start: tokio::time::Instant,
    epoch_unix_ms: u64,
    wall_offset_ms: AtomicI64,
}

#[allow(
    clippy::disallowed_methods,
    reason = "SimClock reads tokio's clock inside the runner's paused runtime: simulated time"
)]
impl SimClock {
    /// A clock starting at zero whose wall clock reads `epoch_unix_ms` at the start.
    ///
    /// # Panics
    /// Outside a current-thread tokio runtime, where time could not be simulated.
    pub fn new(epoch_unix_ms: u64) -> Self {
        let flavor = tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor());
        assert!(
            matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::CurrentThread)),
            "SimClock needs the simulation's current-thread runtime with paused time \
             (create it inside Simulation::run); found {flavor:?}"
        );
        Self {
            inner: Arc::new(ClockInner {
                start: tokio::time::Instant::now(),
                epoch_unix_ms,
                wall_offset_ms: AtomicI64::new(0),
            }),
        }
    }

    /// Simulated time since the clock was created.
    pub fn now(&self) -> Duration {
        tokio::time::Instant::now().duration_since(self.inner.start)
    }

    /// The simulated wall clock: epoch plus elapsed time plus any jumps, in ms since the
    /// Unix epoch (never below zero).
    pub fn unix_time_ms(&self) -> u64 {
        let elapsed_ms = i64::try_from(self.now().as_millis()).unwrap_or(i64::MAX);
        let base = i64::try_from(self.inner.epoch_unix_ms).unwrap_or(i64::MAX);
        let offset = self.inner.wall_offset_ms.load(Ordering::Relaxed);
        let reading = base.saturating_add(elapsed_ms).saturating_add(offset);
        u64::try_from(reading).unwrap_or(0)
    }

    /// Moves the wall clock (not monotonic time) by `delta_ms`, as a `clock.jump` does.
    pub fn jump_wall_clock(&self, delta_ms: i64) {
        self.inner
            .wall_offset_ms
            .fetch_add(delta_ms, Ordering::Relaxed);
    }

    /// The wall clock's accumulated jumps, in ms.
    pub fn wall_offset_ms(&self) -> i64 {
        self.inner.wall_offset_ms.load(Ordering::Relaxed)
    }

    /// Sleeps for `duration` of simulated time.
    pub fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        tokio::time::sleep(duration).boxed()
    }

    /// [`SimClock::sleep`] unboxed, for a caller that keeps it in place (pinned) itself.
    pub fn sleep_unboxed(&self, duration: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(duration)
    }

    /// A timer that fires at `deadline` (from [`SimClock::deadline_after`]), unboxed.
    pub(crate) fn sleep_until(&self, deadline: tokio::time::Instant) -> tokio::time::Sleep {
        tokio::time::sleep_until(deadline)
    }

    /// The instant `duration` from now, exactly as `tokio::time::sleep(duration)`
    /// computes its deadline (a delay capped at about 30 years, as tokio caps it).
    pub(crate) fn deadline_after(&self, duration: Duration) -> tokio::time::Instant {
        tokio::time::Instant::now() + duration.min(SLEEP_MAX)
    }

    /// `items` released one after another, each after its delay of simulated time, on
    /// one timer ([`Paced`]).
    pub fn paced<I, T>(&self, items: I) -> Paced<I::IntoIter, T>
    where
        I: IntoIterator<Item = (Duration, T)>,
    {
        Paced::new(self.clone(), items)
    }

    /// Runs `future` for at most `duration` of simulated time (future polled first).
    pub async fn timeout<F: std::future::Future>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<F::Output, umi_core::env::Elapsed> {
        umi_core::env::Timeout::new(future, self.sleep(duration), duration).await
    }

    /// Moves simulated time forward by `duration` at once, firing every timer that falls
    /// due, as if that much time had passed.
    pub async fn advance(&self, duration: Duration) {
        tokio::time::advance(duration).await;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A single-threaded runtime on paused time, the one every seed runs on: the unit
    /// tests of the pieces `Simulation` is built from (this clock, `paced`, the trace,
    /// the fault injector, the kernel, foreign-client notes) test them bare, beneath the
    /// door, on this one copy.
    pub(crate) fn paused_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    /// Runs `body` inside [`paused_runtime`] (for code that needs a runtime's context,
    /// not a future driven).
    pub(crate) fn in_paused_runtime<T>(body: impl FnOnce() -> T) -> T {
        let runtime = paused_runtime();
        let _entered = runtime.enter();
        body()
    }

    #[test]
    fn an_hour_of_sleeps_is_simulated() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(1_000);
            for _ in 0..3_600 {
                clock.sleep(Duration::from_secs(1)).await;
            }
            assert_eq!(clock.now(), Duration::from_secs(3_600));
            assert_eq!(clock.unix_time_ms(), 1_000 + 3_600_000);
        });
    }

    #[test]
    fn timers_fire_in_deadline_order() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(0);
            let order = Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for (name, ms) in [("c", 30u64), ("a", 10), ("b", 20)] {
                let clock = clock.clone();
                let order = order.clone();
                tasks.push(tokio::spawn(async move {
                    clock.sleep(Duration::from_millis(ms)).await;
                    order.lock().unwrap().push((name, clock.now().as_millis()));
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            assert_eq!(
                *order.lock().unwrap(),
                vec![("a", 10), ("b", 20), ("c", 30)]
            );
        });
    }

    #[test]
    fn timeout_and_advance() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(0);
            let slow = clock.sleep(Duration::from_secs(5));
            assert!(clock.timeout(Duration::from_secs(1), slow).await.is_err());
            assert_eq!(clock.now(), Duration::from_secs(1));
            clock.advance(Duration::from_millis(250)).await;
            assert_eq!(clock.now(), Duration::from_millis(1_250));
        });
    }

    #[test]
    fn wall_clock_jumps_leave_monotonic_time_alone() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(10_000);
            clock.jump_wall_clock(-20_000);
            assert_eq!(clock.unix_time_ms(), 0, "saturates at the epoch of 1970");
            clock.jump_wall_clock(25_000);
            assert_eq!(clock.unix_time_ms(), 15_000);
            assert_eq!(clock.now(), Duration::ZERO);
        });
    }

    #[test]
    #[should_panic(expected = "current-thread runtime")]
    fn refuses_to_run_outside_a_runtime() {
        let _ = SimClock::new(0);
    }
}
