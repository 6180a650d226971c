//! RecordingLanguageModel: any model, with a log of what it was asked.
//!
//! Wraps a `LanguageModel` (SimLLM, a client, another double) and forwards every call to
//! it unchanged, keeping each request in order, so a test or a scenario can check what
//! the code under test sent (the history after a context overflow, the tool results
//! answered) without changing what it gets back.

use std::sync::Arc;

use async_trait::async_trait;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, EventStream, LanguageModel, LlmError, ModelRef,
};

use super::RequestLog;

/// A model that logs every request before forwarding it.
pub struct RecordingLanguageModel {
    inner: Arc<dyn LanguageModel>,
    log: RequestLog,
}

impl std::fmt::Debug for RecordingLanguageModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingLanguageModel")
            .field("model", &self.inner.model_ref().id())
            .field("requests", &self.log.len())
            .finish()
    }
}

impl RecordingLanguageModel {
    /// Logs what `inner` is asked.
    pub fn new(inner: Arc<dyn LanguageModel>) -> Self {
        Self {
            inner,
            log: RequestLog::default(),
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.log.all()
    }
}

#[async_trait]
impl LanguageModel for RecordingLanguageModel {
    fn model_ref(&self) -> &ModelRef {
        self.inner.model_ref()
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        self.log.push(request);
        self.inner.stream(request).await
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        self.log.push(request);
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doubles::MockLanguageModel;
    use umi_core::llm::Message;

    /// Whole and streamed calls are both logged, in order, and answered by the inner
    /// model unchanged.
    #[test]
    fn every_request_is_logged_in_order_and_forwarded() {
        crate::Simulation::new(crate::SimConfig::new(0)).block_on(async |_| {
            let recording = RecordingLanguageModel::new(Arc::new(MockLanguageModel::new("hello")));
            let first = CompletionRequest::new(vec![Message::user("one")]);
            let second = CompletionRequest::new(vec![Message::user("two")]);
            let answer = recording.complete(&first).await.unwrap();
            assert_eq!(answer.text, "hello");
            let events = recording.stream(&second).await.unwrap();
            let streamed = umi_core::llm::StreamCollector::collect("mock", events)
                .await
                .unwrap();
            assert_eq!(streamed.text, "hello");
            assert_eq!(recording.requests(), vec![first, second]);
            assert_eq!(recording.model_ref().id(), "mock/mock");
        });
    }
}
