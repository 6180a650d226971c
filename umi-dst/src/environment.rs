//! SimEnvironment: the handle to one simulated run that a test body gets, the run's
//! [`SimKernel`] (clock, RNG streams, fault injector, trace) plus the simulators the run
//! shares, built on first use.
//!
//! The layering is kernel, then simulators, then this: a simulator is built from a
//! `&SimKernel` and never holds the environment, so this module can name the simulators'
//! types (the shared SimLLM sits in a typed slot, not behind `dyn Any`) without an import
//! circle. Every kernel method is reachable on the environment through `Deref`, and a
//! `&SimEnvironment` is accepted wherever a `&SimKernel` is (`SimLlm::new(&sim)`).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::config::{SimConfig, SimConfigError};
use crate::kernel::SimKernel;
use crate::llm::SimLlm;

/// The environment of one simulated run. Cheap to clone; clones share the run.
#[derive(Clone)]
pub struct SimEnvironment {
    kernel: SimKernel,
    /// The run's shared SimLLM, built on first use by [`SimEnvironment::llm`]. SimLlm
    /// holds clones of the kernel's parts, never the environment, so the slot makes no
    /// reference cycle.
    llm: Arc<OnceLock<Arc<SimLlm>>>,
}

impl SimEnvironment {
    /// The environment for `config`. Must be called inside the simulation's runtime
    /// (the Simulation runner does); records the run's settings as its first events.
    pub fn new(config: &SimConfig) -> Result<Self, SimConfigError> {
        Ok(Self {
            kernel: SimKernel::new(config)?,
            llm: Arc::new(OnceLock::new()),
        })
    }

    /// The run's kernel (also reachable through `Deref`).
    pub fn kernel(&self) -> &SimKernel {
        &self.kernel
    }

    /// Ends the run's fault phase: no fault fires from now on, recorded in the trace as
    /// `fault.heal` (the same as `sim.faults().heal()`). What follows is the run's liveness
    /// phase: the system must recover and make progress, which
    /// [`crate::liveness::eventually`] checks within a simulated-time bound.
    pub fn heal(&self) {
        self.kernel.faults().heal();
    }

    /// The run's SimLLM with the default config, shared by everyone who asks (one
    /// occurrence count per request across the run). For another config build one with
    /// [`SimLlm::with_config`].
    pub fn llm(&self) -> Arc<SimLlm> {
        self.llm
            .get_or_init(|| Arc::new(SimLlm::new(&self.kernel)))
            .clone()
    }
}

impl Deref for SimEnvironment {
    type Target = SimKernel;

    fn deref(&self) -> &SimKernel {
        &self.kernel
    }
}

impl AsRef<SimKernel> for SimEnvironment {
    fn as_ref(&self) -> &SimKernel {
        &self.kernel
    }
}

impl fmt::Debug for SimEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimEnvironment")
            .field("kernel", &self.kernel)
            .field("llm_built", &self.llm.get().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared SimLLM is built once per run and shared by clones of the environment;
    /// another run has its own.
    #[test]
    fn the_shared_llm_is_one_per_run() {
        // Two environments of one config side by side: beneath the door, which gives one.
        crate::clock::tests::in_paused_runtime(|| {
            let sim = SimEnvironment::new(&SimConfig::new(4)).unwrap();
            let clone = sim.clone();
            assert!(Arc::ptr_eq(&sim.llm(), &clone.llm()));
            let other = SimEnvironment::new(&SimConfig::new(4)).unwrap();
            assert!(!Arc::ptr_eq(&sim.llm(), &other.llm()));
        });
    }
}
