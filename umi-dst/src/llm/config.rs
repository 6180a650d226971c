//! SimLlmConfig: the simulated model's limits, latency, timeout behaviour, tool-calling
//! appetite and optional rate limits.

use std::time::Duration;

use umi_core::llm::ModelRef;

/// Characters one streamed text chunk holds at most.
pub const CHUNK_CHARS_MAX: usize = 64;

/// Shortest simulated time to first token, in ms.
pub const LLM_LATENCY_MS_MIN: u64 = 50;

/// Longest simulated time to first token, in ms.
pub const LLM_LATENCY_MS_MAX: u64 = 2_000;

/// Simulated time per generated token, in ms (lower bound).
pub const LLM_TOKEN_LATENCY_MS_MIN: u64 = 5;

/// Simulated time per generated token, in ms (upper bound).
pub const LLM_TOKEN_LATENCY_MS_MAX: u64 = 40;

const _: () = assert!(LLM_LATENCY_MS_MIN <= LLM_LATENCY_MS_MAX);
const _: () = assert!(LLM_TOKEN_LATENCY_MS_MIN <= LLM_TOKEN_LATENCY_MS_MAX);

/// How long a `llm.timeout` fault stalls in `Stall` mode by default: longer than any
/// sensible request timeout, so the caller's own timeout fires first.
pub const TIMEOUT_STALL_DEFAULT: Duration = Duration::from_secs(10 * 60);

/// Simulated time to first token and per token, drawn per call within these bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyModel {
    /// Shortest time to first token, ms.
    pub first_token_ms_min: u64,
    /// Longest time to first token, ms.
    pub first_token_ms_max: u64,
    /// Shortest time per token, ms.
    pub token_ms_min: u64,
    /// Longest time per token, ms.
    pub token_ms_max: u64,
}

impl Default for LatencyModel {
    fn default() -> Self {
        Self {
            first_token_ms_min: LLM_LATENCY_MS_MIN,
            first_token_ms_max: 800,
            token_ms_min: LLM_TOKEN_LATENCY_MS_MIN,
            token_ms_max: 25,
        }
    }
}

/// What a `llm.timeout` fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutMode {
    /// Stall this long in simulated time, then fail with `Timeout`: the caller's own
    /// timeout code fires if its deadline is shorter (the realistic mode).
    Stall(Duration),
    /// Fail at once with `Timeout` (for code without timeouts of its own).
    Immediate,
}

/// Requests and tokens per simulated minute; beyond them, `RateLimit` with the real wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitModel {
    /// Requests admitted per sliding minute.
    pub requests_per_minute: u32,
    /// Prompt tokens admitted per sliding minute.
    pub tokens_per_minute: u32,
}

/// A SimLLM setting that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimLlmConfigError {
    /// Latency bounds out of order or outside the constants.
    #[error(
        "latency {0:?} is outside the limits or out of order (first token {LLM_LATENCY_MS_MIN}..={LLM_LATENCY_MS_MAX} ms, per token {LLM_TOKEN_LATENCY_MS_MIN}..={LLM_TOKEN_LATENCY_MS_MAX} ms)"
    )]
    Latency(LatencyModel),
    /// A probability outside [0, 1].
    #[error("tool_call_probability {0} is outside [0, 1]")]
    Probability(f64),
    /// Chunk size outside 1..=CHUNK_CHARS_MAX.
    #[error("chunk_chars_max {0} is outside 1..={CHUNK_CHARS_MAX}")]
    ChunkChars(usize),
    /// Model limits that make no sense.
    #[error("model {0}: context window must be positive and at least the max output")]
    ModelLimits(String),
    /// A rate limit of zero.
    #[error("rate limits must be positive: {0:?}")]
    RateLimit(RateLimitModel),
}

/// How a SimLLM behaves.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SimLlmConfig {
    /// The simulated model and its limits.
    pub model_ref: ModelRef,
    /// Simulated latency; `None` answers instantly.
    pub latency: Option<LatencyModel>,
    /// What timeout faults do.
    pub timeout_mode: TimeoutMode,
    /// How often the model calls tools when they are offered.
    pub tool_call_probability: f64,
    /// Characters per streamed text chunk, at most.
    pub chunk_chars_max: usize,
    /// Optional rate limits.
    pub rate_limit: Option<RateLimitModel>,
    /// Whether the model reasons aloud before answering (DeepSeek's reasoner, Qwen's
    /// thinking models): every answer starts with reasoning text, counted in the
    /// completion tokens and reported as reasoning tokens.
    pub reasoning: bool,
}

impl Default for SimLlmConfig {
    fn default() -> Self {
        Self {
            model_ref: ModelRef::new("sim", "sim-large", 32_768, 4_096),
            latency: Some(LatencyModel::default()),
            timeout_mode: TimeoutMode::Stall(TIMEOUT_STALL_DEFAULT),
            tool_call_probability: 0.85,
            chunk_chars_max: 12,
            rate_limit: None,
            reasoning: false,
        }
    }
}

impl SimLlmConfig {
    /// Sets the model and its limits.
    pub fn with_model(mut self, model_ref: ModelRef) -> Self {
        self.model_ref = model_ref;
        self
    }

    /// Answers instantly.
    pub fn without_latency(mut self) -> Self {
        self.latency = None;
        self
    }

    /// Sets the timeout behaviour.
    pub fn with_timeout_mode(mut self, mode: TimeoutMode) -> Self {
        self.timeout_mode = mode;
        self
    }

    /// Makes the model reason aloud before every answer.
    pub fn with_reasoning(mut self) -> Self {
        self.reasoning = true;
        self
    }

    /// Turns the rate-limit model on.
    pub fn with_rate_limit(mut self, model: RateLimitModel) -> Self {
        self.rate_limit = Some(model);
        self
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<(), SimLlmConfigError> {
        if let Some(latency) = self.latency {
            let in_order = latency.first_token_ms_min <= latency.first_token_ms_max
                && latency.token_ms_min <= latency.token_ms_max;
            let in_limits = latency.first_token_ms_min >= LLM_LATENCY_MS_MIN
                && latency.first_token_ms_max <= LLM_LATENCY_MS_MAX
                && latency.token_ms_min >= LLM_TOKEN_LATENCY_MS_MIN
                && latency.token_ms_max <= LLM_TOKEN_LATENCY_MS_MAX;
            if !in_order || !in_limits {
                return Err(SimLlmConfigError::Latency(latency));
            }
        }
        if !(0.0..=1.0).contains(&self.tool_call_probability) {
            return Err(SimLlmConfigError::Probability(self.tool_call_probability));
        }
        if !(1..=CHUNK_CHARS_MAX).contains(&self.chunk_chars_max) {
            return Err(SimLlmConfigError::ChunkChars(self.chunk_chars_max));
        }
        let model = &self.model_ref;
        if model.context_window_tokens == 0 || model.max_output_tokens > model.context_window_tokens
        {
            return Err(SimLlmConfigError::ModelLimits(model.id()));
        }
        if let Some(limit) = self.rate_limit
            && (limit.requests_per_minute == 0 || limit.tokens_per_minute == 0)
        {
            return Err(SimLlmConfigError::RateLimit(limit));
        }
        Ok(())
    }
}
