//! ScriptedLanguageModel: a queue of turns, one per call, and a log of every request.
//!
//! For unit tests of agent code: script what the model says on each call (text, tool
//! calls whole or in raw fragments, usage, pauses, an error at a given point, or a refusal
//! of the call), run the code, then assert on the requests it sent. It answers the calls
//! in order; when the script runs out, the next call fails with a clear `BadRequest`
//! (never a panic), naming the call number and the script's length. For a model that must
//! answer by what is asked rather than by call order, use `FnLanguageModel`.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use umi_core::env::Env;
use umi_core::llm::{CompletionRequest, EventStream, LanguageModel, LlmError, ModelRef};

use super::RequestLog;
use super::turn::Turn;

/// A model that plays scripted turns in order.
#[derive(Debug)]
pub struct ScriptedLanguageModel {
    model_ref: ModelRef,
    turns: Mutex<VecDeque<Turn>>,
    turns_total: usize,
    repeat: Option<Turn>,
    log: RequestLog,
    env: Option<Env>,
}

impl ScriptedLanguageModel {
    /// A model answering call N with the N-th turn.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        let turns: VecDeque<Turn> = turns.into_iter().collect();
        Self {
            model_ref: ModelRef::new("scripted", "scripted", 32_768, 4_096),
            turns_total: turns.len(),
            turns: Mutex::new(turns),
            repeat: None,
            log: RequestLog::default(),
            env: None,
        }
    }

    /// A model answering every call with `turn`.
    pub fn repeating(turn: Turn) -> Self {
        Self {
            repeat: Some(turn),
            ..Self::new([])
        }
    }

    /// Gives the model an environment, for turns with pauses.
    pub fn with_env(mut self, env: Env) -> Self {
        self.env = Some(env);
        self
    }

    /// Sets the model reference.
    pub fn with_model_ref(mut self, model_ref: ModelRef) -> Self {
        self.model_ref = model_ref;
        self
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.log.all()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.log.len()
    }

    /// Turns not yet played.
    pub fn remaining(&self) -> usize {
        self.turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    fn next_turn(&self, call: usize) -> Result<Turn, LlmError> {
        if let Some(turn) = &self.repeat {
            return Ok(turn.clone());
        }
        let mut turns = self
            .turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        turns.pop_front().ok_or_else(|| LlmError::BadRequest {
            status: None,
            message: format!(
                "scripted model exhausted: call #{call} but the script has {} turn(s)",
                self.turns_total
            ),
        })
    }
}

#[async_trait]
impl LanguageModel for ScriptedLanguageModel {
    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        let call = self.log.push(request);
        request.validate()?;
        self.next_turn(call)?.play(self.env.clone())
    }
}
