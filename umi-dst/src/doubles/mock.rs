//! MockLanguageModel: one canned answer, streamed a character at a time, never failing.
//!
//! The simplest double, for code that needs *a* model: it answers every request with the
//! same text, finish reason and usage. It follows the workspace's stop-sequence rule
//! (earliest match, first listed wins a tie, empty stops ignored; a stop turns the finish
//! reason into `stop`), emits one text delta per Unicode scalar value (not per grapheme:
//! an emoji with a skin tone is two deltas), and always ends with exactly one `Done`, for
//! empty text too. It ignores everything else in the request and never returns an error.
//! It lives in umi-dst, so umi-core's release build never contains it.

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::llm::stop::apply_stop;
use umi_core::llm::{
    CompletionRequest, EventStream, FinishReason, LanguageModel, LlmError, ModelRef, StreamEvent,
    TokenUsage,
};

/// A model that always gives the same answer.
#[derive(Debug, Clone)]
pub struct MockLanguageModel {
    model_ref: ModelRef,
    text: String,
    finish_reason: FinishReason,
    usage: TokenUsage,
}

impl MockLanguageModel {
    /// A model answering `text`, finishing with `stop`, reporting zero usage.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            model_ref: ModelRef::new("mock", "mock", 8_192, 4_096),
            text: text.into(),
            finish_reason: FinishReason::Stop,
            usage: TokenUsage::default(),
        }
    }

    /// Sets the finish reason reported when no stop sequence cuts the text.
    pub fn with_finish_reason(mut self, finish_reason: FinishReason) -> Self {
        self.finish_reason = finish_reason;
        self
    }

    /// Sets the usage reported in `Done`.
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the model reference.
    pub fn with_model_ref(mut self, model_ref: ModelRef) -> Self {
        self.model_ref = model_ref;
        self
    }

    /// The events this model streams for `request`.
    pub fn events(&self, request: &CompletionRequest) -> Vec<StreamEvent> {
        let (text, stopped) = apply_stop(&self.text, &request.stop);
        let finish_reason = if stopped {
            FinishReason::Stop
        } else {
            self.finish_reason.clone()
        };
        let mut events: Vec<StreamEvent> = text
            .chars()
            .map(|c| StreamEvent::text(c.to_string()))
            .collect();
        events.push(StreamEvent::done(finish_reason, Some(self.usage)));
        events
    }
}

#[async_trait]
impl LanguageModel for MockLanguageModel {
    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        Ok(futures::stream::iter(self.events(request).into_iter().map(Ok)).boxed())
    }
}
