//! Calls the scenarios make: a chat request, a whole or streamed answer through the real
//! collector, and a fault scoped to one operation.

use umi_core::llm::{CompletionRequest, CompletionResponse, LanguageModel, LlmError, Message};
use umi_dst::{FaultConfig, FaultKind};

/// A fault of `kind` firing with `probability`, only on operations named `operation` (a
/// trailing `*` makes it a prefix).
pub fn fault_on(kind: FaultKind, probability: f64, operation: &str) -> FaultConfig {
    FaultConfig::chance(kind, probability)
        .with_filter(umi_dst::fault::OperationFilter::parse(operation))
        .expect("scenario filters name their own domain")
}

/// Asks `model` for a whole answer, or (`stream`) streams it through the real collector.
pub async fn ask(
    model: &dyn LanguageModel,
    request: &CompletionRequest,
    stream: bool,
) -> Result<CompletionResponse, LlmError> {
    if !stream {
        return model.complete(request).await;
    }
    let events = model.stream(request).await?;
    umi_core::llm::StreamCollector::collect(model.model_ref().model.clone(), events).await
}

/// A short chat request with task tag `task`.
pub fn chat(text: &str, task: &str) -> CompletionRequest {
    chat_owned(text.to_owned(), task)
}

/// [`chat`] of a text the caller owns: moved into the request, not copied (a long
/// transcript is most of a request's bytes).
pub fn chat_owned(text: String, task: &str) -> CompletionRequest {
    CompletionRequest::new(vec![
        Message::system("You are a concise assistant."),
        Message::user(text),
    ])
    .with_task(task)
}
