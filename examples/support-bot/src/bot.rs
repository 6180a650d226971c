//! The support bot: recall, ask (with its own retries and timeouts), remember.
//!
//! This is ordinary application code. It never reads the clock or OS randomness: time,
//! sleeps and timeouts come from the injected [`Env`], so the same code runs with
//! `SystemEnvironment` in production and under a simulation in tests.

use std::sync::Arc;
use std::time::Duration;

use umi_core::env::{Env, EnvironmentExt};
use umi_core::llm::{CompletionRequest, LanguageModel, LlmError, Message};
use umi_core::memory::{Memory, MemoryError, RecallOptions, RememberOptions};

/// How persistent the bot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotConfig {
    /// Model attempts per question.
    pub attempts_max: u32,
    /// Time one attempt may take.
    pub attempt_timeout: Duration,
    /// The longest wait between attempts (a longer Retry-After gives up).
    pub wait_max: Duration,
}

impl Default for BotConfig {
    fn default() -> Self {
        Self {
            attempts_max: 3,
            attempt_timeout: Duration::from_secs(20),
            wait_max: Duration::from_secs(10),
        }
    }
}

/// Why the bot could not answer.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    /// The model failed on every attempt (or failed in a way not worth retrying).
    #[error("the model failed after {attempts} attempt(s): {last}")]
    Model {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: LlmError,
    },
    /// The memory failed.
    #[error("memory: {0}")]
    Memory(#[from] MemoryError),
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The model's text.
    pub text: String,
    /// Notes recalled into the prompt.
    pub notes_used: usize,
    /// Model attempts it took.
    pub attempts: u32,
}

/// The bot.
pub struct SupportBot {
    model: Arc<dyn LanguageModel>,
    memory: Memory,
    env: Env,
    config: BotConfig,
}

impl SupportBot {
    /// A bot over `model` and `memory` in `env`.
    pub fn new(model: Arc<dyn LanguageModel>, memory: Memory, env: Env, config: BotConfig) -> Self {
        Self {
            model,
            memory,
            env,
            config,
        }
    }

    /// Answers `question` with what the memory recalls, then remembers the question.
    pub async fn answer(&self, question: &str) -> Result<Reply, BotError> {
        let recalled = self
            .memory
            .recall(question, RecallOptions::default())
            .await?;
        let notes: Vec<String> = recalled
            .hits
            .iter()
            .map(|h| format!("- {}: {}", h.entity.name, h.entity.content))
            .collect();
        let system = format!(
            "You are a support agent. What we know:\n{}",
            notes.join("\n")
        );
        let request =
            CompletionRequest::new(vec![Message::system(system), Message::user(question)])
                .with_task("support.answer");
        let (text, attempts) = self.ask(&request).await?;
        self.memory
            .remember(
                &format!("The customer asked: {question}"),
                RememberOptions::default(),
            )
            .await?;
        Ok(Reply {
            text,
            notes_used: notes.len(),
            attempts,
        })
    }

    /// Asks the model, retrying what is worth retrying, honouring Retry-After.
    async fn ask(&self, request: &CompletionRequest) -> Result<(String, u32), BotError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let error = match self
                .env
                .timeout(self.config.attempt_timeout, self.model.complete(request))
                .await
            {
                Ok(Ok(response)) => return Ok((response.text, attempt)),
                Ok(Err(error)) => error,
                Err(elapsed) => LlmError::Timeout {
                    after_ms: u64::try_from(elapsed.after.as_millis()).unwrap_or(u64::MAX),
                },
            };
            let backoff = Duration::from_millis(500 << attempt.min(8));
            let wait = error
                .retry_after_ms()
                .map_or(backoff, Duration::from_millis);
            if !error.is_retryable()
                || attempt >= self.config.attempts_max
                || wait > self.config.wait_max
            {
                return Err(BotError::Model {
                    attempts: attempt,
                    last: error,
                });
            }
            self.env.sleep(wait).await;
        }
    }
}
