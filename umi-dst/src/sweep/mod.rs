//! The sweep engine: scenarios over many seeds, in parallel, sharded, with reports,
//! replay, fault-schedule minimization, and the `dst` command.
//!
//! - [`Scenario`]: a simulation with a goal, invariants, a fault profile and coverage
//!   marks.
//! - [`engine::run`]: a sweep (corpus recording, periodic report), over the runs a
//!   `plan` numbers (shards), executed under a watchdog by worker processes
//!   (`process_pool`, each a `process_worker` speaking `wire`; a worker's death is a
//!   crash of its seed, `crash`, and `memory_limit` caps each) or, in process, by
//!   `worker` threads, with `progress` on the terminal.
//! - [`report`]: tables (failures grouped by message, [`groups`]), JSON, JUnit XML,
//!   merging shard reports, exit codes by class.
//! - [`resume`]: why a sweep stopped early (time budget, SIGINT, SIGTERM) and the
//!   command that runs the rest of its range.
//! - [`minimize`]: delta debugging over a failing seed's injected faults.
//! - [`cli::main`]: the `dst` command, for your own binary.

pub mod cli;
mod collect;
mod crash;
pub mod engine;
pub mod find;
pub mod groups;
mod junit;
pub mod memory_limit;
pub mod merge_check;
pub mod minimize;
pub mod options;
mod outcome;
mod plan;
pub mod process_pool;
mod process_worker;
mod progress;
pub mod report;
pub mod resume;
mod scenario;
mod signals;
mod wire;
mod worker;

pub use engine::run;
pub use options::{Isolation, SweepError, SweepOptions};
pub use plan::Shard;
pub use process_pool::WorkerProcesses;
pub use report::{ScenarioReport, SweepReport};
pub use scenario::run_one;
pub use scenario::{SCENARIO_TEST_SEEDS_DEFAULT, Scenario, test_scenario, test_scenario_in};
