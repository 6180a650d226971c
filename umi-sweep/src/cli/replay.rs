//! `dst replay`: one seed (or path, `--path 7/412:9913`) of one scenario, shown with
//! simulated timestamps (its result, faults, injections, marks and trace), under the
//! wall-clock watchdog.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command's output"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use umi_dst::RunPath;
use umi_dst::failure_class::FailureClass;
use umi_dst::fault::InjectionId;
use umi_dst::scenario::{Scenario, run_path};
use umi_dst::simulation::SeedRun;

use super::{exit, fail, seed_arg};
use crate::options::select;
use crate::replay_command::ReplayCommand;
use crate::watched::seed_wall_timeout;

/// `dst replay`'s flags.
#[derive(Args)]
pub(super) struct ReplayArgs {
    /// The scenario.
    #[arg(long)]
    scenario: String,
    /// The seed (decimal or 0x hex).
    #[arg(long, value_parser = seed_arg, required_unless_present = "path", conflicts_with = "path")]
    seed: Option<u64>,
    /// A path to run instead of a seed: `7/412:9913` (the seed, then each branch point as
    /// STEP:STREAM), as `dst explore` and failure reports print it.
    #[arg(long, value_parser = path_arg)]
    path: Option<RunPath>,
    /// Run in swarm mode (as the sweep that found it did).
    #[arg(long)]
    swarm: bool,
    /// Run even though this `dst` was built without debug assertions (the simulators'
    /// invariant checks off); without it such a build refuses.
    #[arg(long)]
    allow_no_debug_assertions: bool,
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
    /// Also write the run as one self-contained HTML page here: its timeline on
    /// simulated time by part of the system, the failure where it was seen, every event
    /// (the full trace is kept), and with --check-determinism the two runs side by side.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write the run as an OpenTelemetry trace in OTLP JSON here (`-`: standard
    /// output, which then holds only the JSON): a root span for the run, GenAI spans for
    /// its model and tool calls, its faults as `umi.fault` events, on simulated time
    /// from 2024-01-01T00:00:00Z (see the guide, "OpenTelemetry").
    #[arg(long, value_name = "FILE")]
    otlp: Option<PathBuf>,
    /// Also send the run as an OpenTelemetry trace to the collector the standard
    /// variables name: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (else OTEL_EXPORTER_OTLP_ENDPOINT
    /// with /v1/traces appended), OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2),
    /// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or http/json), OTEL_EXPORTER_OTLP_TIMEOUT
    /// (ms).
    #[arg(long)]
    otlp_export: bool,
}

impl ReplayArgs {
    /// Whether the run's OTLP JSON goes to standard output (and the report does not).
    fn otlp_to_stdout(&self) -> bool {
        self.otlp.as_deref() == Some(Path::new("-"))
    }
}

impl ReplayArgs {
    /// The path to run: `--path`, or `--seed` alone.
    fn run_path(&self) -> RunPath {
        self.path
            .clone()
            .unwrap_or_else(|| RunPath::from_seed(self.seed.unwrap_or_default()))
    }
}

/// `--path`'s text, read as every tool reads a path.
fn path_arg(text: &str) -> Result<RunPath, String> {
    text.parse()
        .map_err(|error: umi_dst::PathError| error.to_string())
}

/// What a replay ran: the scenario, the run, the determinism check's second run, and
/// the `--only` ids it allowed.
struct Replayed {
    scenario: Arc<dyn Scenario>,
    run: SeedRun,
    second: Option<SeedRun>,
    only: Option<Vec<InjectionId>>,
}

/// Runs `dst replay`: a recorded hanging seed fails with its name, not hang the replay.
pub(super) fn run(scenarios: &[Arc<dyn Scenario>], args: &ReplayArgs, program: &str) -> ExitCode {
    if let Err(error) = super::assertions::check(args.allow_no_debug_assertions) {
        return fail(&error);
    }
    let limit = match seed_wall_timeout() {
        Ok(limit) => limit,
        Err(error) => return fail(&error),
    };
    // One watch covers the whole command (a replay may run its seed two or three times:
    // an `--only` check, the run, a determinism check).
    let mut watchdog = umi_dst::simulation::Watchdog::start();
    let path = args.run_path();
    let _watched = watchdog.as_mut().map(|watchdog| {
        let what = format!("replay of {} of {}", run_name(&path), args.scenario);
        let command = ReplayCommand::for_path(program, &args.scenario, &path)
            .swarm(args.swarm)
            .to_string();
        watchdog.watch(&what, limit, &command)
    });
    // A collector that is not configured is refused before the run.
    let exporter = match args
        .otlp_export
        .then(crate::otlp_http::ExporterConfig::from_env)
        .transpose()
    {
        Ok(exporter) => exporter,
        Err(error) => return fail(&error.to_string()),
    };
    match replay(scenarios, args) {
        Err(error) => fail(&error),
        Ok(replayed) => {
            if !args.otlp_to_stdout() {
                print_run(&replayed.run, replayed.scenario.as_ref(), args, program);
            }
            if let Some(path) = &args.html {
                if let Err(error) = write_html(path, &replayed, args, program) {
                    return fail(&format!("--html {error}"));
                }
                if !args.otlp_to_stdout() {
                    println!("html:     {}", path.display());
                }
            }
            if let Err(error) = export_otlp(&replayed, args, exporter.as_ref()) {
                return fail(&error);
            }
            exit(
                replayed
                    .run
                    .failure
                    .map_or(0, |(class, _)| class.exit_code()),
            )
        }
    }
}

/// `--otlp` and `--otlp-export`: the run as an OTLP trace, written and sent.
fn export_otlp(
    replayed: &Replayed,
    args: &ReplayArgs,
    exporter: Option<&crate::otlp_http::ExporterConfig>,
) -> Result<(), String> {
    if args.otlp.is_none() && exporter.is_none() {
        return Ok(());
    }
    let request = crate::otlp_export::run_export(replayed.scenario.name(), &replayed.run)?;
    if let Some(path) = &args.otlp {
        crate::otlp_export::write_json(path, &request)
            .map_err(|error| format!("--otlp {error}"))?;
        if !args.otlp_to_stdout() {
            println!("otlp:     {}", path.display());
        }
    }
    if let Some(config) = exporter {
        let sent = crate::otlp_http::send(config, &request).map_err(|error| error.to_string())?;
        let rejected = if sent.rejected_spans > 0 || !sent.message.is_empty() {
            format!(
                "; it rejected {} span(s): {}",
                sent.rejected_spans, sent.message
            )
        } else {
            String::new()
        };
        // On standard error: with `--otlp -` standard output holds only the JSON.
        eprintln!(
            "otlp:     sent {} bytes ({}) to {}: {}{rejected}",
            sent.body_bytes,
            config.protocol.content_type(),
            config.endpoint_shown(),
            sent.status
        );
    }
    Ok(())
}

/// Writes the run's page to `path`; the error names the path.
fn write_html(
    path: &Path,
    replayed: &Replayed,
    args: &ReplayArgs,
    program: &str,
) -> Result<(), String> {
    let run = args.run_path();
    let command = ReplayCommand::for_path(program, replayed.scenario.name(), &run)
        .swarm(args.swarm)
        .only(replayed.only.as_deref())
        .check_determinism(args.check_determinism)
        .to_string();
    let html = crate::html::run_page::render(&crate::html::run_page::RunPage {
        scenario: replayed.scenario.name(),
        run: &replayed.run,
        replay_command: &command,
        second: replayed.second.as_ref(),
    })
    .map_err(|error| format!("{}: {error}", path.display()))?;
    crate::html::write_page(path, &html)
}

/// Checks the arguments and runs the seed (twice with `--check-determinism`).
fn replay(scenarios: &[Arc<dyn Scenario>], args: &ReplayArgs) -> Result<Replayed, String> {
    let selected = select(scenarios, std::slice::from_ref(&args.scenario))
        .map_err(|error| error.to_string())?;
    let scenario = Arc::clone(&selected[0]);
    let only = args.only.as_deref().map(parse_only).transpose()?;
    let path = args.run_path();
    if let Some(ids) = &only {
        // An id no injection of the full run has would silently allow nothing.
        let full = run_path(scenario.as_ref(), &path, args.swarm, |c| c);
        check_only_known(ids, &full, &path)?;
    }
    let edit = |mut config: umi_dst::SimConfig| {
        config.trace_full = args.trace
            || args.check_determinism
            || args.html.is_some()
            || args.otlp.is_some()
            || args.otlp_export;
        config.only_injections.clone_from(&only);
        config
    };
    let mut run = run_path(scenario.as_ref(), &path, args.swarm, edit);
    let mut second = None;
    if args.check_determinism {
        let again = run_path(scenario.as_ref(), &path, args.swarm, edit);
        if let Some(found) = umi_dst::simulation::determinism::compare_runs(&run, &again) {
            run.failure = Some((FailureClass::Nondeterminism, found.describe()));
        }
        // Kept for the page, which shows the two traces side by side.
        second = Some(again);
    }
    Ok(Replayed {
        scenario,
        run,
        second,
        only,
    })
}

/// `--only 0:1,2:3` (empty parts ignored).
fn parse_only(list: &str) -> Result<Vec<InjectionId>, String> {
    list.split(',')
        .filter(|part| !part.trim().is_empty())
        .map(str::parse::<InjectionId>)
        .collect::<Result<_, _>>()
        .map_err(|error| format!("--only: {error}"))
}

/// Refuses an `--only` id that no injection of the full run has.
fn check_only_known(ids: &[InjectionId], full: &SeedRun, path: &RunPath) -> Result<(), String> {
    let known: BTreeSet<InjectionId> = full.injections.iter().map(|i| i.id).collect();
    let Some(unknown) = ids.iter().find(|id| !known.contains(id)) else {
        return Ok(());
    };
    let listed: Vec<String> = known.iter().map(ToString::to_string).collect();
    Err(format!(
        "--only: {unknown} is not an injection of {} (its injections: {})",
        run_name(path),
        if listed.is_empty() {
            "none".to_owned()
        } else {
            listed.join(",")
        }
    ))
}

/// `seed 7`, or `path 7/412:9913` for a run with branch points.
fn run_name(path: &RunPath) -> String {
    if path.is_seed_only() {
        format!("seed {}", path.seed)
    } else {
        format!("path {path}")
    }
}

/// `none`, or the items joined.
fn list_or_none(items: &[String], separator: &str) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(separator)
    }
}

/// What the run did: result, faults, injections, marks, and its trace.
fn print_run(run: &SeedRun, scenario: &dyn Scenario, args: &ReplayArgs, program: &str) {
    let path = args.run_path();
    let seed = path.seed;
    let swarm = if args.swarm { " in swarm mode" } else { "" };
    if path.is_seed_only() {
        println!(
            "replay: {} seed {seed} (0x{seed:x}){swarm}",
            scenario.name()
        );
    } else {
        println!(
            "replay: {} path {path} (seed 0x{seed:x}){swarm}",
            scenario.name()
        );
    }
    match &run.failure {
        None => println!("result:   passed"),
        Some((class, message)) => println!("result:   FAILED ({class}): {message}"),
    }
    println!("faults:   {}", list_or_none(&run.faults, "; "));
    if !run.swarm.is_empty() {
        let rules: Vec<String> = run.swarm.iter().map(ToString::to_string).collect();
        println!("swarm:    {}", rules.join(" "));
    }
    println!("injected: {} fault(s)", run.injections.len());
    for injection in &run.injections {
        println!("  {injection}");
    }
    let marks: Vec<String> = run.marks.iter().map(|(m, n)| format!("{m}×{n}")).collect();
    println!("marks:    {}", list_or_none(&marks, ", "));
    print_steering(run, scenario);
    println!(
        "run:      {:.3}s simulated, {} steps, {} events, trace {}",
        run.sim_elapsed.as_secs_f64(),
        run.steps,
        run.events,
        run.trace_hash
    );
    // The whole trace only when asked for: --html and --check-determinism keep it too,
    // and print the tail.
    let events = match &run.full_trace {
        Some(full) if args.trace => full,
        _ => &run.tail,
    };
    let which = if args.trace { "all " } else { "last " };
    println!("trace ({which}{} events):", events.len());
    for event in events {
        println!("  {event}");
    }
    if run.failure.is_some() && path.is_seed_only() {
        println!(
            "minimize: {program} minimize --scenario {} --seed {seed}{}",
            scenario.name(),
            if args.swarm { " --swarm" } else { "" }
        );
    }
}

/// The scenario's steering marks this run reached (with the step of the first hit, and a
/// `maximize` mark's high-water mark), when it declares any.
fn print_steering(run: &SeedRun, scenario: &dyn Scenario) {
    let declared = scenario.steering();
    if declared.is_empty() {
        return;
    }
    let reached: Vec<String> = declared
        .iter()
        .filter_map(|mark| {
            let step = run.mark_steps.get(mark.name)?;
            Some(match run.watermarks.get(mark.name) {
                Some(high) => format!("{}={} (step {})", mark.name, high.value, high.step),
                None => format!("{} (step {step})", mark.name),
            })
        })
        .collect();
    println!("steering: {}", list_or_none(&reached, ", "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lists_parse_and_refuse_by_flag() {
        assert_eq!(parse_only(""), Ok(vec![]));
        assert_eq!(
            parse_only("0:1, ,2:3"),
            Ok(vec!["0:1".parse().unwrap(), "2:3".parse().unwrap()])
        );
        assert!(parse_only("0:1,x").unwrap_err().starts_with("--only: "));
    }
}
