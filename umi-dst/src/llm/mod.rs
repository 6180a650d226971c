//! SimLLM: a deterministic simulated language model.
//!
//! One seed fixes everything a model call could vary: the content, how it is chunked,
//! the tool arguments, the latency, and the faults. SimLLM answers umi-core's memory
//! prompts in exactly the shapes umi-core's parsers accept (checked in tests over a
//! thousand seeds), calls offered tools with arguments valid under their JSON Schemas,
//! and fails the ways real providers fail.
//!
//! # One call, step by step
//!
//! 1. The request is validated (`InvalidPrompt` for an empty or oversized prompt).
//! 2. Its canonical hash and how many times this same request was already made in the
//!    run select the call's random stream: same seed and request, same bytes, whatever
//!    other calls happened in between.
//! 3. A route is chosen (user routes first, then the built-ins) and traced.
//! 4. The optional rate-limit model may refuse with the real remaining wait.
//! 5. One fault decision on operation `llm.call.<task>` (or `llm.call` without a task
//!    tag): `llm.timeout` stalls in simulated time past the caller's deadline (or fails
//!    at once in `Immediate` mode); `llm.rate_limit` refuses with a seeded retry-after;
//!    `llm.context_overflow` and `llm.service_unavailable` refuse; `llm.invalid_response`
//!    breaks the answer (malformed JSON, valid JSON of the wrong shape, or nothing);
//!    `llm.stream_cut` ends the stream early (an error item, or no `Done`).
//! 6. A prompt over the context window is `ContextOverflow { prompt_tokens, limit }`,
//!    counted with umi-core's shared estimator.
//! 7. The route generates; stop sequences and the token budget cut the answer (finish
//!    reasons `stop` and `length`); usage is counted with the same estimator.
//! 8. The answer is planned as events with seeded chunking and latency, then streamed or,
//!    for `complete`, slept through at once with the same result.

mod canonical;
pub mod config;
pub mod conversation;
mod generate;
pub(crate) mod memo;
mod near_miss;
pub mod pattern;
mod plan;
mod prepare;
mod rate_limit;
mod route;
pub mod schema;
mod tool_pairing;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, EventStream, LanguageModel, LlmError, ModelRef,
};

#[cfg(feature = "serve")]
pub(crate) use canonical::value as canonical_json;
pub use canonical::{conversation_hash, request_hash};
pub use config::{LatencyModel, RateLimitModel, SimLlmConfig, SimLlmConfigError, TimeoutMode};
use plan::CallPlan;
use rate_limit::RateWindow;
pub use route::{Builtin, FnRoute, Generated, Route};

use crate::clock::SimClock;
use crate::fault::FaultInjector;
use crate::kernel::SimKernel;
use crate::rng::DeterministicRng;
use crate::trace::{LlmEvent, Trace};

/// Shortest and longest retry-after a `llm.rate_limit` fault asks for, in ms.
pub const FAULT_RETRY_AFTER_MS_MIN: u64 = 500;
/// See [`FAULT_RETRY_AFTER_MS_MIN`].
pub const FAULT_RETRY_AFTER_MS_MAX: u64 = 30_000;

/// The simulated model. Implements umi-core's `LanguageModel`.
pub struct SimLlm {
    config: SimLlmConfig,
    clock: SimClock,
    faults: Arc<FaultInjector>,
    trace: Arc<Trace>,
    rng: DeterministicRng,
    routes: Vec<Arc<dyn Route>>,
    occurrences: Mutex<BTreeMap<[u8; 32], u64>>,
    rate: Mutex<Option<RateWindow>>,
    /// Whether the warning about task routes and untagged requests was given.
    untagged_warned: std::sync::atomic::AtomicBool,
    /// The id of every tool call it answered with, in order (for the effect checkers:
    /// an effect must belong to a call the model made).
    tool_calls_made: Mutex<Vec<String>>,
    /// What was wrong with the tool results of the requests it got, one line each
    /// ([`crate::checkers::tool_results`]), at most `TOOL_RESULT_PROBLEMS_MAX`.
    tool_result_problems: Mutex<Vec<String>>,
    /// The run's usage ledger: every call and answer is counted there.
    usage: Arc<crate::usage::UsageLedger>,
}

/// Problems with tool results a SimLLM keeps at most (the first few say it all).
pub const TOOL_RESULT_PROBLEMS_MAX: usize = 16;

enum Chosen {
    User(usize),
    Builtin(Builtin),
}

impl SimLlm {
    /// A SimLLM with the default config for the run `sim` (its `SimEnvironment` or kernel).
    /// The run's shared one is [`SimEnvironment::llm`](crate::SimEnvironment::llm).
    pub fn new<K: AsRef<SimKernel> + ?Sized>(sim: &K) -> Self {
        Self::with_config(sim, SimLlmConfig::default()).expect("the default config is valid")
    }

    /// A SimLLM with `config`. Its streams fork from the run's `llm` stream and the
    /// model id, so two simulated models answer differently.
    pub fn with_config<K: AsRef<SimKernel> + ?Sized>(
        sim: &K,
        config: SimLlmConfig,
    ) -> Result<Self, SimLlmConfigError> {
        let sim = sim.as_ref();
        config.validate()?;
        let rng = sim
            .fork_rng(crate::rng::streams::seed::LLM.as_str())
            .fork(&config.model_ref.id());
        let rate = config.rate_limit.map(RateWindow::new);
        Ok(Self {
            clock: sim.clock().clone(),
            faults: sim.faults().clone(),
            trace: sim.trace().clone(),
            rng,
            routes: Vec::new(),
            occurrences: Mutex::new(BTreeMap::new()),
            rate: Mutex::new(rate),
            untagged_warned: std::sync::atomic::AtomicBool::new(false),
            tool_calls_made: Mutex::new(Vec::new()),
            tool_result_problems: Mutex::new(Vec::new()),
            usage: sim.usage().clone(),
            config,
        })
    }

    /// Adds a route, tried after the routes added before it and before the built-ins.
    pub fn with_route(mut self, route: impl Route + 'static) -> Self {
        self.routes.push(Arc::new(route));
        self
    }

    /// The config.
    pub fn config(&self) -> &SimLlmConfig {
        &self.config
    }

    /// The ids of the tool calls it answered with so far, in order (a call a fault cut
    /// out of the stream included: the model made it).
    pub fn tool_call_ids(&self) -> Vec<String> {
        self.tool_calls_made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// What was wrong with the tool results in the requests it got so far: a call of the
    /// model's with no result or two, a result for a call it did not make
    /// (the pairing check of every request it gets). Empty when all were
    /// well formed.
    pub fn tool_result_problems(&self) -> Vec<String> {
        self.tool_result_problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Checks the pairing of tool calls and results in `request`, keeping what is wrong.
    fn check_tool_results(&self, request: &CompletionRequest) {
        if let Some(problem) = tool_pairing::unpaired_tool_results(&request.messages) {
            let mut problems = self
                .tool_result_problems
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if problems.len() < TOOL_RESULT_PROBLEMS_MAX {
                problems.push(problem);
            }
        }
    }

    /// The name of the route that would answer `request`.
    pub fn route_name(&self, request: &CompletionRequest) -> String {
        match self.choose(request, None) {
            Chosen::User(index) => self.routes[index].name().to_owned(),
            Chosen::Builtin(builtin) => builtin.name().to_owned(),
        }
    }

    /// Says once, in the trace and the log, that task-only routes cannot answer an
    /// untagged request (one that came over SimNetwork).
    fn warn_untagged(&self, request: &CompletionRequest) {
        if request.task.is_some() {
            return;
        }
        let tasks: Vec<&str> = self.routes.iter().filter_map(|r| r.task_only()).collect();
        if tasks.is_empty()
            || self
                .untagged_warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        self.trace.emit(LlmEvent::Untagged {
            tasks: tasks.iter().map(|&task| task.to_owned()).collect(),
        });
        tracing::warn!(
            ?tasks,
            "SimLLM: task routes cannot match untagged requests (requests over SimNetwork carry no task tag); use FnRoute::for_task_or"
        );
    }

    /// The route for `request`; `long_words` are the routing words of its long messages,
    /// when already read ([`Builtin::for_request_with`]).
    fn choose(&self, request: &CompletionRequest, long_words: Option<memo::Words>) -> Chosen {
        match self.routes.iter().position(|route| route.matches(request)) {
            Some(index) => Chosen::User(index),
            None => Chosen::Builtin(Builtin::for_request_with(request, long_words)),
        }
    }

    /// Refuses with `error`; `call` is the refused call's `llm.call` key (its `request`
    /// and `occurrence`), when it was traced.
    fn refuse(&self, error: LlmError, call: Option<([u8; 4], u64)>) -> Result<CallPlan, LlmError> {
        self.trace.emit(LlmEvent::Refuse {
            model: self.config.model_ref.id(),
            error: error.to_string(),
            error_kind: error.kind().as_str(),
            call,
        });
        Err(error)
    }
}

impl std::fmt::Debug for SimLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimLlm")
            .field("model", &self.config.model_ref.id())
            .field(
                "routes",
                &self
                    .routes
                    .iter()
                    .map(|r| r.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LanguageModel for SimLlm {
    fn model_ref(&self) -> &ModelRef {
        &self.config.model_ref
    }

    async fn stream(&self, request: &CompletionRequest) -> Result<EventStream, LlmError> {
        self.check_tool_results(request);
        let plan = self.prepare(request).await?;
        // Each event after its delay, on one timer for the whole answer (`Paced`).
        let items = plan.items().into_iter();
        let paced = self
            .clock
            .paced(items.map(|planned| (planned.delay, planned.item)));
        Ok(paced.boxed())
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, LlmError> {
        self.check_tool_results(request);
        let plan = self.prepare(request).await?;
        let (response, elapsed) = plan.response();
        if !elapsed.is_zero() {
            self.clock.sleep(elapsed).await;
        }
        response
    }
}
