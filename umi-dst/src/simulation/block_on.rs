//! One future for one seed under the runner's guards: what a test that needs a
//! simulated environment but not a seed range (a unit test's `in_sim` helper, the
//! conformance check's cases) calls instead of building a paused runtime by hand.
//!
//! [`Simulation::block_on`] runs on the same path as every seed of
//! [`Simulation::run`]: a fresh paused current-thread runtime, the step bound and the
//! simulated-time bound, the trace, the wall-clock watchdog. A panic or a passed bound
//! fails the calling test with the seed's report and replay command, as `run` does.

use std::cell::{Cell, RefCell};

use super::{Simulation, Violation, execute, fail_run};
use crate::SimEnvironment;
use crate::config::SimConfigError;
use crate::failure_class::FailureClass;
use crate::watchdog::Watchdog;

impl Simulation {
    /// Runs `body` once, for this simulation's first seed (`Simulation::new(config)`
    /// runs `config.seed`), under the runner's guards, and returns its output. No
    /// determinism check, no budget check, no corpus: those need a verdict, and `body`
    /// returns a value instead.
    ///
    /// ```
    /// use umi_dst::prelude::*;
    ///
    /// let answer = Simulation::new(SimConfig::new(7)).block_on(async |sim| {
    ///     sim.clock().sleep(std::time::Duration::from_secs(90)).await;
    ///     sim.clock().now().as_secs()
    /// });
    /// assert_eq!(answer, 90);
    /// ```
    pub fn block_on<T>(&self, body: impl AsyncFnOnce(SimEnvironment) -> T) -> T {
        if tokio::runtime::Handle::try_current().is_ok() {
            super::fail_setup(&SimConfigError::NestedRuntime);
        }
        let seed = self.seeds.first().copied().unwrap_or(self.template.seed);
        let mut config = self.config_for(seed);
        config.budget = crate::usage::Budget::default();
        if let Err(error) = config.validate() {
            super::fail_setup(&error);
        }
        let body = Cell::new(Some(body));
        let output = RefCell::new(None);
        let once = |sim: SimEnvironment| {
            let body = body.take();
            let output = &output;
            async move {
                let Some(body) = body else {
                    return Err(Violation::new("block_on runs its body once"));
                };
                *output.borrow_mut() = Some(body(sim).await);
                Ok(())
            }
        };
        let limit = self.settings.seed_timeout;
        let replay = self
            .replay
            .clone()
            .unwrap_or_else(super::report::ReplayTarget::detect);
        let mut watchdog = Watchdog::start();
        let _watched = watchdog.as_mut().map(|watchdog| {
            let command = replay.command(seed, FailureClass::Liveness);
            watchdog.watch(&format!("seed {seed}"), limit, &command)
        });
        let run = execute::run_seed(&config, &once, &self.settings.log);
        if let Some((class, message)) = &run.failure {
            fail_run(&self.report(&run, *class, message.clone(), None));
        }
        output
            .into_inner()
            .unwrap_or_else(|| unreachable!("a run that passed ran its body to the end"))
    }
}
