//! What a model answers: the response, why it stopped, what it cost, and which model.

use serde::{Deserialize, Serialize};

use super::message::ToolCall;

/// Why generation stopped.
///
/// The first three are clean ends of an answer. The rest say the answer is not what the
/// model would have said: withheld, cut off, failed, or ended in a way this library does
/// not know (the provider's own word kept in [`FinishReason::Other`]). A stream that ends
/// with its end marker but no finish reason is [`FinishReason::Missing`], never a silent
/// `Stop`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end, or a stop sequence.
    Stop,
    /// The token limit (`max_tokens`) was reached; the answer is cut.
    Length,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The provider's content filter withheld the answer (or the rest of it).
    ContentFilter,
    /// Generation was cut off (cancelled, or the provider aborted it).
    Aborted,
    /// The provider ended generation on an error of its own (OpenRouter's `error`, GLM's
    /// `network_error`).
    Error,
    /// The stream ended with its end marker but without any finish reason.
    Missing,
    /// A reason this library does not know, as the provider spelled it.
    Other(String),
}

impl FinishReason {
    /// The reason's wire name (`tool_calls`); for [`FinishReason::Other`], the raw value.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Aborted => "aborted",
            Self::Error => "error",
            Self::Missing => "missing",
            Self::Other(raw) => raw,
        }
    }

    /// The reason named `name` by [`FinishReason::as_str`] (any other name is `Other`).
    pub fn from_name(name: &str) -> Self {
        match name {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            "aborted" => Self::Aborted,
            "error" => Self::Error,
            "missing" => Self::Missing,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether the answer ended the way a model ends one: a natural stop, the token limit,
    /// or tool calls. Everything else means the provider withheld, cut or lost part of it.
    pub fn is_clean(&self) -> bool {
        matches!(self, Self::Stop | Self::Length | Self::ToolCalls)
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FinishReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Self::from_name(&name))
    }
}

/// Tokens a call consumed, as the provider reported them.
///
/// A response whose provider reported nothing has no `TokenUsage` at all
/// (`CompletionResponse::usage` is `None`): absent is not the same as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens of the prompt.
    pub prompt_tokens: u32,
    /// Tokens of the answer (reasoning included, where the provider counts it there).
    pub completion_tokens: u32,
    /// Prompt tokens served from the provider's prompt cache, when it says
    /// (`prompt_tokens_details.cached_tokens`, DeepSeek's `prompt_cache_hit_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u32>,
    /// Completion tokens spent on reasoning, when it says
    /// (`completion_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u32>,
    /// Prompt tokens written to the provider's prompt cache, when it says (Anthropic's
    /// `cache_creation_input_tokens`, OpenRouter's `cache_write_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u32>,
}

impl TokenUsage {
    /// Usage of `prompt_tokens` in and `completion_tokens` out, with no details.
    pub fn new(prompt_tokens: u32, completion_tokens: u32) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens: None,
            reasoning_tokens: None,
            cache_write_tokens: None,
        }
    }

    /// Sets the cached prompt tokens.
    pub fn with_cached_prompt_tokens(mut self, tokens: u32) -> Self {
        self.cached_prompt_tokens = Some(tokens);
        self
    }

    /// Sets the reasoning tokens.
    pub fn with_reasoning_tokens(mut self, tokens: u32) -> Self {
        self.reasoning_tokens = Some(tokens);
        self
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
    /// What it cost, if the provider said (absent is not zero: a stream without a usage
    /// chunk, a server that reports nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The model that answered.
    pub model: String,
}
