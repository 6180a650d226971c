//! Test doubles for the `LanguageModel` trait, for ordinary unit tests of agent code.
//!
//! - [`MockLanguageModel`]: one canned answer, never fails.
//! - [`ScriptedLanguageModel`]: a queue of [`Turn`]s, one per call; logs requests.
//! - [`FnLanguageModel`]: a closure picks the turn from the request.
//! - [`RecordingLanguageModel`]: any model, forwarded unchanged, with a log of the
//!   requests it was asked.
//! - [`HookedStorage`]: a storage whose writes go through a [`WriteHook`] of yours, to
//!   plant a storage bug a harness must find (the canaries and the checkers' own tests).
//!
//! The three answering doubles pass `crate::conformance`. For answers derived from a seed, with faults
//! and simulated latency, use SimLLM.

mod function;
mod mock;
mod planted;
mod recording;
mod scripted;
mod turn;

use std::sync::Mutex;

pub use function::{FnLanguageModel, TurnFn};
pub use mock::MockLanguageModel;
pub use planted::{HookedStorage, WriteHook};
pub use recording::RecordingLanguageModel;
pub use scripted::ScriptedLanguageModel;
pub use turn::{Part, Turn};
use umi_core::llm::CompletionRequest;

/// The requests a double received, in order.
#[derive(Debug, Default)]
struct RequestLog {
    requests: Mutex<Vec<CompletionRequest>>,
}

impl RequestLog {
    /// Records `request` and returns its 1-based call number.
    fn push(&self, request: &CompletionRequest) -> usize {
        let mut requests = self.lock();
        requests.push(request.clone());
        requests.len()
    }

    fn all(&self) -> Vec<CompletionRequest> {
        self.lock().clone()
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CompletionRequest>> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
