//! LlmRouter: one `LanguageModel` in front of several, with retries, backoff,
//! Retry-After, timeouts, fallbacks, context-window fallbacks and a circuit breaker.
//!
//! # One routed call
//!
//! 1. The chain: the request's `provider/model-id` if it names one, else the model routed
//!    for its task tag, else the default; then the fallbacks, in order.
//! 2. For each model: the breaker may skip it (cooling down). Otherwise up to
//!    `1 + max_retries` attempts, each bounded by `request_timeout_ms` (and the call's
//!    deadline) on the environment's clock.
//! 3. After a retryable failure: a backoff of `initial × multiplier^n` (capped at
//!    `backoff_max_ms`) plus up to `jitter` of it, drawn from the environment; a rate
//!    limit's Retry-After is honoured when longer (never a shorter sleep than asked), and
//!    one longer than `retry_after_max_ms` moves to the next model instead of waiting.
//! 4. A non-retryable failure moves to the next model at once, except a bad request or an
//!    invalid prompt, which no other model would accept either: those end the call.
//! 5. A context overflow moves only to the context fallbacks with a larger window; when
//!    none is left the overflow itself is returned, so the caller can shrink the prompt.
//! 6. When every model failed (or the deadline passed), [`LlmError::Exhausted`] carries
//!    every attempt's error.
//!
//! Streaming retries and falls back only until the first event has reached the caller:
//! each attempt waits for its stream's first event; after that, the stream is the
//! caller's, and a later error passes through. Output is never duplicated.
//!
//! Every step is a [`RouterEvent`], logged with `tracing`, recorded in the environment's
//! trace, and given to the observer (umi-dst's router checkers use it).

mod attempt;
mod breaker;
mod builder;
mod config;
mod events;
mod factory;
pub mod policy;
mod warnings;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use attempt::{Answer, attempt};
use breaker::{Admission, Breaker};
pub use builder::RouterBuilder;
pub use config::{
    ConfigError, CooldownPolicy, ModelConfig, RetryPolicy, RouterConfig, RoutingConfig,
};
pub use events::{FallbackReason, RouterEvent, RouterObserver};
pub use factory::ResolveError;
use policy::Step;
pub use warnings::ConfigWarning;

use super::error::{FailedAttempt, LlmError};
use super::event::EventStream;
use super::provider::LanguageModel;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use crate::constants::ROUTER_ATTEMPTS_MAX;
use crate::env::{Env, EnvironmentExt};

/// A routable model.
struct Target {
    model: Arc<dyn LanguageModel>,
}

/// The router. Build it from a [`RouterConfig`] with [`LlmRouter::from_config`], or from
/// models you already have with [`LlmRouter::builder`].
pub struct LlmRouter {
    targets: BTreeMap<String, Target>,
    routing: RoutingConfig,
    retry: RetryPolicy,
    breaker: Breaker,
    env: Env,
    observer: Option<RouterObserver>,
    calls: AtomicU64,
    model_ref: ModelRef,
}

impl std::fmt::Debug for LlmRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmRouter")
            .field("models", &self.targets.keys().collect::<Vec<_>>())
            .field("routing", &self.routing)
            .finish_non_exhaustive()
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl LlmRouter {
    /// A builder for a router over models you construct.
    pub fn builder(env: Env) -> RouterBuilder {
        RouterBuilder {
            env,
            targets: BTreeMap::new(),
            routing: RoutingConfig {
                default: String::new(),
                fallback: Vec::new(),
                context_fallback: Vec::new(),
                tasks: BTreeMap::new(),
            },
            retry: RetryPolicy::default(),
            cooldown: CooldownPolicy::default(),
            observer: None,
        }
    }

    /// Sets the observer of router events.
    pub fn with_observer(mut self, observer: RouterObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    fn emit(&self, event: &RouterEvent) {
        let now = self.env.elapsed();
        match event {
            RouterEvent::Failed {
                call,
                model,
                attempt,
                error,
            } => {
                tracing::debug!(call, model, attempt, %error, "router attempt failed");
            }
            RouterEvent::Fallback {
                call,
                from,
                to,
                reason,
            } => {
                tracing::info!(call, from, to, %reason, "router falls back");
            }
            RouterEvent::CircuitOpened { provider, until_ms } => {
                tracing::warn!(provider, until_ms, "circuit opened");
            }
            RouterEvent::Attempt { .. }
            | RouterEvent::Succeeded { .. }
            | RouterEvent::Backoff { .. }
            | RouterEvent::Skipped { .. } => {}
        }
        self.env.record(event.kind(), format_args!("{event}"));
        if let Some(observer) = &self.observer {
            observer(event, now);
        }
    }

    /// The models to try for `request`, in order.
    fn chain(&self, request: &CompletionRequest) -> Result<VecDeque<String>, LlmError> {
        let primary = if request.model.contains('/') {
            self.resolve(&request.model)
                .map_err(|error| LlmError::BadRequest {
                    status: None,
                    message: error.to_string(),
                })?;
            request.model.clone()
        } else if let Some(id) = request
            .task
            .as_ref()
            .and_then(|task| self.routing.tasks.get(task))
        {
            id.clone()
        } else {
            self.routing.default.clone()
        };
        let mut chain = VecDeque::from([primary]);
        for id in &self.routing.fallback {
            if !chain.contains(id) {
                chain.push_back(id.clone());
            }
        }
        Ok(chain)
    }

    /// Context fallbacks with a window larger than `window`.
    fn larger_windows(&self, window: u32, tried: &[String]) -> VecDeque<String> {
        self.routing
            .context_fallback
            .iter()
            .filter(|id| !tried.contains(id))
            .filter(|id| {
                self.targets[id.as_str()]
                    .model
                    .model_ref()
                    .context_window_tokens
                    > window
            })
            .cloned()
            .collect()
    }

    fn counts_against_provider(error: &LlmError) -> bool {
        error.is_retryable() || matches!(error, LlmError::Auth { .. })
    }

    /// The calls' loop shared by `complete` and `stream`: each model of the chain in
    /// turn ([`Self::try_model`]) until one answers, the call is refused, the deadline
    /// passes or the chain is spent.
    async fn route(
        &self,
        request: &CompletionRequest,
        streaming: bool,
    ) -> Result<Answer, LlmError> {
        request.validate()?;
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let deadline = self.env.elapsed() + Duration::from_millis(self.retry.deadline_ms);
        let mut chain = self.chain(request)?;
        let mut tried: Vec<String> = Vec::new();
        let mut failures: Vec<FailedAttempt> = Vec::new();
        // The overflow that ended the last model tried, if that is how it ended: returned
        // as it is when no larger window is left, so the caller can shrink the prompt.
        let mut overflow: Option<LlmError> = None;
        // The conversation as the last model was sent it, readdressed for the next.
        let mut routed: Option<Arc<CompletionRequest>> = None;
        while let Some(id) = chain.pop_front() {
            tried.push(id.clone());
            overflow = None;
            let attempt = Attempted {
                call,
                id: &id,
                request,
                streaming,
                deadline,
            };
            match self.try_model(attempt, &mut routed, &mut failures).await {
                ModelEnd::Answered(answer) => return Ok(answer),
                ModelEnd::Refused(error) => return Err(error),
                ModelEnd::Overflowed(error) => {
                    chain = self.context_fallback(call, &id, &tried);
                    overflow = Some(error);
                }
                ModelEnd::Left(reason) => {
                    let next = chain.front().cloned();
                    if next.is_some() {
                        self.env.cover("router.fallback");
                    }
                    self.emit(&RouterEvent::Fallback {
                        call,
                        from: id.clone(),
                        to: next,
                        reason,
                    });
                }
            }
            if self.env.elapsed() >= deadline {
                self.env.cover("router.deadline");
                return Err(LlmError::Exhausted {
                    reason: format!("deadline of {} ms passed", self.retry.deadline_ms),
                    attempts: failures,
                });
            }
        }
        if let Some(error) = overflow {
            // No larger window is left: the caller must shrink the prompt.
            return Err(error);
        }
        self.env.cover("router.exhausted");
        Err(LlmError::Exhausted {
            reason: "every model failed".into(),
            attempts: failures,
        })
    }

    /// After `id` overflowed its context window: the models with larger windows not yet
    /// `tried`, smallest first, as the rest of the chain (announced as a fallback).
    fn context_fallback(&self, call: u64, id: &str, tried: &[String]) -> VecDeque<String> {
        self.env.cover("router.context_fallback");
        let window = self.targets[id].model.model_ref().context_window_tokens;
        let chain = self.larger_windows(window, tried);
        self.emit(&RouterEvent::Fallback {
            call,
            from: id.to_owned(),
            to: chain.front().cloned(),
            reason: FallbackReason::ContextOverflow {
                window_tokens: window,
            },
        });
        chain
    }

    /// One model's attempts: the first and its retries, each admitted by the breaker,
    /// bounded by the call's deadline and [`ROUTER_ATTEMPTS_MAX`]; after a failure the
    /// next step is [`policy::after_failure`]'s.
    async fn try_model(
        &self,
        attempted: Attempted<'_>,
        last_routed: &mut Option<Arc<CompletionRequest>>,
        failures: &mut Vec<FailedAttempt>,
    ) -> ModelEnd {
        let Attempted {
            call,
            id,
            request,
            streaming,
            deadline,
        } = attempted;
        let target = self.targets[id].model.clone();
        let provider = crate::llm::ModelId::provider_of(id).to_owned();
        let routed = routed_to(last_routed, request, &target);
        for number in 0..=self.retry.max_retries {
            let now = self.env.elapsed();
            if now >= deadline {
                return ModelEnd::Left(FallbackReason::DeadlinePassed);
            }
            if failures.len() >= ROUTER_ATTEMPTS_MAX {
                return ModelEnd::Left(FallbackReason::AttemptsCapped);
            }
            if !self.admitted(call, id, &provider, number, now, failures) {
                return ModelEnd::Left(FallbackReason::CircuitCooling);
            }
            let budget = Duration::from_millis(self.retry.request_timeout_ms).min(deadline - now);
            self.emit(&RouterEvent::Attempt {
                call,
                model: id.to_owned(),
                attempt: number,
            });
            let run = self.attempt_within(&target, &routed, streaming, budget);
            let error = match run.await {
                Ok(value) => {
                    self.breaker.record(&provider, self.env.elapsed(), true);
                    self.emit(&RouterEvent::Succeeded {
                        call,
                        model: id.to_owned(),
                        attempt: number,
                    });
                    return ModelEnd::Answered(value);
                }
                Err(error) => error,
            };
            let circuit_opened = self.record_failure(call, id, &provider, number, &error, failures);
            let failure = policy::Failure {
                error: &error,
                attempt: number,
                circuit_opened,
            };
            let step =
                policy::after_failure(failure, &self.retry, self.env.elapsed(), deadline, || {
                    self.env.random_unit_f64("router.jitter")
                });
            match step {
                Step::LargerWindow => return ModelEnd::Overflowed(error),
                Step::Refuse => return ModelEnd::Refused(error),
                Step::NextModel(reason) => return ModelEnd::Left(FallbackReason::Policy(reason)),
                Step::Retry { .. } => self.back_off(call, id, step).await,
            }
        }
        // Unreached: the last attempt's failure is `RetriesExhausted` at the latest.
        ModelEnd::Left(FallbackReason::Policy(policy::NextReason::RetriesExhausted))
    }

    /// One attempt of `routed` on `target` within `budget`: its answer, or its error (a
    /// timeout when the budget ran out first). The idle timeout between a stream's
    /// events is the policy's request timeout.
    async fn attempt_within(
        &self,
        target: &Arc<dyn LanguageModel>,
        routed: &Arc<CompletionRequest>,
        streaming: bool,
        budget: Duration,
    ) -> Result<Answer, LlmError> {
        let idle = Duration::from_millis(self.retry.request_timeout_ms);
        let env = self.env.clone();
        let run = attempt(target.clone(), Arc::clone(routed), streaming, env, idle);
        match self.env.timeout(budget, run).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Timeout {
                after_ms: millis(budget),
            }),
        }
    }

    /// Asks the breaker to admit attempt `number` on `id` (before every attempt: a circuit
    /// may open while this call is backing off); a rejection is recorded as a failed
    /// attempt without an error.
    fn admitted(
        &self,
        call: u64,
        id: &str,
        provider: &str,
        number: u32,
        now: Duration,
        failures: &mut Vec<FailedAttempt>,
    ) -> bool {
        let admission = self.breaker.admit(provider, now);
        if admission == Admission::Probe {
            self.env.cover("router.circuit_probe");
        }
        let Admission::Rejected { until } = admission else {
            return true;
        };
        self.env.cover("router.skip_cooling");
        self.emit(&RouterEvent::Skipped {
            call,
            model: id.to_owned(),
            until_ms: millis(until),
        });
        failures.push(FailedAttempt {
            model: id.to_owned(),
            attempt: number,
            error: None,
        });
        false
    }

    /// Carries out a [`Step::Retry`]: its marks, its event, its sleep.
    async fn back_off(&self, call: u64, id: &str, step: Step) {
        let Step::Retry {
            sleep_ms,
            floor_ms,
            jitter_ms,
            retry_after_ms,
        } = step
        else {
            return;
        };
        self.env.cover("router.retry");
        if retry_after_ms.is_some_and(|asked| asked > floor_ms + jitter_ms) {
            self.env.cover("router.retry_after");
        }
        self.emit(&RouterEvent::Backoff {
            call,
            model: id.to_owned(),
            sleep_ms,
            floor_ms,
            retry_after_ms,
        });
        self.env.sleep(Duration::from_millis(sleep_ms)).await;
    }

    /// Records a failed attempt (its event, the failures list, the breaker) and returns
    /// whether it opened the provider's circuit.
    fn record_failure(
        &self,
        call: u64,
        id: &str,
        provider: &str,
        number: u32,
        error: &LlmError,
        failures: &mut Vec<FailedAttempt>,
    ) -> bool {
        self.emit(&RouterEvent::Failed {
            call,
            model: id.to_owned(),
            attempt: number,
            error: error.clone(),
        });
        failures.push(FailedAttempt {
            model: id.to_owned(),
            attempt: number,
            error: Some(Box::new(error.clone())),
        });
        if Self::counts_against_provider(error)
            && let Some(until) = self.breaker.record(provider, self.env.elapsed(), false)
        {
            self.env.cover("router.circuit_open");
            self.emit(&RouterEvent::CircuitOpened {
                provider: provider.to_owned(),
                until_ms: millis(until),
            });
            return true;
        }
        false
    }
}

/// One model's turn in a call: which call, which model, the request, whether it
/// streams, and the call's deadline.
#[derive(Clone, Copy)]
struct Attempted<'a> {
    call: u64,
    id: &'a str,
    request: &'a CompletionRequest,
    streaming: bool,
    deadline: Duration,
}

/// How a model's turn ended.
enum ModelEnd {
    /// It answered.
    Answered(Answer),
    /// It refused the request as malformed: the call ends with the error.
    Refused(LlmError),
    /// The prompt overflowed its window: models with larger ones are next.
    Overflowed(LlmError),
    /// Retries spent, not retryable, its circuit open, or the deadline (which of them
    /// the reason says): the next model.
    Left(FallbackReason),
}

#[async_trait]
impl LanguageModel for LlmRouter {
    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        match self.route(request, false).await? {
            Answer::Response(response) => Ok(response),
            Answer::Stream(_) => unreachable!("complete routes whole answers"),
        }
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        match self.route(request, true).await? {
            Answer::Stream(stream) => Ok(stream),
            Answer::Response(_) => unreachable!("stream routes streams"),
        }
    }
}

/// `request` addressed to `target`'s model, shared by every attempt on it: each
/// attempt's future owns a handle, not a copy of the whole conversation.
///
/// `last` is the copy the call's previous model was sent. When no attempt holds it any
/// more, it is readdressed in place instead of copying the conversation again: it is
/// `request` with only `model` set, so the result is the same request either way.
fn routed_to(
    last: &mut Option<Arc<CompletionRequest>>,
    request: &CompletionRequest,
    target: &Arc<dyn LanguageModel>,
) -> Arc<CompletionRequest> {
    let model = &target.model_ref().model;
    if let Some(shared) = last.as_mut()
        && let Some(routed) = Arc::get_mut(shared)
    {
        routed.model.clone_from(model);
        return Arc::clone(shared);
    }
    let mut routed = request.clone();
    routed.model = model.clone();
    let shared = Arc::new(routed);
    *last = Some(Arc::clone(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    /// A model that only has a name: `routed_to` reads nothing else.
    struct Named(ModelRef);

    #[async_trait]
    impl LanguageModel for Named {
        fn model_ref(&self) -> &ModelRef {
            &self.0
        }

        async fn stream(&self, _request: &CompletionRequest) -> Result<EventStream, LlmError> {
            unreachable!("routed_to never calls the model")
        }
    }

    fn named(model: &str) -> Arc<dyn LanguageModel> {
        Arc::new(Named(ModelRef::new("sim", model, 8_192, 1_024)))
    }

    /// Issue 41: the next model's request is the last one's copy readdressed when no
    /// attempt holds it any more, and a fresh copy when one does (the held one keeps
    /// its model); either way it is the caller's request with only `model` set.
    #[test]
    fn a_request_is_readdressed_only_when_no_attempt_holds_it() {
        let request = CompletionRequest::new(vec![Message::user("a long conversation")]);
        let expected = |model: &str| {
            let mut routed = request.clone();
            routed.model = model.to_owned();
            routed
        };
        let mut last = None;
        let first = routed_to(&mut last, &request, &named("a"));
        assert_eq!(*first, expected("a"));
        // Still held (an attempt's stream, say): the next model gets a copy of its own.
        let second = routed_to(&mut last, &request, &named("b"));
        assert_eq!(*first, expected("a"), "a held request is never changed");
        assert_eq!(*second, expected("b"));
        assert!(!Arc::ptr_eq(&first, &second));
        drop(first);
        let second_at = Arc::as_ptr(&second);
        drop(second);
        // Released: the same allocation, readdressed.
        let third = routed_to(&mut last, &request, &named("c"));
        assert_eq!(*third, expected("c"));
        assert_eq!(Arc::as_ptr(&third), second_at);
    }
}
