//! The `dst` side of the OpenTelemetry export (`umi_dst::otlp`): `dst replay --otlp FILE`
//! (`-`: standard output) and `--otlp-export` (to the collector the `OTEL_EXPORTER_OTLP_*`
//! variables name, [`crate::otlp_http`]), and `dst sweep --otlp DIR`: each failing seed
//! the report lists, run again with its full trace, as `DIR/<scenario>-<seed>.otlp.json`
//! (named as the sweep's HTML report names a failing seed's replay page).
#![allow(
    clippy::print_stdout,
    reason = "`--otlp -` writes the export to standard output"
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use umi_dst::failure_class::FailureClass;
use umi_dst::otlp::{self, ExportTraceServiceRequest, RunExport};
use umi_dst::scenario::Scenario;
use umi_dst::simulation::SeedRun;

use crate::report::SweepReport;
use crate::watched::WatchedRuns;

/// The most failing seeds `dst sweep --otlp` exports (each one runs again).
pub const SWEEP_OTLP_FAILURES_MAX: usize = 100;

/// The file `dst sweep --otlp DIR` writes for `seed` of `scenario`.
pub fn otlp_file_name(scenario: &str, seed: u64) -> String {
    format!("{scenario}-{seed}.otlp.json")
}

/// The export of `run`, a run of `scenario` made with its full trace; the error says
/// why not.
pub fn run_export(scenario: &str, run: &SeedRun) -> Result<ExportTraceServiceRequest, String> {
    let export = RunExport::of(scenario, run).map_err(|error| error.to_string())?;
    Ok(otlp::export_run(&export))
}

/// Writes `request` as OTLP JSON to `target` (`-`: standard output); the error names
/// the file.
pub fn write_json(target: &Path, request: &ExportTraceServiceRequest) -> Result<(), String> {
    let mut json = otlp::to_json(request);
    json.push(b'\n');
    if target == Path::new("-") {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(&json)
            .and_then(|()| out.flush())
            .map_err(|error| format!("standard output: {error}"));
    }
    std::fs::write(target, json).map_err(|error| format!("{}: {error}", target.display()))
}

/// What `dst sweep --otlp` did.
#[derive(Debug, Default)]
pub struct SweepExport {
    /// The files written.
    pub written: Vec<PathBuf>,
    /// Failing seeds not exported, and why.
    pub skipped: Vec<String>,
}

/// Runs each failing seed the report lists again with its full trace and writes its
/// export into `dir` (created if missing). Crashes are not run again here (a seed that
/// aborts would end this process): `dst replay --otlp` exports one.
pub fn export_failures(
    scenarios: &[Arc<dyn Scenario>],
    report: &SweepReport,
    dir: &Path,
    program: &str,
) -> Result<SweepExport, String> {
    std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let mut runs = WatchedRuns::start(program)?;
    let mut done = SweepExport::default();
    let failures = report.scenarios.iter().flat_map(|scenario| {
        scenario
            .failures
            .iter()
            .map(move |failure| (scenario.name.as_str(), failure))
    });
    for (name, failure) in failures {
        let seed = failure.seed;
        if failure.class == FailureClass::Crash.name() {
            done.skipped.push(format!(
                "{name} seed {seed}: a crash is not run again in the sweep's process (dst replay --otlp exports it)"
            ));
            continue;
        }
        if done.written.len() >= SWEEP_OTLP_FAILURES_MAX {
            done.skipped.push(format!(
                "{name} seed {seed}: past the {SWEEP_OTLP_FAILURES_MAX} failing seeds exported"
            ));
            continue;
        }
        let Some(scenario) = scenarios.iter().find(|s| s.name() == name) else {
            done.skipped
                .push(format!("{name} seed {seed}: no such scenario here"));
            continue;
        };
        let what = format!("OTLP export of seed {seed} of {name}");
        let run = runs.run_full(&what, scenario.as_ref(), seed, report.swarm);
        let path = dir.join(otlp_file_name(name, seed));
        write_json(&path, &run_export(name, &run)?)?;
        done.written.push(path);
    }
    Ok(done)
}
