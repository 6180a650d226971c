//! SimConfig: everything that, with the seed, decides a simulated run.

use std::time::Duration;

use crate::constants::{
    FAULT_CONFIGS_MAX, SIM_EPOCH_UNIX_MS_DEFAULT, SIM_STEPS_DEFAULT, SIM_STEPS_MAX,
    SIM_TIME_MAX_DEFAULT, SWARM_KIND_PROBABILITY, TRACE_TAIL_EVENTS_DEFAULT, TRACE_TAIL_EVENTS_MAX,
};
use crate::fault::point;
use crate::fault::{FaultConfig, FaultConfigError, FaultKind, FaultPoint, InjectionId};
use crate::path::{Branch, PathError, RunPath};

/// A setting that cannot work, named with its value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimConfigError {
    /// `steps_max` is zero or above `SIM_STEPS_MAX`.
    #[error("steps_max {value} is outside 1..={limit}")]
    StepsMax {
        /// The rejected value.
        value: u64,
        /// `SIM_STEPS_MAX`.
        limit: u64,
    },
    /// `sim_time_max` is zero.
    #[error("sim_time_max must be positive")]
    SimTimeMaxZero,
    /// The trace tail is larger than `TRACE_TAIL_EVENTS_MAX`.
    #[error("trace_tail_events {value} exceeds {limit}")]
    TraceTail {
        /// The rejected value.
        value: usize,
        /// `TRACE_TAIL_EVENTS_MAX`.
        limit: usize,
    },
    /// A fault config is invalid.
    #[error(transparent)]
    Fault(#[from] FaultConfigError),
    /// The branch points are not a path's (see [`RunPath`](crate::RunPath)).
    #[error(transparent)]
    Path(#[from] PathError),
    /// The simulation was started inside a tokio runtime.
    #[error(
        "Simulation::run was called inside a tokio runtime (a #[tokio::test], or block_on): \
         each seed runs on a simulated runtime of its own, which cannot start inside another. \
         Write the test as a plain #[test] fn and put the async code in the body given to run"
    )]
    NestedRuntime,
}

/// The settings of a simulated run. Build with [`SimConfig::new`] and the `with_*`
/// methods; [`SimConfig::validate`] checks the limits (the runner calls it).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SimConfig {
    /// The seed every random choice derives from.
    pub seed: u64,
    /// Steps (environment calls and trace events) before a liveness failure.
    pub steps_max: u64,
    /// Simulated time before a liveness failure.
    pub sim_time_max: Duration,
    /// Fault rules in force.
    pub faults: Vec<FaultConfig>,
    /// Swarm mode: the seed switches each of `faults` on or off and scales its
    /// probability (filters, caps and ordinals kept); see [`crate::fault::swarm`].
    pub swarm: bool,
    /// Fault points of simulators of your own, so rules naming them are checked like
    /// the built-in ones ([`crate::fault::point`]).
    pub fault_points: Vec<FaultPoint>,
    /// Injections to switch off (schedule minimization).
    pub suppressed: Vec<InjectionId>,
    /// When set, the only injections allowed to happen (schedule minimization).
    pub only_injections: Option<Vec<InjectionId>>,
    /// What the simulated wall clock reads at time zero, in ms since the Unix epoch.
    pub epoch_unix_ms: u64,
    /// Trace events kept for the failure report.
    pub trace_tail_events: usize,
    /// Keep every trace event (replays and determinism checks).
    pub trace_full: bool,
    /// With `trace_full`, leave the events typed in the trace, for the caller to take
    /// (`Trace::take_kept`: `dst serve`'s log, which writes their text only when it is
    /// read), instead of written into `SeedRun::full_trace`: the text of every event of a
    /// served run was written as it ended and dropped unread (issue 41).
    pub(crate) trace_full_typed: bool,
    /// Seeded interleavings: at the simulators' interleaving points (a simulated tool's
    /// call, before and after its latency) the seed may yield a few times, so futures
    /// ready at the same instant (an agent's parallel tool calls) run in orders the
    /// runtime's FIFO never chooses. Off by default (a seed's meaning is kept); on in
    /// swarm mode ([`SimConfig::interleaving`]). See docs/adr/0001-determinism.md.
    pub interleave: bool,
    /// What one run may spend, checked when it ends ([`crate::usage::Budget`]; none by
    /// default).
    pub budget: crate::usage::Budget,
    /// The prices the budget's cost limit and the reports' cost use.
    pub prices: Option<std::sync::Arc<crate::usage::PriceTable>>,
    /// The run's branch points: with `seed`, the [`RunPath`] it runs. Empty (the seed
    /// alone, exactly as it always ran) by default.
    pub branches: Vec<Branch>,
}

impl SimConfig {
    /// Defaults for seed `seed`: no faults, a day of simulated time, a million steps.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            steps_max: SIM_STEPS_DEFAULT,
            sim_time_max: SIM_TIME_MAX_DEFAULT,
            faults: Vec::new(),
            swarm: false,
            fault_points: Vec::new(),
            suppressed: Vec::new(),
            only_injections: None,
            epoch_unix_ms: SIM_EPOCH_UNIX_MS_DEFAULT,
            trace_tail_events: TRACE_TAIL_EVENTS_DEFAULT,
            trace_full: false,
            trace_full_typed: false,
            interleave: false,
            budget: crate::usage::Budget::new(),
            prices: None,
            branches: Vec::new(),
        }
    }

    /// The settings for running `path`: its seed and its branch points.
    pub fn for_path(self, path: &RunPath) -> Self {
        self.with_seed(path.seed)
            .with_branches(path.branches.clone())
    }

    /// Sets the branch points (checked by [`SimConfig::validate`]).
    pub fn with_branches(mut self, branches: Vec<Branch>) -> Self {
        self.branches = branches;
        self
    }

    /// The branch points.
    pub fn branches(&self) -> &[Branch] {
        &self.branches
    }

    /// The path this config runs: its seed and branch points.
    pub fn path(&self) -> RunPath {
        RunPath {
            seed: self.seed,
            branches: self.branches.clone(),
        }
    }

    /// Sets what one run may spend (see [`crate::usage::Budget`]).
    pub fn with_budget(mut self, budget: crate::usage::Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Sets the price table a cost budget and the reports use.
    pub fn with_prices(mut self, prices: std::sync::Arc<crate::usage::PriceTable>) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Turns seeded interleavings on (see [`SimConfig::interleave`]).
    pub fn with_interleave(mut self) -> Self {
        self.interleave = true;
        self
    }

    /// Whether interleavings are seeded: asked for, or in swarm mode.
    pub fn interleaving(&self) -> bool {
        self.interleave || self.swarm
    }

    /// The same settings for another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Adds a fault.
    pub fn with_fault(mut self, fault: FaultConfig) -> Self {
        self.faults.push(fault);
        self
    }

    /// Turns swarm mode on over the config's fault rules.
    pub fn with_swarm(mut self) -> Self {
        self.swarm = true;
        self
    }

    /// Adds an unscoped rule per kind (at `SWARM_KIND_PROBABILITY`) and turns swarm mode
    /// on: for a test that wants "any of these, anywhere, sometimes".
    pub fn with_swarm_over(mut self, kinds: &[FaultKind]) -> Self {
        for &kind in kinds {
            let rule = FaultConfig::chance(kind, SWARM_KIND_PROBABILITY);
            self.faults.push(rule);
        }
        self.with_swarm()
    }

    /// Registers a fault point of a simulator of your own, so rules may name it.
    pub fn with_fault_point(mut self, point: FaultPoint) -> Self {
        self.fault_points.push(point);
        self
    }

    /// Sets the step bound.
    pub fn with_steps_max(mut self, steps_max: u64) -> Self {
        self.steps_max = steps_max;
        self
    }

    /// Sets the simulated-time bound.
    pub fn with_sim_time_max(mut self, sim_time_max: Duration) -> Self {
        self.sim_time_max = sim_time_max;
        self
    }

    /// Sets the simulated wall clock's reading at time zero.
    pub fn with_epoch_unix_ms(mut self, epoch_unix_ms: u64) -> Self {
        self.epoch_unix_ms = epoch_unix_ms;
        self
    }

    /// Checks every limit; the error names the offending value.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        if self.steps_max == 0 || self.steps_max > SIM_STEPS_MAX {
            return Err(SimConfigError::StepsMax {
                value: self.steps_max,
                limit: SIM_STEPS_MAX,
            });
        }
        if self.sim_time_max.is_zero() {
            return Err(SimConfigError::SimTimeMaxZero);
        }
        if self.trace_tail_events > TRACE_TAIL_EVENTS_MAX {
            return Err(SimConfigError::TraceTail {
                value: self.trace_tail_events,
                limit: TRACE_TAIL_EVENTS_MAX,
            });
        }
        if self.faults.len() > FAULT_CONFIGS_MAX {
            return Err(FaultConfigError::TooMany {
                count: self.faults.len(),
                limit: FAULT_CONFIGS_MAX,
            }
            .into());
        }
        crate::path::check_branches(&self.branches)?;
        for own in &self.fault_points {
            point::check_point(own)?;
        }
        let mut points = point::BUILTIN.to_vec();
        points.extend(self.fault_points.iter().copied());
        for rule in &self.faults {
            point::check_filter(rule, &points)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_limits_are_checked() {
        assert_eq!(SimConfig::new(1).validate(), Ok(()));
        let zero = SimConfig::new(1).with_steps_max(0).validate().unwrap_err();
        assert!(zero.to_string().contains("steps_max 0"), "{zero}");
        assert!(
            SimConfig::new(1)
                .with_sim_time_max(Duration::ZERO)
                .validate()
                .is_err()
        );
        let many = (0..=FAULT_CONFIGS_MAX).fold(SimConfig::new(1), |c, _| {
            c.with_fault(FaultConfig::always(FaultKind::ClockJump))
        });
        assert!(matches!(many.validate(), Err(SimConfigError::Fault(_))));
    }

    #[test]
    fn branches_are_checked_as_a_path_is() {
        let at = |step| Branch { step, stream: 1 };
        let ok = SimConfig::new(1).with_branches(vec![at(3), at(9)]);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.path().to_string(), "1/3:1/9:1");
        assert_eq!(ok.branches(), &[at(3), at(9)]);
        let zero = SimConfig::new(1).with_branches(vec![at(0)]).validate();
        assert_eq!(
            zero,
            Err(SimConfigError::Path(PathError::StepZero { index: 1 }))
        );
        let backwards = SimConfig::new(1)
            .with_branches(vec![at(9), at(3)])
            .validate();
        let error = backwards.unwrap_err().to_string();
        assert!(error.contains("branch 2: step 3 is not after"), "{error}");
        let path: RunPath = "5/2:7".parse().unwrap();
        let config = SimConfig::new(1).for_path(&path);
        assert_eq!((config.seed, config.path()), (5, path));
    }
}
