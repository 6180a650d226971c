//! The sweep engine and the `dst` command line: scenarios over many seeds, in worker
//! processes, sharded, with reports, replay, fault-schedule minimization and merge.
//!
//! A crate of its own so that code that only writes simulation tests (`umi-dst`:
//! [`umi_dst::Scenario`], [`umi_dst::test_scenario`], `Simulation`) compiles neither a
//! command-line parser nor a progress bar, and so that the harness's wall-clock reads
//! (sweep time, budgets, worker watchdogs) live here, outside simulated code.
//!
//! - [`engine::run`]: a sweep (corpus recording, periodic report), over the runs a
//!   `plan` numbers (shards), executed under a watchdog by worker processes
//!   (`process_pool`, each a `process_worker` speaking `wire`; a worker's death is a
//!   crash of its seed, `crash`, `memory_limit` caps each and `limit_in_force` names
//!   the cap a crash met; `parent_watch` ends a worker with its parent) or, in
//!   process, by `worker` threads, with `progress` on the terminal. A run's end is
//!   typed (`outcome`).
//! - [`report`]: tables (failures grouped by message, [`groups`]), JSON, JUnit XML,
//!   merging shard reports ([`merge_check`]), exit codes by class.
//! - [`compare`]: two sweeps of the same seeds compared (`dst compare`): which changes
//!   are larger than the noise, and a gate on regressions past thresholds.
//! - [`resume`]: why a sweep stopped early (time budget, SIGINT, SIGTERM) and the
//!   command that runs the rest of its range.
//! - [`sizing`]: how many shards a sweep needs for its time budget, from measured
//!   seeds per core-second (`dst size`).
//! - [`explore`]: guided exploration (`dst explore`): a corpus of paths that reached
//!   something new, branched from where they got there, with shard frontiers.
//! - [`minimize`]: delta debugging over a failing seed's injected faults.
//! - [`html`]: self-contained HTML pages of a run (`dst replay --html`: a timeline on
//!   simulated time by part of the system) and of a sweep report (`--html`).
//! - [`otlp_export`]: runs as OpenTelemetry traces (`dst replay --otlp`, `dst sweep
//!   --otlp`); [`otlp_http`]: sending one to a collector per `OTEL_EXPORTER_OTLP_*`.
//! - [`cli::main`]: the `dst` command, for your own binary: each command's flags and
//!   what it prints in a file of its own under `cli/` (`sweep`, `replay`, `find`,
//!   `serve`, `mcp`, `record`, `cassette`, ...), over the library modules above.
mod batch;
#[cfg(feature = "serve")]
pub mod cassette_check;
#[cfg(feature = "serve")]
pub mod cassette_shape;
pub mod cli;
mod collect;
pub mod compare;
mod crash;
pub mod distribution;
mod ending;
pub mod engine;
pub mod explore;
pub mod groups;
pub mod html;
mod human;
mod junit;
mod limit_in_force;
pub mod memory_limit;
pub mod merge_check;
pub mod minimize;
pub mod options;
pub mod otlp_export;
pub mod otlp_http;
mod outcome;
mod parent_watch;
pub mod pass_k;
mod plan;
pub mod process_pool;
mod process_worker;
mod progress;
pub mod replay_command;
pub mod report;
pub mod resume;
mod signals;
pub mod sizing;
mod table;
pub mod usage_report;
mod watched;
mod wire;
mod worker;

pub use engine::run;
pub use options::{Isolation, SweepError, SweepOptions};
pub use plan::Shard;
pub use process_pool::WorkerProcesses;
pub use progress::ProgressStyle;
pub use replay_command::ReplayCommand;
pub use report::{ScenarioReport, SweepReport};
pub use umi_dst::scenario::{Scenario, run_one};
// Public only for the planted scenario whose seeds forge a result line (the harness's own test).
#[doc(hidden)]
pub use wire::RESULT_PREFIX as WORKER_RESULT_PREFIX;
