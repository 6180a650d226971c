//! One attempt of a routed call on one model: a whole answer, or a stream whose first
//! event has arrived (so a failure before it can still be retried elsewhere), with the
//! phases a routed stream goes through.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;

use super::millis;
use crate::env::{Env, EnvironmentExt};
use crate::llm::{
    CompletionRequest, CompletionResponse, EventStream, LanguageModel, LlmError, StreamEvent,
};

/// Where a routed stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Before Done.
    Streaming,
    /// After Done: only usage is passed on.
    AfterDone,
    /// Over.
    Ended,
}

impl Phase {
    fn from_done(done: bool) -> Self {
        if done {
            Self::AfterDone
        } else {
            Self::Streaming
        }
    }
}

/// What an attempt produced.
pub(super) enum Answer {
    Response(CompletionResponse),
    Stream(EventStream),
}

/// One attempt: a whole answer, or a stream whose first event has arrived.
pub(super) fn attempt(
    model: Arc<dyn LanguageModel>,
    request: Arc<CompletionRequest>,
    streaming: bool,
    env: Env,
    idle: Duration,
) -> BoxFuture<'static, Result<Answer, LlmError>> {
    Box::pin(async move {
        if !streaming {
            return model.complete(&request).await.map(Answer::Response);
        }
        let mut stream = model.stream(&request).await?;
        // Retrying stays possible until the first event: wait for it here.
        let first = match stream.next().await {
            Some(Ok(event)) => event,
            Some(Err(error)) => return Err(error),
            None => return Err(LlmError::EmptyStream),
        };
        // After Done only usage may follow (some providers report it last); anything
        // else, a timeout or the end closes the stream quietly, never with an error.
        let after_done = first.is_done();
        let rest = futures::stream::unfold(
            (stream, env, Phase::from_done(after_done)),
            move |(mut stream, env, phase)| async move {
                if phase == Phase::Ended {
                    return None;
                }
                match env.timeout(idle, stream.next()).await {
                    Ok(Some(Ok(StreamEvent::Usage { usage }))) if phase == Phase::AfterDone => {
                        Some((Ok(StreamEvent::Usage { usage }), (stream, env, phase)))
                    }
                    Ok(Some(_)) | Ok(None) | Err(_) if phase == Phase::AfterDone => None,
                    Ok(Some(item)) => {
                        let next = match &item {
                            Err(_) => Phase::Ended,
                            Ok(event) => Phase::from_done(event.is_done()),
                        };
                        Some((item, (stream, env, next)))
                    }
                    Ok(None) => None,
                    Err(_) => Some((
                        Err(LlmError::Timeout {
                            after_ms: millis(idle),
                        }),
                        (stream, env, Phase::Ended),
                    )),
                }
            },
        );
        // Fused: polled again after its end, the stream answers `None`.
        Ok(Answer::Stream(
            futures::stream::iter([Ok(first)])
                .chain(rest)
                .fuse()
                .boxed(),
        ))
    })
}
