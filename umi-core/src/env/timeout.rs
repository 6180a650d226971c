//! A future with a deadline measured in environment time.
//!
//! This is the only timeout primitive in umi-core. It polls the wrapped future first and
//! the timer second, so when both are ready in the same poll the future's output wins and
//! no executor randomness decides the outcome (the same rule as `tokio::select!` with
//! `biased;`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;

/// The error of a [`Timeout`]: the deadline passed before the future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out after {} ms", after.as_millis())]
pub struct Elapsed {
    /// The timeout that elapsed.
    pub after: Duration,
}

/// A future that resolves to `Err(Elapsed)` if `future` is not done within the timeout.
/// Built by [`crate::env::EnvironmentExt::timeout`].
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    future: Pin<Box<F>>,
    sleep: BoxFuture<'static, ()>,
    after: Duration,
}

impl<F> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl<F: Future> Timeout<F> {
    /// `future` against `sleep`, a timer of `after` from any clock (what
    /// `EnvironmentExt::timeout` builds from the environment's; a simulated clock builds
    /// one from its own). The future is polled first, so one that is ready when the timer
    /// fires still wins.
    pub fn new(future: F, sleep: BoxFuture<'static, ()>, after: Duration) -> Self {
        Self {
            future: Box::pin(future),
            sleep,
            after,
        }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(output) = self.future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed { after: self.after })),
            Poll::Pending => Poll::Pending,
        }
    }
}
