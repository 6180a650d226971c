//! `dst record`: a real HTTP proxy in front of one provider, recording every exchange it
//! carries into a cassette.
//!
//! Clients point their base URL at the proxy; each request goes to `--upstream` through
//! umi-core's production transport wrapped in a [`RecordingTransport`], and the response
//! is streamed back as it arrives, so the client sees the upstream's bytes and the
//! cassette holds them, redacted. The key the proxy adds (`--key-env`) and every key a
//! client sends are removed before a line is written. A cassette that exists is refused
//! unless `--append` is given (a recording never overwrites one).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command line talks to its user"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use umi_core::cassette::{CassetteError, CassetteWriter, Header, RecordingTransport, Redaction};
use umi_core::env::SystemEnvironment;
use umi_core::llm::secrets::Redactor;
use umi_core::llm::transport::{ReqwestTransport, Transport};
use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, EXIT_CODE_ERROR, process_exit_code};
use umi_dst::network::Profile;
use umi_dst::serve::{ProxyConfig, RunningProxy};

/// `dst record`'s flags.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  dst record --upstream https://api.openai.com/v1 --cassette openai.jsonl --endpoint openai --key-env OPENAI_API_KEY
  dst record --upstream http://127.0.0.1:11434 --cassette ollama.jsonl --append

Point the client's base URL at the address printed (http://127.0.0.1:PORT, plus what the
client would put after the upstream's root). An existing cassette is refused without
--append. Stop with Ctrl-C: the counts of exchanges written and abandoned are printed.")]
pub(crate) struct RecordArgs {
    /// The provider's base URL; each request's path and query are appended to it.
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The cassette file to write.
    #[arg(long, value_name = "FILE")]
    cassette: PathBuf,
    /// The provider's format (a `dst serve` profile: `openai`, `anthropic`, `ollama`,
    /// ...): which header carries the `--key-env` key. Without it, only the client's own
    /// headers are forwarded.
    #[arg(long, value_name = "PROFILE")]
    endpoint: Option<String>,
    /// Where to listen (as `dst serve --bind`). The flag's old name still works,
    /// unlisted, so a script written for it keeps running.
    #[arg(
        long,
        alias = "listen",
        default_value = "127.0.0.1:8090",
        value_name = "ADDR"
    )]
    bind: SocketAddr,
    /// The environment variable holding the API key sent when a client sends none.
    #[arg(long, value_name = "VAR", requires = "endpoint")]
    key_env: Option<String>,
    /// A JSON body field to replace with `[REDACTED]` (dotted path, `*` for any key or
    /// index). Repeatable.
    #[arg(long = "redact-field", value_name = "PATH")]
    redact_fields: Vec<String>,
    /// Add to an existing cassette (of this format version) instead of refusing it.
    #[arg(long)]
    append: bool,
    /// End a body (recorded as the server falling silent) after this many seconds
    /// without a byte.
    #[arg(long, value_name = "N")]
    idle_timeout_s: Option<u64>,
}

/// Why `dst record` could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
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
    /// The cassette exists and `--append` was not given.
    #[error("cassette {0}: the file exists (pass --append to add to it, or choose another file)")]
    Exists(PathBuf),
    /// The cassette could not be opened.
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    /// The transport or the listener could not start.
    #[error("{0}")]
    Start(String),
}

/// The key header `endpoint`'s format sends `key` in (none for Ollama).
fn credential_of(
    endpoint: Option<&str>,
    key: &str,
) -> Result<Option<(String, String)>, RecordError> {
    let Some(name) = endpoint else {
        return Ok(None);
    };
    let profile = Profile::from_name(name).ok_or_else(|| RecordError::Flag {
        flag: "--endpoint",
        value: name.to_owned(),
        reason: format!(
            "unknown profile; known: {}",
            Profile::ALL.map(Profile::name).join(", ")
        ),
    })?;
    Ok(profile.credential(key))
}

/// The key of `--key-env`, if given.
fn key_of(args: &RecordArgs) -> Result<Option<String>, RecordError> {
    let Some(variable) = &args.key_env else {
        return Ok(None);
    };
    let refuse = |reason: &str| RecordError::Flag {
        flag: "--key-env",
        value: variable.clone(),
        reason: reason.to_owned(),
    };
    let key = std::env::var(variable).map_err(|_| refuse("the environment variable is not set"))?;
    if key.trim().is_empty() {
        return Err(refuse("the environment variable is empty"));
    }
    Ok(Some(key))
}

/// A request its client signed with AWS SigV4 (a Bedrock client, boto3) was signed for
/// the proxy's host; with `--key-env` holding an AWS key pair
/// (`ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`) the proxy signs it again for the
/// upstream at the time it forwards it. Any other key re-signs nothing.
fn resign_of(key: Option<&str>) -> Option<umi_dst::serve::ResignHook> {
    use umi_core::env::Environment as _;
    let pair = umi_core::llm::bedrock::sigv4::Credentials::parse(key?).ok()?;
    let clock = SystemEnvironment::new();
    Some(Arc::new(move |http| {
        umi_core::llm::bedrock::resign(http, &pair, clock.unix_time_ms())
    }))
}

/// The cassette's writer: created, or appended to with `--append`.
fn writer_of(args: &RecordArgs) -> Result<CassetteWriter, RecordError> {
    let recorded_by = format!("dst record {}", env!("CARGO_PKG_VERSION"));
    let mut header = Header::new(&recorded_by, Some(&args.upstream));
    header.redacted_fields.clone_from(&args.redact_fields);
    if args.append {
        return Ok(CassetteWriter::append_to(&args.cassette, &header)?);
    }
    if args.cassette.exists() {
        return Err(RecordError::Exists(args.cassette.clone()));
    }
    Ok(CassetteWriter::create(&args.cassette, &header)?)
}

/// What the proxy runs on, and the recorder whose counts are printed at the end.
struct Recording {
    recorder: Arc<RecordingTransport<ReqwestTransport>>,
    config: ProxyConfig,
}

fn recording_of(args: &RecordArgs) -> Result<Recording, RecordError> {
    if !(args.upstream.starts_with("http://") || args.upstream.starts_with("https://")) {
        return Err(RecordError::Flag {
            flag: "--upstream",
            value: umi_core::llm::secrets::redact_url(&args.upstream),
            reason: "an upstream is an http:// or https:// URL".into(),
        });
    }
    let key = key_of(args)?;
    let credential = match &key {
        Some(key) => credential_of(args.endpoint.as_deref(), key)?,
        None => credential_of(args.endpoint.as_deref(), "").map(|_| None)?,
    };
    let mut redaction = Redaction::new();
    let mut redactor = Redactor::new().with_url(&args.upstream);
    if let Some(key) = &key {
        redaction = redaction.with_secret(key);
        redactor = redactor.with_secret(key);
    }
    for field in &args.redact_fields {
        redaction = redaction.with_field(field);
    }
    let writer = writer_of(args)?;
    let inner = ReqwestTransport::new().map_err(|e| RecordError::Start(e.to_string()))?;
    let env: umi_core::env::Env = Arc::new(SystemEnvironment::new());
    let mut recorder =
        RecordingTransport::new(inner, writer, env, &args.upstream).with_redaction(redaction);
    if let Some(seconds) = args.idle_timeout_s {
        recorder = recorder.with_idle_timeout(Duration::from_secs(seconds));
    }
    let recorder = Arc::new(recorder);
    let transport: Arc<dyn Transport> = recorder.clone();
    let config = ProxyConfig {
        bind: args.bind,
        upstream: args.upstream.clone(),
        transport,
        credential,
        redactor,
        on_failure: Arc::new(|line: &str| eprintln!("dst record: not recorded: {line}")),
        resign: resign_of(key.as_deref()),
    };
    Ok(Recording { recorder, config })
}

/// Runs `dst record` until SIGINT or SIGTERM.
pub(crate) fn run(args: &RecordArgs) -> ExitCode {
    let Recording { recorder, config } = match recording_of(args) {
        Ok(recording) => recording,
        Err(error) => {
            eprintln!("dst record: {error}");
            return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
        }
    };
    // A real runtime: recording talks to a real provider over real sockets.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dst record: cannot start a runtime: {error}");
            return process_exit_code(EXIT_CODE_ERROR);
        }
    };
    let upstream = umi_core::llm::secrets::redact_url(&args.upstream);
    if !args.bind.ip().is_loopback() {
        eprintln!(
            "dst record: warning: listening on {} (not loopback): anyone who can reach it can use the upstream{}",
            args.bind,
            if args.key_env.is_some() {
                " with your key"
            } else {
                ""
            }
        );
    }
    runtime.block_on(async move {
        let proxy = match RunningProxy::start(config).await {
            Ok(proxy) => proxy,
            Err(error) => {
                eprintln!("dst record: {error}");
                return process_exit_code(EXIT_CODE_ERROR);
            }
        };
        println!("dst record: listening on {}", proxy.base_url());
        println!(
            "dst record: forwarding to {upstream}, recording into {}",
            shown(&args.cassette)
        );
        super::serve::wait_for_signal().await;
        eprintln!("dst record: stopping (in-flight responses finish first)");
        proxy.shutdown().await;
        println!(
            "dst record: {} exchanges written, {} abandoned, {} not written (file errors)",
            recorder.written(),
            recorder.abandoned(),
            recorder.write_failures()
        );
        if recorder.write_failures() > 0 {
            return process_exit_code(EXIT_CODE_ERROR);
        }
        ExitCode::SUCCESS
    })
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}
