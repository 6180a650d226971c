//! `dst cassette`: work on cassette files without a simulation. `import-har` turns a
//! browser's or a proxy's HAR capture into a cassette (redacted as a recording is);
//! `check` reads every exchange again with Umi's own clients (`cassette_check`); `diff`
//! pairs two cassettes' exchanges by request and names what changed in the responses'
//! shape (`cassette_shape`), so a provider that changed its wire format shows up as a
//! short list of JSON paths.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command line talks to its user"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use umi_core::cassette::{Cassette, Exchange, Header, IgnoreRules, Redaction, RequestKey};
use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, EXIT_CODE_ERROR, process_exit_code};

use crate::cassette_check::{Verdict, check, format_of_endpoint};
use crate::cassette_shape::{body_shape, shape_diff};

/// `dst cassette`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct CassetteArgs {
    #[command(subcommand)]
    command: CassetteCommand,
}

#[derive(Debug, Subcommand)]
enum CassetteCommand {
    /// Turn a HAR capture into a cassette (keys, cookies and named fields removed).
    ImportHar {
        /// The HAR file.
        har: PathBuf,
        /// The cassette to write (refused if it exists).
        #[arg(long, value_name = "OUT")]
        cassette: PathBuf,
        /// Keep only entries under this base URL; paths are taken below it.
        #[arg(long, value_name = "URL", default_value = "")]
        root: String,
        /// A JSON body field to replace with `[REDACTED]` (dotted path). Repeatable.
        #[arg(long = "redact-field", value_name = "PATH")]
        redact_fields: Vec<String>,
    },
    /// Read every exchange again with Umi's client for its format; fails naming each
    /// line whose answer the client cannot read.
    Check {
        /// The cassette.
        cassette: PathBuf,
        /// The format of every POST exchange (a `dst serve` profile); default: guessed
        /// from each path.
        #[arg(long, value_name = "FORMAT")]
        endpoint: Option<String>,
    },
    /// Pair two cassettes' exchanges by request and name the responses' shape changes
    /// (exit 1 if any, or if a request is in one only).
    Diff {
        /// The first cassette.
        a: PathBuf,
        /// The second cassette.
        b: PathBuf,
    },
}

/// Why a `dst cassette` command failed before it could report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CassetteCliError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The HAR file is not one, or an entry is refused.
    #[error("{path}: {reason}")]
    Har {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its JSON path.
        reason: String,
    },
    /// The output exists.
    #[error("{0}: the file exists (remove it or choose another)")]
    Exists(PathBuf),
    /// A cassette could not be loaded or saved.
    #[error(transparent)]
    Cassette(#[from] umi_core::cassette::CassetteError),
    /// A flag's value is refused.
    #[error("{flag} {value:?}: {reason}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
        /// Why.
        reason: String,
    },
}

/// Runs `dst cassette`.
pub(crate) fn run(args: &CassetteArgs) -> ExitCode {
    let result = match &args.command {
        CassetteCommand::ImportHar {
            har,
            cassette,
            root,
            redact_fields,
        } => import_har(har, cassette, root, redact_fields),
        CassetteCommand::Check { cassette, endpoint } => run_check(cassette, endpoint.as_deref()),
        CassetteCommand::Diff { a, b } => run_diff(a, b),
    };
    match result {
        Ok(code) => code,
        Err(error @ CassetteCliError::Flag { .. }) => {
            eprintln!("dst cassette: {error}");
            process_exit_code(EXIT_CODE_BAD_ARGUMENTS)
        }
        Err(error) => {
            eprintln!("dst cassette: {error}");
            process_exit_code(EXIT_CODE_ERROR)
        }
    }
}

fn import_har(
    har: &Path,
    out: &Path,
    root: &str,
    fields: &[String],
) -> Result<ExitCode, CassetteCliError> {
    let text = std::fs::read_to_string(har).map_err(|source| CassetteCliError::Io {
        path: har.to_owned(),
        source,
    })?;
    if out.exists() {
        return Err(CassetteCliError::Exists(out.to_owned()));
    }
    let redaction = fields.iter().fold(Redaction::new(), |redaction, field| {
        redaction.with_field(field)
    });
    let exchanges = umi_core::cassette::har::import(&text, root, &redaction).map_err(|error| {
        CassetteCliError::Har {
            path: har.to_owned(),
            reason: error.to_string(),
        }
    })?;
    let recorded_by = format!("dst cassette import-har {}", env!("CARGO_PKG_VERSION"));
    let mut header = Header::new(&recorded_by, (!root.is_empty()).then_some(root));
    header.redacted_fields = fields.to_vec();
    let count = exchanges.len();
    let cassette = Cassette { header, exchanges };
    cassette.save(out)?;
    println!(
        "dst cassette: {count} exchanges imported into {}",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The file line of each exchange (the header is the first non-blank line).
fn exchange_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .skip(1)
        .map(|(index, _)| index + 1)
        .collect()
}

fn load(path: &Path) -> Result<(Cassette, Vec<usize>), CassetteCliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CassetteCliError::Io {
        path: path.to_owned(),
        source,
    })?;
    let cassette = Cassette::parse(&text, path)?;
    Ok((cassette, exchange_lines(&text)))
}

fn run_check(path: &Path, endpoint: Option<&str>) -> Result<ExitCode, CassetteCliError> {
    let format = match endpoint {
        None => None,
        Some(name) => Some(format_of_endpoint(name).ok_or_else(|| {
            CassetteCliError::Flag {
                flag: "--endpoint",
                value: name.to_owned(),
                reason:
                    "not a `dst serve` profile (openai, openai_responses, anthropic, ollama, ...)"
                        .into(),
            }
        })?),
    };
    let (cassette, lines) = load(path)?;
    // A command's own runtime (the CLI is sync); `check` runs no simulation.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| CassetteCliError::Io {
            path: path.to_owned(),
            source,
        })?;
    let mut counts = [0usize; 4];
    for (exchange, line) in cassette.exchanges.iter().zip(&lines) {
        let verdict = runtime.block_on(check(exchange, format));
        let request = format!("{} {}", exchange.request.method, exchange.request.path);
        let (slot, said) = match &verdict {
            Verdict::Read => (0, "read".to_owned()),
            Verdict::Classified(kind) => {
                (1, format!("status {} → {kind}", exchange.response.status))
            }
            Verdict::Skipped(why) => (2, format!("skipped: {why}")),
            Verdict::Failed(error) => (3, format!("NOT READABLE: {error}")),
        };
        counts[slot] += 1;
        println!("{}:{line}: {request}: {said}", path.display());
    }
    println!(
        "{}: {} exchanges: {} read, {} errors classified, {} skipped, {} not readable",
        path.display(),
        cassette.exchanges.len(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    Ok(if counts[3] == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Each request's exchanges (by file line), in file order.
fn by_key(cassette: &Cassette, lines: &[usize]) -> BTreeMap<RequestKey, Vec<(usize, Exchange)>> {
    let mut keyed: BTreeMap<RequestKey, Vec<(usize, Exchange)>> = BTreeMap::new();
    for (exchange, line) in cassette.exchanges.iter().zip(lines) {
        let key = RequestKey::of_recorded(&exchange.request, &IgnoreRules::none());
        keyed
            .entry(key)
            .or_default()
            .push((*line, exchange.clone()));
    }
    keyed
}

/// How `b`'s response differs in shape from `a`'s (nothing when only values differ).
pub(crate) fn response_changes(a: &Exchange, b: &Exchange) -> Vec<String> {
    let (a, b) = (&a.response, &b.response);
    let mut out = Vec::new();
    if a.status != b.status {
        out.push(format!("status {} → {}", a.status, b.status));
    }
    let names = |r: &umi_core::cassette::RecordedResponse| -> std::collections::BTreeSet<String> {
        r.headers.iter().map(|(name, _)| name.clone()).collect()
    };
    let (left, right) = (names(a), names(b));
    out.extend(right.difference(&left).map(|n| format!("+ header {n}")));
    out.extend(left.difference(&right).map(|n| format!("- header {n}")));
    let shape_a = body_shape(a.header("content-type"), &a.body_bytes());
    let shape_b = body_shape(b.header("content-type"), &b.body_bytes());
    out.extend(shape_diff(&shape_a, &shape_b));
    out
}

fn run_diff(a_path: &Path, b_path: &Path) -> Result<ExitCode, CassetteCliError> {
    let (a, a_lines) = load(a_path)?;
    let (b, b_lines) = load(b_path)?;
    let (a_keyed, mut b_keyed) = (by_key(&a, &a_lines), by_key(&b, &b_lines));
    let mut differences = 0usize;
    let (a_name, b_name) = (a_path.display(), b_path.display());
    for (key, a_list) in &a_keyed {
        let b_list = b_keyed.remove(key).unwrap_or_default();
        let paired = a_list.len().min(b_list.len());
        for ((a_line, a_ex), (b_line, b_ex)) in a_list.iter().zip(&b_list) {
            let changes = response_changes(a_ex, b_ex);
            if !changes.is_empty() {
                differences += 1;
                println!(
                    "{a_name}:{a_line} ↔ {b_name}:{b_line}: {} {}",
                    key.method, key.path
                );
                for change in changes {
                    println!("  {change}");
                }
            }
        }
        for (line, _) in &a_list[paired..] {
            differences += 1;
            println!("only in {a_name}:{line}: {} {}", key.method, key.path);
        }
        for (line, _) in &b_list[paired..] {
            differences += 1;
            println!("only in {b_name}:{line}: {} {}", key.method, key.path);
        }
    }
    for (key, b_list) in &b_keyed {
        for (line, _) in b_list {
            differences += 1;
            println!("only in {b_name}:{line}: {} {}", key.method, key.path);
        }
    }
    if differences == 0 {
        println!("no shape differences");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{differences} differences");
    Ok(ExitCode::FAILURE)
}
