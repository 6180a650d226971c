//! FnLanguageModel: a closure from (request, call index) to a turn.
//!
//! For models that answer by what is asked: route on the request's task tag, its last
//! user message or its tools, so the double keeps working when the code under test
//! reorders or adds calls. Requests are logged like the scripted model's.

use std::fmt;

use async_trait::async_trait;
use umi_core::env::Env;
use umi_core::llm::{CompletionRequest, EventStream, LanguageModel, LlmError, ModelRef};

use super::RequestLog;
use super::turn::Turn;

/// The closure type: request and 1-based call number to a turn.
pub type TurnFn = dyn Fn(&CompletionRequest, usize) -> Turn + Send + Sync;

/// A model whose every answer is computed by a closure.
pub struct FnLanguageModel {
    model_ref: ModelRef,
    answer: Box<TurnFn>,
    log: RequestLog,
    env: Option<Env>,
}

impl FnLanguageModel {
    /// A model answering with `answer(request, call_number)`.
    pub fn new(answer: impl Fn(&CompletionRequest, usize) -> Turn + Send + Sync + 'static) -> Self {
        Self {
            model_ref: ModelRef::new("fn", "fn", 32_768, 4_096),
            answer: Box::new(answer),
            log: RequestLog::default(),
            env: None,
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
}

impl fmt::Debug for FnLanguageModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnLanguageModel")
            .field("model_ref", &self.model_ref)
            .field("calls", &self.log.len())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LanguageModel for FnLanguageModel {
    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        let call = self.log.push(request);
        request.validate()?;
        (self.answer)(request, call).play(self.env.clone())
    }
}
