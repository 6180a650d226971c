//! `dst find`: a seed that reaches given faults, to replace a kept seed gone stale.
//!
//! When the code changes under a kept seed, the seed can stop reaching the situation it
//! was kept for (see `simulation::kept`). A replacement is a seed whose run injects the
//! same fault kinds again; this searches a range for the first such seed and prints the
//! corpus line to keep, with what the seed does today (passes, or fails and how).

use std::process::ExitCode;

use clap::Args;

use crate::options::select;
use crate::watched::WatchedRuns;
use umi_dst::corpus::{SeedMeaning, format_entry};
use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, EXIT_CODE_ERROR, process_exit_code};
use umi_dst::fault::FaultKind;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::SeedRun;
use umi_dst::simulation::settings::parse_seed;

/// Seeds `dst find` tries at most.
pub(crate) const FIND_SEEDS_MAX: u64 = 1_000_000;

/// `dst find`'s arguments.
#[derive(Args)]
pub(crate) struct FindArgs {
    /// The scenario.
    #[arg(long)]
    scenario: String,
    /// The fault kinds the seed must inject, comma-separated (`llm.stream_cut,network.reset`).
    #[arg(long)]
    faults: String,
    /// Search in swarm mode.
    #[arg(long)]
    swarm: bool,
    /// The first seed tried.
    #[arg(long, default_value = "1", value_parser = parse_seed)]
    seed_start: u64,
    /// How many seeds to try at most.
    #[arg(long, default_value = "10000", value_parser = clap::value_parser!(u64).range(1..=FIND_SEEDS_MAX))]
    seeds: u64,
}

/// Whether a run that injected `injected` reaches every kind of `wanted`.
pub(crate) fn reaches_all(wanted: &[FaultKind], injected: &umi_dst::fault::FaultStats) -> bool {
    wanted
        .iter()
        .all(|kind| injected.injected_by_kind.get(kind).is_some_and(|n| *n > 0))
}

/// Runs `dst find`; exit 0 with the line found, 1 when no seed in the range reaches
/// the faults, 2 for bad arguments.
#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command's output"
)]
pub(crate) fn run(
    scenarios: &[std::sync::Arc<dyn Scenario>],
    args: &FindArgs,
    program: &str,
) -> ExitCode {
    let mut search = match prepare(scenarios, args, program) {
        Ok(prepared) => prepared,
        Err(error) => {
            eprintln!("error: {error}");
            return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
        }
    };
    let scenario = search.scenario.as_ref();
    let end = args.seed_start.saturating_add(args.seeds - 1);
    for seed in args.seed_start..=end {
        let what = format!("seed {seed} of {} (dst find)", args.scenario);
        let run = search.watched.run(&what, scenario, seed, args.swarm, None);
        if !reaches_all(&search.wanted, &run.fault_stats) {
            continue;
        }
        let (meaning, comment) = keep_as(&run, &search.wanted, args);
        println!(
            "seed {seed} injects {}; today it {}",
            args.faults,
            run.failure.as_ref().map_or_else(
                || "passes".to_owned(),
                |(class, _)| format!("fails ({class})")
            )
        );
        print!(
            "keep it in seeds/{}.seeds as:\n  {}",
            scenario.name(),
            format_entry(seed, &meaning, &comment)
        );
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "no seed in {}..={end} injects all of {}{}",
        args.seed_start,
        args.faults,
        if args.swarm { " in swarm mode" } else { "" }
    );
    process_exit_code(EXIT_CODE_ERROR)
}

/// What `dst find` searches with.
struct Search {
    scenario: std::sync::Arc<dyn Scenario>,
    /// The fault kinds the seed must inject.
    wanted: Vec<FaultKind>,
    watched: WatchedRuns,
}

/// The scenario, the fault kinds wanted and the watchdog; the error names the flag.
fn prepare(
    scenarios: &[std::sync::Arc<dyn Scenario>],
    args: &FindArgs,
    program: &str,
) -> Result<Search, String> {
    let selected = select(scenarios, std::slice::from_ref(&args.scenario))
        .map_err(|error| error.to_string())?;
    let wanted = args
        .faults
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<FaultKind>, _>>()
        .map_err(|error| format!("--faults: {error}"))?;
    Ok(Search {
        scenario: std::sync::Arc::clone(&selected[0]),
        wanted,
        watched: WatchedRuns::start(program)?,
    })
}

/// How the found seed is kept: as the failure it has, or as a seed reaching `wanted`.
fn keep_as(run: &SeedRun, wanted: &[FaultKind], args: &FindArgs) -> (SeedMeaning, String) {
    match &run.failure {
        Some((class, message)) => (
            SeedMeaning::found(args.swarm, *class, Some(&run.fault_stats)),
            format!("{class}: {}", message.lines().next().unwrap_or("")),
        ),
        None => (
            SeedMeaning {
                swarm: args.swarm,
                faults: wanted.to_vec(),
                ..SeedMeaning::default()
            },
            format!("reaches {} (found by dst find)", args.faults),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_dst::fault::FaultStats;

    #[test]
    fn every_wanted_kind_must_have_fired() {
        let mut stats = FaultStats::default();
        stats.injected_by_kind.insert(FaultKind::LlmTimeout, 2);
        assert!(reaches_all(&[FaultKind::LlmTimeout], &stats));
        assert!(!reaches_all(
            &[FaultKind::LlmTimeout, FaultKind::NetworkReset],
            &stats
        ));
        assert!(reaches_all(&[], &stats));
    }
}
