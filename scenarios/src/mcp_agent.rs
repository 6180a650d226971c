//! Scenario `mcp_agent`: an agent whose tools are on an MCP server, one of them paying,
//! under model, tool and MCP faults.
//!
//! Workload: an MCP server on SimNetwork (`http://tools.sim/mcp`) serving the three
//! tools of [`crate::tool_effects`] (`get_weather`, `search_notes`, and `pay`, with side
//! effects), two to a `tools/list` page; umi-core's MCP client connects to it over
//! SimNetwork and makes the agent's registry of them ([`McpTools`]); umi-core's agent
//! loop over SimLLM then runs the three prompts of [`crate::tool_effects`]. The server
//! forgets sessions (the client must initialize again and resend), cuts its streams,
//! fails with JSON-RPC errors, answers `initialize` with a version the client does not
//! speak, changes its tool list mid-session and goes silent; the tools time out (after
//! paying, sometimes), fail and answer garbage; the model's streams are cut.
//!
//! Invariants:
//! 1. No effect is applied twice for one logical call (the model's call id, which the
//!    client sends in `_meta`), and none belongs to a call the model never made: a
//!    request resent after a session expired never pays again.
//! 2. The model gets exactly one result for every call it made, in every request.
//! 3. A version the client does not speak is refused as a typed error naming the
//!    version the server sent.
//! 4. Every run ends within its bounds (turns, timeouts, simulated time).

use std::sync::Arc;
use std::time::Duration;

use umi_core::agent::{Agent, ToolRegistry};
use umi_core::llm::Message;
use umi_core::llm::transport::Transport;
use umi_core::mcp::{McpClient, McpClientConfig, McpError, McpTools, McpToolsError};
use umi_dst::checkers::effects::check_effects;
use umi_dst::checkers::tool_results::check_tool_results;
use umi_dst::mcp::SimMcpServer;
use umi_dst::network::SimNetwork;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::tool_effects::{PROMPTS, agent_config, tools};

/// The MCP server's endpoint.
const MCP_URL: &str = "http://tools.sim/mcp";

/// How long the client waits for one MCP response.
const MCP_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Times the agent's owner tries to get the server's tools before running without them.
const CONNECT_ATTEMPTS_MAX: u32 = 3;

/// The scenario.
#[umi_dst::scenario(
    goal = "an agent whose tools are on a faulty MCP server never pays twice and never loses a result",
    faults = [
        FaultConfig::chance(FaultKind::McpSessionExpired, 0.08),
        FaultConfig::chance(FaultKind::McpStreamCut, 0.04),
        FaultConfig::chance(FaultKind::McpInternalError, 0.04),
        FaultConfig::chance(FaultKind::McpVersionMismatch, 0.1),
        FaultConfig::chance(FaultKind::McpToolsChanged, 0.05),
        FaultConfig::chance(FaultKind::McpNoResponse, 0.02),
        FaultConfig::chance(FaultKind::ToolTimeout, 0.05),
        FaultConfig::chance(FaultKind::ToolErrorResult, 0.05),
        FaultConfig::chance(FaultKind::ToolMalformedResult, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.05),
    ],
    marks = [
        "mcp.initialize",
        "mcp.tools_list",
        "mcp.tools_call",
        "mcp.session_expired",
        "mcp.client_reinitialized",
        "mcp.stream_cut",
        "mcp.version_mismatch",
        "mcp.tools_changed",
        "tool.effect",
    ],
    run = run,
    rank = 140,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct McpAgent;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = tools(&sim);
    let server = SimMcpServer::new("billing", tools.clone()).with_page_size(2);
    let network: Arc<dyn Transport> = Arc::new(SimNetwork::new(&sim).with_mcp(MCP_URL, server));
    let config = McpClientConfig::default().with_request_timeout(MCP_REQUEST_TIMEOUT);
    let client = Arc::new(McpClient::new(network, sim.env(), MCP_URL).with_config(config));
    let registry = mcp_registry(&client).await?;
    let agent = Agent::new(sim.llm(), sim.env())
        .with_tools(registry)
        .with_config(agent_config());
    let env = sim.env();
    // A turn: a model answer (cut ones sent again) and two rounds of tools, each bounded
    // by the agent's tool timeout; MCP requests by theirs.
    let run_max = (MCP_REQUEST_TIMEOUT * 4 + Duration::from_secs(120)) * 6;
    for prompt in PROMPTS {
        let began = env.elapsed();
        let _outcome = agent
            .run(vec![
                Message::system("Use the tools."),
                Message::user(prompt),
            ])
            .await;
        let took = env.elapsed() - began;
        ensure!(
            took <= run_max,
            "{prompt:?}: the run took {took:?}, over {run_max:?}"
        );
    }
    sim.faults().heal();
    check_effects(&tools.ledger(), &sim.llm().tool_call_ids())?;
    check_tool_results(&sim.llm())
}

/// The server's tools as a registry, trying [`CONNECT_ATTEMPTS_MAX`] times; none when
/// the server cannot be used. A version the client does not speak must be refused.
async fn mcp_registry(client: &Arc<McpClient>) -> Result<ToolRegistry, Violation> {
    for _attempt in 0..CONNECT_ATTEMPTS_MAX {
        let mut registry = ToolRegistry::new();
        match McpTools::register(client.clone(), &mut registry).await {
            Ok(_) => return Ok(registry),
            Err(McpToolsError::Mcp(McpError::Version { version, .. })) => {
                ensure!(
                    version == umi_dst::mcp::PROTOCOL_VERSION_OLDEST,
                    "a version refused that the server never sends: {version}"
                );
            }
            Err(McpToolsError::Mcp(_)) => {}
            Err(McpToolsError::Registry(error)) => {
                return Err(Violation::new(format!(
                    "the server's tools do not register: {error}"
                )));
            }
        }
    }
    Ok(ToolRegistry::new())
}
