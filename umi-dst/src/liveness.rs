//! The liveness phase: after its faults heal, a run must make progress. A body ends its
//! fault phase with [`SimEnvironment::heal`](crate::SimEnvironment::heal) (recorded as
//! `fault.heal`), then asks [`eventually`] for what must come to hold within a bound of
//! simulated time: the queue drains, the agent completes, a deferred write lands.
//!
//! Why a check of its own: a body that only waits and then asserts (`sleep(60s);
//! ensure!(queue.is_empty())`) reports a stuck system as a wrong answer, and one that
//! loops until the condition holds reports it as a run past `sim_time_max` that names
//! nothing. [`eventually`] polls the condition on the simulated clock, returns as soon as
//! it holds, and otherwise returns a [`Violation::liveness`] naming the condition, the
//! bound, when the faults healed and why the last check said no; the runner reports it as
//! a [`FailureClass::Liveness`](crate::FailureClass) failure (exit code 12, `"liveness"`
//! in JSON), so a report tells it from a safety failure (`correctness`, `crash`). See
//! docs/adr/0023-liveness-phase.md.
//!
//! Each check runs under the time left before the bound, so a check that hangs (a call
//! into a stuck component) fails the same way rather than running the run out of time.
//! Polling sleeps on the simulated clock (a step each, no trace event); the verdict is
//! recorded in the trace as a `liveness` event.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::kernel::SimKernel;
use crate::simulation::Violation;

/// How often [`eventually`] checks its condition, in simulated time, unless told
/// ([`Eventually::poll_every`]).
pub const EVENTUALLY_POLL_DEFAULT: Duration = Duration::from_millis(100);

/// Checks one [`eventually`] makes at most: a bound long for its poll interval polls less
/// often, so that the bound is covered in this many checks.
pub const EVENTUALLY_CHECKS_MAX: u32 = 10_000;

/// What a liveness condition's check returns: whether it holds and, if not, why not.
///
/// Implemented for `bool`, for `Result<bool, E>` and for `Result<(), E>` with a
/// displayable `E` (so a check can use [`crate::ensure!`] and `?`): an error means "not
/// yet", and its text is quoted in the violation when the bound runs out.
pub trait Holds {
    /// `Ok(())` when the condition holds; `Err(why not)` when it does not.
    fn holds(self) -> Result<(), String>;
}

impl Holds for bool {
    fn holds(self) -> Result<(), String> {
        if self {
            Ok(())
        } else {
            Err("the condition was false".to_owned())
        }
    }
}

impl<E: fmt::Display> Holds for Result<bool, E> {
    fn holds(self) -> Result<(), String> {
        self.map_err(|error| error.to_string())?.holds()
    }
}

impl<E: fmt::Display> Holds for Result<(), E> {
    fn holds(self) -> Result<(), String> {
        self.map_err(|error| error.to_string())
    }
}

/// Checks that `condition` comes to hold within `within` of simulated time, polling it
/// every [`EVENTUALLY_POLL_DEFAULT`]; `name` says what it means ("the outbox drains").
///
/// `Ok(())` as soon as a check holds; a [`Violation::liveness`] naming the condition and
/// the bound if none did by then. Call it after
/// [`SimEnvironment::heal`](crate::SimEnvironment::heal): with faults still on, the
/// message says so. A bound that ends past the run's `sim_time_max` is refused with a
/// plain violation saying so.
///
/// ```
/// use std::time::Duration;
/// use umi_dst::prelude::*;
///
/// Simulation::new(SimConfig::new(1)).block_on(async |sim| {
///     let env = sim.env();
///     let started = env.elapsed();
///     sim.heal();
///     let ready = umi_dst::eventually(&sim, Duration::from_secs(5), "the timer fires", || {
///         let env = env.clone();
///         async move { env.elapsed() >= started + Duration::from_secs(2) }
///     })
///     .await;
///     assert!(ready.is_ok());
/// });
/// ```
pub async fn eventually<C, F>(
    sim: &impl AsRef<SimKernel>,
    within: Duration,
    name: &str,
    condition: C,
) -> Result<(), Violation>
where
    C: FnMut() -> F,
    F: Future,
    F::Output: Holds,
{
    Eventually::new(name, within).check(sim, condition).await
}

/// [`eventually`] with its settings spelled out: `Eventually::new(name, within)
/// .poll_every(interval).check(&sim, condition)`.
#[derive(Debug, Clone, Copy)]
pub struct Eventually<'a> {
    name: &'a str,
    within: Duration,
    poll: Duration,
}

impl<'a> Eventually<'a> {
    /// The condition `name` must hold within `within` of simulated time.
    pub fn new(name: &'a str, within: Duration) -> Self {
        Self {
            name,
            within,
            poll: EVENTUALLY_POLL_DEFAULT,
        }
    }

    /// Checks every `poll` of simulated time (at least every `within /
    /// EVENTUALLY_CHECKS_MAX`, and never in a busy loop: a zero interval is a millisecond).
    pub fn poll_every(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Runs the check in `sim` (see [`eventually`]).
    pub async fn check<C, F>(
        self,
        sim: &impl AsRef<SimKernel>,
        mut condition: C,
    ) -> Result<(), Violation>
    where
        C: FnMut() -> F,
        F: Future,
        F::Output: Holds,
    {
        let kernel = sim.as_ref();
        let clock = kernel.clock();
        let started = clock.now();
        let deadline = started + self.within;
        self.refuse_past_run_bound(kernel, deadline)?;
        let poll = self
            .poll
            .max(self.within / EVENTUALLY_CHECKS_MAX)
            .max(Duration::from_millis(1));
        let env = kernel.env();
        let mut last = String::new();
        let mut checks = 0u32;
        while checks <= EVENTUALLY_CHECKS_MAX {
            checks += 1;
            let remaining = deadline.saturating_sub(clock.now());
            match clock
                .timeout(remaining, condition())
                .await
                .map(Holds::holds)
            {
                Ok(Ok(())) => {
                    let waited = clock.now() - started;
                    kernel.trace().record(
                        "liveness",
                        format_args!("`{}` held after {:.3}s", self.name, waited.as_secs_f64()),
                    );
                    return Ok(());
                }
                Ok(Err(why)) => last = why,
                Err(_elapsed) => {
                    last = "a check was still running at the bound".to_owned();
                    break;
                }
            }
            let now = clock.now();
            if now >= deadline {
                break;
            }
            env.timer(poll.min(deadline - now)).await;
        }
        Err(self.failure(kernel, checks, poll, &last))
    }

    /// A plain violation when the bound ends at or past the run's `sim_time_max` (the run
    /// would be cut off first, with a message that names nothing).
    fn refuse_past_run_bound(
        &self,
        kernel: &SimKernel,
        deadline: Duration,
    ) -> Result<(), Violation> {
        let run_max = kernel.config().sim_time_max;
        if deadline < run_max {
            return Ok(());
        }
        Err(Violation::new(format!(
            "eventually `{}`: its bound of {:.3}s ends at {:.3}s of simulated time, not before \
             the run's sim_time_max of {:.3}s; shorten the bound or raise SimConfig::sim_time_max",
            self.name,
            self.within.as_secs_f64(),
            deadline.as_secs_f64(),
            run_max.as_secs_f64()
        )))
    }

    /// The liveness violation of a condition that did not hold, recorded in the trace.
    fn failure(&self, kernel: &SimKernel, checks: u32, poll: Duration, last: &str) -> Violation {
        let phase = match kernel.faults().healed_at() {
            Some(at) => format!("after the faults healed at {:.3}s", at.as_secs_f64()),
            None => "with the faults still on (no heal)".to_owned(),
        };
        kernel.trace().record(
            "liveness",
            format_args!(
                "`{}` did not hold within {:.3}s",
                self.name,
                self.within.as_secs_f64()
            ),
        );
        Violation::liveness(format!(
            "`{}` did not hold within {:.3}s of simulated time {phase} (eventually, checked \
             {checks} times every {:.3}s; the last check: {last})",
            self.name,
            self.within.as_secs_f64(),
            poll.as_secs_f64()
        ))
    }
}
