//! The router's configuration: providers, models, routing, retry and cooldown, from a
//! TOML file (documented in docs/config.md). Every error names the file, the field and
//! the value.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::constants::{ROUTER_BACKOFF_MS_MAX, ROUTER_CHAIN_MODELS_MAX, ROUTER_RETRIES_MAX};
use crate::llm::registry::ProviderConfig;

/// A configuration that cannot be used, with where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field} = {value}: {reason}")]
pub struct ConfigError {
    /// The file (or a name for text given directly).
    pub file: String,
    /// The field, as a path (`routing.fallback[1]`), or `line L, column C` for syntax.
    pub field: String,
    /// The offending value.
    pub value: String,
    /// What is wrong.
    pub reason: String,
}

/// A model's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Tokens of prompt and answer it accepts.
    pub context_window: u32,
    /// Most tokens it generates at once.
    pub max_output: u32,
}

/// Which model answers what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// The model for requests without a task route.
    pub default: String,
    /// Tried in order when the chosen model fails.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// Tried in order (those with a larger window) when a prompt overflows.
    #[serde(default)]
    pub context_fallback: Vec<String>,
    /// Models per task tag (`"memory.extract_entities" = "ollama/qwen3:8b"`).
    #[serde(default)]
    pub tasks: BTreeMap<String, String>,
}

/// Retries, backoff and timeouts: `RetryPolicy::default()`, then the `with_` methods
/// for what differs (a router file sets them by name).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries of one model after its first attempt.
    pub max_retries: u32,
    /// Time one attempt may take (to the whole answer, or to the first streamed event;
    /// between later events for streams).
    pub request_timeout_ms: u64,
    /// The first backoff.
    pub initial_backoff_ms: u64,
    /// Growth of the backoff per retry.
    pub backoff_multiplier: f64,
    /// The longest backoff.
    pub backoff_max_ms: u64,
    /// Up to this fraction is added to each backoff, drawn from the environment.
    pub jitter: f64,
    /// The longest Retry-After the router waits for; a longer one moves to the next model.
    pub retry_after_max_ms: u64,
    /// The time one routed call may take in all.
    pub deadline_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            request_timeout_ms: 60_000,
            initial_backoff_ms: 1_000,
            backoff_multiplier: 2.0,
            backoff_max_ms: 30_000,
            jitter: 0.2,
            retry_after_max_ms: 60_000,
            deadline_ms: 300_000,
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry `retry` (0 is the first retry), without jitter: the floor
    /// every sleep respects. `initial × multiplier^retry`, capped at `backoff_max_ms`.
    ///
    /// Integer math, so every platform computes the same sleeps (a float `powi` is
    /// platform-dependent): the multiplier is read as a rational in thousandths and the
    /// backoff grows in nanoseconds, saturating, so the result is the exact curve rounded
    /// down to the millisecond (within a nanosecond per retry).
    pub fn backoff_floor_ms(&self, retry: u32) -> u64 {
        backoff_floor_ms(
            self.initial_backoff_ms,
            multiplier_thousandths(self.backoff_multiplier),
            self.backoff_max_ms,
            retry,
        )
    }
}

/// Thousandths in one unit of a backoff multiplier.
const MULTIPLIER_DENOMINATOR: u64 = 1_000;

/// Nanoseconds in a millisecond: the backoff grows in nanoseconds so that rounding down
/// at each step costs at most a nanosecond per retry.
const NANOS_PER_MS: u128 = 1_000_000;

/// `multiplier` in thousandths (rounded to nearest; `round` and a multiplication by 1000
/// are exact IEEE operations), clamped to at least 1 (no shrinking backoff); `NaN` is 1.
fn multiplier_thousandths(multiplier: f64) -> u64 {
    let thousandths = (multiplier * MULTIPLIER_DENOMINATOR as f64).round();
    if thousandths.is_nan() {
        return MULTIPLIER_DENOMINATOR;
    }
    (thousandths as u64).max(MULTIPLIER_DENOMINATOR)
}

/// `initial_ms × (multiplier_thousandths / 1000)^retry`, rounded down, capped at `max_ms`.
/// The loop runs at most `retry` times (at most `ROUTER_RETRIES_MAX` in a validated
/// config) and stops as soon as the cap is reached or the backoff cannot grow.
fn backoff_floor_ms(initial_ms: u64, multiplier_thousandths: u64, max_ms: u64, retry: u32) -> u64 {
    let cap_ns = u128::from(max_ms) * NANOS_PER_MS;
    let mut backoff_ns = (u128::from(initial_ms) * NANOS_PER_MS).min(cap_ns);
    let grows = multiplier_thousandths > MULTIPLIER_DENOMINATOR;
    for _ in 0..retry {
        if !grows || backoff_ns == 0 || backoff_ns == cap_ns {
            break;
        }
        // No overflow: backoff_ns <= u64::MAX × 10^6 < 2^84, the multiplier < 2^64.
        let grown = backoff_ns.saturating_mul(u128::from(multiplier_thousandths))
            / u128::from(MULTIPLIER_DENOMINATOR);
        backoff_ns = grown.min(cap_ns);
    }
    // Fits: backoff_ns <= cap_ns = max_ms × 10^6.
    (backoff_ns / NANOS_PER_MS) as u64
}

impl RetryPolicy {
    /// Sets the retries of one model after its first attempt.
    pub const fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the time one attempt may take.
    pub const fn with_request_timeout_ms(mut self, request_timeout_ms: u64) -> Self {
        self.request_timeout_ms = request_timeout_ms;
        self
    }

    /// Sets the backoff curve: the first backoff, its growth per retry, the longest.
    pub const fn with_backoff_ms(mut self, initial_ms: u64, multiplier: f64, max_ms: u64) -> Self {
        self.initial_backoff_ms = initial_ms;
        self.backoff_multiplier = multiplier;
        self.backoff_max_ms = max_ms;
        self
    }

    /// Sets the fraction of each backoff that may be added at random (0: none).
    pub const fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets the longest Retry-After the router waits for.
    pub const fn with_retry_after_max_ms(mut self, retry_after_max_ms: u64) -> Self {
        self.retry_after_max_ms = retry_after_max_ms;
        self
    }

    /// Sets the time one routed call may take in all.
    pub const fn with_deadline_ms(mut self, deadline_ms: u64) -> Self {
        self.deadline_ms = deadline_ms;
        self
    }

    /// The multiplier the backoff actually uses: `backoff_multiplier` rounded to
    /// thousandths.
    pub fn backoff_multiplier_thousandths(&self) -> u64 {
        multiplier_thousandths(self.backoff_multiplier)
    }
}

/// The per-provider circuit breaker: `CooldownPolicy::new(threshold, cooldown_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct CooldownPolicy {
    /// Consecutive failures that open the circuit.
    pub failures_threshold: u32,
    /// How long an open circuit stays open before a probe is let through.
    pub cooldown_ms: u64,
}

impl CooldownPolicy {
    /// A breaker that opens after `failures_threshold` consecutive failures and lets a
    /// probe through after `cooldown_ms`.
    pub const fn new(failures_threshold: u32, cooldown_ms: u64) -> Self {
        Self {
            failures_threshold,
            cooldown_ms,
        }
    }
}

impl Default for CooldownPolicy {
    fn default() -> Self {
        Self {
            failures_threshold: 3,
            cooldown_ms: 30_000,
        }
    }
}

/// The whole router configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RouterConfig {
    /// Providers by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Models by `provider/model-id`.
    pub models: BTreeMap<String, ModelConfig>,
    /// Routing.
    pub routing: RoutingConfig,
    /// Retries and timeouts.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// The circuit breaker.
    #[serde(default)]
    pub cooldown: CooldownPolicy,
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

impl RouterConfig {
    /// Reads and checks the TOML file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
            file: path.display().to_string(),
            field: "(file)".into(),
            value: String::new(),
            reason: error.to_string(),
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Parses and checks TOML `text`; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|error| {
            let (line, column) = error
                .span()
                .map_or((0, 0), |span| line_column(text, span.start));
            let value = error
                .span()
                .map(|span| text[span].chars().take(60).collect())
                .unwrap_or_default();
            ConfigError {
                file: file.to_owned(),
                field: format!("line {line}, column {column}"),
                value,
                reason: error.message().to_owned(),
            }
        })?;
        config.validate(file)?;
        Ok(config)
    }

    /// Checks every rule; the first broken one is returned.
    pub fn validate(&self, file: &str) -> Result<(), ConfigError> {
        let problem = self
            .providers_problem()
            .or_else(|| self.models_problem())
            .or_else(|| self.routing_problem())
            .or_else(|| retry_problem(&self.retry))
            .or_else(|| {
                (self.cooldown.failures_threshold == 0).then(|| Problem {
                    field: "cooldown.failures_threshold".into(),
                    value: "0".into(),
                    reason: "must be at least 1".into(),
                })
            });
        match problem {
            Some(Problem {
                field,
                value,
                reason,
            }) => Err(ConfigError {
                file: file.to_owned(),
                field,
                value,
                reason,
            }),
            None => Ok(()),
        }
    }

    /// The first provider whose endpoint is not an HTTP(S) URL.
    fn providers_problem(&self) -> Option<Problem> {
        let (name, provider) = self.providers.iter().find(|(_, provider)| {
            !provider.endpoint.starts_with("http://") && !provider.endpoint.starts_with("https://")
        })?;
        Some(Problem {
            field: format!("providers.{name}.endpoint"),
            value: provider.endpoint.clone(),
            reason: "must start with http:// or https://".into(),
        })
    }

    /// The first model not named `provider/model-id`, of an unknown provider, or whose
    /// output limit does not fit its window.
    fn models_problem(&self) -> Option<Problem> {
        for (id, model) in &self.models {
            let Ok(crate::llm::ModelId { provider, .. }) = crate::llm::ModelId::parse(id) else {
                return Some(Problem {
                    field: format!("models.\"{id}\""),
                    value: id.clone(),
                    reason: "a model is named provider/model-id".into(),
                });
            };
            if !self.providers.contains_key(provider) {
                let known: Vec<&String> = self.providers.keys().collect();
                return Some(Problem {
                    field: format!("models.\"{id}\""),
                    value: provider.to_owned(),
                    reason: format!("unknown provider; known: {known:?}"),
                });
            }
            if model.context_window == 0
                || model.max_output == 0
                || model.max_output > model.context_window
            {
                return Some(Problem {
                    field: format!("models.\"{id}\".max_output"),
                    value: model.max_output.to_string(),
                    reason: format!(
                        "must be positive and at most the context window ({})",
                        model.context_window
                    ),
                });
            }
        }
        None
    }

    /// The first model the routing names that is not configured, or too long a chain.
    fn routing_problem(&self) -> Option<Problem> {
        let routing = &self.routing;
        let named = std::iter::once(("routing.default".to_owned(), &routing.default))
            .chain(
                routing
                    .fallback
                    .iter()
                    .enumerate()
                    .map(|(index, id)| (format!("routing.fallback[{index}]"), id)),
            )
            .chain(
                routing
                    .context_fallback
                    .iter()
                    .enumerate()
                    .map(|(index, id)| (format!("routing.context_fallback[{index}]"), id)),
            )
            .chain(
                routing
                    .tasks
                    .iter()
                    .map(|(task, id)| (format!("routing.tasks.\"{task}\""), id)),
            );
        for (field, id) in named {
            if !self.models.contains_key(id) {
                let known: Vec<&String> = self.models.keys().collect();
                return Some(Problem {
                    field,
                    value: id.clone(),
                    reason: format!("unknown model; known: {known:?}"),
                });
            }
        }
        (routing.fallback.len() + 1 > ROUTER_CHAIN_MODELS_MAX).then(|| Problem {
            field: "routing.fallback".into(),
            value: routing.fallback.len().to_string(),
            reason: format!("at most {} fallbacks", ROUTER_CHAIN_MODELS_MAX - 1),
        })
    }
}

/// One thing wrong with a config: the field (a path in the file), its value, and why.
struct Problem {
    field: String,
    value: String,
    reason: String,
}

/// What is wrong with a retry policy, if anything: retries past their limit, a zero
/// timeout, a multiplier outside [1, 10], jitter outside [0, 1), backoffs out of order
/// or past their limit.
fn retry_problem(retry: &RetryPolicy) -> Option<Problem> {
    let problem = |field: &str, value: String, reason: String| {
        Some(Problem {
            field: field.to_owned(),
            value,
            reason,
        })
    };
    if retry.max_retries > ROUTER_RETRIES_MAX {
        return problem(
            "retry.max_retries",
            retry.max_retries.to_string(),
            format!("at most {ROUTER_RETRIES_MAX}"),
        );
    }
    if retry.request_timeout_ms == 0 || retry.deadline_ms == 0 {
        return problem(
            "retry.request_timeout_ms",
            retry.request_timeout_ms.to_string(),
            "timeouts must be positive".into(),
        );
    }
    if !(retry.backoff_multiplier >= 1.0 && retry.backoff_multiplier <= 10.0) {
        return problem(
            "retry.backoff_multiplier",
            retry.backoff_multiplier.to_string(),
            "must be in [1, 10]".into(),
        );
    }
    if !(0.0..1.0).contains(&retry.jitter) {
        return problem(
            "retry.jitter",
            retry.jitter.to_string(),
            "must be in [0, 1)".into(),
        );
    }
    if retry.backoff_max_ms > ROUTER_BACKOFF_MS_MAX
        || retry.initial_backoff_ms > retry.backoff_max_ms
    {
        return problem(
            "retry.initial_backoff_ms",
            retry.initial_backoff_ms.to_string(),
            format!(
                "must be at most backoff_max_ms ({}), itself at most {ROUTER_BACKOFF_MS_MAX}",
                retry.backoff_max_ms
            ),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[providers.glm]
type = "openai"
endpoint = "https://open.bigmodel.cn/api/paas/v4"
api_key_env = "GLM_API_KEY"

[providers.ollama]
type = "ollama"
endpoint = "http://localhost:11434"

[models."glm/glm-4-plus"]
context_window = 128000
max_output = 4096

[models."ollama/qwen3:8b"]
context_window = 32768
max_output = 4096

[routing]
default = "glm/glm-4-plus"
fallback = ["ollama/qwen3:8b"]
tasks = { "memory.extract_entities" = "ollama/qwen3:8b" }

[retry]
max_retries = 3
"#;

    #[test]
    fn a_good_config_parses_with_defaults() {
        let config = RouterConfig::from_toml(GOOD, "engine.toml").unwrap();
        assert_eq!(config.retry.max_retries, 3);
        assert_eq!(
            config.retry.initial_backoff_ms, 1_000,
            "unset fields take defaults"
        );
        assert_eq!(
            config.routing.tasks["memory.extract_entities"],
            "ollama/qwen3:8b"
        );
        assert_eq!(config.retry.backoff_floor_ms(0), 1_000);
        assert_eq!(config.retry.backoff_floor_ms(2), 4_000);
        assert_eq!(
            config.retry.backoff_floor_ms(9),
            30_000,
            "capped at backoff_max_ms"
        );
    }

    /// Exact sleeps, computed in integers: a platform's `powi` can no longer move them.
    #[test]
    fn backoff_floors_are_pinned() {
        let policy = |initial_backoff_ms, backoff_multiplier, backoff_max_ms| RetryPolicy {
            initial_backoff_ms,
            backoff_multiplier,
            backoff_max_ms,
            ..RetryPolicy::default()
        };
        let floors = |policy: RetryPolicy| -> Vec<u64> {
            (0..=10)
                .map(|retry| policy.backoff_floor_ms(retry))
                .collect()
        };
        assert_eq!(
            floors(RetryPolicy::default()),
            [
                1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000, 30_000, 30_000
            ]
        );
        // 1000 × 1.5^n: 5062.5 → 5062, 7593.75 → 7593, 11390.625 → 11390, ...
        assert_eq!(
            floors(policy(1_000, 1.5, 600_000)),
            [
                1_000, 1_500, 2_250, 3_375, 5_062, 7_593, 11_390, 17_085, 25_628, 38_443, 57_665
            ]
        );
        // 0.1 is not exact in binary; 1.1 is read as 1100/1000 exactly.
        assert_eq!(
            floors(policy(333, 1.1, 600_000)),
            [333, 366, 402, 443, 487, 536, 589, 648, 713, 785, 863]
        );
        assert_eq!(
            floors(policy(250, 1.0, 1_000)),
            [250; 11],
            "a multiplier of 1 never grows"
        );
        assert_eq!(floors(policy(0, 2.0, 1_000)), [0; 11]);
        assert_eq!(
            policy(7, 10.0, 600_000).backoff_floor_ms(10),
            600_000,
            "capped"
        );
        assert_eq!(
            policy(u64::MAX, 10.0, u64::MAX).backoff_floor_ms(u32::MAX),
            u64::MAX,
            "saturates rather than overflowing (an unvalidated policy)"
        );
        assert_eq!(policy(1_000, f64::NAN, 5_000).backoff_floor_ms(3), 1_000);
        assert_eq!(policy(1_000, 0.5, 5_000).backoff_floor_ms(3), 1_000);
        assert_eq!(
            policy(1_000, 1.2345, 5_000).backoff_multiplier_thousandths(),
            1_235
        );
    }

    #[test]
    fn errors_name_the_file_the_field_and_the_value() {
        let unknown_field = GOOD.replace("max_retries = 3", "max_retrys = 3");
        let error = RouterConfig::from_toml(&unknown_field, "engine.toml").unwrap_err();
        assert_eq!(error.file, "engine.toml");
        let line = unknown_field
            .lines()
            .position(|l| l.contains("max_retrys"))
            .unwrap()
            + 1;
        assert!(
            error.field.starts_with(&format!("line {line}, column 1")),
            "{error}"
        );
        assert_eq!(error.value, "max_retrys");
        assert!(error.reason.contains("max_retrys"), "{error}");

        let unknown_model = GOOD.replace(
            "fallback = [\"ollama/qwen3:8b\"]",
            "fallback = [\"ollama/qwen3:8b\", \"deepseek/chat\"]",
        );
        let error = RouterConfig::from_toml(&unknown_model, "engine.toml").unwrap_err();
        assert_eq!(
            (error.field.as_str(), error.value.as_str()),
            ("routing.fallback[1]", "deepseek/chat")
        );
        assert!(
            error
                .to_string()
                .starts_with("engine.toml: routing.fallback[1] = deepseek/chat: unknown model"),
            "{error}"
        );

        let missing_provider = GOOD
            .replace("[models.\"ollama/qwen3:8b\"]", "[models.\"openai/gpt-4o\"]")
            .replace("\"ollama/qwen3:8b\"", "\"openai/gpt-4o\"");
        let error = RouterConfig::from_toml(&missing_provider, "engine.toml").unwrap_err();
        assert_eq!(
            (error.field.as_str(), error.value.as_str()),
            ("models.\"openai/gpt-4o\"", "openai"),
            "{error}"
        );

        let bad_jitter = GOOD.replace("max_retries = 3", "max_retries = 3\njitter = 1.5");
        let error = RouterConfig::from_toml(&bad_jitter, "engine.toml").unwrap_err();
        assert_eq!(
            (error.field.as_str(), error.value.as_str()),
            ("retry.jitter", "1.5")
        );
    }
}
