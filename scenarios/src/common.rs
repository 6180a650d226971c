//! Pieces the scenarios share: workload text, the router stack over SimNetwork, and tool
//! registries. (A model that logs its requests is `umi_dst::doubles::RecordingLanguageModel`.)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use umi_core::env::EnvironmentExt;
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::router::{CooldownPolicy, LlmRouter, RetryPolicy};
use umi_core::llm::{
    CompletionRequest, CompletionResponse, LanguageModel, LlmError, Message, ModelId, ModelRef,
    ToolDefinition,
};
use umi_dst::checkers::router::RouterLog;
use umi_dst::{
    DeterministicRng, Endpoint, FaultConfig, FaultKind, SimEnvironment, SimLlm, SimLlmConfig,
    SimNetwork, Violation,
};

const PEOPLE: [&str; 8] = [
    "Alice",
    "Bob Smith",
    "Maria",
    "Chen",
    "Priya",
    "Lars",
    "Yuki",
    "Olivia",
];
const PLACES: [&str; 8] = [
    "Acme Corp",
    "Initech",
    "Paris",
    "Oslo",
    "the Berlin Summit",
    "Globex",
    "Kyoto",
    "a café in Lima",
];
const VERBS: [&str; 7] = [
    "joined",
    "left",
    "visited",
    "wrote to",
    "moved to",
    "called",
    "reviewed the plan with",
];

/// `count` short facts about people and places, drawn from `stream`.
pub fn facts(sim: &SimEnvironment, stream: &str, count: usize) -> Vec<String> {
    let mut rng = sim.rng(stream);
    (0..count)
        .map(|_| {
            let who = rng.choose(&PEOPLE).copied().unwrap_or("Alice");
            let what = rng.choose(&VERBS).copied().unwrap_or("met");
            let place = rng.choose(&PLACES).copied().unwrap_or("Paris");
            if rng.bool_with(0.2) {
                format!("{what} {place} quietly.")
            } else {
                format!("{who} {what} {place}.")
            }
        })
        .collect()
}

/// A question about one of the people, or (one in four) a bare keyword query.
pub fn question(rng: &mut DeterministicRng) -> String {
    let who = rng.choose(&PEOPLE).copied().unwrap_or("Alice");
    if rng.bool_with(0.25) {
        let place = rng.choose(&PLACES).copied().unwrap_or("Paris");
        return place.to_owned();
    }
    format!("where did {who} go?")
}

/// A SimLLM for `provider/model` with a context window of `window`.
pub fn sim_model(
    sim: &SimEnvironment,
    provider: &str,
    model: &str,
    window: u32,
    edit: impl FnOnce(SimLlmConfig) -> SimLlmConfig,
) -> Arc<SimLlm> {
    let config = edit(SimLlmConfig::default().with_model(ModelRef::new(
        provider,
        model,
        window,
        (window / 4).min(2_048),
    )));
    Arc::new(SimLlm::with_config(sim, config).expect("scenario SimLLM configs are valid"))
}

/// The three providers of the router scenarios: (id, base URL, window).
pub const PROVIDERS: [(&str, &str, u32); 3] = [
    ("ollama/qwen3:8b", "http://ollama.sim:11434", 32_768),
    (
        "deepseek/deepseek-chat",
        "https://api.deepseek.sim/v1",
        65_536,
    ),
    (
        "glm/glm-4-plus",
        "https://open.bigmodel.sim/api/paas/v4",
        128_000,
    ),
];

/// The `provider/model` id of an entry of [`PROVIDERS`] (constants: a malformed one is a
/// bug in this file).
fn model_id(id: &'static str) -> ModelId<'static> {
    ModelId::parse(id).expect("PROVIDERS ids are provider/model")
}

/// A router over real clients talking to SimNetwork, which serves three SimLLMs.
pub struct RouterStack {
    /// The router.
    pub router: Arc<LlmRouter>,
    /// Its events.
    pub log: RouterLog,
    /// The network (to take endpoints down).
    pub network: Arc<SimNetwork>,
    /// Context windows by model id.
    pub windows: BTreeMap<String, u32>,
    /// The retry policy.
    pub retry: RetryPolicy,
}

impl RouterStack {
    /// Builds the stack; `edit` adjusts each SimLLM's config (by model id).
    pub fn build(
        sim: &SimEnvironment,
        retry: RetryPolicy,
        cooldown: CooldownPolicy,
        edit: impl Fn(&str, SimLlmConfig) -> SimLlmConfig,
    ) -> Self {
        let mut network = SimNetwork::new(sim);
        for (id, url, window) in PROVIDERS {
            let ModelId { provider, model } = model_id(id);
            let llm = sim_model(sim, provider, model, window, |c| edit(id, c));
            network = network.with_endpoint(if provider == "ollama" {
                Endpoint::ollama(url, llm)
            } else {
                Endpoint::openai(url, llm)
            });
        }
        let network = Arc::new(network);
        let transport: Arc<dyn umi_core::llm::transport::Transport> = network.clone();
        let log = RouterLog::new();
        let mut builder = LlmRouter::builder(sim.env())
            .retry(retry)
            .cooldown(cooldown)
            .observer(log.observer());
        let mut windows = BTreeMap::new();
        for (id, url, window) in PROVIDERS {
            let ModelId { provider, model } = model_id(id);
            let model_ref = ModelRef::new(provider, model, window, 2_048);
            let timeout = std::time::Duration::from_millis(retry.request_timeout_ms);
            let client: Arc<dyn LanguageModel> = if provider == "ollama" {
                let mut config = OllamaConfig::new(url, model_ref);
                (config.timeout, config.idle_timeout) = (timeout, timeout);
                Arc::new(OllamaClient::new(config, transport.clone(), sim.env()))
            } else {
                let mut config = OpenAiConfig::new(url, model_ref);
                (config.timeout, config.idle_timeout) = (timeout, timeout);
                Arc::new(OpenAiClient::new(config, transport.clone(), sim.env()))
            };
            builder = builder.model(id, client);
            windows.insert(id.to_owned(), window);
        }
        let router = builder
            .default_model(PROVIDERS[0].0)
            .fallback(&[PROVIDERS[1].0, PROVIDERS[2].0])
            .context_fallback(&[PROVIDERS[1].0, PROVIDERS[2].0])
            .build()
            .expect("the stack's routing names its own models");
        Self {
            router: Arc::new(router),
            log,
            network,
            windows,
            retry,
        }
    }

    /// The router checkers on everything the router did so far.
    pub fn check(&self) -> Result<(), Violation> {
        umi_dst::checkers::router::check_router(&self.log.events(), &self.retry, &self.windows)
    }
}

/// Retries tuned for scenarios: short backoffs, a one-minute deadline.
pub fn scenario_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        request_timeout_ms: 20_000,
        initial_backoff_ms: 250,
        backoff_multiplier: 2.0,
        backoff_max_ms: 4_000,
        jitter: 0.3,
        retry_after_max_ms: 15_000,
        deadline_ms: 60_000,
    }
}

/// Tools with varied schemas for the agent scenarios.
pub fn tool_definitions() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "get_weather",
            "Weather for a city.",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 40}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                "required": ["city"], "additionalProperties": false
            }),
        ),
        ToolDefinition::new(
            "search_notes",
            "Search the notes.",
            json!({
                "type": "object",
                "properties": {"query": {"type": "string", "minLength": 2}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}, "tags": {"type": "array", "items": {"enum": ["work", "home", "travel"]}, "maxItems": 3, "uniqueItems": true}},
                "required": ["query"]
            }),
        ),
        ToolDefinition::new(
            "book",
            "Book a slot.",
            json!({
                "type": "object",
                "properties": {"start": {"type": "string", "format": "date-time"}, "minutes": {"type": "integer", "multipleOf": 15, "minimum": 15, "maximum": 240}, "room": {"type": ["string", "null"]}},
                "required": ["start", "minutes"]
            }),
        ),
    ]
}

/// One tool execution, as a scenario's handlers record it.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The tool.
    pub tool: String,
    /// The arguments it received.
    pub arguments: Value,
    /// Whether they were valid under the tool's schema.
    pub valid: bool,
}

/// A registry of [`tool_definitions`] whose handlers check their arguments against the
/// schema, log each execution, sometimes fail, and sometimes take a while (simulated).
pub fn tool_registry(
    sim: &SimEnvironment,
    log: &Arc<Mutex<Vec<Execution>>>,
    failure_rate: f64,
) -> umi_core::agent::ToolRegistry {
    let mut registry = umi_core::agent::ToolRegistry::new();
    for definition in tool_definitions() {
        let (env, log, schema, name) = (
            sim.env(),
            log.clone(),
            definition.parameters.clone(),
            definition.name.clone(),
        );
        let handler = move |arguments: Value| {
            let (env, log, schema, name) = (env.clone(), log.clone(), schema.clone(), name.clone());
            async move {
                let valid = umi_dst::llm::schema::conforms(&schema, &arguments);
                log.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Execution {
                        tool: name.clone(),
                        arguments: arguments.clone(),
                        valid,
                    });
                env.sleep(std::time::Duration::from_millis(env.random_in_range(
                    "tools.latency",
                    5,
                    3_000,
                )))
                .await;
                if env.random_chance("tools.failure", failure_rate) {
                    return Err(format!("{name} is unavailable"));
                }
                Ok(format!("{name} ok: {arguments}"))
            }
        };
        registry
            .register_fn(
                &definition.name,
                &definition.description,
                definition.parameters.clone(),
                handler,
            )
            .expect("distinct names");
    }
    registry
}

/// The first tool result whose call is not in an earlier assistant message, if any.
pub fn orphan_tool_result(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .enumerate()
        .find_map(|(index, message)| match message {
            Message::Tool { tool_call_id, .. } => {
                let called = messages[..index]
                    .iter()
                    .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id));
                (!called).then(|| tool_call_id.clone())
            }
            _ => None,
        })
}

/// The first tool call in an assistant message with no result after it, if any.
pub fn unanswered_tool_call(messages: &[Message]) -> Option<String> {
    messages.iter().enumerate().find_map(|(index, message)| {
        message.tool_calls().iter().find_map(|call| {
            let answered = messages[index + 1..].iter().any(
                |m| matches!(m, Message::Tool { tool_call_id, .. } if *tool_call_id == call.id),
            );
            (!answered).then(|| call.id.clone())
        })
    })
}

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
    CompletionRequest::new(vec![
        Message::system("You are a concise assistant."),
        Message::user(text),
    ])
    .with_task(task)
}
