//! The provider trait every model implements: real clients, the router, SimLLM, and the
//! test doubles.

use std::sync::Arc;

use async_trait::async_trait;

use super::collector::StreamCollector;
use super::error::LlmError;
use super::event::EventStream;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};

/// A language model that answers [`CompletionRequest`]s, streamed or whole.
///
/// # Contract
///
/// Every implementation in the workspace is checked against this by
/// `umi_dst::conformance` over generated requests.
///
/// 1. **Errors before any output come from `stream()` itself.** An infrastructure
///    failure before anything was produced (connection refused, 429, 401, an invalid
///    request) is `Err` from [`LanguageModel::stream`], never a stream whose first item
///    is an error. A caller can therefore retry or fall back whenever `stream()` fails,
///    knowing nothing reached its user.
/// 2. **A stream ends with exactly one `Done`**, as its last item, whatever the finish
///    reason (`length` and `content_filter` included).
/// 3. **An `Err` item is unrecoverable and ends the stream**: nothing follows it, and no
///    `Done` was sent before it. The caller must treat what it received as partial.
/// 4. Text, reasoning, tool-call and usage events may interleave before `Done`. Usage
///    may arrive as its own event or inside `Done`.
/// 5. **`complete` equals collecting `stream`**: the default implementation does exactly
///    that, with [`StreamCollector`]; an override must return the same response.
///
/// Implementations are `Send + Sync` and object-safe, so agent code holds
/// `Arc<dyn LanguageModel>` and never knows which model it talks to.
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// The model and its limits.
    fn model_ref(&self) -> &ModelRef;

    /// Starts an answer and returns its events (see the contract).
    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError>;

    /// The whole answer: by default, [`LanguageModel::stream`] collected.
    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        let stream = self.stream(request).await?;
        StreamCollector::collect(self.model_ref().model.clone(), stream).await
    }
}

#[async_trait]
impl<T: LanguageModel + ?Sized> LanguageModel for Arc<T> {
    fn model_ref(&self) -> &ModelRef {
        (**self).model_ref()
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        (**self).stream(request).await
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        (**self).complete(request).await
    }
}

#[async_trait]
impl<T: LanguageModel + ?Sized> LanguageModel for Box<T> {
    fn model_ref(&self) -> &ModelRef {
        (**self).model_ref()
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        (**self).stream(request).await
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        (**self).complete(request).await
    }
}
