//! `dst sweep`: its flags, the options they make, and what it prints and writes at the
//! end (table, JSON, JUnit, HTML, where seeds went, the command that resumes the rest).
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    reason = "a command-line front end prints, and picks fresh seeds from the wall clock"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;
use umi_dst::scenario::Scenario;
use umi_dst::simulation::settings::{duration_arg, positive_duration_arg};

use super::{default_seeds_dir, exit, fail, seed_arg, write_html, write_junit};
use crate::collect::write_report;
use crate::engine;
use crate::options::{Isolation, SWEEP_RUNS_MAX, SWEEP_SEEDS_DEFAULT, SweepOptions};
use crate::plan::Shard;
use crate::progress::ProgressStyle;
use crate::report::SweepReport;

/// `--seed-memory-max` as given and as parsed.
#[derive(Debug, Clone)]
pub(super) struct MemoryMax {
    text: String,
    bytes: Option<u64>,
}

fn memory_max_arg(text: &str) -> Result<MemoryMax, String> {
    Ok(MemoryMax {
        text: text.trim().to_owned(),
        bytes: crate::memory_limit::parse_memory_max(text)?,
    })
}

/// `dst sweep`'s flags.
#[derive(Args)]
pub(super) struct SweepArgs {
    /// How many seeds (1 to 100,000,000).
    #[arg(long, default_value_t = SWEEP_SEEDS_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=SWEEP_RUNS_MAX))]
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
    /// Skip the first N runs of this shard's plan: those a stopped sweep of the same
    /// range already made (its printed `resume:` command says how many). `dst merge`
    /// takes the stopped report and this one's as one shard.
    #[arg(long, default_value_t = 0)]
    skip_runs: u64,
    /// Swarm mode: each seed switches the scenarios' fault rules on and off and scales
    /// their probabilities (filters kept).
    #[arg(long)]
    swarm: bool,
    /// Run each seed twice and compare trace hashes (a difference exits 13).
    #[arg(long)]
    check_determinism: bool,
    /// Run even though this `dst` was built without debug assertions (the simulators'
    /// invariant checks off); without it such a build refuses.
    #[arg(long)]
    allow_no_debug_assertions: bool,
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
    /// Write the report as one self-contained HTML page here (pass rates, failures by
    /// class and group, each failure's replay command and the one that renders its page).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Where failing seeds are recorded (default: found from the working directory as
    /// the replay tests find theirs: the seeds/ of the nearest crate that keeps a *.seeds
    /// file in it, else the workspace's).
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
    /// that allocates past it fails as a crash and costs one worker. A lower limit that
    /// `dst` inherits (`ulimit -v`) stays in force, and a crash names it.
    #[arg(long, default_value = crate::memory_limit::SEED_MEMORY_MAX_DEFAULT,
          value_parser = memory_max_arg)]
    seed_memory_max: MemoryMax,
    /// Run seeds on threads of this process instead of worker processes (for
    /// debugging: an abort, a stack overflow or `exit` in a seed then ends the sweep).
    #[arg(long)]
    in_process: bool,
    /// The price table run costs are computed with (TOML; see the guide's "Cost and
    /// budgets"): each scenario's cost distribution, and models no price covers, in the
    /// reports. Without it, a scenario's own table, if it has one.
    #[arg(long)]
    prices: Option<PathBuf>,
    /// Treat the seed range as tasks and run each task K times, each trial with its own
    /// trial seed (the same workload, fresh model variation and faults); the reports
    /// give pass@1, pass@K and pass^K per scenario and task class, and the flaky tasks.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=umi_dst::usage::TRIALS_MAX))]
    trials: Option<u64>,
    /// Also write each failing seed the report lists as an OpenTelemetry trace (OTLP
    /// JSON) into this directory, as `<scenario>-<seed>.otlp.json`: each runs again
    /// here, with its full trace, after the sweep (crashes are left to `dst replay
    /// --otlp`; at most 100 seeds).
    #[arg(long, value_name = "DIR")]
    otlp: Option<PathBuf>,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
}

/// Runs `dst sweep`.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: SweepArgs, program: &str) -> ExitCode {
    if let Err(error) = super::assertions::check(args.allow_no_debug_assertions) {
        return fail(&error);
    }
    let interrupt = match crate::signals::install() {
        Ok(received) => Some(received),
        Err(error) => {
            eprintln!(
                "dst: cannot handle SIGINT/SIGTERM ({error}); Ctrl-C will end the sweep at once"
            );
            None
        }
    };
    let junit = args.junit.clone();
    let html = args.html.clone();
    let otlp = args.otlp.clone();
    let no_record = args.no_record;
    let options = match options(args, program.to_owned(), interrupt.clone()) {
        Ok(options) => options,
        Err(error) => return fail(&error),
    };
    // A report that cannot be written is refused now, not after the whole sweep.
    for (flag, path) in [
        ("--report", &options.report_path),
        ("--junit", &junit),
        ("--html", &html),
    ] {
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
    let write_errors = write_reports(
        &report,
        options.report_path.as_ref(),
        junit.as_ref(),
        html.as_ref(),
    );
    print_seeds_and_resume(&report, no_record);
    let mut write_errors = write_errors;
    if let Some(dir) = &otlp
        && let Err(error) = export_failures(scenarios, &report, dir, program)
    {
        write_errors.push(error);
    }
    if !write_errors.is_empty() {
        return fail(&write_errors.join("; "));
    }
    let signal = interrupt.map_or(0, |received| received.load(Ordering::Relaxed));
    if signal != 0 && !report.completed {
        return exit(crate::signals::exit_code_for_signal(signal));
    }
    exit(report.exit_code())
}

/// The sweep `args` ask for.
fn options(
    args: SweepArgs,
    program: String,
    interrupt: Option<Arc<AtomicUsize>>,
) -> Result<SweepOptions, String> {
    let shard = shard(args.shard.as_deref())?;
    let seed_start = if args.random {
        fresh_seed_start(args.seeds, args.trials.is_some())
    } else {
        args.seed_start
    };
    let isolation = isolation(&args)?;
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
    let prices = match &args.prices {
        Some(path) => Some(Arc::new(
            umi_dst::usage::PriceTable::load(path).map_err(|error| format!("--prices: {error}"))?,
        )),
        None => None,
    };
    Ok(SweepOptions {
        prices,
        trials: args.trials,
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
        interrupt,
        isolation,
        skip_runs: args.skip_runs,
    })
}

/// `--shard i/n`, or `auto/n` with i from `JOB_COMPLETION_INDEX` (0-based).
pub(super) fn shard(text: Option<&str>) -> Result<Option<Shard>, String> {
    let Some(text) = text else { return Ok(None) };
    let Some(count) = text.strip_prefix("auto/") else {
        return Shard::parse(text).map(Some);
    };
    let index = std::env::var("JOB_COMPLETION_INDEX")
        .unwrap_or_default()
        .trim()
        .parse::<u64>()
        .map_err(|_| {
            "--shard auto/n needs JOB_COMPLETION_INDEX (0-based) in the environment".to_owned()
        })?;
    Shard::parse(&format!("{}/{count}", index.saturating_add(1))).map(Some)
}

/// A seed start from the wall clock and the process id (printed, so it can be repeated),
/// leaving room for `seeds` seeds.
fn fresh_seed_start(seeds: u64, tasks: bool) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let fresh = umi_dst::DeterministicRng::new(nanos ^ u64::from(std::process::id()))
        .next_u64()
        // Below 2⁶³: a seed with the top bit is a trial seed (its workload is its task's);
        // with --trials the range is of tasks, which a trial seed holds below TASKS_MAX.
        % (if tasks { umi_dst::usage::TASKS_MAX } else { 1 << 63 } - seeds.min(SWEEP_RUNS_MAX));
    eprintln!("dst: random seed start {fresh} (repeat with --seed-start {fresh})");
    fresh
}

/// Worker processes of this binary, or threads with `--in-process`.
fn isolation(args: &SweepArgs) -> Result<Isolation, String> {
    if args.in_process {
        return Ok(Isolation::Threads);
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
    Ok(Isolation::Processes(Arc::new(crate::WorkerProcesses {
        program,
        memory_max_bytes: bytes,
        memory_max_text: bytes.map(|_| limit.text.clone()),
    })))
}

/// Writes the JSON, JUnit and HTML reports asked for; what could not be written, by flag.
fn write_reports(
    report: &SweepReport,
    json: Option<&PathBuf>,
    junit: Option<&PathBuf>,
    html: Option<&PathBuf>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(path) = json
        && let Err(error) = write_report(path, report)
    {
        errors.push(format!("--report {}: {error}", path.display()));
    }
    if let Some(path) = junit
        && let Err(error) = write_junit(path, report)
    {
        errors.push(format!("--junit {}: {error}", path.display()));
    }
    if let Some(path) = html
        && let Err(error) = write_html(path, report)
    {
        errors.push(format!("--html {error}"));
    }
    errors
}

/// `--otlp DIR`: the failing seeds the report lists as OTLP JSON files, and what was
/// not exported; the error names the flag.
fn export_failures(
    scenarios: &[Arc<dyn Scenario>],
    report: &SweepReport,
    dir: &std::path::Path,
    program: &str,
) -> Result<(), String> {
    let done = crate::otlp_export::export_failures(scenarios, report, dir, program)
        .map_err(|error| format!("--otlp {error}"))?;
    println!(
        "otlp: {} failing seed(s) written to {}",
        done.written.len(),
        dir.display()
    );
    for skipped in &done.skipped {
        println!("  not exported: {skipped}");
    }
    Ok(())
}

/// Where failing seeds went, and the command for the rest of a sweep cut short.
fn print_seeds_and_resume(report: &SweepReport, no_record: bool) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_one_based_and_auto_is_refused_without_its_index() {
        assert_eq!(shard(None), Ok(None));
        assert_eq!(shard(Some("1/3")), Ok(Some(Shard { index: 0, count: 3 })));
        assert!(shard(Some("0/3")).is_err());
        assert!(shard(Some("4/3")).is_err());
        assert!(shard(Some("x")).is_err());
        if std::env::var_os("JOB_COMPLETION_INDEX").is_none() {
            let error = shard(Some("auto/4")).unwrap_err();
            assert!(error.contains("JOB_COMPLETION_INDEX"), "{error}");
        }
    }
}
