//! `dst mcp`: the simulated MCP server over stdio, for agents that spawn their MCP
//! servers (`command: "dst", args: ["mcp", "--seed", "7"]`). One JSON-RPC message per
//! line in, one per line out ([`umi_dst::serve::StdioServer`]); what it does goes to
//! stderr, never stdout, which belongs to the protocol.

#![allow(
    clippy::print_stderr,
    reason = "a command line talks to its user, on stderr: stdout is the protocol's"
)]

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, process_exit_code};
use umi_dst::fault::FaultKind;
use umi_dst::serve::{McpToolsSpec, ServeConfig, ServeError, StdioServer};
use umi_dst::simulation::settings::parse_seed;
use umi_dst::{FaultConfig, Scenario};

/// The longest line read from stdin, in bytes (a message past it is refused and ends
/// the server: the rest of the line cannot be told from the next message).
pub(crate) const STDIO_LINE_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Exit code of a server the simulation crashed mid-message (`tool.mcp_stream_cut`).
pub(crate) const EXIT_CODE_DIED: i32 = 3;

/// `dst mcp`'s flags.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  dst mcp --seed 7                                   the built-in tools on stdin/stdout
  dst mcp --mcp-tools tools.json --faults tool.mcp_internal_error=0.1,tool.timeout=0.2
  dst mcp --faults tool.timeout@tool.call.send_payment=1      only that tool's calls time out

Each line is answered in a simulation of its own, seeded by --seed, the message (not its
id) and how many times it came before: a process started again with the same seed gives
the same lines. A stream the simulation cuts is a server that dies mid-message (exit 3).")]
pub(crate) struct McpArgs {
    /// The seed (decimal or 0x hex).
    #[arg(long, default_value = "1", value_parser = parse_seed)]
    seed: u64,
    /// The tools, declared in a JSON file (as for `dst serve --mcp-tools`). Default:
    /// `get_weather`, `search_docs` and `send_payment`.
    #[arg(long, value_name = "FILE")]
    mcp_tools: Option<PathBuf>,
    /// Faults: rules `KIND[@OPERATION][#N[..]]=P`, comma-separated, of the `tool.*`
    /// kinds (`tool.timeout@tool.call.send_payment=0.5`,
    /// `tool.mcp_stream_cut@tool.mcp.request.tools/call#2=1`: the process's 2nd
    /// `tools/call`; `dst serve --help` explains), or a scenario's name for its fault
    /// profile.
    #[arg(long, value_name = "RULES")]
    faults: Option<String>,
}

/// The config the flags describe. stdio has no sessions, so `tool.mcp_session_expired`
/// is refused by name.
pub(crate) fn config_of(
    args: &McpArgs,
    scenarios: &[Arc<dyn Scenario>],
) -> Result<ServeConfig, ServeError> {
    let mut config = ServeConfig::default();
    config.seed = args.seed;
    if let Some(path) = &args.mcp_tools {
        config.mcp = McpToolsSpec::load(path)?;
    }
    if let Some(faults) = &args.faults {
        let parsed: Vec<FaultConfig> = super::serve::faults_of(faults, scenarios)?;
        if parsed
            .iter()
            .any(|f| f.kind() == FaultKind::McpSessionExpired)
        {
            return Err(ServeError::Flag {
                flag: "--faults",
                value: faults.clone(),
                reason: "tool.mcp_session_expired needs HTTP sessions; over stdio the process is the session".into(),
            });
        }
        config.faults = parsed;
    }
    config.validate()?;
    Ok(config)
}

/// Runs `dst mcp` until stdin ends.
pub(crate) fn run(args: &McpArgs, scenarios: &[Arc<dyn Scenario>]) -> ExitCode {
    let config = match config_of(args, scenarios) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("dst mcp: {error}");
            return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
        }
    };
    eprintln!(
        "dst mcp: seed {} · tools {}",
        config.seed,
        tool_names(&config)
    );
    let mut server = StdioServer::new(config);
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut line = String::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        let read = Read::by_ref(&mut input)
            .take(STDIO_LINE_BYTES_MAX as u64 + 1)
            .read_line(&mut line);
        match read {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(n) if n > STDIO_LINE_BYTES_MAX => {
                eprintln!("dst mcp: a line is over {STDIO_LINE_BYTES_MAX} bytes; stopping");
                return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
            }
            Ok(_) => {}
            Err(error) => {
                eprintln!("dst mcp: cannot read stdin: {error}");
                return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
            }
        }
        let message = line.trim_end_matches(['\n', '\r']);
        if message.trim().is_empty() {
            continue;
        }
        let reply = server.answer_line(message);
        if write_reply(&mut stdout, &reply).is_err() {
            // The client hung up: nothing left to answer.
            return ExitCode::SUCCESS;
        }
        if reply.died_mid_message.is_some() {
            eprintln!(
                "dst mcp: the simulation cut this response; the server dies here (exit {EXIT_CODE_DIED})"
            );
            return process_exit_code(EXIT_CODE_DIED);
        }
    }
}

fn write_reply(out: &mut impl Write, reply: &umi_dst::serve::StdioReply) -> std::io::Result<()> {
    for line in &reply.lines {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let Some(partial) = &reply.died_mid_message {
        out.write_all(partial.as_bytes())?;
    }
    out.flush()
}

fn tool_names(config: &ServeConfig) -> String {
    let names: Vec<&str> = config.mcp.tools.iter().map(|t| t.name.as_str()).collect();
    names.join(", ")
}
