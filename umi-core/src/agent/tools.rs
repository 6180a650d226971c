//! The tool registry: a name, a JSON Schema and an async handler per tool.
//!
//! A handler gets the model's arguments ([`ToolHandler::call`]) or, when it needs to
//! know which call it serves (a tool with side effects keeping one effect per logical
//! call, a simulated tool's ledger), the whole [`ToolInvocation`]: the model's call id,
//! the tool's name and the arguments ([`ToolHandler::invoke`], which the agent calls).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::error::AgentError;
use crate::llm::ToolDefinition;

/// One call of a tool, as the model made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInvocation {
    /// The model's id of the call (`call_…`, `toolu_…`): the logical call an effect
    /// belongs to, whatever retries carry it.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The model's arguments.
    pub arguments: Value,
}

/// What a tool does when called. `Err` is a failure the model is told about (the result
/// is marked unsuccessful), not an error of the agent run.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// Runs the tool with the model's arguments.
    async fn call(&self, arguments: Value) -> Result<String, String>;

    /// Runs the tool for `invocation` (the agent's way in). By default, `call` with its
    /// arguments; a handler that needs the call's id overrides it.
    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        self.call(invocation.arguments).await
    }
}

struct FnHandler<F>(F);

#[async_trait]
impl<F, Fut> ToolHandler for FnHandler<F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, String>> + Send,
{
    async fn call(&self, arguments: Value) -> Result<String, String> {
        (self.0)(arguments).await
    }
}

/// The tools an agent may call, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, (ToolDefinition, Arc<dyn ToolHandler>)>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a second tool with the same name is refused.
    pub fn register(
        &mut self,
        definition: ToolDefinition,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), AgentError> {
        if definition.name.is_empty() {
            return Err(AgentError::InvalidConfig {
                reason: "a tool needs a name".into(),
            });
        }
        if self.tools.contains_key(&definition.name) {
            return Err(AgentError::InvalidConfig {
                reason: format!("tool {:?} is registered twice", definition.name),
            });
        }
        self.tools
            .insert(definition.name.clone(), (definition, handler));
        Ok(())
    }

    /// Adds a tool whose handler is an async closure.
    pub fn register_fn<F, Fut>(
        &mut self,
        name: &str,
        description: &str,
        parameters: Value,
        handler: F,
    ) -> Result<(), AgentError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.register(
            ToolDefinition::new(name, description, parameters),
            Arc::new(FnHandler(handler)),
        )
    }

    /// The definitions offered to the model, by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|(definition, _)| definition.clone())
            .collect()
    }

    /// The handler of `name`.
    pub fn handler(&self, name: &str) -> Option<Arc<dyn ToolHandler>> {
        self.tools.get(name).map(|(_, handler)| handler.clone())
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
