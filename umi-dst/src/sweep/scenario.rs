//! Scenario: a simulation with a goal, invariants, a fault profile and coverage marks.

use futures::future::LocalBoxFuture;

use crate::config::SimConfig;
use crate::environment::SimEnvironment;
use crate::fault::{FaultConfig, FaultKind};
use crate::simulation::Violation;

/// A simulation the sweep engine runs over many seeds.
///
/// `run` drives real code in the simulated environment and returns the first invariant
/// it finds broken. A panic is a crash; running out of simulated time or steps is a
/// liveness failure. A canary (`is_canary`) carries a planted bug: a sweep must find it,
/// and its failures never count as regressions.
pub trait Scenario: Send + Sync {
    /// The name (`memory_no_data_loss`), also the name of its seed file.
    fn name(&self) -> &'static str;

    /// What it checks, in one line.
    fn goal(&self) -> &'static str;

    /// The faults it runs under by default.
    fn faults(&self) -> Vec<FaultConfig> {
        Vec::new()
    }

    /// The coverage marks its default seeds must hit.
    fn marks(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether this is the canary.
    fn is_canary(&self) -> bool {
        false
    }

    /// The config of one seed: the fault profile, or in swarm mode the profile's kinds
    /// switched on and off by the seed.
    fn config(&self, seed: u64, swarm: bool) -> SimConfig {
        let faults = self.faults();
        if swarm {
            let mut kinds: Vec<FaultKind> = faults.iter().map(FaultConfig::kind).collect();
            kinds.dedup();
            SimConfig::new(seed).with_swarm(&kinds)
        } else {
            faults
                .into_iter()
                .fold(SimConfig::new(seed), SimConfig::with_fault)
        }
    }

    /// Runs one seed.
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>>;
}
