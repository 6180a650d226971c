//! `dst minimize`: the smallest failing version of a failing seed or path. A path
//! (`--path 7/412:9913/1200:55`) first loses every branch point its failure does not need;
//! then, with the path fixed, the set of injected faults shrinks to the smallest that
//! still fails the same way. Each replay runs under the wall-clock watchdog; the result is
//! printed with the `dst replay` command that runs just that path and set.
#![allow(clippy::print_stdout, reason = "a command's output")]

use std::process::ExitCode;
use std::sync::Arc;

use clap::{ArgGroup, Args};
use umi_dst::RunPath;
use umi_dst::fault::InjectionId;
use umi_dst::scenario::Scenario;

use super::{exit, fail};
use crate::minimize::{Minimized, minimize_path_with};
use crate::options::select;
use crate::replay_command::ReplayCommand;
use crate::watched::WatchedRuns;

/// `dst minimize`'s arguments: a scenario and one failing seed or path.
#[derive(Args)]
#[command(group(ArgGroup::new("run").required(true).args(["seed", "path"])))]
pub(super) struct MinimizeArgs {
    /// The scenario.
    #[arg(long)]
    scenario: String,
    /// The failing seed (decimal or 0x hex).
    #[arg(long, value_parser = super::seed_arg)]
    seed: Option<u64>,
    /// The failing path (`SEED/STEP:STREAM/...`, e.g. `7/412:9913`, as a path's failure
    /// prints it): its branch points are minimized first, then its faults.
    #[arg(long)]
    path: Option<RunPath>,
    /// Run in swarm mode (as the sweep that found it did).
    #[arg(long)]
    swarm: bool,
    /// Run even though this `dst` was built without debug assertions (the simulators'
    /// invariant checks off); without it such a build refuses.
    #[arg(long)]
    allow_no_debug_assertions: bool,
}

impl MinimizeArgs {
    /// The path asked for (a seed alone for `--seed`).
    fn path(&self) -> RunPath {
        match (&self.path, self.seed) {
            (Some(path), _) => path.clone(),
            (None, seed) => RunPath::from_seed(seed.unwrap_or_default()),
        }
    }
}

/// Runs `dst minimize`.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: &MinimizeArgs, program: &str) -> ExitCode {
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
    let what = |path: &RunPath, only: Option<&[InjectionId]>| {
        let base = format!("replay of {} of {}", run_name(path), args.scenario);
        match only {
            None => base,
            Some(ids) => format!("{base} with {} of its injections", ids.len()),
        }
    };
    let mut replay = |path: &RunPath, only: Option<&[InjectionId]>| {
        watched.run_path(&what(path, only), scenario, path, args.swarm, only)
    };
    match minimize_path_with(scenario, &args.path(), &mut replay) {
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

/// `seed 7` for a seed alone, `path 7/412:9913` for a path with branch points.
fn run_name(path: &RunPath) -> String {
    if path.is_seed_only() {
        format!("seed {}", path.seed)
    } else {
        format!("path {path}")
    }
}

/// The failure, the fewest branch points (for a path), the smallest failing set of
/// injections, and the replay command of both.
fn print_minimized(found: &Minimized, args: &MinimizeArgs, program: &str) {
    println!(
        "{} of {} fails ({}): {}",
        run_name(&found.original_path),
        args.scenario,
        found.class,
        found.message.lines().next().unwrap_or("")
    );
    if !found.original_path.is_seed_only() {
        println!(
            "branch points: {}; fewest that still fail: {} ({})",
            found.original_path.branches.len(),
            found.path.branches.len(),
            found.path
        );
    }
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
        println!(
            "  (none: the {} fails without any injected fault)",
            kind(&found.path)
        );
    }
    println!(
        "replay: {}",
        ReplayCommand::new(program, &args.scenario, found.path.seed)
            .branches(&found.path.branches)
            .swarm(args.swarm)
            .only(Some(&found.minimal))
    );
}

/// `seed` or `path`, as the result names what it replays.
fn kind(path: &RunPath) -> &'static str {
    if path.is_seed_only() { "seed" } else { "path" }
}
