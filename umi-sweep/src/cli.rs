//! The `dst` command: `list`, `sweep`, `replay`, `minimize` and `merge`, as a library
//! function so your own project gets its own `dst` in three lines:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     umi_sweep::cli::main(vec![/* Arc::new(MyScenario), ... */])
//! }
//! ```
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    reason = "a command-line front end prints, and picks fresh seeds from the wall clock"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::engine::{self, ProgressStyle, Shard, SweepOptions, run_one, select};
use crate::minimize::minimize_with;
use crate::replay_command::ReplayCommand;
use crate::report::SweepReport;
use crate::watched::{WatchedRuns, seed_wall_timeout};
use umi_dst::corpus::{SeedCorpus, SeedMeaning, corpus_path, find_seeds_dir};
use umi_dst::fault::InjectionId;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::report::{
    EXIT_CODE_BAD_ARGUMENTS, EXIT_CODE_CANARY_NOT_FOUND, FailureClass,
};
use umi_dst::simulation::settings::parse_seed;

#[derive(Parser)]
#[command(
    about = "Deterministic simulation sweeps: run scenarios over many seeds, replay one seed, minimize its faults, merge shard reports, serve the simulated model over HTTP."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the scenarios, their goals and coverage marks.
    List,
    /// Run scenarios over a range of seeds (in parallel; shardable).
    Sweep(SweepArgs),
    /// Run one seed of one scenario and show what happened, with simulated timestamps.
    Replay(ReplayArgs),
    /// Find the smallest set of a failing seed's injected faults that still fails.
    Minimize(RunArgs),
    /// Combine the JSON reports of several shards.
    Merge(MergeArgs),
    /// Find a seed whose run injects given fault kinds (to replace a stale kept seed).
    Find(crate::find::FindArgs),
    /// Serve the simulated model over real HTTP (OpenAI, Responses, Anthropic, Ollama
    /// formats in any profile), seeded per request, for agents in any language.
    #[cfg(feature = "serve")]
    Serve(crate::serve_cli::ServeArgs),
    /// A sweep's worker process (started by `dst sweep` itself; not for people).
    #[command(name = "__sweep-worker", hide = true)]
    SweepWorker(crate::process_worker::WorkerArgs),
}

fn seed_arg(text: &str) -> Result<u64, String> {
    parse_seed(text)
}

pub use umi_dst::duration_text::{DURATION_ARG_MAX, duration_arg, positive_duration_arg};

/// `--seed-memory-max` as given and as parsed.
#[derive(Debug, Clone)]
struct MemoryMax {
    text: String,
    bytes: Option<u64>,
}

fn memory_max_arg(text: &str) -> Result<MemoryMax, String> {
    Ok(MemoryMax {
        text: text.trim().to_owned(),
        bytes: crate::memory_limit::parse_memory_max(text)?,
    })
}

#[derive(Args)]
struct SweepArgs {
    /// How many seeds (1 to 100,000,000).
    #[arg(long, default_value_t = engine::SWEEP_SEEDS_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=engine::SWEEP_RUNS_MAX))]
    seeds: u64,
    /// The first seed (decimal or 0x hex).
    #[arg(long, default_value = "1", value_parser = seed_arg)]
    seed_start: u64,
    /// Start from a fresh random seed (printed, so the sweep can be repeated).
    #[arg(long)]
    random: bool,
    /// Stop starting runs after this long (e.g. 10m); the runs in flight finish, the
    /// reports are written (incomplete) and the command for the rest is printed, as on
    /// Ctrl-C.
    #[arg(long, value_parser = duration_arg)]
    time_budget: Option<Duration>,
    /// Run shard i of n (1-based), or `auto/n` to take i from JOB_COMPLETION_INDEX
    /// (Kubernetes Indexed Jobs, 0-based).
    #[arg(long)]
    shard: Option<String>,
    /// Swarm mode: each seed switches the scenarios' fault rules on and off and scales
    /// their probabilities (filters kept).
    #[arg(long)]
    swarm: bool,
    /// Run each seed twice and compare trace hashes (a difference exits 13).
    #[arg(long)]
    check_determinism: bool,
    /// Run only this scenario (repeatable).
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Worker threads (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the JSON report here (rewritten during the sweep).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Where failing seeds are recorded (default: the workspace's seeds/).
    #[arg(long)]
    seeds_dir: Option<PathBuf>,
    /// Do not record failing seeds.
    #[arg(long)]
    no_record: bool,
    /// Record the canary's seeds too (for testing the harness).
    #[arg(long, hide = true)]
    record_canary: bool,
    /// Keep every seed's trace hash in the JSON report.
    #[arg(long)]
    hashes: bool,
    /// A run without a result after this much wall time is a hang (its worker is
    /// killed and replaced).
    #[arg(long, value_parser = positive_duration_arg, default_value = "60s")]
    seed_timeout: Duration,
    /// The memory limit of each worker process (`512MiB`, `4GiB`, `none`; unix): a seed
    /// that allocates past it fails as a crash and costs one worker.
    #[arg(long, default_value = crate::memory_limit::SEED_MEMORY_MAX_DEFAULT,
          value_parser = memory_max_arg)]
    seed_memory_max: MemoryMax,
    /// Run seeds on threads of this process instead of worker processes (for
    /// debugging: an abort, a stack overflow or `exit` in a seed then ends the sweep).
    #[arg(long)]
    in_process: bool,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
}

/// One run: a scenario's seed, in swarm mode or not.
#[derive(Args)]
struct RunArgs {
    /// The scenario.
    #[arg(long)]
    scenario: String,
    /// The seed (decimal or 0x hex).
    #[arg(long, value_parser = seed_arg)]
    seed: u64,
    /// Run in swarm mode (as the sweep that found it did).
    #[arg(long)]
    swarm: bool,
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Print the whole trace (default: the last 40 events).
    #[arg(long)]
    trace: bool,
    /// Allow only these injections (`rule:ordinal`, comma-separated), as `minimize` prints.
    #[arg(long)]
    only: Option<String>,
    /// Run the seed twice and compare the traces; a difference is a nondeterminism failure
    /// (exit 13) and the first differing events are printed.
    #[arg(long)]
    check_determinism: bool,
}

#[derive(Args)]
struct MergeArgs {
    /// The shard reports (JSON).
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Write the merged JSON report here.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Fail only on failures whose seeds are not already in the seed corpus.
    #[arg(long)]
    fail_on_new: bool,
    /// Exit 2 when a shard of the sweep is missing (the merged report says which).
    #[arg(long)]
    require_complete: bool,
    /// The seed corpus for --fail-on-new (default: the workspace's seeds/).
    #[arg(long)]
    seeds_dir: Option<PathBuf>,
}

fn exit(code: i32) -> ExitCode {
    umi_dst::failure_class::process_exit_code(code)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    exit(EXIT_CODE_BAD_ARGUMENTS)
}

fn default_seeds_dir() -> Option<PathBuf> {
    std::env::current_dir()
        .ok()
        .and_then(|dir| find_seeds_dir(&dir))
}

/// Runs the `dst` command over `scenarios` with the process's arguments.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a binary hands its list over: `main(vec![...])`"
)]
pub fn main(scenarios: Vec<Arc<dyn Scenario>>) -> ExitCode {
    let cli = Cli::parse();
    let program = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "dst".into());
    match cli.command {
        Command::List => {
            for scenario in &scenarios {
                let kind = if scenario.is_canary() {
                    " (canary)"
                } else if scenario.only_when_named() {
                    " (planted; runs only with --scenario)"
                } else {
                    ""
                };
                println!(
                    "{}{kind}\n  {}\n  marks: {}",
                    scenario.name(),
                    scenario.goal(),
                    scenario.marks().join(", ")
                );
            }
            ExitCode::SUCCESS
        }
        Command::Sweep(args) => sweep(&scenarios, args, program),
        Command::Replay(args) => replay(&scenarios, &args, &program),
        Command::Minimize(args) => {
            let selected = match select(&scenarios, std::slice::from_ref(&args.scenario)) {
                Ok(selected) => selected,
                Err(error) => return fail(&error.to_string()),
            };
            let mut watched = match WatchedRuns::start(&program) {
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
                        println!(
                            "  {:>10.3}s {} on {} ({})",
                            injection.at_us as f64 / 1e6,
                            injection.kind,
                            injection.operation,
                            injection.id
                        );
                    }
                    if found.minimal.is_empty() {
                        println!("  (none: the seed fails without any injected fault)");
                    }
                    println!(
                        "replay: {}",
                        ReplayCommand::new(&program, &args.scenario, args.seed)
                            .swarm(args.swarm)
                            .only(Some(&found.minimal))
                    );
                    exit(found.class.exit_code())
                }
            }
        }
        Command::Merge(args) => merge(&args),
        Command::Find(args) => crate::find::run(&scenarios, &args, &program),
        #[cfg(feature = "serve")]
        Command::Serve(args) => crate::serve_cli::run(&args, &scenarios),
        Command::SweepWorker(args) => crate::process_worker::serve(&scenarios, &args),
    }
}

fn sweep(scenarios: &[Arc<dyn Scenario>], args: SweepArgs, program: String) -> ExitCode {
    let shard = match args.shard.as_deref() {
        None => None,
        Some(text) if text.starts_with("auto/") => {
            let Ok(index) = std::env::var("JOB_COMPLETION_INDEX")
                .unwrap_or_default()
                .trim()
                .parse::<u64>()
            else {
                return fail(
                    "--shard auto/n needs JOB_COMPLETION_INDEX (0-based) in the environment",
                );
            };
            match Shard::parse(&format!("{}/{}", index + 1, &text[5..])) {
                Ok(shard) => Some(shard),
                Err(error) => return fail(&error),
            }
        }
        Some(text) => match Shard::parse(text) {
            Ok(shard) => Some(shard),
            Err(error) => return fail(&error),
        },
    };
    let seed_start = if args.random {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let fresh = umi_dst::rng::DeterministicRng::new(nanos ^ u64::from(std::process::id()))
            .next_u64()
            % (u64::MAX - args.seeds.min(engine::SWEEP_RUNS_MAX));
        eprintln!("dst: random seed start {fresh} (repeat with --seed-start {fresh})");
        fresh
    } else {
        args.seed_start
    };
    let isolation = match isolation(&args) {
        Ok(isolation) => isolation,
        Err(error) => return fail(&error),
    };
    let seeds_dir = if args.no_record {
        None
    } else {
        let dir = args.seeds_dir.or_else(default_seeds_dir);
        if dir.is_none() {
            eprintln!(
                "dst: failing seeds will NOT be recorded: no Cargo.toml in or above this \
                 directory; pass --seeds-dir <dir>"
            );
        }
        dir
    };
    let no_record = args.no_record;
    let interrupt = match crate::signals::install() {
        Ok(received) => Some(received),
        Err(error) => {
            eprintln!(
                "dst: cannot handle SIGINT/SIGTERM ({error}); Ctrl-C will end the sweep at once"
            );
            None
        }
    };
    let options = SweepOptions {
        seed_start,
        seeds: args.seeds,
        jobs: args.jobs.unwrap_or_else(|| SweepOptions::default().jobs),
        shard,
        swarm: args.swarm,
        check_determinism: args.check_determinism,
        scenarios: args.scenarios,
        time_budget: args.time_budget,
        seed_timeout: args.seed_timeout,
        seeds_dir,
        record_canary: args.record_canary,
        keep_hashes: args.hashes,
        report_path: args.report,
        progress: if args.quiet {
            ProgressStyle::Quiet
        } else {
            ProgressStyle::Auto
        },
        program,
        interrupt: interrupt.clone(),
        isolation,
    };
    // A report that cannot be written is refused now, not after the whole sweep.
    for (flag, path) in [("--report", &options.report_path), ("--junit", &args.junit)] {
        let Some(path) = path else { continue };
        if let Err(error) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            return fail(&format!("{flag} {}: {error}", path.display()));
        }
    }
    let report = match engine::run(scenarios, &options) {
        Ok(report) => report,
        Err(error) => return fail(&error.to_string()),
    };
    print!("{}", report.table());
    let mut write_errors = Vec::new();
    if let Some(path) = &options.report_path
        && let Err(error) = engine::write_report(path, &report)
    {
        write_errors.push(format!("--report {}: {error}", path.display()));
    }
    if let Some(path) = &args.junit
        && let Err(error) = write_junit(path, &report)
    {
        write_errors.push(format!("--junit {}: {error}", path.display()));
    }
    match &report.seeds_dir {
        Some(dir) => println!(
            "seeds: {} new failing seed(s) recorded in {dir}",
            report.seeds_recorded
        ),
        None if no_record => println!("seeds: not recorded (--no-record)"),
        None => println!("seeds: not recorded (no cargo project here; pass --seeds-dir)"),
    }
    if let Some(resume) = &report.resume {
        println!(
            "resume: {resume}\n  (runs the {} run(s) not done; the seed the sweep stopped in runs all its scenarios again)",
            report.runs_planned - report.runs_done
        );
    }
    if !write_errors.is_empty() {
        return fail(&write_errors.join("; "));
    }
    let signal = interrupt.map_or(0, |received| {
        received.load(std::sync::atomic::Ordering::Relaxed)
    });
    if signal != 0 && !report.completed {
        return exit(crate::signals::exit_code_for_signal(signal));
    }
    exit(report.exit_code())
}

/// Worker processes of this binary, or threads with `--in-process`.
fn isolation(args: &SweepArgs) -> Result<engine::Isolation, String> {
    if args.in_process {
        return Ok(engine::Isolation::Threads);
    }
    let program = std::env::current_exe().map_err(|error| {
        format!("cannot find this program to start workers ({error}); pass --in-process")
    })?;
    let limit = &args.seed_memory_max;
    let supported = crate::memory_limit::supported();
    if !supported
        && limit.bytes.is_some()
        && limit.text != crate::memory_limit::SEED_MEMORY_MAX_DEFAULT
    {
        eprintln!("dst: --seed-memory-max is ignored on this platform (it needs setrlimit)");
    }
    let bytes = limit.bytes.filter(|_| supported);
    Ok(engine::Isolation::Processes(Arc::new(
        crate::WorkerProcesses {
            program,
            memory_max_bytes: bytes,
            memory_max_text: bytes.map(|_| limit.text.clone()),
        },
    )))
}

fn replay(scenarios: &[Arc<dyn Scenario>], args: &ReplayArgs, program: &str) -> ExitCode {
    let limit = match seed_wall_timeout() {
        Ok(limit) => limit,
        Err(error) => return fail(&error),
    };
    // A recorded hanging seed must fail with its name, not hang the replay. One watch
    // covers the whole command (a replay may run its seed two or three times: an
    // `--only` check, the run, a determinism check).
    let mut watchdog = umi_dst::watchdog::Watchdog::start();
    let _watched = watchdog.as_mut().map(|watchdog| {
        let what = format!("replay of seed {} of {}", args.run.seed, args.run.scenario);
        let command = ReplayCommand::new(program, &args.run.scenario, args.run.seed)
            .swarm(args.run.swarm)
            .to_string();
        watchdog.watch(
            limit,
            umi_dst::watchdog::hang_report(&what, limit, &command),
        )
    });
    replay_watched(scenarios, args, program)
}

fn replay_watched(scenarios: &[Arc<dyn Scenario>], args: &ReplayArgs, program: &str) -> ExitCode {
    let selected = match select(scenarios, std::slice::from_ref(&args.run.scenario)) {
        Ok(selected) => selected,
        Err(error) => return fail(&error.to_string()),
    };
    let only: Option<Vec<InjectionId>> = match &args.only {
        None => None,
        Some(list) => {
            let parsed: Result<Vec<InjectionId>, String> = list
                .split(',')
                .filter(|part| !part.trim().is_empty())
                .map(str::parse::<InjectionId>)
                .collect();
            match parsed {
                Ok(ids) => Some(ids),
                Err(error) => return fail(&format!("--only: {error}")),
            }
        }
    };
    let scenario = selected[0].as_ref();
    if let Some(ids) = &only {
        // An id no injection of the full run has would silently allow nothing.
        let full = run_one(scenario, args.run.seed, args.run.swarm, |config| config);
        let known: std::collections::BTreeSet<InjectionId> = full
            .injections
            .iter()
            .map(|injection| injection.id)
            .collect();
        if let Some(unknown) = ids.iter().find(|id| !known.contains(id)) {
            let listed: Vec<String> = known.iter().map(ToString::to_string).collect();
            return fail(&format!(
                "--only: {unknown} is not an injection of seed {} (its injections: {})",
                args.run.seed,
                if listed.is_empty() {
                    "none".to_owned()
                } else {
                    listed.join(",")
                }
            ));
        }
    }
    let edit = |mut config: umi_dst::SimConfig| {
        config.trace_full = args.trace || args.check_determinism;
        config.only_injections.clone_from(&only);
        config
    };
    let mut run = run_one(scenario, args.run.seed, args.run.swarm, edit);
    if args.check_determinism {
        let again = run_one(scenario, args.run.seed, args.run.swarm, edit);
        if let Some(found) = umi_dst::simulation::determinism::compare_runs(&run, &again) {
            run.failure = Some((FailureClass::Nondeterminism, found.describe()));
        }
    }
    println!(
        "replay: {} seed {} (0x{:x}){}",
        scenario.name(),
        args.run.seed,
        args.run.seed,
        if args.run.swarm { " in swarm mode" } else { "" }
    );
    match &run.failure {
        None => println!("result:   passed"),
        Some((class, message)) => println!("result:   FAILED ({class}): {message}"),
    }
    println!(
        "faults:   {}",
        if run.faults.is_empty() {
            "none".to_owned()
        } else {
            run.faults.join("; ")
        }
    );
    if !run.swarm.is_empty() {
        println!(
            "swarm:    {}",
            run.swarm
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    println!("injected: {} fault(s)", run.injections.len());
    for injection in &run.injections {
        println!(
            "  {:>10.3}s {} on {} ({})",
            injection.at_us as f64 / 1e6,
            injection.kind,
            injection.operation,
            injection.id
        );
    }
    let marks: Vec<String> = run.marks.iter().map(|(m, n)| format!("{m}×{n}")).collect();
    println!(
        "marks:    {}",
        if marks.is_empty() {
            "none".to_owned()
        } else {
            marks.join(", ")
        }
    );
    println!(
        "run:      {:.3}s simulated, {} steps, {} events, trace {}",
        run.sim_elapsed.as_secs_f64(),
        run.steps,
        run.events,
        run.trace_hash
    );
    let events = run.full_trace.clone().unwrap_or_else(|| run.tail.clone());
    println!(
        "trace ({}{} events):",
        if args.trace { "all " } else { "last " },
        events.len()
    );
    for event in &events {
        println!("  {event}");
    }
    if run.failure.is_some() {
        println!(
            "minimize: {program} minimize --scenario {} --seed {}{}",
            scenario.name(),
            args.run.seed,
            if args.run.swarm { " --swarm" } else { "" }
        );
    }
    exit(run.failure.map_or(0, |(class, _)| class.exit_code()))
}

fn merge(args: &MergeArgs) -> ExitCode {
    let mut reports = Vec::new();
    for path in &args.reports {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => return fail(&format!("{}: {error}", path.display())),
        };
        match serde_json::from_str::<SweepReport>(&text) {
            Ok(report) => reports.push(report),
            Err(error) => return fail(&format!("{}: not a sweep report: {error}", path.display())),
        }
    }
    let coverage = match crate::merge_check::check_shards(&reports) {
        Ok(coverage) => coverage,
        Err(error) => return fail(&error.to_string()),
    };
    let mut merged = SweepReport::merge(&reports);
    merged.completed &= coverage.missing.is_empty();
    print!("{}", merged.table());
    if !coverage.missing.is_empty() {
        println!(
            "INCOMPLETE: {} of {} shards missing: {}",
            coverage.missing.len(),
            coverage.count,
            coverage.missing.join(", ")
        );
    }
    if let Some(path) = &args.output {
        let json = serde_json::to_string_pretty(&merged).unwrap_or_default();
        if let Err(error) = std::fs::write(path, json) {
            return fail(&format!("{}: {error}", path.display()));
        }
    }
    if let Some(path) = &args.junit
        && let Err(error) = write_junit(path, &merged)
    {
        return fail(&format!("{}: {error}", path.display()));
    }
    if args.require_complete && !coverage.missing.is_empty() {
        return fail(&format!(
            "--require-complete: shards {} are missing",
            coverage.missing.join(", ")
        ));
    }
    if !args.fail_on_new {
        return exit(merged.exit_code());
    }
    let dir = args.seeds_dir.clone().or_else(default_seeds_dir);
    let mut new = 0;
    for scenario in merged.scenarios.iter().filter(|s| !s.canary) {
        let known = match dir.as_ref().map(|d| corpus_path(d, &scenario.name)) {
            Some(Ok(path)) => match SeedCorpus::load(&path) {
                Ok(corpus) => corpus,
                Err(error) => return fail(&error.to_string()),
            },
            _ => SeedCorpus::default(),
        };
        let mode = SeedMeaning {
            swarm: merged.swarm,
            ..SeedMeaning::default()
        };
        for failure in scenario
            .failures
            .iter()
            .filter(|f| !known.contains_in_mode(f.seed, &mode))
        {
            new += 1;
            println!(
                "NEW {} seed {} ({}): {}",
                scenario.name,
                failure.seed,
                failure.class,
                failure.message.lines().next().unwrap_or("")
            );
        }
    }
    for scenario in merged
        .scenarios
        .iter()
        .filter(|s| !s.canary && s.failures_truncated > 0)
    {
        println!(
            "UNCHECKED {}: {} failing seed(s) are not listed in the reports, so --fail-on-new could not check them ({})",
            scenario.name,
            scenario.failures_truncated,
            crate::report::truncation_note(scenario)
        );
    }
    if !merged.canaries_missed().is_empty() {
        return exit(EXIT_CODE_CANARY_NOT_FOUND);
    }
    if new > 0 {
        println!("{new} new failure(s)");
        // Exit as the most severe class among the failures (a new failure is a regression).
        let class = merged
            .most_severe_regression()
            .unwrap_or(FailureClass::Correctness);
        return exit(class.exit_code());
    }
    ExitCode::SUCCESS
}

/// Writes `report` as JUnit XML to `path`; the error says what failed.
fn write_junit(path: &std::path::Path, report: &SweepReport) -> Result<(), String> {
    let xml = report.junit().map_err(|error| error.to_string())?;
    std::fs::write(path, xml).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_one_based() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 0, count: 3 }));
        assert!(Shard::parse("0/3").is_err());
        assert!(Shard::parse("4/3").is_err());
        assert!(Shard::parse("x").is_err());
    }
}
