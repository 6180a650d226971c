//! Seeds run in the `dst` process itself (`replay`, `minimize`, `find`), one at a time,
//! each under the wall-clock watchdog: a seed that never yields ends the command with its
//! name, the limit and the command that replays it (exit 12), instead of hanging it.
//!
//! The limit is `DST_SEED_TIMEOUT` (as for `Simulation::run`), or
//! [`umi_dst::constants::SEED_WALL_TIMEOUT_DEFAULT`]. The sweep has its own watchdog in
//! the engine (`--seed-timeout`), which records a hang and goes on.

use std::time::Duration;

use umi_dst::RunPath;
use umi_dst::fault::InjectionId;
use umi_dst::scenario::{Scenario, run_path};
use umi_dst::simulation::SeedRun;
use umi_dst::simulation::settings::positive_duration_arg;
use umi_dst::simulation::{Watchdog, settings::SEED_TIMEOUT_VAR};

use crate::replay_command::ReplayCommand;

/// The wall-clock limit of one seed run in the `dst` process: `DST_SEED_TIMEOUT`, or the
/// default; an unparsable value is an error naming the variable.
pub(crate) fn seed_wall_timeout() -> Result<Duration, String> {
    match std::env::var(SEED_TIMEOUT_VAR) {
        Err(_) => Ok(umi_dst::constants::SEED_WALL_TIMEOUT_DEFAULT),
        Ok(value) => positive_duration_arg(&value)
            .map_err(|reason| format!("{SEED_TIMEOUT_VAR}={value:?}: {reason}")),
    }
}

/// One seed at a time under the watchdog.
pub(crate) struct WatchedRuns {
    /// `None` when the watchdog's thread could not start (then runs are unwatched).
    watchdog: Option<Watchdog>,
    /// The wall-clock limit of one seed.
    limit: Duration,
    /// How the binary was invoked, for the replay command in a hang report.
    program: String,
}

impl WatchedRuns {
    /// The watchdog, with the limit from `DST_SEED_TIMEOUT`; an unparsable value is an
    /// error naming the variable.
    pub(crate) fn start(program: &str) -> Result<Self, String> {
        Ok(Self {
            watchdog: Watchdog::start(),
            limit: seed_wall_timeout()?,
            program: program.to_owned(),
        })
    }

    /// Runs `seed` of `scenario`, allowing only the injections `only` (all when `None`).
    /// `what` names the run in a hang report ("replay of seed 7 of wire_faults").
    pub(crate) fn run(
        &mut self,
        what: &str,
        scenario: &dyn Scenario,
        seed: u64,
        swarm: bool,
        only: Option<&[InjectionId]>,
    ) -> SeedRun {
        self.run_path(what, scenario, &RunPath::from_seed(seed), swarm, only)
    }

    /// [`WatchedRuns::run`] of a path (a seed alone runs exactly as its seed).
    pub(crate) fn run_path(
        &mut self,
        what: &str,
        scenario: &dyn Scenario,
        path: &RunPath,
        swarm: bool,
        only: Option<&[InjectionId]>,
    ) -> SeedRun {
        self.run_path_traced(what, scenario, path, swarm, only, false)
    }

    /// [`WatchedRuns::run`] keeping every trace event (`SimConfig::trace_full`), for an
    /// export of the whole run (`dst sweep --otlp`).
    pub(crate) fn run_full(
        &mut self,
        what: &str,
        scenario: &dyn Scenario,
        seed: u64,
        swarm: bool,
    ) -> SeedRun {
        self.run_path_traced(what, scenario, &RunPath::from_seed(seed), swarm, None, true)
    }

    fn run_path_traced(
        &mut self,
        what: &str,
        scenario: &dyn Scenario,
        path: &RunPath,
        swarm: bool,
        only: Option<&[InjectionId]>,
        trace_full: bool,
    ) -> SeedRun {
        let command = ReplayCommand::new(&self.program, scenario.name(), path.seed)
            .branches(&path.branches)
            .swarm(swarm)
            .only(only)
            .to_string();
        let limit = self.limit;
        let _watched = self
            .watchdog
            .as_mut()
            .map(|watchdog| watchdog.watch(what, limit, &command));
        let only = only.map(<[InjectionId]>::to_vec);
        run_path(scenario, path, swarm, |mut config| {
            if only.is_some() {
                config.only_injections = only;
            }
            config.trace_full |= trace_full;
            config
        })
    }
}
