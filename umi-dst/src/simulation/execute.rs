//! Running one seed: a fresh runtime, the body, and a verdict.
//!
//! Each seed gets its own current-thread tokio runtime with paused time, so nothing (no
//! task, no timer, no state in the runtime) survives from one seed to the next. The body
//! runs under three guards:
//! - `catch_unwind`: a panic becomes a *crash* failure, not a dead test process;
//! - a simulated-time bound: a run still going after `sim_time_max` is a *liveness*
//!   failure (paused time jumps to it as soon as everything waits, so a deadlock is
//!   caught at once rather than hanging);
//! - a step bound: the environment unwinds a run past `steps_max` steps, which catches
//!   a livelock that never sleeps.
//!
//! `tracing` output of the run goes through a subscriber that stamps the seed and the
//! simulated time, never the wall clock.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use super::settings::LogFilter;
use super::violation::Violation;
use crate::clock::SimClock;
use crate::config::SimConfig;
use crate::environment::SimEnvironment;
use crate::failure_class::FailureClass;
use crate::fault::swarm::SwarmDraw;
use crate::fault::{FaultStats, Injection};
use crate::trace::{TraceEvent, TraceHash};

/// What one seed did.
#[derive(Debug, Clone)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// What ran: the seed and the branch points (the seed alone for a plain run).
    pub path: crate::path::RunPath,
    /// `None` if the run passed; the class and message if not.
    pub failure: Option<(FailureClass, String)>,
    /// The trace hash at the end.
    pub trace_hash: TraceHash,
    /// Trace events recorded.
    pub events: u64,
    /// Steps taken.
    pub steps: u64,
    /// Simulated time covered.
    pub sim_elapsed: Duration,
    /// Fault counters.
    pub fault_stats: FaultStats,
    /// Injections that fired, in order.
    pub injections: Vec<Injection>,
    /// The fault configs in force.
    pub faults: Vec<String>,
    /// What swarm mode drew.
    pub swarm: Vec<SwarmDraw>,
    /// The last trace events.
    pub tail: Vec<TraceEvent>,
    /// The third-party clients noted in the run (see [`crate::adapters::foreign`]).
    pub foreign: Vec<&'static crate::adapters::foreign::ForeignClient>,
    /// Every trace event, when the config asked for a full trace (`None` for `dst serve`'s
    /// runs, whose log takes the events typed from the trace itself).
    pub full_trace: Option<Vec<TraceEvent>>,
    /// Coverage marks hit, with their counts.
    pub marks: std::collections::BTreeMap<String, u64>,
    /// Every mark reached (coverage `cover`, `sometimes!`, `reachable!`, `maximize!`),
    /// with the step of its first hit: the first step from which a branch keeps it (see
    /// [`RunPath`](crate::RunPath)).
    pub mark_steps: std::collections::BTreeMap<String, u64>,
    /// The `maximize!` marks' high-water marks.
    pub watermarks: std::collections::BTreeMap<String, crate::marks::Watermark>,
    /// Parallel to `injections`: the step of each (as `mark_steps`'s).
    pub injection_steps: Vec<u64>,
    /// For each fault rule, in config order, the operations it reached (see
    /// [`crate::fault::FaultInjector::rule_reach`]).
    pub rule_reach: Vec<u64>,
    /// What the run spent: tokens by model, calls, retries, fallbacks, tool calls.
    pub usage: crate::usage::RunUsage,
}

impl SeedRun {
    /// Whether the run passed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// Runs `body` for `config.seed`. `config` must already be valid.
pub(crate) fn run_seed<F>(config: &SimConfig, body: &F, log: &LogFilter) -> SeedRun
where
    F: AsyncFn(SimEnvironment) -> Result<(), Violation>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|error| panic!("cannot build the simulation runtime: {error}"));
    let entered = runtime.enter();
    let env = SimEnvironment::new(config)
        .unwrap_or_else(|error| panic!("run_seed needs a validated config: {error}"));
    let notes = crate::adapters::foreign::RunNotes::open(env.trace().clone());
    let subscriber = log_subscriber(log, env.clock().clone(), config.seed);
    let _log_guard = tracing::dispatcher::set_default(&subscriber);

    let sim_time_max = config.sim_time_max;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let body_future = body(env.clone());
        let bounded = env.clock().timeout(sim_time_max, body_future);
        runtime.block_on(StepGuard {
            env: &env,
            inner: Box::pin(bounded),
        })
    }));
    let failure = failure_of(outcome, &env, config);
    let foreign = notes.finish();
    let mut run = seed_run(config, &env, foreign, failure);
    drop(env);
    drop(entered);
    // Tasks the body left behind are dropped with the runtime; a destructor that panics
    // must not take the harness down.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(runtime)));
    if run.failure.is_none() && config.budget.is_limited() {
        run.failure = budget_failure(config, &run, body, log);
    }
    run
}

/// The budget check of a run that passed its invariants: a breach is a
/// [`FailureClass::Budget`] failure naming the call that pushed it over. A growth limit
/// runs the same seed again with its faults off (outside the first run's runtime) when
/// any fault was injected; with none, the run is its own fault-free run.
fn budget_failure<F>(
    config: &SimConfig,
    run: &SeedRun,
    body: &F,
    log: &LogFilter,
) -> Option<(FailureClass, String)>
where
    F: AsyncFn(SimEnvironment) -> Result<(), Violation>,
{
    let fault_free = match config.budget.fault_growth_percent_max {
        Some(_) if !run.injections.is_empty() => {
            let mut clean = config.clone();
            clean.faults.clear();
            // Swarm mode seeds interleavings too: keep them, so the baseline differs
            // from the run only in its faults.
            clean.interleave = config.interleaving();
            clean.swarm = false;
            clean.trace_full = false;
            clean.budget.fault_growth_percent_max = None;
            Some(run_seed(&clean, body, log).usage)
        }
        Some(_) => Some(run.usage.clone()),
        None => None,
    };
    crate::usage::check_budget(
        &config.budget,
        config.prices.as_deref(),
        &run.usage,
        fault_free.as_ref(),
    )
    .err()
    .map(|breach| (FailureClass::Budget, breach.to_string()))
}

/// How a seed's body ended, as the runner saw it: a panic (`Err`), the step guard
/// tripping (`Ok(Err(()))`), simulated time running out, or the body's own result.
type BodyOutcome =
    std::thread::Result<Result<Result<Result<(), Violation>, umi_core::env::Elapsed>, ()>>;

/// The failure a body's `outcome` is, if any: a violation (correctness, or liveness when
/// it is a [`Violation::liveness`]), a panic (crash), or a run past its simulated time or
/// steps (liveness).
fn failure_of(
    outcome: BodyOutcome,
    env: &SimEnvironment,
    config: &SimConfig,
) -> Option<(FailureClass, String)> {
    let failure = match outcome {
        Ok(Ok(Ok(Ok(())))) => None,
        Ok(Ok(Ok(Err(violation)))) if violation.is_liveness() => {
            Some((FailureClass::Liveness, violation.to_string()))
        }
        Ok(Ok(Ok(Err(violation)))) => Some((FailureClass::Correctness, violation.to_string())),
        Ok(Err(())) => Some(step_failure(config)),
        Ok(Ok(Err(_elapsed))) => Some((
            FailureClass::Liveness,
            format!(
                "still running after {:.3}s of simulated time (sim_time_max); \
                 a deadlock or an unbounded wait",
                config.sim_time_max.as_secs_f64()
            ),
        )),
        Err(_) if env.step_limit_hit() => Some(step_failure(config)),
        Err(payload) => Some((
            FailureClass::Crash,
            format!("panicked: {}", panic_message(&*payload)),
        )),
    };
    match failure {
        None if env.step_limit_hit() => Some(step_failure(config)),
        other => other,
    }
}

/// What the run of `config.seed` in `env` leaves for the runner and the reports.
fn seed_run(
    config: &SimConfig,
    env: &SimEnvironment,
    foreign: Vec<&'static crate::adapters::foreign::ForeignClient>,
    failure: Option<(FailureClass, String)>,
) -> SeedRun {
    SeedRun {
        seed: config.seed,
        path: config.path(),
        foreign,
        failure,
        trace_hash: env.trace().hash(),
        events: env.trace().len(),
        steps: env.steps(),
        sim_elapsed: env.clock().now(),
        fault_stats: env.faults().stats(),
        injections: env.faults().schedule(),
        faults: env.fault_rules().to_vec(),
        swarm: env.swarm_draws().to_vec(),
        rule_reach: env.faults().rule_reach(),
        usage: env.usage().usage(),
        tail: env.trace().tail(),
        // Typed (`dst serve`'s runs): the caller takes the events from the trace.
        full_trace: (!config.trace_full_typed)
            .then(|| env.trace().events())
            .flatten(),
        marks: env
            .marks()
            .into_iter()
            .map(|(mark, count)| (mark.to_owned(), count))
            .collect(),
        mark_steps: env
            .mark_steps()
            .into_iter()
            .map(|(mark, step)| (mark.to_owned(), step))
            .collect(),
        watermarks: env
            .watermarks()
            .into_iter()
            .map(|(mark, watermark)| (mark.to_owned(), watermark))
            .collect(),
        injection_steps: env.faults().schedule_steps(),
    }
}

fn step_failure(config: &SimConfig) -> (FailureClass, String) {
    (
        FailureClass::Liveness,
        format!(
            "exceeded {} steps (steps_max); a livelock or an unbounded loop",
            config.steps_max
        ),
    )
}

/// The text of a panic payload, as a failure report quotes it. Public for a runner of
/// your own that catches a panic around [`Simulation::run_seed`](super::Simulation::run_seed)
/// (the sweep's workers do), so it prints the message the way the harness does.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a non-string panic payload)".to_owned()
    }
}

/// Ends the run as soon as the step bound is hit, even if the unwinding panic was caught
/// somewhere inside the body (a task's panic is caught by tokio, for one).
struct StepGuard<'a, F> {
    env: &'a SimEnvironment,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for StepGuard<'_, F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.env.step_limit_hit() {
            return Poll::Ready(Err(()));
        }
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Ok(output)),
            Poll::Pending if self.env.step_limit_hit() => Poll::Ready(Err(())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Stamps `tracing` output with the seed and simulated time.
struct SimTimer {
    clock: SimClock,
    seed: u64,
}

impl FormatTime for SimTimer {
    fn format_time(&self, writer: &mut Writer<'_>) -> fmt::Result {
        let micros = self.clock.now().as_micros();
        write!(
            writer,
            "seed={} t={}.{:06}s",
            self.seed,
            micros / 1_000_000,
            micros % 1_000_000
        )
    }
}

/// The dispatch of every run that logs nothing: one `NoSubscriber`, registered once.
///
/// A new `Dispatch` per run registered itself with every callsite in the process
/// (`rebuild_interest`, under a global lock that `dst serve`'s simulation threads shared;
/// issue 41). tracing's unregistered `Dispatch::none()` would not do either, but with one
/// other dispatch in the process (a test's global subscriber) tracing asks the current
/// thread's dispatch alone whether a callsite is wanted, and a callsite first reached
/// inside a run would then stay off for that subscriber everywhere (tokio-rs/tracing
/// #2874). This one is registered, as each run's was, so the subscriber is still asked.
/// It holds no state: nothing of one seed reaches the next through it.
static NO_LOG: std::sync::LazyLock<tracing::Dispatch> = std::sync::LazyLock::new(|| {
    tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default())
});

fn log_subscriber(log: &LogFilter, clock: SimClock, seed: u64) -> tracing::Dispatch {
    match log.env_filter() {
        None => NO_LOG.clone(),
        Some(filter) => tracing::Dispatch::new(
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_timer(SimTimer { clock, seed })
                .with_ansi(false)
                .with_test_writer()
                .finish(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A subscriber that counts the events it is given.
    struct Counting(Arc<AtomicU64>);

    impl tracing::Subscriber for Counting {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// With logging off, what the code under test logs inside a run goes nowhere, not to
    /// the subscriber the test process set: a run's output is the seed's alone. A planted
    /// `set_default` left out sends the run's event to the outer counter.
    #[test]
    fn a_run_that_logs_nothing_sends_nothing_to_the_process_subscriber() {
        let seen = Arc::new(AtomicU64::new(0));
        let outer = tracing::Dispatch::new(Counting(seen.clone()));
        let _outer = tracing::dispatcher::set_default(&outer);
        tracing::warn!("outside a run");
        assert_eq!(seen.load(Ordering::Relaxed), 1, "the counter counts");

        let config = SimConfig::new(7);
        let body = async |_env: SimEnvironment| -> Result<(), Violation> {
            tracing::warn!("inside a run");
            Ok(())
        };
        let run = run_seed(&config, &body, &LogFilter(None));
        assert!(run.passed(), "{:?}", run.failure);
        assert_eq!(seen.load(Ordering::Relaxed), 1, "the run's event went out");
        tracing::warn!("after the run");
        assert_eq!(seen.load(Ordering::Relaxed), 2, "the outer default is back");
    }

    /// A line of the code under test, reached first inside a run.
    fn logs_a_line() {
        tracing::warn!("a line of the code under test");
    }

    /// A line first reached inside a run that logs nothing still reaches the process's
    /// subscriber when the same code runs outside one. With tracing's unregistered no-op
    /// dispatch as the run's (tried for issue 41) and the counter the only other dispatch,
    /// tracing decided the line's interest from the run's dispatch alone and kept it off
    /// for good (tokio-rs/tracing#2874); this failed then.
    #[test]
    fn a_line_first_reached_inside_a_run_still_reaches_the_process_subscriber() {
        let seen = Arc::new(AtomicU64::new(0));
        let outer = tracing::Dispatch::new(Counting(seen.clone()));
        let _outer = tracing::dispatcher::set_default(&outer);
        let body = async |_env: SimEnvironment| -> Result<(), Violation> {
            logs_a_line();
            Ok(())
        };
        let run = run_seed(&SimConfig::new(7), &body, &LogFilter(None));
        assert!(run.passed(), "{:?}", run.failure);
        assert_eq!(seen.load(Ordering::Relaxed), 0, "the run's line went out");
        logs_a_line();
        assert_eq!(
            seen.load(Ordering::Relaxed),
            1,
            "the line stayed off outside the run"
        );
    }
}
