//! The harness-wide limits: the ones several modules share or a user tunes. A limit that
//! belongs to one module lives beside it (SimLLM's latency bounds in `llm::config`, the
//! sweep's in `umi-sweep`). Every limit is named `<noun>_<unit>_<max|min|default>`
//! (`trace_events_full_max`, `llm_latency_ms_min`), the unit last.
//!
//! A simulation must end: each loop, buffer and run has a bound here, and the `const`
//! assertions at the bottom check how the bounds relate.

use std::time::Duration;

/// Steps (environment calls and trace events) one seed may take before the run is
/// stopped as a liveness failure. Generous: the scenarios use a few thousand.
pub const SIM_STEPS_DEFAULT: u64 = 1_000_000;

/// Hard ceiling on a configured step limit.
pub const SIM_STEPS_MAX: u64 = 100_000_000;

/// Simulated time one seed may cover before it is stopped as a liveness failure. A day:
/// agent code that needs more simulated time than that to finish is stuck.
pub const SIM_TIME_MAX_DEFAULT: Duration = Duration::from_secs(24 * 60 * 60);

/// Simulated wall-clock epoch, 2024-01-01T00:00:00Z, so timestamps are the same on every
/// replay.
pub const SIM_EPOCH_UNIX_MS_DEFAULT: u64 = 1_704_067_200_000;

/// Trace events kept in memory for the failure report (the hash covers all of them).
pub const TRACE_TAIL_EVENTS_DEFAULT: usize = 40;

/// Upper bound on the kept tail.
pub const TRACE_TAIL_EVENTS_MAX: usize = 10_000;

/// Events a fully recorded trace (replays, determinism checks) may hold.
pub const TRACE_EVENTS_FULL_MAX: usize = 2_000_000;

/// Bytes of one event's detail kept and hashed; longer details are cut at a character
/// boundary and marked.
pub const TRACE_DETAIL_BYTES_MAX: usize = 512;

/// Fault configurations one simulation may carry.
pub const FAULT_CONFIGS_MAX: usize = 64;

/// Injections remembered (in order) for reports and schedule minimization.
pub const FAULT_SCHEDULE_ENTRIES_MAX: usize = 100_000;

/// How far swarm mode scales a rule's probability, in quarter octaves each way: 16 is a
/// factor of 1/16 to 16, so a 0.02 rule fires at 0.00125 to 0.32.
pub const SWARM_SCALE_QUARTER_OCTAVES_MAX: i32 = 16;

/// The probability of the unscoped rule swarm mode adds per kind when it is given kinds
/// rather than rules (`SimConfig::with_swarm_over`): with the scale, 0.0016 to 0.4.
pub const SWARM_KIND_PROBABILITY: f64 = 0.025;

/// Largest wall-clock jump (either direction) one `clock.jump` fault applies, in ms.
pub const CLOCK_JUMP_MS_MAX: u64 = 60 * 60 * 1000;

/// Seeds a `cargo test` covers by default, the one default of every way in:
/// `Simulation::from_env()`, `#[umi_dst::test]` without `seeds = ..`, and
/// `test_scenario` (seeds `SEED_START_DEFAULT` to `SEED_START_DEFAULT + 7`). `DST_SEEDS`
/// and `DST_SEED_START` change it for every test at once; a test that wants more names its
/// range (`seeds = 1..=200`, `with_seeds`, `test_scenario_in`). A sweep is a separate
/// job with its own, larger default (`umi_sweep::options::SWEEP_SEEDS_DEFAULT`).
pub const SEED_COUNT_DEFAULT: u64 = 8;

/// The first seed of the default set (documented in the README, so a plain `cargo test`
/// is reproducible anywhere).
pub const SEED_START_DEFAULT: u64 = 1;

/// Seeds one `Simulation::run` may cover (`DST_SEEDS` is checked against it).
pub const SEEDS_PER_RUN_MAX: u64 = 10_000_000;

/// Wall time one seed may take under `Simulation::run` and `dst replay` before the
/// watchdog ends the process naming it (`DST_SEED_TIMEOUT` overrides it); the sweep's
/// `--seed-timeout` defaults to the same.
pub const SEED_WALL_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);

/// Lines a seed corpus file may hold.
pub const CORPUS_LINES_MAX: usize = 100_000;

/// Bytes of a corpus line's comment.
pub const CORPUS_COMMENT_BYTES_MAX: usize = 200;

/// Appends a `CorpusRecorder` makes between two fsyncs of its file (it also syncs when
/// synced or dropped): a sweep recording thousands of seeds a second syncs a few times
/// a second, not per seed.
pub const CORPUS_RECORDER_SYNC_EVERY_APPENDS: usize = 256;

/// Bytes of a non-success response's body an adapter reads to hand the client its error
/// (rig keeps the body on the error it reports); a longer body is cut there.
pub const ADAPTER_ERROR_BODY_BYTES_MAX: usize = 1 << 20;

const _: () = assert!(SIM_STEPS_DEFAULT <= SIM_STEPS_MAX);
const _: () = assert!(TRACE_TAIL_EVENTS_DEFAULT <= TRACE_TAIL_EVENTS_MAX);
const _: () = assert!(TRACE_TAIL_EVENTS_MAX <= TRACE_EVENTS_FULL_MAX);
const _: () = assert!(SWARM_SCALE_QUARTER_OCTAVES_MAX > 0 && SWARM_SCALE_QUARTER_OCTAVES_MAX <= 16);
const _: () = assert!(SWARM_KIND_PROBABILITY > 0.0 && SWARM_KIND_PROBABILITY <= 1.0);
const _: () = assert!(SEED_COUNT_DEFAULT >= 1 && SEED_COUNT_DEFAULT <= SEEDS_PER_RUN_MAX);
const _: () = assert!(CORPUS_COMMENT_BYTES_MAX < TRACE_DETAIL_BYTES_MAX);
const _: () = assert!(CORPUS_RECORDER_SYNC_EVERY_APPENDS >= 1);

/// The most yields one interleaving point takes when the seed draws its order
/// (`SimEnvironment::interleave`): enough to let two or three futures ready at the same
/// instant overtake each other.
pub const INTERLEAVE_YIELDS_MAX: u64 = 3;
