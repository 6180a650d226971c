//! The injected environment: the one way umi-core gets time, sleeps, timeouts, wall-clock
//! timestamps and random numbers.
//!
//! Everything in umi-core that would otherwise read a clock or the OS's entropy takes an
//! [`Env`] instead. In production that is [`SystemEnvironment`] (tokio time, the system
//! clock, OS randomness). Under test it is umi-dst's `SimEnvironment`, where one `u64`
//! seed fixes every draw and time is simulated: a retry loop that backs off for an hour
//! finishes in microseconds, and does so identically on every replay of the seed.
//!
//! `clippy.toml` bans the direct calls (`Instant::now`, `tokio::time::sleep`,
//! `rand::rng`, ...) everywhere but the adapters that implement this trait.
//!
//! # Random streams
//!
//! [`Environment::random_u64`] takes a stream label (`"router.jitter"`, `"memory.ids"`).
//! In a simulation every label is its own forked stream, so one subsystem drawing one
//! more number never shifts another subsystem's draws. Use a fixed label per purpose.
//!
//! # Events and coverage marks
//!
//! [`Environment::record`] notes something worth seeing in a simulation's trace (an LLM
//! attempt, a backoff, a fallback). In production it becomes a `tracing` event at trace
//! level; in a simulation it is appended, with its simulated timestamp, to the trace
//! whose hash proves a run is deterministic. [`Environment::cover`] marks a rare path (a
//! retry after a rate limit, a note stored after a failed extraction) so sweeps can tell
//! which paths their seeds reached. [`steer`] declares *steering marks* (`sometimes!`,
//! `reachable!`, `maximize!`) that tell a guided explorer where interesting paths go;
//! they are free in production and change nothing a seed draws in a simulation.

mod random;
pub mod steer;
mod system;
mod timeout;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

pub use random::{below, chance, in_range, unit_f64};
pub use system::SystemEnvironment;
pub use timeout::{Elapsed, Timeout};

/// A shared handle to an environment, the form umi-core's components hold.
pub type Env = Arc<dyn Environment>;

/// Time, sleeps, randomness and event recording, injected.
///
/// Implementations must be cheap to call: the router and the memory call these on every
/// request. All methods take `&self`; implementations use interior mutability.
pub trait Environment: Send + Sync + fmt::Debug + 'static {
    /// Monotonic time elapsed since the environment was created. Never goes backwards;
    /// use it for deadlines and durations.
    fn elapsed(&self) -> Duration;

    /// Wall-clock time in milliseconds since the Unix epoch, for timestamps people read.
    /// It can jump (NTP in production, a `clock.jump` fault in a simulation); never
    /// measure a duration with it.
    fn unix_time_ms(&self) -> u64;

    /// A future that completes once `duration` of this environment's time has passed.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;

    /// A timer for a deadline: like [`Environment::sleep`], but nobody waits on it for its
    /// own sake (a simulation does not trace it as a sleep).
    fn timer(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.sleep(duration)
    }

    /// A uniformly random `u64` from the stream named `stream`.
    fn random_u64(&self, stream: &str) -> u64;

    /// Notes an event of kind `kind` (dotted, e.g. `"router.attempt"`) for the trace.
    fn record(&self, kind: &'static str, detail: fmt::Arguments<'_>);

    /// Marks that a rare path ran (`"router.retry_after"`). Free in production; a
    /// simulation counts the marks, and a sweep reports which paths its seeds exercised
    /// (coverage marks, after TigerBeetle's).
    fn cover(&self, _mark: &'static str) {}

    /// Records a steering mark (see [`steer`]): a hit of a `sometimes`/`reachable` mark,
    /// or a value of a `maximize` mark. Use the macros (`umi_core::maximize!`), not this.
    /// Free in production; a simulation records it without a step, a draw or a trace
    /// event, so adding one changes no seed.
    fn steer(&self, _mark: &'static steer::Mark, _value: u64) {}
}

/// Helpers every environment gets: timeouts, ranges, probabilities and identifiers.
pub trait EnvironmentExt: Environment {
    /// Runs `future` for at most `duration` of environment time.
    ///
    /// The future is polled before the timer, so a future that is ready at the deadline
    /// wins: the outcome never depends on a race the executor decides.
    fn timeout<F: Future>(&self, duration: Duration, future: F) -> Timeout<F> {
        Timeout::new(future, self.timer(duration), duration)
    }

    /// A uniformly random integer in `low..=high` from `stream`.
    fn random_in_range(&self, stream: &str, low: u64, high: u64) -> u64 {
        in_range(low, high, || self.random_u64(stream))
    }

    /// A float in `[0, 1)` from `stream`.
    fn random_unit_f64(&self, stream: &str) -> f64 {
        unit_f64(self.random_u64(stream))
    }

    /// `true` with probability `probability`, from `stream` (always one draw).
    fn random_chance(&self, stream: &str, probability: f64) -> bool {
        chance(probability, self.random_u64(stream))
    }

    /// A 128-bit random identifier as 32 lowercase hex digits, from `stream`.
    fn random_id(&self, stream: &str) -> String {
        let high = self.random_u64(stream);
        let low = self.random_u64(stream);
        format!("{high:016x}{low:016x}")
    }
}

impl<E: Environment + ?Sized> EnvironmentExt for E {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn timeout_returns_output_when_future_is_first() {
        let env: Env = Arc::new(SystemEnvironment::new());
        let out = env.timeout(Duration::from_secs(1), async { 7 }).await;
        assert_eq!(out, Ok(7));
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_fires_when_future_is_slower() {
        let env: Env = Arc::new(SystemEnvironment::new());
        let slow = env.sleep(Duration::from_secs(10));
        let out = env.timeout(Duration::from_secs(1), slow).await;
        assert_eq!(
            out,
            Err(Elapsed {
                after: Duration::from_secs(1)
            })
        );
        assert_eq!(
            env.elapsed(),
            Duration::from_secs(1),
            "paused time jumps to the deadline"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn ready_future_wins_a_tie_with_the_deadline() {
        let env: Env = Arc::new(SystemEnvironment::new());
        let same = env.sleep(Duration::from_secs(1));
        let out = env.timeout(Duration::from_secs(1), async move {
            same.await;
            "done"
        });
        assert_eq!(out.await, Ok("done"));
    }

    #[test]
    fn random_id_is_32_hex_digits() {
        let env = SystemEnvironment::new();
        let id = env.random_id("test");
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(id, env.random_id("test"));
    }
}
