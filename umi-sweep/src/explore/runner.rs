//! Runs a path of a scenario for the explorer ([`ScenarioRunner`]): one simulation per
//! run, in the calling thread, under that thread's wall-clock watchdog (a run that never
//! yields ends the command with its replay line, as `dst replay` would).

use std::cell::RefCell;

use umi_dst::scenario::{Scenario, run_path};
use umi_dst::simulation::SeedRun;
use umi_dst::simulation::Watchdog;

use super::RunPath;
use super::outcome::{FaultAt, PathOutcome, PathRunner};

thread_local! {
    /// Each exploring thread's watchdog (started on its first run).
    static WATCHDOG: RefCell<Option<Watchdog>> = const { RefCell::new(None) };
}

/// A scenario's runs.
pub struct ScenarioRunner<'a> {
    /// The scenario.
    pub scenario: &'a dyn Scenario,
    /// Swarm mode.
    pub swarm: bool,
    /// The wall-clock limit of one run.
    pub limit: std::time::Duration,
    /// How `dst` is invoked, for the replay line of a hang.
    pub program: String,
}

impl PathRunner for ScenarioRunner<'_> {
    fn run(&self, path: &RunPath) -> PathOutcome {
        let swarm = if self.swarm { " --swarm" } else { "" };
        let replay = format!(
            "{} replay --scenario {} --path {path}{swarm}",
            self.program,
            self.scenario.name()
        );
        let what = format!("path {path} of {} (dst explore)", self.scenario.name());
        WATCHDOG.with(|cell| {
            let mut watchdog = cell.borrow_mut();
            if watchdog.is_none() {
                *watchdog = Watchdog::start();
            }
            let _watched = watchdog
                .as_mut()
                .map(|watchdog| watchdog.watch(&what, self.limit, &replay));
            outcome(&run_path(self.scenario, path, self.swarm, |config| config))
        })
    }
}

/// What the explorer reads of a run.
fn outcome(run: &SeedRun) -> PathOutcome {
    PathOutcome {
        failure: run
            .failure
            .as_ref()
            .map(|(class, message)| (class.to_string(), message.clone())),
        mark_steps: run.mark_steps.clone(),
        watermarks: run.watermarks.clone(),
        faults: run
            .injections
            .iter()
            .zip(&run.injection_steps)
            .map(|(injection, step)| FaultAt {
                kind: injection.kind.to_string(),
                operation: injection.operation.clone(),
                step: *step,
            })
            .collect(),
        steps: run.steps,
    }
}
