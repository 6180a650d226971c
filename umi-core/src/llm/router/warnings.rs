//! Configuration warnings: settings that are valid but do not do what they say.
//!
//! `RouterConfig::validate` refuses what cannot work. Some settings work yet silently
//! mean less than they read: retries the circuit breaker cuts short, or fallbacks the
//! deadline can never reach. `RouterConfig::warnings` lists those, typed, for the caller
//! to print (the router still runs with them).

use std::fmt;

use super::config::{CooldownPolicy, RetryPolicy, RouterConfig};

/// A valid setting that does less than it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// The breaker opens a provider's circuit before the retries run out, so at most
    /// `failures_threshold - 1` retries of one model happen.
    RetriesExceedBreaker {
        /// `retry.max_retries`.
        max_retries: u32,
        /// `cooldown.failures_threshold`.
        failures_threshold: u32,
    },
    /// In the worst case (every attempt timing out, every backoff at its longest), the
    /// deadline passes before the chain reaches `model`.
    DeadlineShortOfChain {
        /// `retry.deadline_ms`.
        deadline_ms: u64,
        /// The first model of the default chain the deadline cannot reach.
        model: String,
        /// Its place in the chain (0 is the default model).
        position: usize,
        /// When, at worst, that model's first attempt would start.
        reached_at_ms: u64,
    },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RetriesExceedBreaker {
                max_retries,
                failures_threshold,
            } => write!(
                f,
                "retry.max_retries = {max_retries}, but cooldown.failures_threshold = \
                 {failures_threshold} opens the circuit first: at most {} retries of a model happen",
                failures_threshold.saturating_sub(1)
            ),
            Self::DeadlineShortOfChain {
                deadline_ms,
                model,
                position,
                reached_at_ms,
            } => write!(
                f,
                "retry.deadline_ms = {deadline_ms}: when every attempt times out, the chain \
                 reaches {model} (position {position}) only at {reached_at_ms} ms, so it is never tried"
            ),
        }
    }
}

/// Attempts one model gets at most: its retries, cut short by the breaker (the attempt
/// that opens the circuit is the model's last).
pub(super) fn attempts_per_model_max(retry: &RetryPolicy, cooldown: &CooldownPolicy) -> u32 {
    retry
        .max_retries
        .saturating_add(1)
        .min(cooldown.failures_threshold.max(1))
}

/// The longest one model can take when every attempt times out: its attempts at
/// `request_timeout_ms` each, and the backoffs between them at their floor plus full
/// jitter (Retry-After waits, at most `retry_after_max_ms`, are not counted).
pub(super) fn model_worst_case_ms(retry: &RetryPolicy, cooldown: &CooldownPolicy) -> u64 {
    let attempts = attempts_per_model_max(retry, cooldown);
    let mut total_ms = u64::from(attempts).saturating_mul(retry.request_timeout_ms);
    for backoff in 0..attempts.saturating_sub(1) {
        let floor_ms = retry.backoff_floor_ms(backoff);
        // Jitter adds up to `jitter` of the floor; a fraction below 1 (validated).
        let jitter_ms = (floor_ms as f64 * retry.jitter.clamp(0.0, 1.0)) as u64;
        total_ms = total_ms.saturating_add(floor_ms.saturating_add(jitter_ms));
    }
    total_ms
}

impl RouterConfig {
    /// Settings that are valid but do less than they read (retries the breaker cuts
    /// short, fallbacks the deadline cannot reach), for the caller to print; empty when
    /// every setting does what it says. `from_toml` does not fail on them. (Defined
    /// here, beside the rules, so the config does not depend on its checker.)
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        warnings(self)
    }
}

/// The warnings for `config` (empty when every setting does what it says). The chain
/// checked is the default one (`routing.default`, then `routing.fallback`), each model
/// taken as failing on its own (a shared provider's open circuit only shortens it).
fn warnings(config: &RouterConfig) -> Vec<ConfigWarning> {
    let mut out = Vec::new();
    let retry = &config.retry;
    let cooldown = &config.cooldown;
    if retry.max_retries >= cooldown.failures_threshold {
        out.push(ConfigWarning::RetriesExceedBreaker {
            max_retries: retry.max_retries,
            failures_threshold: cooldown.failures_threshold,
        });
    }
    let per_model_ms = model_worst_case_ms(retry, cooldown);
    let chain = std::iter::once(&config.routing.default).chain(&config.routing.fallback);
    for (position, model) in chain.enumerate() {
        let reached_at_ms = per_model_ms.saturating_mul(position as u64);
        if reached_at_ms >= retry.deadline_ms {
            out.push(ConfigWarning::DeadlineShortOfChain {
                deadline_ms: retry.deadline_ms,
                model: model.clone(),
                position,
                reached_at_ms,
            });
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
[providers.a]
type = "openai"
endpoint = "https://a.example/v1"

[models."a/one"]
context_window = 8000
max_output = 1000

[models."a/two"]
context_window = 8000
max_output = 1000

[models."a/three"]
context_window = 8000
max_output = 1000

[routing]
default = "a/one"
fallback = ["a/two", "a/three"]
"#;

    fn config_with(retry: &str) -> RouterConfig {
        RouterConfig::from_toml(&format!("{CONFIG}\n[retry]\n{retry}\n"), "t.toml").unwrap()
    }

    #[test]
    fn the_defaults_with_a_short_chain_warn_of_nothing() {
        let short =
            RouterConfig::from_toml(&CONFIG.replace(", \"a/three\"", ""), "t.toml").unwrap();
        assert_eq!(short.warnings(), []);
    }

    /// The issue's case: 60 s attempts under a 300 s deadline. Each model takes at worst
    /// 3 × 60 s + 1.2 s + 2.4 s of backoff = 183.6 s, so the third model starts at
    /// 367.2 s, past the deadline.
    #[test]
    fn a_deadline_short_of_the_chain_names_the_first_model_it_cannot_reach() {
        let config = config_with("request_timeout_ms = 60000\ndeadline_ms = 300000");
        assert_eq!(
            model_worst_case_ms(&config.retry, &config.cooldown),
            183_600
        );
        let warnings = config.warnings();
        assert_eq!(
            warnings,
            [ConfigWarning::DeadlineShortOfChain {
                deadline_ms: 300_000,
                model: "a/three".into(),
                position: 2,
                reached_at_ms: 367_200,
            }]
        );
        assert_eq!(
            warnings[0].to_string(),
            "retry.deadline_ms = 300000: when every attempt times out, the chain reaches \
             a/three (position 2) only at 367200 ms, so it is never tried"
        );
        assert_eq!(
            config_with("request_timeout_ms = 60000\ndeadline_ms = 367201").warnings(),
            []
        );
    }

    #[test]
    fn retries_past_the_breaker_threshold_warn() {
        let config = config_with("max_retries = 5\nrequest_timeout_ms = 1000");
        assert_eq!(
            config.warnings(),
            [ConfigWarning::RetriesExceedBreaker {
                max_retries: 5,
                failures_threshold: 3,
            }]
        );
        assert_eq!(
            config.warnings()[0].to_string(),
            "retry.max_retries = 5, but cooldown.failures_threshold = 3 opens the circuit \
             first: at most 2 retries of a model happen"
        );
        assert_eq!(attempts_per_model_max(&config.retry, &config.cooldown), 3);
        assert_eq!(
            config_with("max_retries = 2\nrequest_timeout_ms = 1000").warnings(),
            []
        );
    }
}
