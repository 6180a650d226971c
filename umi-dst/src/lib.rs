//! # umi-dst
//!
//! Deterministic simulation testing for code that talks to language models. One `u64`
//! seed fixes everything a run depends on: the model's answers, how streams are chunked,
//! latency, faults and the clock. A failing run prints its seed and the command that
//! replays it exactly.
//!
//! ```no_run
//! use umi_dst::prelude::*;
//!
//! #[umi_dst::test(seeds = 1..=100)]
//! async fn backoff_is_bounded(sim: SimEnvironment) -> Result<(), Violation> {
//!     let env = sim.env();
//!     let wait = std::time::Duration::from_millis(env.random_in_range("backoff", 100, 5_000));
//!     env.sleep(wait).await;
//!     ensure!(env.elapsed() <= std::time::Duration::from_secs(5), "slept {wait:?}");
//!     Ok(())
//! }
//! ```
//!
//! One door, one shape: `#[umi_dst::test]` is the test; the builder it expands to,
//! `Simulation::from_env().with_seeds(..).run(async |sim| { .. })`, is there when a test
//! needs more (`with_config`, `try_run`), and [`Simulation::block_on`] takes the same
//! `async |sim|` closure for one seed with a value back. A scenario, what the sweeps run,
//! is one [`#[umi_dst::scenario]`](macro@scenario) declaration. [`prelude`] holds what a
//! test needs.

//! # Layout
//!
//! The public modules are the topics a user names on purpose; the run's machinery
//! (clock, configuration, kernel, RNG streams, paths, marks, storage) lives in private
//! modules, and the types of it a test or a tool names are re-exported here at the root.
//!
//! At the root:
//!
//! - [`Simulation`], [`SimEnvironment`], [`Violation`], [`ensure!`]: the runner, what a
//!   test body gets (the kernel plus the simulators a run shares, `sim.llm()`), and the
//!   verdict; [`SimConfig`] and [`SimKernel`], the simulated implementation of
//!   umi-core's `Environment` (clock [`SimClock`], RNG streams [`DeterministicRng`],
//!   injector, trace) that every simulator is built from.
//! - [`RunPath`], [`Branch`]: a run as a path (its seed and the branch points where every
//!   stream switches to a fresh one) and its text form (`7/412:9913`); [`streams`]: every
//!   fixed RNG stream, named once.
//! - [`eventually`], [`Eventually`]: the liveness phase: after `sim.heal()`, a condition
//!   must come to hold within a bound of simulated time.
//! - [`SimLlm`], [`SimNetwork`], [`SimStorage`] (the memory's storage with faults,
//!   checksums and a ledger), [`SqliteDisk`] (the production `SqliteStorage` on an
//!   in-memory database that a run can close and reopen): the simulators.
//!
//! The modules:
//!
//! - [`prelude`]: `use umi_dst::prelude::*;` for a test.
//! - [`simulation`]: the runner, settings from `DST_*` (and their text forms, for tools
//!   of your own that take the same), failure reports, the wall-clock watchdog.
//! - [`scenario`](mod@scenario): a simulation with a goal, invariants and a fault profile,
//!   declared in one place with [`#[umi_dst::scenario]`](macro@scenario), which registers
//!   it ([`scenario::registered`]) and writes its replay test; [`test_scenario`] runs one
//!   under `cargo test`. Sweeping scenarios over many seeds (worker processes, shards,
//!   reports, replay, minimization, the `dst` command) is the `umi-sweep` crate's work.
//! - [`fault`]: the fault catalog, configs, the injector and swarm mode.
//! - [`trace`]: the event log and its hash; [`otlp`]: a run as OpenTelemetry spans (OTLP
//!   JSON and protobuf), GenAI conventions.
//! - [`failure_class`]: why a run failed, and the `dst` command's exit codes.
//! - [`corpus`]: the `seeds/*.seeds` files.
//! - [`llm`]: SimLLM, the simulated model: routes, generators, schema-valid tool
//!   arguments, limits, latency, faults; [`embed`]: the simulated embedding model.
//! - [`network`]: SimNetwork, the real wire formats served in simulated time, with
//!   network faults, capture and cassette replay.
//! - [`mcp`], [`tools`]: simulated MCP servers and tools; [`usage`]: what a run spent.
//! - [`checkers`]: invariants scenarios check (memory: no data loss, no forgotten entity
//!   recalled, no dangling link; split invariance of the wire).
//! - [`doubles`]: mock, scripted and function `LanguageModel`s for unit tests, and a
//!   storage whose writes go through your code, to plant bugs a harness must find.
//! - [`adapters`]: third-party clients (async-openai, rig, rmcp) inside a simulation,
//!   and what the determinism check knows of them.
//! - [`conformance`]: the `LanguageModel` contract, checked over generated requests.
//! - [`constants`]: the harness-wide limits and the seed defaults (a module's own limits
//!   live beside it).
//! - `serve` (feature `serve`): `dst serve`, the simulated model over real HTTP.

// The public surface, deliberately: a module is public when a user names it on purpose
// (a topic of its own: the fault catalog, the trace, a simulator, the runner); the run's
// machinery (clock, config, kernel, RNG, paths, storage) is private, and the types of it a
// user names are re-exported below. `scenarios/tests/public_surface.rs` holds this list
// against a golden file, so a change here is a deliberate edit of both.
pub mod adapters;
pub mod checkers;
pub mod conformance;
pub mod constants;
pub mod corpus;
pub mod doubles;
pub mod embed;
pub mod failure_class;
pub mod fault;
pub mod llm;
pub mod mcp;
pub mod network;
pub mod otlp;
pub mod prelude;
pub mod scenario;
#[cfg(feature = "serve")]
pub mod serve;
pub mod simulation;
pub mod tools;
pub mod trace;
pub mod usage;

mod branch_epoch;
mod checksum;
mod clock;
mod config;
mod duration_text;
mod environment;
mod kernel;
mod liveness;
mod marks;
mod micros;
mod path;
mod rng;
mod seed_text;
mod sqlite_disk;
mod storage;
mod watchdog;

pub use clock::{Paced, SimClock};
pub use config::{SimConfig, SimConfigError};
pub use environment::SimEnvironment;
pub use failure_class::FailureClass;
pub use fault::{FaultConfig, FaultDomain, FaultInjector, FaultKind};
pub use kernel::SimKernel;
pub use liveness::{EVENTUALLY_CHECKS_MAX, EVENTUALLY_POLL_DEFAULT, Eventually, Holds, eventually};
pub use llm::{SimLlm, SimLlmConfig};
pub use marks::{MARKS_PER_RUN_MAX, Watermark};
// Public for umi-sweep: its worker replies and reports count microseconds as the trace does.
pub use micros::micros_saturating;
pub use network::{Endpoint, SimNetwork};
pub use path::{Branch, PATH_BRANCHES_MAX, PathError, RunPath};
pub use rng::{DeterministicRng, streams};
pub use scenario::{Scenario, test_scenario, test_scenario_in};
pub use simulation::report::FailureReport;
pub use simulation::{RunError, RunSummary, Simulation, Violation};
pub use sqlite_disk::SqliteDisk;
pub use storage::{LedgerEntry, STORAGE_LATENCY_MS_MAX, STORAGE_LATENCY_MS_MIN, SimStorage};
/// Runs an `async fn(sim: SimEnvironment) -> Result<(), Violation>` as a simulation test
/// over many seeds: `#[umi_dst::test(seeds = 1..=200, faults = [..], corpus = "name")]`,
/// every argument optional (see the guide, section 2).
///
/// A misspelt argument, a function that is not `async`, or one that does not take the
/// `SimEnvironment` does not compile, with the reason at the mistake:
///
/// ```compile_fail
/// #[umi_dst::test(seed = 1..=3)] // unknown argument `seed`: ... takes `seeds`, ...
/// async fn t(sim: umi_dst::SimEnvironment) -> Result<(), umi_dst::Violation> { Ok(()) }
/// ```
///
/// ```compile_fail
/// #[umi_dst::test] // runs an `async fn(sim: SimEnvironment) -> ...`
/// fn t(sim: umi_dst::SimEnvironment) -> Result<(), umi_dst::Violation> { Ok(()) }
/// ```
///
/// ```compile_fail
/// #[umi_dst::test(faults = umi_dst::FaultConfig::always(umi_dst::FaultKind::LlmTimeout))]
/// async fn t(sim: umi_dst::SimEnvironment) -> Result<(), umi_dst::Violation> { Ok(()) }
/// ```
///
/// ```
/// #[umi_dst::test(seeds = 1..=3)]
/// async fn t(sim: umi_dst::SimEnvironment) -> Result<(), umi_dst::Violation> { Ok(()) }
/// ```
pub use umi_dst_macros::test;

/// Declares a scenario in one place: a unit struct becomes a [`Scenario`] that registers
/// itself, so [`scenario::registered`] (what a `dst` binary lists and sweeps:
/// `umi_sweep::cli::main(umi_dst::scenario::registered())`) finds it with no other edit,
/// and, unless it is a `canary` or `only_when_named`, a `#[test]` named after it replays
/// its kept seeds (`seeds/<name>.seeds`) and seeds 1 to
/// [`scenario::REPLAY_SEEDS_DEFAULT`] (`DST_SEED=N cargo test -- <name>` replays one).
///
/// `goal` and `run` are required; `name` (default: the struct's name in snake_case),
/// `faults`, `marks`, `steering`, `budget`, `prices`, `config`, `canary`,
/// `only_when_named`, `rank` (the registry's order: lower first, then by name) and
/// `replay_seeds` are optional; each is the [`Scenario`] method of that name.
///
/// ```
/// use umi_core::llm::{CompletionRequest, LanguageModel, LlmErrorKind, Message};
/// use umi_dst::prelude::*;
///
/// /// The scenario.
/// #[umi_dst::scenario(
///     goal = "a rate-limited call fails as rate-limited, within a minute",
///     faults = [FaultConfig::chance(FaultKind::LlmRateLimit, 0.3)],
///     marks = ["doc.asked"],
///     run = run,
/// )]
/// pub struct RateLimitsAreTyped;
///
/// async fn run(sim: SimEnvironment) -> Result<(), Violation> {
///     let request = CompletionRequest::new(vec![Message::user("hello")]);
///     if let Err(error) = sim.llm().complete(&request).await {
///         ensure!(error.kind() == LlmErrorKind::RateLimit, "{error}");
///     }
///     sim.env().cover("doc.asked");
///     ensure!(sim.env().elapsed().as_secs() < 60, "took {:?}", sim.env().elapsed());
///     Ok(())
/// }
///
/// let declared = umi_dst::scenario::registered();
/// assert!(declared.iter().any(|s| s.name() == "rate_limits_are_typed"));
/// umi_dst::test_scenario(&RateLimitsAreTyped);
/// ```
///
/// Arguments it does not know, and a struct with fields, fail to compile:
///
/// ```compile_fail
/// #[umi_dst::scenario(goal = "g", run = |_| async { Ok(()) }, fautls = [])]
/// pub struct Misspelt;
/// ```
///
/// ```compile_fail
/// #[umi_dst::scenario(goal = "g", run = |_| async { Ok(()) })]
/// pub struct WithFields(u32);
/// ```
pub use umi_dst_macros::scenario;

/// What `#[umi_dst::scenario]`'s expansion names (not an API).
#[doc(hidden)]
pub mod __private {
    pub use futures::future::LocalBoxFuture;
    pub use inventory;
}
