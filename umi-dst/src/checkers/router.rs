//! Router checkers: properties of the router's behaviour, read from the events it
//! emitted (with their simulated times), checked against its configuration.
//!
//! 1. Attempts on one model within one call never exceed `1 + max_retries`.
//! 2. A retry comes at least the backoff floor after the failure it retries, and at least
//!    the Retry-After the failure asked for (when that is within the cap).
//! 3. No retry on the same model after a non-retryable error.
//! 4. After a context overflow, a call only tries models with a larger window.
//! 5. No attempt on a provider while its circuit is open (an answer from the provider,
//!    even to an attempt begun before, closes it).
//! 6. A call succeeds at most once and makes no attempt after succeeding: streamed
//!    output is never duplicated.
//! 7. No backoff right after the failure that opened the model's circuit: the retry
//!    would be rejected, so the call goes to the next model at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use umi_core::llm::router::{RetryPolicy, RouterEvent, RouterObserver};
use umi_core::llm::{LlmError, ModelId};

use crate::simulation::Violation;

/// Collects router events for the checkers.
#[derive(Debug, Clone, Default)]
pub struct RouterLog {
    events: Arc<Mutex<Vec<(Duration, RouterEvent)>>>,
}

impl RouterLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An observer to give the router.
    pub fn observer(&self) -> RouterObserver {
        let events = self.events.clone();
        Arc::new(move |event, at| {
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((at, event.clone()));
        })
    }

    /// The events so far.
    pub fn events(&self) -> Vec<(Duration, RouterEvent)> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Checks rules 1 to 7 on `events`. `windows` maps each model to its context window.
pub fn check_router(
    events: &[(Duration, RouterEvent)],
    retry: &RetryPolicy,
    windows: &BTreeMap<String, u32>,
) -> Result<(), Violation> {
    let mut seen = Seen::default();
    // The provider whose circuit the previous event opened (the router emits the failure,
    // the opening and any backoff with no await between them).
    let mut just_opened: Option<&str> = None;
    for (at, event) in events {
        let opened_before = just_opened.take();
        match event {
            RouterEvent::Attempt {
                call,
                model,
                attempt,
            } => seen.attempt(*at, *call, model, *attempt, retry, windows)?,
            RouterEvent::Failed {
                call, model, error, ..
            } => {
                seen.last_failure
                    .insert((*call, model.clone()), (*at, error.clone()));
                if error.needs_larger_context() {
                    let window = windows.get(model).copied().unwrap_or(0);
                    let entry = seen.overflow_window.entry(*call).or_insert(window);
                    *entry = (*entry).max(window);
                }
            }
            RouterEvent::Succeeded { call, model, .. } => {
                if let Some(previous) = seen.succeeded.insert(*call, model.clone()) {
                    return Err(Violation::new(format!(
                        "call {call}: answered twice, by {previous} and {model}"
                    )));
                }
                // An answer (even from an attempt begun before the circuit opened) shows
                // the provider is up: the breaker closes its circuit.
                seen.open_until.remove(ModelId::provider_of(model));
            }
            RouterEvent::CircuitOpened { provider, until_ms } => {
                seen.open_until
                    .insert(provider.clone(), Duration::from_millis(*until_ms));
                just_opened = Some(provider);
            }
            RouterEvent::Backoff { call, model, .. } => {
                if opened_before == Some(ModelId::provider_of(model)) {
                    return Err(Violation::new(format!(
                        "call {call}: backed off on {model} after its failure opened the circuit"
                    )));
                }
            }
            RouterEvent::Fallback { .. } | RouterEvent::Skipped { .. } => {}
        }
    }
    Ok(())
}

/// What the router checker has seen so far, per call, model and provider.
#[derive(Default)]
struct Seen {
    attempts: BTreeMap<(u64, String), u32>,
    last_failure: BTreeMap<(u64, String), (Duration, LlmError)>,
    overflow_window: BTreeMap<u64, u32>,
    open_until: BTreeMap<String, Duration>,
    succeeded: BTreeMap<u64, String>,
}

impl Seen {
    /// Attempt `attempt` of `call` on `model` at `at`: within the attempt limit, before
    /// any answer, outside a cool-down, in a larger window after an overflow, and (for a
    /// retry) after a retryable failure and its wait.
    fn attempt(
        &mut self,
        at: Duration,
        call: u64,
        model: &str,
        attempt: u32,
        retry: &RetryPolicy,
        windows: &BTreeMap<String, u32>,
    ) -> Result<(), Violation> {
        let key = (call, model.to_owned());
        let count = self.attempts.entry(key.clone()).or_insert(0);
        *count += 1;
        if *count > retry.max_retries + 1 {
            return Err(Violation::new(format!(
                "call {call}: {count} attempts on {model}, over 1 + max_retries ({})",
                retry.max_retries
            )));
        }
        if let Some(winner) = self.succeeded.get(&call) {
            return Err(Violation::new(format!(
                "call {call}: attempt on {model} after {winner} already answered"
            )));
        }
        if let Some(until) = self.open_until.get(ModelId::provider_of(model))
            && at < *until
        {
            return Err(Violation::new(format!(
                "call {call}: attempt on {model} at {at:?} while its provider cools down until {until:?}"
            )));
        }
        if let Some(window) = self.overflow_window.get(&call) {
            let this = windows.get(model).copied().unwrap_or(0);
            if this <= *window {
                return Err(Violation::new(format!(
                    "call {call}: after a context overflow in a window of {window}, tried {model} with {this}"
                )));
            }
        }
        match self.last_failure.get(&key) {
            Some((failed_at, error)) => {
                retry_wait(call, model, attempt, at - *failed_at, error, retry)
            }
            None => Ok(()),
        }
    }
}

/// Retry `attempt` of `call` on `model`, `gap` after the failure it retries: only after a
/// retryable error, and no sooner than the backoff floor and the Retry-After asked
/// (when that is within the cap).
fn retry_wait(
    call: u64,
    model: &str,
    attempt: u32,
    gap: Duration,
    error: &LlmError,
    retry: &RetryPolicy,
) -> Result<(), Violation> {
    if !error.is_retryable() {
        return Err(Violation::new(format!(
            "call {call}: retried {model} after a non-retryable {}",
            error.kind()
        )));
    }
    let gap_ms = gap.as_millis() as u64;
    let floor_ms = retry.backoff_floor_ms(attempt - 1);
    if gap_ms < floor_ms {
        return Err(Violation::new(format!(
            "call {call}: retry #{attempt} of {model} after {gap_ms} ms, under the backoff floor of {floor_ms} ms"
        )));
    }
    if let Some(asked) = error
        .retry_after_ms()
        .filter(|asked| *asked <= retry.retry_after_max_ms)
        && gap_ms < asked
    {
        return Err(Violation::new(format!(
            "call {call}: retry #{attempt} of {model} after {gap_ms} ms, but Retry-After asked {asked} ms"
        )));
    }
    Ok(())
}
