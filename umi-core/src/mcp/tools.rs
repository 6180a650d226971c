//! An MCP server's tools as an agent's [`ToolRegistry`]: each tool a handler that calls
//! it over the client, with the model's call id in `_meta`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::{McpClient, McpError, McpTool};
use crate::agent::{AgentError, ToolHandler, ToolInvocation, ToolRegistry};
use crate::llm::ToolDefinition;

/// Builds registries of MCP servers' tools.
#[derive(Debug, Clone, Copy)]
pub struct McpTools;

/// Why a registry could not be built.
#[derive(Debug, thiserror::Error)]
pub enum McpToolsError {
    /// The server could not be reached or listed.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// Two of its tools share a name (or one shares a name with a tool already there).
    #[error(transparent)]
    Registry(#[from] AgentError),
}

impl McpTools {
    /// `registry` with every tool `client`'s server lists (connecting first when it is
    /// not connected).
    pub async fn register(
        client: Arc<McpClient>,
        registry: &mut ToolRegistry,
    ) -> Result<Vec<McpTool>, McpToolsError> {
        let tools = client.list_tools().await?;
        for tool in &tools {
            let definition =
                ToolDefinition::new(&tool.name, &tool.description, tool.input_schema.clone());
            let handler = McpToolHandler {
                client: client.clone(),
                name: tool.name.clone(),
            };
            registry.register(definition, Arc::new(handler))?;
        }
        Ok(tools)
    }
}

/// One MCP tool, as the agent calls it.
struct McpToolHandler {
    client: Arc<McpClient>,
    name: String,
}

#[async_trait]
impl ToolHandler for McpToolHandler {
    async fn call(&self, arguments: Value) -> Result<String, String> {
        self.invoke(ToolInvocation {
            call_id: String::new(),
            name: self.name.clone(),
            arguments,
        })
        .await
    }

    /// The result's text; an error result (`isError`) or a protocol error is the
    /// failure the model is told about.
    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        let call_id = (!invocation.call_id.is_empty()).then_some(invocation.call_id.as_str());
        match self
            .client
            .call_tool(&self.name, invocation.arguments, call_id)
            .await
        {
            Ok(result) if result.is_error => Err(result.text),
            Ok(result) => Ok(result.text),
            Err(error) => Err(error.to_string()),
        }
    }
}
