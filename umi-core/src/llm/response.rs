//! What a model answers: the response, why it stopped, what it cost, and which model.

use serde::{Deserialize, Serialize};

use super::message::ToolCall;

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end, or a stop sequence.
    Stop,
    /// The token limit (`max_tokens`) was reached; the answer is cut.
    Length,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The provider's content filter withheld the answer.
    ContentFilter,
    /// Generation was cut off (cancelled, or the provider aborted it).
    Aborted,
}

impl FinishReason {
    /// The reason's wire name (`tool_calls`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Aborted => "aborted",
        }
    }
}

/// Tokens a call consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens of the prompt.
    pub prompt_tokens: u32,
    /// Tokens of the answer.
    pub completion_tokens: u32,
}

impl TokenUsage {
    /// Usage of `prompt_tokens` in and `completion_tokens` out.
    pub fn new(prompt_tokens: u32, completion_tokens: u32) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
        }
    }

    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        u64::from(self.prompt_tokens) + u64::from(self.completion_tokens)
    }
}

/// A model and its limits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    /// The provider's name (`openai`, `ollama`, `sim`).
    pub provider: String,
    /// The model's id at that provider (`gpt-4o-mini`, `qwen3:8b`).
    pub model: String,
    /// Tokens of prompt plus answer the model accepts.
    pub context_window_tokens: u32,
    /// Most tokens the model generates in one answer.
    pub max_output_tokens: u32,
}

impl ModelRef {
    /// A model `provider/model` with its limits.
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        context_window_tokens: u32,
        max_output_tokens: u32,
    ) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            context_window_tokens,
            max_output_tokens,
        }
    }

    /// `provider/model`, the form routers and configs use.
    pub fn id(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// One complete answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionResponse {
    /// The answer's text (empty when the model only called tools).
    pub text: String,
    /// Tool calls, in index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text, for models that expose it (DeepSeek's `reasoning_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
    /// What it cost.
    pub usage: TokenUsage,
    /// The model that answered.
    pub model: String,
}
