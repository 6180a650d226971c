//! The sweep engine on this machine, every figure against a baseline from the same run:
//!
//! 1. seeds per second and the simulated-to-wall time ratio of each scenario, one
//!    worker (the baseline the next figure divides by);
//! 2. the whole sweep with one worker versus two (goal: at least 1.8× faster on two
//!    cores);
//! 3. memory: resident set size before any sweep, after the throughput sweeps, and after
//!    each quarter of 10,000 more seeds; the peak per worker (it must not grow with the
//!    number of seeds: the later quarters should add next to nothing).
//!
//! Run with `cargo bench -p umi-scenarios --bench sweep` (part of `make bench`).

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

use std::time::Instant;

use umi_dst::sweep::engine::ProgressStyle;
use umi_dst::sweep::{SweepOptions, SweepReport, run};

/// Seeds per scenario for the throughput figures.
const SEEDS_THROUGHPUT: u64 = 600;

/// Seeds per scenario for the memory figure's long sweep.
const SEEDS_LONG: u64 = 10_000;

/// Parts of the long sweep, with the resident set size printed after each.
const QUARTERS: u64 = 4;

fn sweep(seeds: u64, seed_start: u64, jobs: usize) -> (SweepReport, f64) {
    let options = SweepOptions {
        seeds,
        seed_start,
        jobs,
        progress: ProgressStyle::Quiet,
        ..SweepOptions::default()
    };
    let started = Instant::now();
    let report = run(&umi_scenarios::all(), &options).expect("bench options are valid");
    (report, started.elapsed().as_secs_f64())
}

/// A `/proc/self/status` field in KiB (Linux), if there is one.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    println!("sweep bench on {cores} core(s); {SEEDS_THROUGHPUT} seeds per scenario\n");
    let rss_start = status_kib("VmRSS:");
    let _ = sweep(50, 1_000_000, 2); // warm-up: code paths, allocator

    let (one, one_s) = sweep(SEEDS_THROUGHPUT, 1, 1);
    println!(
        "{:<28} {:>12} {:>14} {:>12}",
        "scenario (1 worker)", "seeds/s", "sim:wall", "sim time"
    );
    for s in &one.scenarios {
        println!(
            "{:<28} {:>12.0} {:>13.0}x {:>12}",
            s.name,
            s.seeds_per_second(),
            s.sim_to_wall(),
            umi_dst::sweep::report::human_ms(s.sim_time_ms)
        );
    }
    let (two, two_s) = sweep(SEEDS_THROUGHPUT, 1, 2);
    let runs = one.runs_done as f64;
    println!("\nwhole sweep, {} runs:", one.runs_done);
    println!(
        "  1 worker : {one_s:>7.3} s  ({:>7.0} runs/s)  baseline",
        runs / one_s
    );
    println!(
        "  2 workers: {two_s:>7.3} s  ({:>7.0} runs/s)  {:.2}x the baseline (goal >= 1.80x)",
        two.runs_done as f64 / two_s,
        one_s / two_s
    );
    assert_eq!(
        one.regressions() + two.regressions(),
        0,
        "the bench sweeps are clean"
    );

    let rss_warm = status_kib("VmRSS:");
    println!("\nmemory (2 workers; {SEEDS_LONG} more seeds per scenario in {QUARTERS} parts):");
    let mut previous = rss_warm;
    let mut long_s = 0.0;
    let mut steps = Vec::new();
    for part in 0..QUARTERS {
        let (_, took) = sweep(
            SEEDS_LONG / QUARTERS,
            2_000_000 + part * (SEEDS_LONG / QUARTERS),
            2,
        );
        long_s += took;
        let now = status_kib("VmRSS:");
        steps.push((now, now.zip(previous).map(|(n, p)| n as i64 - p as i64)));
        previous = now;
    }
    let peak = status_kib("VmHWM:");
    match (rss_start, rss_warm, peak) {
        (Some(start), Some(warm), Some(peak)) => {
            println!("  resident before any sweep    : {start:>8} KiB  baseline");
            println!("  after the throughput sweeps  : {warm:>8} KiB");
            for (part, (now, delta)) in steps.iter().enumerate() {
                println!(
                    "  after {:>6} more seeds       : {:>8} KiB  ({:+} KiB)",
                    (part as u64 + 1) * (SEEDS_LONG / QUARTERS),
                    now.unwrap_or(0),
                    delta.unwrap_or(0)
                );
            }
            println!(
                "  peak                         : {peak:>8} KiB  ({} KiB per worker over the baseline; {long_s:.1} s)",
                peak.saturating_sub(start) / 2
            );
        }
        _ => println!("  (no /proc/self/status here: memory figures are Linux-only)"),
    }
}
