//! `dst trace-html TRACE --output PAGE`: a `dst serve` scope's saved trace (the lines of
//! `GET /umi/trace?scope=S`; `-` reads them from stdin) drawn as one self-contained HTML
//! page by the run page's parts (`html::scope_page`); with `--agent-spans SPANS` (what
//! `GET /umi/spans?scope=S` returned) the agent's own spans beside the requests on one
//! time line (`html::agent_spans`). The pytest plugin runs it on a failed test's trace
//! and links the page from the failure report.
#![allow(clippy::print_stdout, reason = "a command's output")]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::fail;
use crate::html::agent_spans::parse_spans;
use crate::html::scope_page::{ScopePage, render};
use crate::html::served::parse;
use crate::html::write_page;

/// Bytes of saved trace read at most (the server's log holds at most 100,000 entries).
pub(crate) const TRACE_HTML_INPUT_BYTES_MAX: u64 = 1 << 30;

/// `dst trace-html`'s flags.
#[derive(Args)]
pub(super) struct TraceHtmlArgs {
    /// The saved trace: the lines `GET /umi/trace?scope=S` returned (`-`: stdin).
    trace: PathBuf,
    /// Write the page here.
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
    /// The page's title: what ran (the test's id).
    #[arg(long, default_value = "dst serve scope")]
    title: String,
    /// The command that reruns the test, shown in the header.
    #[arg(long, value_name = "COMMAND")]
    rerun: Option<String>,
    /// How the test failed, shown in the header and as the timeline's failure marker.
    #[arg(long, value_name = "TEXT")]
    failure: Option<String>,
    /// The spans the agent sent to the scope over OTLP (the JSON `GET /umi/spans?scope=S`
    /// returned; `-` for stdin), drawn beside the requests on one time line.
    #[arg(long, value_name = "FILE")]
    agent_spans: Option<PathBuf>,
}

/// The saved trace's text; the error names the file.
fn read(path: &Path) -> Result<String, String> {
    let mut text = String::new();
    let named = path.display();
    let result = if path.as_os_str() == "-" {
        std::io::stdin()
            .take(TRACE_HTML_INPUT_BYTES_MAX)
            .read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|file| {
            file.take(TRACE_HTML_INPUT_BYTES_MAX)
                .read_to_string(&mut text)
        })
    };
    result.map_err(|error| format!("{named}: {error}"))?;
    if text.len() as u64 >= TRACE_HTML_INPUT_BYTES_MAX {
        return Err(format!(
            "{named}: longer than {TRACE_HTML_INPUT_BYTES_MAX} bytes"
        ));
    }
    Ok(text)
}

/// Runs `dst trace-html`.
pub(super) fn run(args: &TraceHtmlArgs) -> ExitCode {
    let text = match read(&args.trace) {
        Ok(text) => text,
        Err(error) => return fail(&error),
    };
    let trace = match parse(&text) {
        Ok(trace) => trace,
        Err(error) => return fail(&format!("{}: {error}", args.trace.display())),
    };
    let agent_spans = match &args.agent_spans {
        None => Vec::new(),
        Some(path) => match read(path).and_then(|text| parse_spans(&text)) {
            Ok(spans) => spans,
            Err(error) => return fail(&format!("--agent-spans {}: {error}", path.display())),
        },
    };
    let html = match render(&ScopePage {
        title: &args.title,
        trace: &trace,
        rerun: args.rerun.as_deref(),
        failure: args.failure.as_deref(),
        agent_spans: &agent_spans,
    }) {
        Ok(html) => html,
        Err(error) => return fail(&format!("--output {}: {error}", args.output.display())),
    };
    if let Err(error) = write_page(&args.output, &html) {
        return fail(&format!("--output {error}"));
    }
    println!(
        "html:     {} ({} requests)",
        args.output.display(),
        trace.entries.len()
    );
    ExitCode::SUCCESS
}
