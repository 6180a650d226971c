//! `dst minimize`: the smallest set of a failing seed's injected faults that still fails,
//! each replay under the wall-clock watchdog, printed with the `dst replay` command that
//! runs just that set.
#![allow(clippy::print_stdout, reason = "a command's output")]

use std::process::ExitCode;
use std::sync::Arc;

use umi_dst::fault::InjectionId;
use umi_dst::scenario::Scenario;

use super::{RunArgs, exit, fail};
use crate::engine::select;
use crate::minimize::{Minimized, minimize_with};
use crate::replay_command::ReplayCommand;
use crate::watched::WatchedRuns;

/// Runs `dst minimize`.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: &RunArgs, program: &str) -> ExitCode {
    if let Err(error) = super::assertions::check(args.allow_no_debug_assertions) {
        return fail(&error);
    }
    let selected = match select(scenarios, std::slice::from_ref(&args.scenario)) {
        Ok(selected) => selected,
        Err(error) => return fail(&error.to_string()),
    };
    let mut watched = match WatchedRuns::start(program) {
        Ok(watched) => watched,
        Err(error) => return fail(&error),
    };
    let scenario = selected[0].as_ref();
    let what = |only: Option<&[InjectionId]>| match only {
        None => format!("replay of seed {} of {}", args.seed, args.scenario),
        Some(ids) => format!(
            "replay of seed {} of {} with {} of its injections",
            args.seed,
            args.scenario,
            ids.len()
        ),
    };
    let mut replay = |only: Option<&[InjectionId]>| {
        watched.run(&what(only), scenario, args.seed, args.swarm, only)
    };
    match minimize_with(scenario, args.seed, &mut replay) {
        Err(error) => {
            println!("{error}");
            ExitCode::SUCCESS
        }
        Ok(found) => {
            print_minimized(&found, args, program);
            exit(found.class.exit_code())
        }
    }
}

/// The failure, the smallest failing set of injections, and its replay command.
fn print_minimized(found: &Minimized, args: &RunArgs, program: &str) {
    println!(
        "seed {} of {} fails ({}): {}",
        args.seed,
        args.scenario,
        found.class,
        found.message.lines().next().unwrap_or("")
    );
    println!(
        "faults injected: {}; smallest failing set: {} (after {} replays)",
        found.original.len(),
        found.minimal.len(),
        found.runs
    );
    for injection in found
        .original
        .iter()
        .filter(|i| found.minimal.contains(&i.id))
    {
        println!("  {injection}");
    }
    if found.minimal.is_empty() {
        println!("  (none: the seed fails without any injected fault)");
    }
    println!(
        "replay: {}",
        ReplayCommand::new(program, &args.scenario, args.seed)
            .swarm(args.swarm)
            .only(Some(&found.minimal))
    );
}
