//! SimKernel: the simulated [`Environment`] and what every simulator of a run is built
//! from (clock, RNG streams, fault injector, trace, usage ledger, step count).
//!
//! It is the bottom layer of the harness: the simulators (SimLLM first) take a
//! `&SimKernel` and keep clones of its parts, and [`SimEnvironment`](crate::SimEnvironment),
//! the handle a test gets, is the kernel plus the simulators a run shares. So a simulator
//! never needs the environment that holds it, and the environment names its simulators'
//! types: no type erasure, no import circle.
//!
//! umi-core code sees only the `Environment` trait (through [`SimKernel::env`]);
//! simulators and tests see the rest. Every `Environment` call counts as a step, and a
//! run that takes more than `steps_max` steps is stopped as a liveness failure, so a
//! livelock that never sleeps still ends.
//!
//! The step count is also the clock of a path's branch points ([`crate::path`]): when it
//! reaches a branch's step, the kernel passes the run's [`BranchEpoch`] and every RNG
//! stream of the run switches to its fresh stream. A run of a seed alone has no epoch.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use umi_core::env::steer::{Mark, MarkKind};
use umi_core::env::{Env, Environment};

use crate::branch_epoch::BranchEpoch;
use crate::clock::SimClock;
use crate::config::{SimConfig, SimConfigError};
use crate::constants::CLOCK_JUMP_MS_MAX;
use crate::fault::point;
use crate::fault::swarm::{self, SwarmDraw};
use crate::fault::{FaultInjector, FaultKind, FaultPoint};
use crate::marks::{MarkLog, Watermark};
use crate::rng::{DeterministicRng, streams};
use crate::trace::{ClockEvent, RunEvent, Trace, TraceKind};

/// The kernel of one simulated run. Cheap to clone; clones share the run.
#[derive(Clone)]
pub struct SimKernel {
    inner: Arc<SimInner>,
}

struct SimInner {
    config: SimConfig,
    clock: SimClock,
    root: DeterministicRng,
    streams: Mutex<BTreeMap<String, DeterministicRng>>,
    /// How many times [`SimKernel::rng`] has handed out each label's stream.
    rng_calls: Mutex<BTreeMap<String, u64>>,
    faults: Arc<FaultInjector>,
    trace: Arc<Trace>,
    swarm: Vec<SwarmDraw>,
    /// The fault rules in force, as each prints (in rule order).
    fault_rules: Vec<String>,
    /// Steps taken (shared with the injector, which notes the step of each injection).
    steps: Arc<AtomicU64>,
    step_limit_hit: AtomicBool,
    clock_faults: bool,
    /// The branch points of a run of a path with branches; `None` for a seed alone.
    branch_epoch: Option<Arc<BranchEpoch>>,
    marks: Mutex<MarkLog>,
    /// What the run spent (SimLLM writes to it).
    usage: Arc<crate::usage::UsageLedger>,
    /// How many times [`SimKernel::task_rng`] has handed out each label's stream.
    task_rng_calls: Mutex<BTreeMap<String, u64>>,
}

impl SimKernel {
    /// The kernel for `config`. Must be called inside the simulation's runtime
    /// (the Simulation runner does); records the run's settings as its first events.
    pub fn new(config: &SimConfig) -> Result<Self, SimConfigError> {
        config.validate()?;
        let clock = SimClock::new(config.epoch_unix_ms);
        let branch_epoch = (!config.branches.is_empty())
            .then(|| Arc::new(BranchEpoch::new(config.branches.clone())));
        let root = branched(DeterministicRng::new(config.seed), branch_epoch.as_ref());
        let trace = Arc::new(Trace::new(
            clock.clone(),
            config.trace_tail_events,
            config.trace_full,
        ));
        let (faults, swarm) = if config.swarm {
            let draws = swarm::draw(&mut root.stream(streams::seed::SWARM), &config.faults);
            (swarm::apply(config.faults.clone(), &draws), draws)
        } else {
            (config.faults.clone(), Vec::new())
        };
        let steps = Arc::new(AtomicU64::new(0));
        let injector = FaultInjector::new(
            faults,
            &root.stream(streams::seed::FAULTS),
            trace.clone(),
            clock.clone(),
        )?
        .with_step_counter(steps.clone());
        injector.suppress(config.suppressed.iter().copied());
        if let Some(only) = &config.only_injections {
            injector.allow_only(only.iter().copied());
        }
        let clock_faults = injector.is_configured(FaultKind::ClockJump);

        trace.emit(RunEvent::Start {
            seed: config.seed,
            epoch_ms: config.epoch_unix_ms,
        });
        // Each rule's text, written once per run: the trace's events and the run's report
        // (`SeedRun::faults`) both show it (a probability's float formatting is not free).
        let fault_rules: Vec<String> = injector.configs().iter().map(ToString::to_string).collect();
        for rule in &fault_rules {
            trace.emit(RunEvent::FaultRule { rule: rule.clone() });
        }
        if !swarm.is_empty() {
            let drawn: Vec<String> = swarm.iter().map(ToString::to_string).collect();
            trace.emit(RunEvent::Swarm { drawn });
        }
        Ok(Self {
            inner: Arc::new(SimInner {
                config: config.clone(),
                clock,
                root,
                streams: Mutex::new(BTreeMap::new()),
                rng_calls: Mutex::new(BTreeMap::new()),
                faults: Arc::new(injector),
                trace,
                swarm,
                fault_rules,
                steps,
                step_limit_hit: AtomicBool::new(false),
                clock_faults,
                branch_epoch,
                marks: Mutex::new(MarkLog::default()),
                usage: Arc::new(crate::usage::UsageLedger::default()),
                task_rng_calls: Mutex::new(BTreeMap::new()),
            }),
        })
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.inner.config.seed
    }

    /// The run's settings.
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// The simulated clock.
    pub fn clock(&self) -> &SimClock {
        &self.inner.clock
    }

    /// An RNG for `label` (`"workload.calls"`), forked from the run's root. Like
    /// `env.random_u64(label)`, a label carries on: each call gives a new stream, so two
    /// calls never replay the same numbers (the first call's stream is the label's fork,
    /// the n-th is forked from the label and n).
    pub fn rng(&self, label: &str) -> DeterministicRng {
        counted_fork(&self.inner.root, &self.inner.rng_calls, label)
    }

    /// An RNG for `label` drawn from the seed's *task* alone: what a scenario that
    /// separates its task from its trial draws its workload from (what the agent is
    /// asked), so the k trials of one task ask the same and differ in the model's
    /// variation and the faults ([`crate::usage::split_seed`]). For a seed that is not a
    /// trial seed this is exactly [`SimKernel::rng`]: no ordinary seed changes
    /// meaning, and task `t`'s trials ask what seed `t` asks.
    pub fn task_rng(&self, label: &str) -> DeterministicRng {
        let split = crate::usage::split_seed(self.seed());
        if split.trial.is_none() {
            return self.rng(label);
        }
        let root = branched(
            DeterministicRng::new(split.task),
            self.inner.branch_epoch.as_ref(),
        );
        counted_fork(&root, &self.inner.task_rng_calls, label)
    }

    /// The run's usage ledger (model calls, tokens, tool calls; see [`crate::usage`]).
    pub fn usage(&self) -> &Arc<crate::usage::UsageLedger> {
        &self.inner.usage
    }

    /// Names the class of the task this run tries (`refund`, `faq`): the sweep reports
    /// pass^k per class too.
    pub fn set_task_class(&self, class: &str) {
        self.inner.usage.set_task_class(class);
    }

    /// The RNG stream of `label`, the same at every call: for a simulator that derives
    /// its streams from one root per subsystem (`"llm"`, `"storage"`, `"network"`) and
    /// may be built more than once in a run. Code under test wants [`SimKernel::rng`].
    pub fn fork_rng(&self, label: &str) -> DeterministicRng {
        self.inner.root.fork(label)
    }

    /// The fault injector.
    pub fn faults(&self) -> &Arc<FaultInjector> {
        &self.inner.faults
    }

    /// Asks the injector whether a fault fires at `point` (a simulator of your own
    /// declares its points as constants and registers them with
    /// [`SimConfig::with_fault_point`](crate::SimConfig::with_fault_point)); counts as a
    /// step.
    pub fn fault(&self, point: &FaultPoint) -> Option<FaultKind> {
        self.inner.step();
        self.inner.faults.decide(point)
    }

    /// An interleaving point: when the run seeds interleavings
    /// ([`SimConfig::interleaving`](crate::SimConfig::interleaving)), yields to the
    /// runtime 0 to `INTERLEAVE_YIELDS_MAX` times, as the seed draws, so another future
    /// ready at the same instant may run first; otherwise returns at once and draws
    /// nothing (a seed's meaning is kept).
    pub async fn interleave(&self, label: &str) {
        if !self.inner.config.interleaving() {
            return;
        }
        let yields = self
            .rng(streams::seed::SCHEDULE_INTERLEAVE.as_str())
            .below(crate::constants::INTERLEAVE_YIELDS_MAX + 1);
        if yields > 0 {
            self.inner.trace.emit(RunEvent::Yield {
                label: label.to_owned(),
                yields,
            });
        }
        for _ in 0..yields {
            tokio::task::yield_now().await;
        }
    }

    /// As [`SimKernel::fault`], at a qualified point's operation
    /// (`tool.call.<name>`): a rule's filter sees the qualified name.
    pub fn fault_qualified(&self, point: &FaultPoint, qualifier: &str) -> Option<FaultKind> {
        self.inner.step();
        self.inner.faults.decide_qualified(point, qualifier)
    }

    /// The trace.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.inner.trace
    }

    /// Records a typed event: one step of the run, as `Environment::record` is.
    pub(crate) fn emit(&self, record: impl Into<TraceKind>) {
        self.inner.step();
        self.inner.trace.emit(record);
    }

    /// What swarm mode drew for this seed (empty when swarm mode is off).
    pub fn swarm_draws(&self) -> &[SwarmDraw] {
        &self.inner.swarm
    }

    /// The fault rules in force, in rule order, as each prints (what the trace's
    /// `sim.fault` events show).
    pub(crate) fn fault_rules(&self) -> &[String] {
        &self.inner.fault_rules
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.inner.steps.load(Ordering::Relaxed)
    }

    /// Whether the run went past its step bound.
    pub fn step_limit_hit(&self) -> bool {
        self.inner.step_limit_hit.load(Ordering::Relaxed)
    }

    /// The coverage marks hit so far, with their counts.
    pub fn marks(&self) -> BTreeMap<&'static str, u64> {
        self.inner.mark_log().counts().clone()
    }

    /// Every mark reached so far (coverage and steering marks), with the step of its
    /// first hit (the first step from which a branch keeps it, see [`RunPath`](crate::RunPath)).
    pub fn mark_steps(&self) -> BTreeMap<&'static str, u64> {
        self.inner.mark_log().first_steps().clone()
    }

    /// The `maximize!` marks' high-water marks so far.
    pub fn watermarks(&self) -> BTreeMap<&'static str, Watermark> {
        self.inner.mark_log().watermarks().clone()
    }

    /// The path this run runs: its seed and branch points.
    pub fn path(&self) -> crate::path::RunPath {
        self.inner.config.path()
    }

    /// This environment as umi-core's [`Env`], to hand to the code under test.
    pub fn env(&self) -> Env {
        self.inner.clone()
    }
}

/// `root` under the run's branch points, if it has any.
fn branched(root: DeterministicRng, epoch: Option<&Arc<BranchEpoch>>) -> DeterministicRng {
    match epoch {
        Some(epoch) => root.with_branches(epoch.clone()),
        None => root,
    }
}

/// The stream of `label` from `root`: the first call's stream is the label's fork, the
/// n-th is forked from the label and n (`calls` counts per label).
fn counted_fork(
    root: &DeterministicRng,
    calls: &Mutex<BTreeMap<String, u64>>,
    label: &str,
) -> DeterministicRng {
    // A workload's label that names a simulator's stream would draw that simulator's
    // numbers (the first call's stream is the label's fork of the same root).
    assert!(
        !streams::seed::SIMULATORS
            .iter()
            .any(|stream| stream.as_str() == label),
        "rng label {label:?} names a simulator's stream: pick another (rng::streams::seed)"
    );
    let mut calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
    let call = calls.entry(label.to_owned()).or_insert(0);
    let rng = match *call {
        0 => root.fork(label),
        n => root.fork_parts(&[
            streams::seed::RNG.as_bytes(),
            label.as_bytes(),
            &n.to_le_bytes(),
        ]),
    };
    *call += 1;
    rng
}

impl SimInner {
    fn mark_log(&self) -> std::sync::MutexGuard<'_, MarkLog> {
        self.marks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The step a record made now is kept at: one past the steps taken (see
    /// [`crate::marks`]).
    fn record_step(&self) -> u64 {
        self.steps.load(Ordering::Relaxed) + 1
    }

    fn step(&self) {
        let taken = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(epoch) = &self.branch_epoch {
            epoch.on_step(taken);
        }
        if taken > self.config.steps_max && !self.step_limit_hit.swap(true, Ordering::Relaxed) {
            // Unwind once, out of whatever loop is spinning; later calls return normally
            // so destructors that record during the unwind cannot double-panic.
            if !std::thread::panicking() {
                panic!(
                    "simulation step limit of {} exceeded (seed {}): a livelock or an unbounded loop \
                     (raise SimConfig::steps_max for long runs)",
                    self.config.steps_max, self.config.seed
                );
            }
        }
    }
}

impl Environment for SimInner {
    fn elapsed(&self) -> Duration {
        self.step();
        self.clock.now()
    }

    fn unix_time_ms(&self) -> u64 {
        self.step();
        if self.clock_faults
            && self.faults.decide(&point::CLOCK_READ_WALL) == Some(FaultKind::ClockJump)
        {
            let mut rng = self.root.fork_parts(&[
                streams::seed::CLOCK_JUMP.as_bytes(),
                &self.steps.load(Ordering::Relaxed).to_le_bytes(),
            ]);
            let magnitude = rng.range_inclusive(1, CLOCK_JUMP_MS_MAX);
            let delta = if rng.bool_with(0.5) {
                magnitude as i64
            } else {
                -(magnitude as i64)
            };
            self.clock.jump_wall_clock(delta);
            self.trace.emit(ClockEvent::Jump { delta_ms: delta });
        }
        self.clock.unix_time_ms()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.step();
        self.trace.emit(ClockEvent::Sleep { duration });
        self.clock.sleep(duration)
    }

    fn timer(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.step();
        self.clock.sleep(duration)
    }

    fn random_u64(&self, stream: &str) -> u64 {
        self.step();
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rng) = streams.get_mut(stream) {
            return rng.next_u64();
        }
        let mut rng = self
            .root
            .fork_parts(&[streams::seed::ENV.as_bytes(), stream.as_bytes()]);
        let value = rng.next_u64();
        streams.insert(stream.to_owned(), rng);
        value
    }

    fn record(&self, kind: &'static str, detail: fmt::Arguments<'_>) {
        self.step();
        self.trace.record(kind, detail);
    }

    fn cover(&self, mark: &'static str) {
        self.step();
        let step = self.record_step();
        self.mark_log().cover(mark, step);
        self.trace.emit(RunEvent::Cover { mark });
    }

    /// Records a steering mark: no step, no draw, no trace event (a seed's meaning is
    /// kept wherever marks are added).
    fn steer(&self, mark: &'static Mark, value: u64) {
        let step = self.record_step();
        let mut log = self.mark_log();
        match mark.kind {
            MarkKind::Sometimes | MarkKind::Reachable => log.hit(mark.name, step),
            MarkKind::Maximize => log.maximize(mark.name, value, step),
        }
    }
}

impl fmt::Debug for SimInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimKernel")
            .field("seed", &self.config.seed)
            .field("now", &self.clock.now())
            .field("steps", &self.steps.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl AsRef<SimKernel> for SimKernel {
    fn as_ref(&self) -> &SimKernel {
        self
    }
}

impl fmt::Debug for SimKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultConfig;
    use umi_core::env::EnvironmentExt;

    use crate::clock::tests::in_paused_runtime as in_runtime;

    /// `sim.rng(label)` carries on, as `env.random_u64(label)` does: a second call never
    /// replays the first call's numbers; the same calls in a new run give the same streams;
    /// the first call is the label's fork (what `fork_rng` gives every time).
    #[test]
    fn rng_carries_on_per_label_and_fork_rng_does_not() {
        let draws = |sim: &SimKernel| -> Vec<u64> {
            let mut first = sim.rng("workload");
            let mut second = sim.rng("workload");
            let mut other = sim.rng("other");
            vec![first.next_u64(), second.next_u64(), other.next_u64()]
        };
        let (a, b, forks) = in_runtime(|| {
            let one = SimKernel::new(&SimConfig::new(9)).unwrap();
            let two = SimKernel::new(&SimConfig::new(9)).unwrap();
            let forks = [
                one.fork_rng("workload").next_u64(),
                one.fork_rng("workload").next_u64(),
            ];
            (draws(&one), draws(&two), forks)
        });
        assert_ne!(a[0], a[1], "a second call replayed the first stream");
        assert_eq!(a, b, "the same calls in another run differ");
        assert_eq!(forks[0], forks[1]);
        assert_eq!(a[0], forks[0], "the first call is not the label's fork");
    }

    /// A workload naming a simulator's stream would draw the simulator's numbers: refused.
    #[test]
    #[should_panic(expected = "names a simulator's stream")]
    fn rng_refuses_a_simulators_label() {
        in_runtime(|| {
            let sim = SimKernel::new(&SimConfig::new(9)).unwrap();
            sim.rng(streams::seed::LLM.as_str())
        });
    }

    #[test]
    fn streams_are_independent_of_each_other() {
        let (alone, interleaved) = in_runtime(|| {
            let a = SimKernel::new(&SimConfig::new(5)).unwrap().env();
            let alone: Vec<u64> = (0..5).map(|_| a.random_u64("llm")).collect();
            let b = SimKernel::new(&SimConfig::new(5)).unwrap().env();
            let interleaved: Vec<u64> = (0..5)
                .map(|_| {
                    b.random_u64("storage");
                    b.random_u64("llm")
                })
                .collect();
            (alone, interleaved)
        });
        assert_eq!(alone, interleaved);
    }

    #[test]
    fn wall_clock_starts_at_the_epoch_and_jumps_under_faults() {
        in_runtime(|| {
            let config = SimConfig::new(1).with_epoch_unix_ms(5_000_000);
            assert_eq!(
                SimKernel::new(&config).unwrap().env().unix_time_ms(),
                5_000_000
            );
            let jumping = config.with_fault(FaultConfig::always(FaultKind::ClockJump));
            let sim = SimKernel::new(&jumping).unwrap();
            let reading = sim.env().unix_time_ms();
            assert_ne!(reading, 5_000_000);
            assert_eq!(sim.clock().wall_offset_ms(), reading as i64 - 5_000_000);
            assert_eq!(
                sim.env().elapsed(),
                Duration::ZERO,
                "monotonic time never jumps"
            );
        });
    }

    #[test]
    fn step_bound_unwinds_with_a_liveness_payload() {
        in_runtime(|| {
            let sim = SimKernel::new(&SimConfig::new(1).with_steps_max(10)).unwrap();
            let env = sim.env();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                loop {
                    env.random_u64("spin");
                }
            }));
            let payload = caught.unwrap_err();
            let message = crate::simulation::panic_message(&*payload);
            assert!(message.contains("step limit of 10 exceeded"), "{message}");
            assert!(sim.step_limit_hit());
            env.random_u64("after"); // no second panic
        });
    }

    #[test]
    fn settings_are_the_first_events() {
        in_runtime(|| {
            let config = SimConfig::new(3)
                .with_fault(FaultConfig::chance(FaultKind::LlmTimeout, 0.25))
                .with_swarm_over(&[FaultKind::StorageWriteFail]);
            let sim = SimKernel::new(&SimConfig {
                trace_full: true,
                ..config
            })
            .unwrap();
            let kinds: Vec<_> = sim
                .trace()
                .events()
                .unwrap()
                .iter()
                .map(|e| e.kind)
                .collect();
            assert_eq!(kinds[0], "sim.start");
            assert!(kinds.contains(&"sim.fault"));
            assert!(kinds.contains(&"sim.swarm"));
            assert_eq!(sim.env().random_id("ids").len(), 32);
        });
    }
}
