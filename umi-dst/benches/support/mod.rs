//! A small measuring harness for Umi's bench binaries.
//!
//! Each figure is printed next to a baseline measured in the same run, on the same
//! machine, so the ratio means something even on a noisy CI box. A measurement is the
//! median over batches of the mean time per iteration within a batch.
//!
//! Benches measure wall time outside any simulation, which is why they may read the real
//! clock.

#![allow(
    clippy::disallowed_methods,
    clippy::print_stdout,
    reason = "benches time real work and print it"
)]
#![allow(dead_code, unreachable_pub, reason = "each bench binary uses a subset")]

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The runtime a bench's simulated code runs on: what `Simulation` gives every seed (one
/// thread, paused time), built once and held across the measured iterations. A bench
/// calls `block_on` per batch on it, which `Simulation::block_on` cannot give (it builds
/// a fresh runtime and environment per call: a seed's fixed cost, measured apart by
/// `simulation_core`). One copy for every bench; a bench's real-runtime baseline (real
/// sockets, the system clock) builds its own beside its measurement.
pub fn sim_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime")
}

/// Batches per measurement.
pub const BATCHES: usize = 15;

/// Mean time per iteration of `work`, median over `BATCHES` batches of `iterations`.
pub fn measure(iterations: u64, mut work: impl FnMut(u64)) -> Duration {
    // Warm up caches and allocators.
    for i in 0..iterations.div_ceil(4) {
        work(black_box(i));
    }
    let mut per_iteration: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for i in 0..iterations {
                work(black_box(i));
            }
            start.elapsed() / u32::try_from(iterations).expect("iterations fit in u32")
        })
        .collect();
    per_iteration.sort_unstable();
    per_iteration[BATCHES / 2]
}

/// Like [`measure`], for work that runs a whole batch itself (an async loop inside one
/// `block_on`): `batch(n)` does `n` iterations; the result is per iteration.
pub fn measure_batch(iterations: u64, mut batch: impl FnMut(u64)) -> Duration {
    batch(iterations.div_ceil(4));
    let mut per_iteration: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            batch(iterations);
            start.elapsed() / u32::try_from(iterations).expect("iterations fit in u32")
        })
        .collect();
    per_iteration.sort_unstable();
    per_iteration[BATCHES / 2]
}

/// Formats a duration with a unit that keeps 3 significant digits.
pub fn show(duration: Duration) -> String {
    let nanos = duration.as_secs_f64() * 1e9;
    if nanos < 1_000.0 {
        format!("{nanos:.1} ns")
    } else if nanos < 1_000_000.0 {
        format!("{:.2} µs", nanos / 1e3)
    } else {
        format!("{:.2} ms", nanos / 1e6)
    }
}

/// Prints one figure against its baseline.
pub fn report(name: &str, measured: Duration, baseline_name: &str, baseline: Duration) {
    let ratio = measured.as_secs_f64() / baseline.as_secs_f64().max(1e-12);
    println!(
        "{name:<34} {:>10}   baseline {baseline_name:<38} {:>10}   ratio {ratio:>5.2}x",
        show(measured),
        show(baseline)
    );
}
