//! The production environment: tokio's timer, the system clock and OS entropy.
//!
//! This file is one of the few places `clippy.toml` lets read the real clock and the OS's
//! randomness, because in production it *is* the injected environment. Nothing that runs
//! inside a simulation constructs it.

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use futures::FutureExt;
use futures::future::BoxFuture;
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

use super::Environment;

/// Real time and OS-seeded randomness. Needs a tokio runtime with the time driver for
/// [`Environment::sleep`].
pub struct SystemEnvironment {
    start: tokio::time::Instant,
    /// One ChaCha stream seeded from OS entropy; stream labels are ignored because every
    /// draw is already independent of every other in production.
    rng: Mutex<ChaCha12Rng>,
}

impl SystemEnvironment {
    /// Creates an environment whose `elapsed` starts now, with an OS-seeded RNG.
    #[allow(
        clippy::disallowed_methods,
        clippy::disallowed_types,
        reason = "the production environment is where real time and OS entropy enter"
    )]
    pub fn new() -> Self {
        let mut os = rand::rngs::SysRng;
        let rng = ChaCha12Rng::try_from_rng(&mut os)
            .unwrap_or_else(|error| panic!("the OS refused entropy: {error}"));
        Self {
            start: tokio::time::Instant::now(),
            rng: Mutex::new(rng),
        }
    }
}

impl Default for SystemEnvironment {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SystemEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemEnvironment")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "the production environment is where real time enters"
)]
impl Environment for SystemEnvironment {
    fn elapsed(&self) -> Duration {
        tokio::time::Instant::now().duration_since(self.start)
    }

    fn unix_time_ms(&self) -> u64 {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        tokio::time::sleep(duration).boxed()
    }

    fn random_u64(&self, _stream: &str) -> u64 {
        // A poisoned lock only means another thread panicked mid-draw; the generator
        // state is still a valid ChaCha state.
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        rng.next_u64()
    }

    fn record(&self, kind: &'static str, detail: fmt::Arguments<'_>) {
        tracing::trace!(target: "umi::env", kind, "{detail}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_time_is_after_2024() {
        let env = SystemEnvironment::new();
        assert!(env.unix_time_ms() > 1_704_067_200_000);
    }

    #[test]
    fn two_environments_draw_different_streams() {
        let first = SystemEnvironment::new();
        let second = SystemEnvironment::new();
        let a: Vec<u64> = (0..4).map(|_| first.random_u64("x")).collect();
        let b: Vec<u64> = (0..4).map(|_| second.random_u64("x")).collect();
        assert_ne!(a, b, "OS-seeded environments must not share a stream");
    }
}
