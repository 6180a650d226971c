//! What a simulation test needs, in one import: `use umi_dst::prelude::*;`.
//!
//! The runner ([`Simulation`]), the run's handle ([`SimEnvironment`], its
//! [`SimKernel`]), the simulators ([`SimLlm`], [`SimNetwork`], [`SimStorage`]), the
//! settings ([`SimConfig`], [`FaultConfig`], [`FaultKind`]), the verdict
//! ([`Violation`], [`ensure!`](crate::ensure), [`eventually`] for the liveness phase),
//! scenarios ([`Scenario`], [`test_scenario`]), umi-core's environment traits, whose
//! methods (`env.sleep`, `env.random_in_range`) the code under test calls, and the
//! steering marks ([`Mark`], `sometimes!`, `reachable!`, `maximize!`; see
//! `umi_core::env::steer`).
//!
//! The `#[umi_dst::test]` and `#[umi_dst::scenario]` attributes are not here: a glob
//! import of a macro named `test` would take the place of the built-in `#[test]` in the
//! importing module, so both are always written with their path. The builder below takes
//! the same `async |sim|` closure as `Simulation::block_on`.
//!
//! ```
//! use umi_dst::prelude::*;
//!
//! Simulation::new(SimConfig::new(3)).run(async |sim| {
//!     let env = sim.env();
//!     env.sleep(std::time::Duration::from_millis(env.random_in_range("wait", 1, 500)))
//!         .await;
//!     ensure!(env.elapsed().as_millis() <= 500, "slept {:?}", env.elapsed());
//!     Ok(())
//! });
//! ```

pub use crate::ensure;
pub use crate::{
    FaultConfig, FaultKind, Scenario, SimConfig, SimEnvironment, SimKernel, SimLlm, SimLlmConfig,
    SimNetwork, SimStorage, Simulation, Violation, eventually, test_scenario,
};
pub use umi_core::env::steer::{Mark, MarkKind};
pub use umi_core::env::{Env, Environment, EnvironmentExt};
pub use umi_core::{maximize, reachable, sometimes};
