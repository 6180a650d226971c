//! Planted crashes: scenarios whose even seeds do to their process what no `catch_unwind`
//! can catch (abort, overflow the stack, `exit(3)`, allocate without bound), never
//! yield (a busy loop), or break the worker protocol (write a result line that is not a
//! result), and whose odd seeds pass. They test the harness: a sweep must
//! name each such seed, record it as a crash (or a hang), and go on with the rest;
//! `dst replay` and `cargo test` must fail a busy-looping seed by name.
//!
//! They run only when named (`dst sweep --scenario planted_abort`), never in a sweep of
//! every scenario, and they are not in [`crate::all`]. Run them with worker processes
//! (the `dst` default): in process (`--in-process`) they end the sweep, which is what
//! worker processes exist to prevent.

use umi_dst::{SimEnvironment, Violation};

/// Bytes each step of the unbounded allocation takes.
const HOARD_STEP_BYTES: usize = 16 << 20;

/// Bytes of stack each level of the runaway recursion takes.
const FRAME_BYTES: usize = 4096;

/// What a planted scenario does on its even seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// `std::process::abort()`.
    Abort,
    /// Recursion without end.
    StackOverflow,
    /// `std::process::exit(3)`.
    Exit,
    /// Allocates 16 MiB at a time, forever.
    UnboundedAllocation,
    /// A loop that never yields (simulated time stops; only the wall clock moves).
    BusyLoop,
    /// Writes a line to stdout that starts as a worker's result does and is not one,
    /// then goes on: the worker broke its protocol, alive.
    ForgedResult,
}

/// The scenario whose even seeds abort()s ([`Crash::Abort`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::Abort),
    rank = 270,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedAbort;

/// The scenario whose even seeds overflows its stack ([`Crash::StackOverflow`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::StackOverflow),
    rank = 280,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedStackOverflow;

/// The scenario whose even seeds exits with code 3 ([`Crash::Exit`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::Exit),
    rank = 290,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedExit;

/// The scenario whose even seeds allocates without bound ([`Crash::UnboundedAllocation`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::UnboundedAllocation),
    rank = 300,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedUnboundedAllocation;

/// The scenario whose even seeds loops without yielding ([`Crash::BusyLoop`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::BusyLoop),
    rank = 310,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedBusyLoop;

/// The scenario whose even seeds write a result line that is not a result
/// ([`Crash::ForgedResult`]).
#[umi_dst::scenario(
    goal = "a planted crash on even seeds: the harness must name the seed and go on",
    only_when_named,
    run = |sim| crash_on_even_seeds(sim, Crash::ForgedResult),
    rank = 320,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PlantedForgedResult;

/// One seed of a planted crash: a simulated millisecond, then `crash` on an even seed.
pub async fn crash_on_even_seeds(sim: SimEnvironment, crash: Crash) -> Result<(), Violation> {
    let seed = sim.seed();
    sim.env().sleep(std::time::Duration::from_millis(1)).await;
    if seed.is_multiple_of(2) {
        crash_now(crash);
    }
    Ok(())
}

fn crash_now(crash: Crash) {
    match crash {
        Crash::Abort => {
            #[allow(
                clippy::print_stderr,
                reason = "the crash's last words, for its report"
            )]
            {
                eprintln!("planted: aborting");
            }
            std::process::abort();
        }
        Crash::StackOverflow => {
            std::hint::black_box(recurse(0));
        }
        Crash::Exit => std::process::exit(3),
        Crash::UnboundedAllocation => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(std::hint::black_box(vec![1u8; HOARD_STEP_BYTES]));
            }
        }
        Crash::BusyLoop => loop {
            std::hint::black_box(());
            std::hint::spin_loop();
        },
        Crash::ForgedResult => {
            #[allow(
                clippy::print_stdout,
                reason = "the planted seed writes to the worker protocol's own stream"
            )]
            {
                println!(
                    "{}{{\"planted\": \"not a result\"",
                    umi_sweep::WORKER_RESULT_PREFIX
                );
            }
        }
    }
}

/// Recursion that never ends (each level keeps a frame the optimizer cannot remove).
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return 0; // never reached: the stack ends first
    }
    let frame = std::hint::black_box([depth as u8; FRAME_BYTES]);
    recurse(depth + 1).wrapping_add(u64::from(frame[0]))
}
