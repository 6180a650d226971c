//! The sweep engine on this machine, every figure against a baseline from the same run:
//!
//! 1. seeds per second and the simulated-to-wall time ratio of each scenario, one
//!    worker (the baseline the next figure divides by);
//! 2. the whole sweep with one worker versus two (goal: at least 1.8× faster on two
//!    cores);
//! 3. memory: resident set size before any sweep, after the throughput sweeps, and after
//!    each quarter of 10,000 more seeds; the peak per worker (it must not grow with the
//!    number of seeds: the later quarters should add next to nothing);
//! 4. the same sweep in worker processes (the `dst` binary's workers, what `dst sweep`
//!    does) against worker threads in this process (`--in-process`), two workers each,
//!    alternated twice: throughput with processes must stay at least 0.8x in-process.
//!
//! 5. per scenario, seeds per second per core against a bare seeded run measured in the
//!    same run (a scenario that does nothing: the runtime, the environment, the trace and
//!    the sweep's bookkeeping), and the projection the nightly is sized by: how long
//!    10⁶ seeds of every scenario take on two cores.
//!
//! Run with `cargo bench -p umi-scenarios --bench sweep` (part of `make bench`);
//! `cargo bench -p umi-scenarios --bench sweep -- isolation` prints only figure 4,
//! `-- scenarios` only figure 5.

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

use std::time::Instant;

use std::sync::Arc;

use futures::future::LocalBoxFuture;
use umi_dst::{Scenario, SimEnvironment, Violation};

use umi_sweep::ProgressStyle;
use umi_sweep::{Isolation, SweepOptions, SweepReport, WorkerProcesses, run};

/// Seeds per scenario for the throughput figures.
const SEEDS_THROUGHPUT: u64 = 600;

/// Seeds per scenario for the memory figure's long sweep.
const SEEDS_LONG: u64 = 10_000;

/// Parts of the long sweep, with the resident set size printed after each.
const QUARTERS: u64 = 4;

/// Seeds per scenario for the isolation figure.
const SEEDS_ISOLATION: u64 = 300;

/// Times each way of running is measured in the isolation figure (alternating).
const ISOLATION_ROUNDS: usize = 2;

/// Seeds per scenario for the per-scenario figure (one worker).
const SEEDS_PER_SCENARIO: u64 = 1_000;

/// The nightly the per-scenario figure projects: seeds of every scenario, on how many
/// cores, in how long.
const PROJECTED_SEEDS: f64 = 1e6;
const PROJECTED_CORES: f64 = 2.0;
const PROJECTED_GOAL_MINUTES: f64 = 30.0;

/// The same allocator as the `dst` binary, so in-process figures match what sweeps run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A seed that does nothing: what every seed pays before its scenario's first line.
struct BareSeed;

impl Scenario for BareSeed {
    fn name(&self) -> &'static str {
        "bare_seed"
    }

    fn goal(&self) -> &'static str {
        "nothing: the fixed cost of a seeded run"
    }

    fn run(&self, _sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(async { Ok(()) })
    }
}

fn sweep_of(scenarios: &[Arc<dyn Scenario>], seeds: u64, jobs: usize) -> SweepReport {
    let options = SweepOptions::default()
        .with_seeds(seeds)
        .with_jobs(jobs)
        .with_progress(ProgressStyle::Quiet)
        .with_isolation(Isolation::Threads);
    run(scenarios, &options).expect("bench options are valid")
}

/// Figure 5: each scenario's seeds per second per core against a bare seed's, and the
/// projected nightly.
fn scenarios_figure() {
    let bare: Vec<Arc<dyn Scenario>> = vec![Arc::new(BareSeed)];
    let _ = sweep_of(&bare, SEEDS_PER_SCENARIO / 10, 1); // warm-up
    let bare_rate = sweep_of(&bare, SEEDS_PER_SCENARIO * 10, 1).scenarios[0].seeds_per_second();
    println!(
        "\nper scenario (1 worker, {SEEDS_PER_SCENARIO} seeds; baseline: a bare seeded run, {bare_rate:.0} seeds/s):"
    );
    println!(
        "  {:<30} {:>14} {:>12} {:>22}",
        "scenario", "seeds/s/core", "x bare", "10^6 seeds, 2 cores"
    );
    let report = sweep_of(&umi_scenarios::all(), SEEDS_PER_SCENARIO, 1);
    let mut total_minutes = 0.0;
    for s in &report.scenarios {
        let rate = s.seeds_per_second();
        let minutes = PROJECTED_SEEDS / (rate * PROJECTED_CORES) / 60.0;
        total_minutes += minutes;
        println!(
            "  {:<30} {rate:>14.0} {:>11.1}x {minutes:>18.1} min",
            s.name,
            bare_rate / rate
        );
    }
    println!(
        "  every scenario: {total_minutes:.0} min for 10^6 seeds each on 2 cores (goal {PROJECTED_GOAL_MINUTES:.0} min: {:.1}x away; a bare seed would take {:.1} min)",
        total_minutes / PROJECTED_GOAL_MINUTES,
        report.scenarios.len() as f64 * PROJECTED_SEEDS / (bare_rate * PROJECTED_CORES) / 60.0
    );
}

fn sweep(seeds: u64, seed_start: u64, jobs: usize) -> (SweepReport, f64) {
    sweep_in(seeds, seed_start, jobs, Isolation::Threads)
}

fn sweep_in(seeds: u64, seed_start: u64, jobs: usize, isolation: Isolation) -> (SweepReport, f64) {
    let options = SweepOptions::default()
        .with_seeds(seeds)
        .with_seed_start(seed_start)
        .with_jobs(jobs)
        .with_progress(ProgressStyle::Quiet)
        .with_isolation(isolation);
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

/// Figure 4: worker processes against worker threads, same sweep, same run.
fn isolation_figure() {
    let processes = Isolation::Processes(Arc::new(WorkerProcesses {
        program: env!("CARGO_BIN_EXE_dst").into(),
        memory_max_bytes: Some(4 << 30),
        memory_max_text: Some("4GiB".into()),
    }));
    let _ = sweep_in(20, 3_000_000, 2, processes.clone()); // warm-up: page cache, workers
    let _ = sweep_in(20, 3_000_000, 2, Isolation::Threads);
    let (mut threads_s, mut processes_s, mut runs) = (0.0, 0.0, 0);
    for _ in 0..ISOLATION_ROUNDS {
        let (threads, took) = sweep_in(SEEDS_ISOLATION, 1, 2, Isolation::Threads);
        threads_s += took;
        let (in_processes, took) = sweep_in(SEEDS_ISOLATION, 1, 2, processes.clone());
        processes_s += took;
        assert_eq!(
            threads
                .scenarios
                .iter()
                .map(|s| &s.trace_digest)
                .collect::<Vec<_>>(),
            in_processes
                .scenarios
                .iter()
                .map(|s| &s.trace_digest)
                .collect::<Vec<_>>(),
            "the same seeds give the same traces either way"
        );
        runs += threads.runs_done;
    }
    let runs = runs as f64;
    println!(
        "\nisolation (2 workers, {SEEDS_ISOLATION} seeds per scenario, {ISOLATION_ROUNDS} rounds alternated):"
    );
    println!(
        "  in-process threads : {threads_s:>7.3} s  ({:>7.0} runs/s)  baseline",
        runs / threads_s
    );
    println!(
        "  worker processes   : {processes_s:>7.3} s  ({:>7.0} runs/s)  {:.2}x the baseline's throughput (goal >= 0.80x)",
        runs / processes_s,
        threads_s / processes_s
    );
}

fn main() {
    if std::env::args().any(|arg| arg == "isolation") {
        isolation_figure();
        return;
    }
    if std::env::args().any(|arg| arg == "scenarios") {
        scenarios_figure();
        return;
    }
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
            umi_sweep::report::human_ms(s.sim_time_ms)
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
    isolation_figure();
    scenarios_figure();
}
