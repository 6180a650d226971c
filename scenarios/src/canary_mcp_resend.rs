//! Scenario `canary_mcp_resend`: a planted bug over MCP that only the effect ledger's
//! checker finds.
//!
//! The agent's tools are on an MCP server, called through umi-core's MCP client, but a
//! "resilience" layer sends a `tools/call` again when the first one's stream broke. The
//! client says such an error may mean the call ran ([`McpError::maybe_applied`]), and the
//! spec says a disconnection is not a cancellation (2025-11-25, transports): the server
//! may have paid before the stream was cut. The resend pays again under the same call
//! id. The agent sees nothing wrong (the second call answers), so only `check_effects`
//! over the ledger sees it.
//!
//! Like the [`crate::canary`], a sweep that does not find it is broken; its failures are
//! not regressions and its seeds are not recorded.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use umi_core::agent::{Agent, ToolHandler, ToolInvocation, ToolRegistry};
use umi_core::llm::Message;
use umi_core::llm::transport::Transport;
use umi_core::mcp::{McpClient, McpError, McpTools};
use umi_dst::checkers::effects::check_effects;
use umi_dst::mcp::SimMcpServer;
use umi_dst::network::SimNetwork;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation};

use crate::tool_effects::{PROMPTS, agent_config, tools};

/// The MCP server's endpoint.
const MCP_URL: &str = "http://tools.sim/mcp";

/// The scenario.
#[umi_dst::scenario(
    goal = "a tool layer that resends an MCP call whose stream broke (planted bug)",
    faults = [stream_cut_on_tool_calls()],
    marks = ["canary.mcp_call_resent"],
    canary,
    run = run,
    rank = 210,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CanaryMcpResend;

/// Its fault: an MCP stream cut, on `tools/call` requests only.
fn stream_cut_on_tool_calls() -> FaultConfig {
    let calls = umi_dst::fault::point::MCP_REQUEST.with_qualifier("tools/call");
    FaultConfig::chance(FaultKind::McpStreamCut, 0.3)
        .on_operation(&calls)
        .expect("tool.mcp.request.tools/call is a point where a stream can be cut")
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = tools(&sim);
    let server = SimMcpServer::new("billing", tools.clone());
    let network: Arc<dyn Transport> = Arc::new(SimNetwork::new(&sim).with_mcp(MCP_URL, server));
    let client = Arc::new(McpClient::new(network, sim.env(), MCP_URL));
    let mut registry = ToolRegistry::new();
    // The session is faultless at first: tools/list is never cut (only tools/call is).
    McpTools::register(client.clone(), &mut registry)
        .await
        .map_err(|error| Violation::new(format!("the tools did not register: {error}")))?;
    let resending = resending(&registry, &client, &sim);
    let agent = Agent::new(sim.llm(), sim.env())
        .with_tools(resending)
        .with_config(agent_config());
    for prompt in PROMPTS {
        let _ = agent
            .run(vec![
                Message::system("Use the tools."),
                Message::user(prompt),
            ])
            .await;
    }
    sim.faults().heal();
    check_effects(&tools.ledger(), &sim.llm().tool_call_ids())
}

/// `registry`'s tools, each behind the planted resend layer.
fn resending(
    registry: &ToolRegistry,
    client: &Arc<McpClient>,
    sim: &SimEnvironment,
) -> ToolRegistry {
    let mut wrapped = ToolRegistry::new();
    for definition in registry.definitions() {
        let handler = Resend {
            client: client.clone(),
            name: definition.name.clone(),
            env: sim.env(),
        };
        wrapped
            .register(definition, Arc::new(handler))
            .expect("the names were unique in the registry wrapped");
    }
    wrapped
}

/// The planted layer: a call whose stream broke is sent again, as it was.
struct Resend {
    client: Arc<McpClient>,
    name: String,
    env: umi_core::env::Env,
}

impl Resend {
    async fn once(&self, invocation: &ToolInvocation) -> Result<String, McpError> {
        let result = self
            .client
            .call_tool(
                &self.name,
                invocation.arguments.clone(),
                Some(&invocation.call_id),
            )
            .await?;
        Ok(result.text)
    }
}

#[async_trait]
impl ToolHandler for Resend {
    async fn call(&self, arguments: Value) -> Result<String, String> {
        let invocation = ToolInvocation {
            call_id: String::new(),
            name: self.name.clone(),
            arguments,
        };
        self.invoke(invocation).await
    }

    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        match self.once(&invocation).await {
            Err(error) if error.maybe_applied() => {
                self.env.cover("canary.mcp_call_resent");
                self.once(&invocation).await.map_err(|e| e.to_string())
            }
            other => other.map_err(|e| e.to_string()),
        }
    }
}
