//! How many runs, and how many seconds, each deep canary (umi-scenarios'
//! `deep_canary_*`: a planted bug that needs four faults in order) takes to its first
//! failure, three times each way:
//!
//! - blind: seed after seed from a start (1, 1,000,001, 2,000,001), as `dst sweep` runs;
//! - swarm: the same, in swarm mode (`dst sweep --swarm`);
//! - explore: `umi_sweep::explore::explore`, stopping at its first failure (explorer
//!   seeds 1, 2, 3).
//!
//! Blind and swarm run seeds on `JOBS` threads, in batches, and count the runs a
//! sequential sweep would have made up to the first failing seed; a search that reaches
//! the cap prints "not found in N". Then, per canary, the mean runs of each way and the
//! ratio of explore's to the best blind way's (the goal: at least 10x fewer).
//!
//! Run with `cargo bench -p umi-sweep --bench deep_canaries` (part of `make bench`);
//! `-- outbox` runs only the canaries whose name contains `outbox`;
//! `DEEP_CANARIES_RUNS_MAX=N` sets the cap (400,000 by default).

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use umi_dst::Scenario;
use umi_dst::scenario::run_one;
use umi_sweep::explore::ExploreOptions;

/// The same allocator as the `dst` binary, so the seconds are the ones a sweep spends.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs a search may make before it gives up.
const RUNS_MAX_DEFAULT: u64 = 400_000;

/// The wall-clock budget of one exploration (the issue's: ten minutes on two cores).
const EXPLORE_BUDGET: Duration = Duration::from_secs(600);

/// Where each of the three blind searches starts.
const SEED_STARTS: [u64; 3] = [1, 1_000_001, 2_000_001];

/// Seeds handed to the workers at a time (the first failure is the lowest failing seed
/// of the first batch that has one).
const BATCH_SEEDS: u64 = 512;

/// Worker threads (the machine the issue measures on has two cores).
const JOBS: u64 = 2;

/// How each search went.
#[derive(Debug, Clone, Copy)]
struct Search {
    /// Runs up to and including the first failure, or `None` when the cap was hit.
    runs: Option<u64>,
    /// Runs made in all.
    runs_made: u64,
    /// The first failing seed (blind ways).
    seed: Option<u64>,
    elapsed: Duration,
}

/// One way of searching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Blind,
    Swarm,
    Explore,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Blind => "blind",
            Way::Swarm => "swarm",
            Way::Explore => "explore",
        }
    }
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let runs_max = std::env::var("DEEP_CANARIES_RUNS_MAX")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(RUNS_MAX_DEFAULT);
    println!(
        "deep canaries: runs (and seconds) to the first failure, {} trials a way, cap {runs_max} runs, {JOBS} workers",
        SEED_STARTS.len()
    );
    println!(
        "{:<26} {:<8} {:>5} {:>10} {:>22} {:>9}",
        "canary", "way", "trial", "start", "runs to first failure", "seconds"
    );
    let canaries: Vec<Arc<dyn Scenario>> = umi_scenarios::deep_canaries()
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| s.name().contains(f.as_str())))
        .collect();
    let mut summaries = Vec::new();
    for canary in &canaries {
        let mut means = Vec::new();
        for way in [Way::Blind, Way::Swarm, Way::Explore] {
            let searches: Vec<Search> = (0..SEED_STARTS.len())
                .filter_map(|trial| {
                    let search = search(canary.as_ref(), way, trial, runs_max)?;
                    print_search(canary.name(), way, trial, &search, runs_max);
                    Some(search)
                })
                .collect();
            means.push((way, mean_runs(&searches)));
        }
        summaries.push((canary.name(), means));
    }
    print_summaries(&summaries);
}

/// Trial `trial` of `way` on `canary`; `None` when the way cannot run here.
fn search(canary: &dyn Scenario, way: Way, trial: usize, runs_max: u64) -> Option<Search> {
    match way {
        Way::Blind => Some(blind(canary, SEED_STARTS[trial], false, runs_max)),
        Way::Swarm => Some(blind(canary, SEED_STARTS[trial], true, runs_max)),
        Way::Explore => explore(canary, trial as u64 + 1, runs_max),
    }
}

/// Seed after seed from `seed_start` until the first failure or `runs_max` runs.
fn blind(canary: &dyn Scenario, seed_start: u64, swarm: bool, runs_max: u64) -> Search {
    let began = Instant::now();
    let mut done = 0;
    while done < runs_max {
        let batch = BATCH_SEEDS.min(runs_max - done);
        let first = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..JOBS)
                .map(|job| {
                    scope.spawn(move || {
                        (job..batch).step_by(JOBS as usize).find(|index| {
                            let seed = seed_start + done + index;
                            run_one(canary, seed, swarm, |config| config)
                                .failure
                                .is_some()
                        })
                    })
                })
                .collect();
            workers
                .into_iter()
                .filter_map(|worker| worker.join().expect("a bench worker panicked"))
                .min()
        });
        if let Some(index) = first {
            return Search {
                runs: Some(done + index + 1),
                runs_made: done + batch,
                seed: Some(seed_start + done + index),
                elapsed: began.elapsed(),
            };
        }
        done += batch;
    }
    Search {
        runs: None,
        runs_made: done,
        seed: None,
        elapsed: began.elapsed(),
    }
}

/// `dst explore` stopping at its first failure (explorer seed `explorer_seed`, `JOBS`
/// workers, fresh seeds from 1), at most `runs_max` runs.
fn explore(canary: &dyn Scenario, explorer_seed: u64, runs_max: u64) -> Option<Search> {
    let options = ExploreOptions {
        runs_max,
        budget: EXPLORE_BUDGET,
        jobs: JOBS as usize,
        explorer_seed,
        stop_at_first_failure: true,
        ..ExploreOptions::default()
    };
    let report = match umi_sweep::explore::explore(canary, &options) {
        Ok(report) => report,
        Err(error) => {
            println!("{}: explore refused: {error}", canary.name());
            return None;
        }
    };
    if let Some(failure) = &report.first_failure {
        println!("  {}: first failing path {}", canary.name(), failure.path);
    }
    Some(Search {
        runs: report.first_failure.as_ref().map(|failure| failure.run + 1),
        runs_made: report.runs,
        seed: None,
        elapsed: report.elapsed,
    })
}

fn print_search(canary: &str, way: Way, trial: usize, search: &Search, runs_max: u64) {
    let start = match way {
        Way::Explore => format!("x{}", trial + 1),
        _ => SEED_STARTS[trial].to_string(),
    };
    let runs = match (search.runs, search.seed) {
        (Some(runs), Some(seed)) => format!("{runs} (seed {seed})"),
        (Some(runs), None) => runs.to_string(),
        (None, _) => format!("not found in {runs_max}"),
    };
    println!(
        "{canary:<26} {:<8} {:>5} {start:>10} {runs:>22} {:>9.1}",
        way.name(),
        trial + 1,
        search.elapsed.as_secs_f64()
    );
    let _ = search.runs_made;
}

/// The mean of the runs to the first failure, a search that hit the cap counted at the
/// cap (so a mean with one is a lower bound, printed with `>=`); `None` for no search.
fn mean_runs(searches: &[Search]) -> Option<(f64, bool)> {
    if searches.is_empty() {
        return None;
    }
    let capped = searches.iter().any(|s| s.runs.is_none());
    let total: u64 = searches.iter().map(|s| s.runs.unwrap_or(s.runs_made)).sum();
    Some((total as f64 / searches.len() as f64, capped))
}

type Means = Vec<(Way, Option<(f64, bool)>)>;

fn print_summaries(summaries: &[(&str, Means)]) {
    println!();
    println!(
        "{:<26} {:>14} {:>14} {:>14} {:>22}",
        "canary", "blind mean", "swarm mean", "explore mean", "explore / best blind"
    );
    for (canary, means) in summaries {
        let shown = |way: Way| {
            means
                .iter()
                .find(|(w, _)| *w == way)
                .and_then(|(_, mean)| *mean)
                .map_or("-".to_owned(), |(runs, capped)| {
                    format!("{}{runs:.0}", if capped { ">=" } else { "" })
                })
        };
        let best_blind = means
            .iter()
            .filter(|(way, _)| *way != Way::Explore)
            .filter_map(|(_, mean)| *mean)
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let explore = means
            .iter()
            .find(|(way, _)| *way == Way::Explore)
            .and_then(|(_, mean)| *mean);
        let ratio = match (explore, best_blind) {
            (Some((explored, _)), Some((blind, capped))) => format!(
                "1/{}{:.0}",
                if capped { ">=" } else { "" },
                blind / explored.max(1.0)
            ),
            _ => "-".to_owned(),
        };
        println!(
            "{canary:<26} {:>14} {:>14} {:>14} {ratio:>22}",
            shown(Way::Blind),
            shown(Way::Swarm),
            shown(Way::Explore)
        );
    }
}
