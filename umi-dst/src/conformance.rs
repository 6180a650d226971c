//! The conformance suite: checks a `LanguageModel` against the trait's contract over
//! many generated requests.
//!
//! Every provider in the workspace calls [`Conformance::check`] from its tests (the
//! doubles, SimLLM, the real clients over SimNetwork). Each case runs one simulation of
//! the case's seed ([`Simulation::block_on`], under the runner's guards), makes the
//! model with the caller's factory, sends it a generated request and checks:
//!
//! 1. `stream()` returns within an hour of simulated time; with `expect_success`, it
//!    returns `Ok` for every valid request;
//! 2. the stream ends, with exactly one `Done` as its last item, or with an `Err` item
//!    that nothing follows and no `Done` preceded; polled again after its end it stays
//!    ended (a `None`, not an item or a panic: the stream is fused);
//! 3. the collected events make a valid response (with `expect_success`);
//! 4. with `honours_stop`, the text contains none of the request's stop sequences;
//! 5. with `deterministic`, a second model built the same way answers `complete` with
//!    exactly the collected response;
//! 6. with `validates_requests`, a request with no messages is refused by `stream()`
//!    with `InvalidPrompt`.
//!
//! Cases come from proptest with a fixed seed (`DST_SEED` when set), so a failure
//! replays; proptest shrinks the failing request before reporting it.

use std::fmt::Write as _;
use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use serde_json::json;
use umi_core::llm::{
    CompletionRequest, LanguageModel, LlmError, Message, StreamCollector, StreamEvent,
    ToolDefinition,
};

use crate::clock::SimClock;
use crate::config::SimConfig;
use crate::environment::SimEnvironment;
use crate::simulation::Simulation;

/// Seed of the generated cases when `DST_SEED` is unset.
pub const CONFORMANCE_SEED_DEFAULT: u64 = 0xC0_4F04;

/// How long (simulated) a call or a stream may take before it counts as hung.
const CALL_TIME_MAX: Duration = Duration::from_secs(60 * 60);

/// Events a conforming stream may carry in a conformance case.
const CASE_EVENTS_MAX: usize = 1_000_000;

/// What to check, and how many cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conformance {
    /// Generated requests to try.
    pub cases: u32,
    /// Seed of the request generator.
    pub seed: u64,
    /// Valid requests must succeed (no error from `stream()` nor in the stream).
    pub expect_success: bool,
    /// Answers contain none of the request's stop sequences.
    pub honours_stop: bool,
    /// Two models built alike answer alike (`complete` equals the collected stream).
    pub deterministic: bool,
    /// `stream()` refuses invalid requests with `InvalidPrompt`.
    pub validates_requests: bool,
}

impl Default for Conformance {
    fn default() -> Self {
        Self::new()
    }
}

impl Conformance {
    /// 256 cases, success expected, requests validated; seed from `DST_SEED` if set.
    pub fn new() -> Self {
        let seed = std::env::var("DST_SEED")
            .ok()
            .and_then(|value| crate::seed_text::parse_seed(&value).ok())
            .unwrap_or(CONFORMANCE_SEED_DEFAULT);
        Self {
            cases: 256,
            seed,
            expect_success: true,
            honours_stop: false,
            deterministic: false,
            validates_requests: true,
        }
    }

    /// Sets the number of cases.
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases;
        self
    }

    /// Sets whether valid requests must succeed.
    pub fn expect_success(mut self, on: bool) -> Self {
        self.expect_success = on;
        self
    }

    /// Sets whether stop sequences must be honoured.
    pub fn honours_stop(mut self, on: bool) -> Self {
        self.honours_stop = on;
        self
    }

    /// Sets whether two models built alike must answer alike.
    pub fn deterministic(mut self, on: bool) -> Self {
        self.deterministic = on;
        self
    }

    /// Sets whether invalid requests must be refused.
    pub fn validates_requests(mut self, on: bool) -> Self {
        self.validates_requests = on;
        self
    }

    /// Runs the suite; panics with the (shrunk) failing request and what broke.
    pub fn check<P, F>(&self, make: F)
    where
        P: LanguageModel,
        F: Fn(&SimEnvironment) -> P,
    {
        if let Err(message) = self.try_check(make) {
            panic!("{message}");
        }
    }

    /// Runs the suite; returns what broke instead of panicking.
    pub fn try_check<P, F>(&self, make: F) -> Result<(), String>
    where
        P: LanguageModel,
        F: Fn(&SimEnvironment) -> P,
    {
        if self.validates_requests {
            let empty = CompletionRequest::new(Vec::new());
            match run_case(self, &make, self.seed, &empty, Expect::Refusal) {
                Ok(()) => {}
                Err(message) => {
                    return Err(format!("conformance: request with no messages: {message}"));
                }
            }
        }
        let config = Config {
            cases: self.cases,
            rng_seed: RngSeed::Fixed(self.seed),
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let result = runner.run(
            &(request_strategy(), any::<u64>()),
            |(request, case_seed)| {
                run_case(self, &make, case_seed, &request, Expect::Contract)
                    .map_err(TestCaseError::fail)
            },
        );
        match result {
            Ok(()) => Ok(()),
            Err(TestError::Fail(reason, (request, case_seed))) => {
                let mut message = format!("conformance failed: {reason}\n");
                let _ = writeln!(message, "  environment seed: {case_seed}");
                let _ = write!(
                    message,
                    "  request: {}",
                    serde_json::to_string(&request).unwrap_or_else(|e| e.to_string())
                );
                Err(message)
            }
            Err(TestError::Abort(reason)) => Err(format!("conformance aborted: {reason}")),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Contract,
    Refusal,
}

fn run_case<P, F>(
    options: &Conformance,
    make: &F,
    case_seed: u64,
    request: &CompletionRequest,
    expect: Expect,
) -> Result<(), String>
where
    P: LanguageModel,
    F: Fn(&SimEnvironment) -> P,
{
    let config = SimConfig::new(case_seed);
    Simulation::new(config.clone()).block_on(async |env| {
        let model = make(&env);
        // Built now, at simulated time zero like the first, for the determinism check.
        let twin = options
            .deterministic
            .then(|| SimEnvironment::new(&config).map(|twin_env| (make(&twin_env), twin_env)))
            .transpose()
            .map_err(|e| e.to_string())?;
        let twin = twin.as_ref().map(|(twin, _twin_env)| twin);
        check_case(options, &model, twin, env.clock(), request, expect).await
    })
}

/// One case in a running simulation: `model` answers `request` as its contract says
/// (`twin`: the same model built again, for the determinism check).
async fn check_case<P: LanguageModel>(
    options: &Conformance,
    model: &P,
    twin: Option<&P>,
    clock: &SimClock,
    request: &CompletionRequest,
    expect: Expect,
) -> Result<(), String> {
    let model_ref = model.model_ref();
    check_limits(model_ref)?;
    let started = clock
        .timeout(CALL_TIME_MAX, model.stream(request))
        .await
        .map_err(|_| "stream() did not return within an hour of simulated time".to_owned())?;
    if expect == Expect::Refusal {
        return refused_as_invalid(started.err());
    }
    let mut stream = match started {
        Ok(stream) => stream,
        Err(error) if options.expect_success => {
            return Err(format!("stream() failed on a valid request: {error}"));
        }
        Err(_) => return Ok(()),
    };
    let drained = drain(clock, &mut stream).await?;
    let events = check_shape(&drained)?;
    let ended_in_error = matches!(drained.last(), Some(Err(_)));
    if ended_in_error {
        if options.expect_success {
            return Err(format!("the stream failed: {:?}", drained.last()));
        }
        return Ok(());
    }
    let response =
        StreamCollector::collect_items(model_ref.model.clone(), events.into_iter().map(Ok))
            .map_err(|e| format!("the collector refused the stream: {e}"))?;
    if options.honours_stop {
        check_stop(request, &response.text)?;
    }
    match twin {
        Some(twin) => check_twin(twin, request, &response).await,
        None => Ok(()),
    }
}

/// A model's limits are consistent: a window, and an output limit within it.
fn check_limits(model_ref: &umi_core::llm::ModelRef) -> Result<(), String> {
    if model_ref.context_window_tokens == 0
        || model_ref.max_output_tokens > model_ref.context_window_tokens
    {
        return Err(format!("model_ref limits are inconsistent: {model_ref:?}"));
    }
    Ok(())
}

/// A request that must be refused was refused as an invalid prompt (`error`: how
/// `stream()` refused it; `None`: it accepted it).
fn refused_as_invalid(error: Option<LlmError>) -> Result<(), String> {
    match error {
        Some(LlmError::InvalidPrompt { .. }) => Ok(()),
        Some(other) => Err(format!("refused with {other:?}, expected InvalidPrompt")),
        None => Err("stream() accepted it; expected Err(InvalidPrompt)".to_owned()),
    }
}

/// A model built alike (`twin`) answers `request` whole as the stream was collected.
async fn check_twin<P: LanguageModel>(
    twin: &P,
    request: &CompletionRequest,
    response: &umi_core::llm::CompletionResponse,
) -> Result<(), String> {
    let again = twin
        .complete(request)
        .await
        .map_err(|e| format!("the twin's complete() failed: {e}"))?;
    if again != *response {
        return Err(format!(
            "complete() on a model built alike differs from the collected stream:\n  stream:   {response:?}\n  complete: {again:?}"
        ));
    }
    Ok(())
}

/// The items of `stream` up to its end (at most [`CASE_EVENTS_MAX`] and one more, within
/// an hour of simulated time); an error if, polled again after its end, it yields more.
async fn drain(
    clock: &SimClock,
    stream: &mut umi_core::llm::EventStream,
) -> Result<Vec<Result<StreamEvent, LlmError>>, String> {
    let (items, ended) = clock
        .timeout(CALL_TIME_MAX, async {
            let mut items = Vec::new();
            let mut ended = false;
            while let Some(item) = stream.next().await {
                items.push(item);
                if items.len() > CASE_EVENTS_MAX {
                    break;
                }
            }
            if items.len() <= CASE_EVENTS_MAX {
                // Polled again after its end, a stream stays ended (fused).
                ended = stream.next().await.is_none();
            }
            (items, ended)
        })
        .await
        .map_err(|_| "the stream did not end within an hour of simulated time".to_owned())?;
    if !ended && items.len() <= CASE_EVENTS_MAX {
        return Err("polled again after its end, the stream yielded an item".to_owned());
    }
    Ok(items)
}

/// An answer that honours the request's stop sequences contains none of them.
fn check_stop(request: &CompletionRequest, text: &str) -> Result<(), String> {
    match request
        .stop
        .iter()
        .find(|stop| !stop.is_empty() && text.contains(stop.as_str()))
    {
        Some(stop) => Err(format!(
            "the answer {text:?} contains the stop sequence {stop:?}"
        )),
        None => Ok(()),
    }
}

/// Checks contract rules 2 and 3 on the drained items; returns the events.
fn check_shape(items: &[Result<StreamEvent, LlmError>]) -> Result<Vec<StreamEvent>, String> {
    if items.len() > CASE_EVENTS_MAX {
        return Err(format!("the stream went past {CASE_EVENTS_MAX} items"));
    }
    let mut events = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let last = position + 1 == items.len();
        match item {
            Ok(event) if event.is_done() && !last => {
                return Err(format!(
                    "Done at position {position} of {} is not last",
                    items.len()
                ));
            }
            Ok(event) => events.push(event.clone()),
            Err(error) if !last => {
                return Err(format!("the stream went on after an error item ({error})"));
            }
            Err(_) => {}
        }
    }
    let done_count = events.iter().filter(|e| e.is_done()).count();
    let ended_in_error = matches!(items.last(), Some(Err(_)));
    match (done_count, ended_in_error) {
        (1, false) | (0, true) => Ok(events),
        (0, false) => Err(format!(
            "the stream ended after {} item(s) without Done",
            items.len()
        )),
        (_, true) => Err("an error item came after Done".to_owned()),
        (count, false) => Err(format!("{count} Done events")),
    }
}

/// Requests like the ones agent code sends: a system prompt sometimes, alternating
/// turns ending with the user, tools, stop sequences that sometimes match, limits, JSON
/// mode and task tags.
pub fn request_strategy() -> impl Strategy<Value = CompletionRequest> {
    let text = "[a-zA-Z0-9 ,.!?'éü東😀\n]{1,80}";
    let turns = prop::collection::vec(text, 1..5);
    let tools = tools_strategy();
    let stops = prop::collection::vec(prop_oneof![Just(String::new()), "[a-z.!]{1,3}"], 0..3);
    let task = prop_oneof![
        Just(None),
        Just(Some("memory.extract_entities".to_owned())),
        Just(Some("memory.rewrite_query".to_owned())),
        Just(Some("memory.detect_evolution".to_owned())),
        Just(Some("agent.step".to_owned())),
    ];
    (
        prop::option::of("[a-zA-Z ,.]{1,60}"),
        turns,
        tools,
        stops,
        prop::option::of(1u32..2_000),
        any::<bool>(),
        task,
        prop::option::of(0.0f32..1.5),
    )
        .prop_map(
            |(system, turns, tools, stop, max_tokens, json_output, task, temperature)| {
                let messages = conversation(system, turns);
                CompletionRequest {
                    model: String::new(),
                    messages,
                    tools,
                    max_tokens,
                    temperature,
                    stop,
                    json_output,
                    seed: None,
                    output_schema: None,
                    tool_choice: None,
                    parallel_tool_calls: None,
                    task,
                }
            },
        )
}

/// Up to two tools of three, each name at most once.
fn tools_strategy() -> impl Strategy<Value = Vec<ToolDefinition>> {
    prop::collection::vec(
        prop_oneof![
            Just(ToolDefinition::new(
                "search",
                "Search the notes.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            )),
            Just(ToolDefinition::new(
                "get_weather",
                "Weather for a city.",
                json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]}),
            )),
            Just(ToolDefinition::new("now", "The current time.", json!({"type": "object", "properties": {}}))),
        ],
        0..3,
    )
    .prop_map(|mut tools| {
        let mut seen = Vec::new();
        tools.retain(|tool| {
            let fresh = !seen.contains(&tool.name);
            seen.push(tool.name.clone());
            fresh
        });
        tools
    })
}

/// The messages of a case: the system prompt, if any, then `turns` alternating so that
/// the last is the user's.
fn conversation(system: Option<String>, turns: Vec<String>) -> Vec<Message> {
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(Message::system(system));
    }
    let count = turns.len();
    for (index, text) in turns.into_iter().enumerate() {
        if (count - index) % 2 == 1 {
            messages.push(Message::user(text));
        } else {
            messages.push(Message::assistant(text));
        }
    }
    messages
}
