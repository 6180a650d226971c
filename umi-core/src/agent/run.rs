//! The state of one agent run across its iterations: the conversation, the counters the
//! outcome reports, and what the loop detectors remember (the last batch of tool calls,
//! the tool results seen).

use std::collections::BTreeSet;

use super::{AgentError, signature};
use crate::llm::{Message, TokenUsage, ToolCall, ToolDefinition};

/// One run's state.
pub(super) struct Run {
    pub(super) messages: Vec<Message>,
    /// The tools offered at every turn.
    pub(super) definitions: Vec<ToolDefinition>,
    pub(super) usage: TokenUsage,
    pub(super) iterations: u32,
    pub(super) trims: u32,
    pub(super) tool_calls: usize,
    /// The last batch of tool calls, as [`signature`] spells it.
    last_signature: String,
    /// How many times in a row that batch came.
    repeats: u32,
    /// Every `tool(arguments)=result` seen in the run.
    pub(super) seen_results: BTreeSet<String>,
    /// Tool batches in a row that brought no new result.
    pub(super) stagnant: u32,
}

impl Run {
    pub(super) fn new(messages: Vec<Message>, definitions: Vec<ToolDefinition>) -> Self {
        Self {
            messages,
            definitions,
            usage: TokenUsage::default(),
            iterations: 0,
            trims: 0,
            tool_calls: 0,
            last_signature: String::new(),
            repeats: 0,
            seen_results: BTreeSet::new(),
            stagnant: 0,
        }
    }

    /// Adds one turn's usage (saturating).
    pub(super) fn add_usage(&mut self, turn: Option<TokenUsage>) {
        if let Some(turn) = turn {
            self.usage.prompt_tokens = self.usage.prompt_tokens.saturating_add(turn.prompt_tokens);
            self.usage.completion_tokens = self
                .usage
                .completion_tokens
                .saturating_add(turn.completion_tokens);
        }
    }

    /// Counts `calls` against the same batch in a row: `repeat_limit` of them is a loop.
    pub(super) fn check_repeats(
        &mut self,
        calls: &[ToolCall],
        repeat_limit: u32,
    ) -> Result<(), AgentError> {
        let batch = signature(calls);
        self.repeats = if batch == self.last_signature {
            self.repeats + 1
        } else {
            1
        };
        if self.repeats >= repeat_limit {
            return Err(AgentError::LoopDetected {
                reason: format!(
                    "the same tool calls {} times in a row: {}",
                    self.repeats,
                    crate::llm::snippet(&batch)
                ),
            });
        }
        self.last_signature = batch;
        Ok(())
    }
}
