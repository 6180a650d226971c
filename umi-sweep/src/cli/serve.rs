//! `dst serve`'s command line: flags into a [`ServeConfig`] (every refusal naming its
//! flag), the server started on a runtime of its own, and SIGINT or SIGTERM for a
//! graceful stop.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command line talks to its user"
)]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use umi_dst::failure_class::{EXIT_CODE_BAD_ARGUMENTS, EXIT_CODE_ERROR, process_exit_code};
use umi_dst::fault::FaultConfig;
use umi_dst::fault::aim::parse_rules;
use umi_dst::scenario::Scenario;
use umi_dst::serve::{
    DEFAULT_PROFILES, EndpointSpec, MODEL_DEFAULT, ServeConfig, ServeError, Server, format_path,
};
use umi_dst::simulation::settings::parse_seed;

/// `dst serve`'s flags.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  dst serve --seed 7                   every format at its standard path, any model name
  dst serve --endpoint anthropic --model claude-sim      only Anthropic, only that model
  dst serve --endpoint deepseek_reasoner@/deepseek --faults llm.rate_limit=0.2,network.reset=0.05
  dst serve --faults wire_shapes --time-scale 0.1      a scenario's faults, latency at a tenth
  dst serve --faults tool.timeout@tool.call.send_payment=0.5,llm.rate_limit@llm.call#2=1
                                       faults aimed at one tool and at each scope's 2nd model call

Base URLs (HOST = http://127.0.0.1:PORT): OpenAI SDKs and the frameworks on them
HOST/v1; Anthropic's SDKs HOST; Ollama's HOST; google-genai HOST. Per test, put
/seed/N/scope/S before them (HOST/seed/42/scope/run-1/v1), or send the headers
x-umi-seed and x-umi-scope. MCP clients: HOST/mcp (Streamable HTTP), the tools of
--mcp-tools, seeded the same way.

Each request is answered from (seed, endpoint, what the model is asked, how many times it
was asked before in its scope). `stream`, `stream_options` and fields no model reads do
not count, so streamed and whole get the same answer. A scope (x-umi-scope or /scope/S)
only counts repeats and feeds no seed: give each test run a fresh one, and a rerun on a
used server answers as a fresh server does; POST /umi/reset[?scope=S] forgets counts. Every
response carries x-umi-seed, x-umi-request-hash, x-umi-occurrence and x-umi-faults;
GET /umi/trace[?scope=S] returns the log.

Fault rules aim with `@OPERATION`: `llm.call` (a model request), `llm.embed`,
`network.connect`, `network.body`, `tool.mcp.initialize`, `tool.mcp.request.METHOD`
(`ping`, `tools/list`, `tools/call`), `tool.call.TOOL` (a served tool); a trailing `*`
aims at a prefix. One that reaches none of these is refused by name. `#N` counts a
scope's requests in the order they arrive: the one thing that depends on arrival order.")]
pub(crate) struct ServeArgs {
    /// The session seed (decimal or 0x hex).
    #[arg(long, default_value = "1", value_parser = parse_seed)]
    seed: u64,
    /// An endpoint: a profile, optionally at a path prefix (`deepseek_chat@/deepseek`).
    /// Repeatable. Default: every format at the root.
    #[arg(long = "endpoint", value_name = "PROFILE[@/PREFIX]", long_help = endpoint_help())]
    endpoints: Vec<String>,
    /// A model name to serve. Repeatable; others get the provider's "model not found".
    /// Default: any name is answered (the model lists show `umi-sim`).
    #[arg(long = "model", value_name = "NAME")]
    models: Vec<String>,
    /// Faults: rules `KIND[@OPERATION][#N[..]]=P`, comma-separated: `llm.rate_limit=0.2`
    /// (every model call), `tool.timeout@tool.call.issue_refund=0.5` (one tool),
    /// `tool.mcp_stream_cut@tool.mcp.request.tools/call=1` (one MCP method),
    /// `llm.rate_limit@llm.call#2=1` (the 2nd model call of each scope, counted as the
    /// requests arrive; `#2..`: the 2nd and later). Or a scenario's name for its fault
    /// profile (`dst list` shows them).
    #[arg(long, value_name = "RULES")]
    faults: Option<String>,
    /// Swarm mode: each request's seed switches the chosen fault kinds on and off.
    #[arg(long)]
    swarm: bool,
    /// Real seconds per simulated second (0: answer at once; 1: real latency).
    #[arg(long, default_value_t = 0.0)]
    time_scale: f64,
    /// Where to listen. Anything but loopback is warned about.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    bind: SocketAddr,
    /// An origin `/mcp` accepts besides local ones (`https://app.example`), or `*` for
    /// any. Repeatable. A request whose `Origin` header names another gets 403, as MCP
    /// requires of servers (DNS rebinding); clients that are not browsers send none.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Requests in flight at most; more get a 503 with Retry-After.
    #[arg(long, default_value_t = umi_dst::serve::CONCURRENCY_MAX_DEFAULT)]
    concurrency_max: usize,
    /// The largest request body in bytes; larger ones get a 413.
    #[arg(long, default_value_t = umi_dst::serve::BODY_BYTES_MAX_DEFAULT)]
    body_bytes_max: usize,
    /// Require this environment variable's value as the API key (`Authorization: Bearer`,
    /// `x-api-key`, `api-key`).
    #[arg(long, value_name = "VARIABLE")]
    api_key_env: Option<String>,
    /// The tools of the simulated MCP server at `/mcp`, declared in a JSON file (see the
    /// guide). Default: `get_weather`, `search_docs` and `send_payment`.
    #[arg(long, value_name = "FILE")]
    mcp_tools: Option<std::path::PathBuf>,
    /// Answer from a cassette (`dst record` writes one): the recorded bytes, under the
    /// seed's reads, latency and faults. Paths are matched below each endpoint's prefix.
    #[arg(long, value_name = "FILE")]
    cassette: Option<std::path::PathBuf>,
    /// A request body field the cassette's matching ignores (dotted, `*` for any index
    /// or key: `user`, `metadata`, `messages.*.name`); repeatable.
    #[arg(long, value_name = "PATH", requires = "cassette")]
    cassette_ignore: Vec<String>,
    /// What a request the cassette does not hold gets: `refuse` (the provider's 400,
    /// naming the closest recorded request), `model` (SimLLM answers) or `fail` (a 500).
    #[arg(
        long,
        value_name = "RULE",
        default_value = "refuse",
        requires = "cassette"
    )]
    cassette_on_miss: OnMissArg,
    /// What an identical request past the last recorded one gets: `repeat` (the last
    /// answer again) or `miss`.
    #[arg(
        long,
        value_name = "RULE",
        default_value = "repeat",
        requires = "cassette"
    )]
    cassette_past_last: PastLastArg,
}

/// `--endpoint`'s long help: the default endpoints named from the registry
/// ([`DEFAULT_PROFILES`]), so a format added there is in `--help` too.
fn endpoint_help() -> String {
    let defaults: Vec<String> = DEFAULT_PROFILES
        .iter()
        .map(|profile| format!("`{}` ({})", profile.name(), format_path(*profile)))
        .collect();
    format!(
        "An endpoint: a profile, optionally at a path prefix (`deepseek_chat@/deepseek`). \
         Repeatable. Default: every format at the root: {}.",
        defaults.join(", ")
    )
}

/// `--cassette-on-miss`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OnMissArg {
    Refuse,
    Model,
    Fail,
}

/// `--cassette-past-last`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PastLastArg {
    Repeat,
    Miss,
}

/// The replay `--cassette` and its flags describe.
fn replay_of(args: &ServeArgs) -> Result<Option<Arc<umi_dst::network::Replay>>, ServeError> {
    use umi_dst::network::{OnMiss, PastLast, Replay, ReplayOptions};
    let Some(path) = &args.cassette else {
        return Ok(None);
    };
    let cassette = umi_core::cassette::Cassette::load(path)?;
    let mut options = ReplayOptions::default();
    for field in &args.cassette_ignore {
        options.ignore = options.ignore.with_path(field);
    }
    options.on_miss = match args.cassette_on_miss {
        OnMissArg::Refuse => OnMiss::Refuse,
        OnMissArg::Model => OnMiss::Model,
        OnMissArg::Fail => OnMiss::FailRun,
    };
    options.past_last = match args.cassette_past_last {
        PastLastArg::Repeat => PastLast::RepeatLast,
        PastLastArg::Miss => PastLast::Miss,
    };
    Ok(Some(Arc::new(Replay::new(Arc::new(cassette), options))))
}

/// `--faults`: rules in the text form of `umi_dst::fault::aim`
/// (`kind[@operation][#n[..]]=probability,...`), or a scenario's name for its fault
/// profile. Whether an aimed rule's operation exists is the config's check (it knows the
/// tools served).
pub(crate) fn faults_of(
    text: &str,
    scenarios: &[Arc<dyn Scenario>],
) -> Result<Vec<FaultConfig>, ServeError> {
    if let Some(scenario) = scenarios.iter().find(|s| s.name() == text) {
        return Ok(scenario.faults());
    }
    parse_rules(text).map_err(|error| {
        let mut reason = error.to_string();
        if !text.contains('=') {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
            reason.push_str(&format!("; nor is it a scenario ({})", names.join(", ")));
        }
        ServeError::Flag {
            flag: "--faults",
            value: text.to_owned(),
            reason,
        }
    })
}

/// The config the flags describe.
pub(crate) fn config_of(
    args: &ServeArgs,
    scenarios: &[Arc<dyn Scenario>],
) -> Result<ServeConfig, ServeError> {
    let mut config = ServeConfig::default();
    config.seed = args.seed;
    config.time_scale = args.time_scale;
    config.bind = args.bind;
    config.allowed_origins.clone_from(&args.allow_origins);
    config.concurrency_max = args.concurrency_max;
    config.body_bytes_max = args.body_bytes_max;
    if !args.endpoints.is_empty() {
        config.endpoints = args
            .endpoints
            .iter()
            .map(|e| EndpointSpec::parse(e))
            .collect::<Result<_, _>>()?;
    }
    if !args.models.is_empty() {
        config.models.clone_from(&args.models);
    }
    if let Some(faults) = &args.faults {
        config.faults = faults_of(faults, scenarios)?;
    }
    if let Some(path) = &args.mcp_tools {
        config.mcp = umi_dst::serve::McpToolsSpec::load(path)?;
    }
    config.cassette = replay_of(args)?;
    if args.swarm {
        if config.faults.is_empty() {
            return Err(ServeError::Flag {
                flag: "--swarm",
                value: String::new(),
                reason: "swarm mode switches --faults on and off: name some".into(),
            });
        }
        config.swarm = true;
    }
    if let Some(variable) = &args.api_key_env {
        let key = std::env::var(variable).map_err(|_| ServeError::Flag {
            flag: "--api-key-env",
            value: variable.clone(),
            reason: "the environment variable is not set".into(),
        })?;
        let key = umi_core::llm::secrets::ApiKey::parse(key).map_err(|error| ServeError::Flag {
            flag: "--api-key-env",
            value: variable.clone(),
            reason: format!("the environment variable's value is refused: {error}"),
        })?;
        config.api_key = Some(key);
    }
    config.validate()?;
    Ok(config)
}

/// Runs `dst serve` until SIGINT or SIGTERM.
pub(crate) fn run(args: &ServeArgs, scenarios: &[Arc<dyn Scenario>]) -> ExitCode {
    let config = match config_of(args, scenarios) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("dst serve: {error}");
            return process_exit_code(EXIT_CODE_BAD_ARGUMENTS);
        }
    };
    // A real runtime: `dst serve` is a real server on real sockets.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dst serve: cannot start a runtime: {error}");
            return process_exit_code(EXIT_CODE_ERROR);
        }
    };
    runtime.block_on(async move {
        if !config.bind.ip().is_loopback() {
            eprintln!("dst serve: warning: listening on {} (not loopback): anyone who can reach it can use it", config.bind);
        }
        let summary = describe(&config);
        let server = match Server::start(config).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("dst serve: {error}");
                return process_exit_code(EXIT_CODE_ERROR);
            }
        };
        println!("umi serve: listening on {}", server.base_url());
        println!("{summary}");
        wait_for_signal().await;
        eprintln!("dst serve: stopping (in-flight responses finish first)");
        server.shutdown().await;
        ExitCode::SUCCESS
    })
}

fn describe(config: &ServeConfig) -> String {
    let endpoints: Vec<String> = config
        .endpoints
        .iter()
        .map(|e| {
            format!(
                "  {:<18} {}{}",
                e.profile.name(),
                e.prefix,
                format_path(e.profile)
            )
        })
        .collect();
    let faults = if config.faults.is_empty() {
        "none".to_owned()
    } else {
        config
            .faults
            .iter()
            .map(umi_dst::fault::aim::aim_text)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let models = if config.models.is_empty() {
        format!("any (listed as {MODEL_DEFAULT})")
    } else {
        config.models.join(", ")
    };
    let tools: Vec<&str> = config.mcp.tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "seed {} · models {models} · faults {faults} · time scale {}\n{}\n  {:<18} /mcp ({})",
        config.seed,
        config.time_scale,
        endpoints.join("\n"),
        "mcp",
        tools.join(", ")
    )
}

/// Waits for SIGINT or SIGTERM (Ctrl-C only, off Unix).
pub(crate) async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let Ok(mut terminate) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            biased;
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
