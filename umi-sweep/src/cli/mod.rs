//! The `dst` command: `list`, `sweep`, `explore`, `replay`, `minimize`, `merge`, `compare`,
//! `size`, `find`, `trace-html`, `serve`, `mcp`, `record` and `cassette` (a file each in
//! this folder, `list` here), as a library function so your own project gets its own `dst`
//! in three lines:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     umi_sweep::cli::main(vec![/* Arc::new(MyScenario), ... */])
//! }
//! ```
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line front end prints"
)]

mod assertions;
#[cfg(feature = "serve")]
mod cassette;
mod compare;
mod explore;
mod find;
#[cfg(feature = "serve")]
mod mcp;
mod merge;
mod minimize;
#[cfg(feature = "serve")]
mod record;
mod replay;
#[cfg(feature = "serve")]
mod serve;
mod size;
mod sweep;
mod trace_html;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use umi_dst::corpus::find_seeds_dir;
use umi_dst::failure_class::EXIT_CODE_BAD_ARGUMENTS;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::settings::parse_seed;

use crate::report::SweepReport;

#[derive(Parser)]
#[command(
    name = "dst",
    version,
    about = "Deterministic simulation sweeps: run scenarios over many seeds, replay one seed, minimize its faults, merge shard reports, compare two sweeps, serve the simulated model over HTTP."
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
    Sweep(sweep::SweepArgs),
    /// Run one seed of one scenario and show what happened, with simulated timestamps.
    Replay(replay::ReplayArgs),
    /// Explore a scenario guided by what its runs reach: branch the paths that reached
    /// something new from the step they got there, until a budget or stable coverage;
    /// report what was reached, how, and what never was.
    Explore(explore::ExploreArgs),
    /// Find the smallest set of a failing seed's injected faults that still fails; for a
    /// path (`--path`), first the fewest of its branch points.
    Minimize(minimize::MinimizeArgs),
    /// Combine the JSON reports of several shards.
    Merge(merge::MergeArgs),
    /// Compare two sweeps of the same seeds (before and after a change): per scenario,
    /// which changes are larger than the noise; exit 1 on a regression past the
    /// thresholds.
    Compare(compare::CompareArgs),
    /// How many shards a sweep needs to finish in its time budget, from the measured
    /// seeds per core-second of each scenario (`scenarios/throughput.toml`).
    Size(size::SizeArgs),
    /// Find a seed whose run injects given fault kinds (to replace a stale kept seed).
    Find(find::FindArgs),
    /// Draw a `dst serve` scope's saved trace (`GET /umi/trace?scope=S`) as an HTML page,
    /// the run page's parts over the scope's requests in arrival order.
    TraceHtml(trace_html::TraceHtmlArgs),
    /// Serve the simulated model over real HTTP (OpenAI, Responses, Anthropic, Ollama,
    /// Gemini formats in any profile) and an MCP server, seeded per request, for agents
    /// in any language.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Serve a simulated MCP server over stdin/stdout (for agents that spawn theirs),
    /// seeded per message.
    #[cfg(feature = "serve")]
    Mcp(mcp::McpArgs),
    /// Record real provider traffic into a cassette, through a proxy in front of the
    /// provider.
    #[cfg(feature = "serve")]
    Record(record::RecordArgs),
    /// Work on cassettes: import a HAR capture, check that Umi's clients read every
    /// exchange, diff two recordings' response shapes.
    #[cfg(feature = "serve")]
    Cassette(cassette::CassetteArgs),
    /// A sweep's worker process (started by `dst sweep` itself; not for people).
    #[command(name = "__sweep-worker", hide = true)]
    SweepWorker(crate::process_worker::WorkerArgs),
}

fn seed_arg(text: &str) -> Result<u64, String> {
    parse_seed(text)
}

/// One run: a scenario's seed, in swarm mode or not.
#[derive(Args)]
pub(crate) struct RunArgs {
    /// The scenario.
    #[arg(long)]
    pub(crate) scenario: String,
    /// The seed (decimal or 0x hex).
    #[arg(long, value_parser = seed_arg)]
    pub(crate) seed: u64,
    /// Run in swarm mode (as the sweep that found it did).
    #[arg(long)]
    pub(crate) swarm: bool,
    /// Run even though this `dst` was built without debug assertions (the simulators'
    /// invariant checks off); without it such a build refuses.
    #[arg(long)]
    pub(crate) allow_no_debug_assertions: bool,
}

fn exit(code: i32) -> ExitCode {
    umi_dst::failure_class::process_exit_code(code)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    exit(EXIT_CODE_BAD_ARGUMENTS)
}

/// The seeds directory found from the working directory
/// ([`find_seeds_dir`]: the nearest crate's own seeds/ when it holds a *.seeds file, else the workspace's), the one a
/// declared scenario's replay test finds from its crate.
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
        Command::List => list(&scenarios),
        Command::Sweep(args) => sweep::run(&scenarios, args, &program),
        Command::Replay(args) => replay::run(&scenarios, &args, &program),
        Command::Explore(args) => explore::run(&scenarios, &args, &program),
        Command::Minimize(args) => minimize::run(&scenarios, &args, &program),
        Command::Merge(args) => merge::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Size(args) => size::run(&scenarios, &args),
        Command::Find(args) => find::run(&scenarios, &args, &program),
        Command::TraceHtml(args) => trace_html::run(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(&args, &scenarios),
        #[cfg(feature = "serve")]
        Command::Mcp(args) => mcp::run(&args, &scenarios),
        #[cfg(feature = "serve")]
        Command::Record(args) => record::run(&args),
        #[cfg(feature = "serve")]
        Command::Cassette(args) => cassette::run(&args),
        Command::SweepWorker(args) => crate::process_worker::serve(&scenarios, &args),
    }
}

/// `dst list`: each scenario, its goal, its coverage marks and its steering marks.
fn list(scenarios: &[Arc<dyn Scenario>]) -> ExitCode {
    for scenario in scenarios {
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
        let steering: Vec<String> = scenario
            .steering()
            .iter()
            .map(|mark| format!("{} ({})", mark.name, mark.kind.name()))
            .collect();
        if !steering.is_empty() {
            println!("  steering: {}", steering.join(", "));
        }
    }
    ExitCode::SUCCESS
}

/// Writes `report` as JUnit XML to `path`; the error says what failed.
fn write_junit(path: &std::path::Path, report: &SweepReport) -> Result<(), String> {
    let xml = report.junit().map_err(|error| error.to_string())?;
    std::fs::write(path, xml).map_err(|error| error.to_string())
}

/// Writes `report` as an HTML page to `path`; the error names the path.
fn write_html(path: &std::path::Path, report: &SweepReport) -> Result<(), String> {
    let html = crate::html::sweep_page::render(report)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    crate::html::write_page(path, &html)
}
