//! `dst size`: how many shards a sweep needs to finish in its time budget, by the rule
//! in [`crate::sizing`] and the measured rates (`scenarios/throughput.toml`): a
//! per-scenario table of core-hours, then `shards: N`. With `--shards N` it is a check
//! (the nightly workflow's and the Kubernetes Job's counts are checked this way by
//! scripts/check-deploy.sh): exit 1 when N is fewer than the rule's.
#![allow(clippy::print_stdout, reason = "a command's output")]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::settings::positive_duration_arg;

use super::{exit, fail};
use crate::sizing::{Sizing, SweepSize, Throughput, size};

/// `dst size`'s flags.
#[derive(Args)]
pub(super) struct SizeArgs {
    /// Default-mode seeds per scenario.
    #[arg(long)]
    seeds: u64,
    /// Swarm-mode seeds per scenario (a sweep of its own, sharded the same N ways).
    #[arg(long, default_value_t = 0)]
    swarm_seeds: u64,
    /// The sweep runs each seed twice (`dst sweep --check-determinism`).
    #[arg(long)]
    check_determinism: bool,
    /// Cores (workers) per shard: the runner's or the pod's CPUs.
    #[arg(long)]
    cores: u32,
    /// Each shard's `--time-budget` (e.g. 80m).
    #[arg(long, value_parser = positive_duration_arg)]
    time_budget: Duration,
    /// Extra work planned for, as a fraction: 0.25 sizes for the work plus a quarter.
    #[arg(long, default_value_t = 0.25)]
    margin: f64,
    /// The measured rates (seeds per core-second per scenario).
    #[arg(long, default_value = "scenarios/throughput.toml")]
    rates: PathBuf,
    /// Size only this scenario (repeatable; default: those `dst sweep` runs).
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Check a shard count: exit 1 when it is fewer than the rule's.
    #[arg(long)]
    shards: Option<u64>,
}

/// Runs `dst size`.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: &SizeArgs) -> ExitCode {
    let selected = match crate::options::select(scenarios, &args.scenarios) {
        Ok(selected) => selected,
        Err(error) => return fail(&error.to_string()),
    };
    let names: Vec<&str> = selected.iter().map(|s| s.name()).collect();
    let input = SweepSize {
        seeds: args.seeds,
        swarm_seeds: args.swarm_seeds,
        check_determinism: args.check_determinism,
        cores_per_shard: args.cores,
        time_budget_s: args.time_budget.as_secs_f64(),
        margin: args.margin,
    };
    let sizing = match Throughput::load(&args.rates).and_then(|rates| size(&rates, &names, &input))
    {
        Ok(sizing) => sizing,
        Err(error) => return fail(&error.to_string()),
    };
    print!("{}", table(&sizing, &input));
    match args.shards {
        Some(given) if given < sizing.shards => {
            println!("TOO FEW: {given} shards, the rule needs {}", sizing.shards);
            exit(1)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// The per-scenario table, the totals and the answer.
fn table(sizing: &Sizing, input: &SweepSize) -> String {
    let hours = |core_seconds: f64| core_seconds / 3600.0;
    let width = sizing
        .scenarios
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!(
        "{:<width$}  {:>12}  {:>14}  {:>13}\n",
        "scenario", "seeds/core-s", "default core-h", "swarm core-h"
    );
    for cost in &sizing.scenarios {
        out.push_str(&format!(
            "{:<width$}  {:>12.0}  {:>14.2}  {:>13.2}\n",
            cost.name,
            cost.seeds_per_core_second,
            hours(cost.default_core_seconds),
            hours(cost.swarm_core_seconds)
        ));
    }
    out.push_str(&format!(
        "total: {:.2} core-hours default, {:.2} swarm ({} seeds, {} swarm, {}); a shard: \
         {} cores × {:.0} s, margin {:.0}%\n",
        hours(sizing.default_core_seconds),
        hours(sizing.swarm_core_seconds),
        input.seeds,
        input.swarm_seeds,
        if input.check_determinism {
            "each run twice"
        } else {
            "each run once"
        },
        input.cores_per_shard,
        input.time_budget_s,
        input.margin * 100.0
    ));
    out.push_str(&format!("shards: {}\n", sizing.shards));
    out
}
