//! The router stack of the router scenarios: SimLLMs for three providers served by
//! SimNetwork, real clients over it, and an `LlmRouter` with a log of its events.

use std::collections::BTreeMap;
use std::sync::Arc;

use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::router::{CooldownPolicy, LlmRouter, RetryPolicy};
use umi_core::llm::{Connection, LanguageModel, ModelId, ModelRef};
use umi_dst::checkers::router::RouterLog;
use umi_dst::{Endpoint, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork, Violation};

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
            let connection = Connection::new(url).with_timeout(timeout);
            let client: Arc<dyn LanguageModel> = if provider == "ollama" {
                let config = OllamaConfig::new(connection, model_ref);
                Arc::new(OllamaClient::new(config, transport.clone(), sim.env()))
            } else {
                let config = OpenAiConfig::new(connection, model_ref);
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
    RetryPolicy::default()
        .with_max_retries(2)
        .with_request_timeout_ms(20_000)
        .with_backoff_ms(250, 2.0, 4_000)
        .with_jitter(0.3)
        .with_retry_after_max_ms(15_000)
        .with_deadline_ms(60_000)
}
