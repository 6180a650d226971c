//! [`RouterBuilder`]: an [`LlmRouter`] from models you already have (a test's doubles,
//! SimLLM, clients you configured yourself).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::breaker::Breaker;
use super::{
    ConfigError, CooldownPolicy, LlmRouter, RetryPolicy, RouterObserver, RoutingConfig, Target,
};
use crate::env::Env;
use crate::llm::LanguageModel;

/// Builds an [`LlmRouter`] from models.
pub struct RouterBuilder {
    pub(super) env: Env,
    pub(super) targets: BTreeMap<String, Target>,
    pub(super) routing: RoutingConfig,
    pub(super) retry: RetryPolicy,
    pub(super) cooldown: CooldownPolicy,
    pub(super) observer: Option<RouterObserver>,
}

impl RouterBuilder {
    /// Adds a model under `id` (`provider/model-id`).
    pub fn model(mut self, id: &str, model: Arc<dyn LanguageModel>) -> Self {
        self.targets.insert(id.to_owned(), Target { model });
        self
    }

    /// Sets the default model.
    pub fn default_model(mut self, id: &str) -> Self {
        self.routing.default = id.to_owned();
        self
    }

    /// Sets the fallbacks, in order.
    pub fn fallback(mut self, ids: &[&str]) -> Self {
        self.routing.fallback = ids.iter().map(|id| (*id).to_owned()).collect();
        self
    }

    /// Sets the context-window fallbacks, in order.
    pub fn context_fallback(mut self, ids: &[&str]) -> Self {
        self.routing.context_fallback = ids.iter().map(|id| (*id).to_owned()).collect();
        self
    }

    /// Routes requests tagged `task` to `id`.
    pub fn task(mut self, task: &str, id: &str) -> Self {
        self.routing.tasks.insert(task.to_owned(), id.to_owned());
        self
    }

    /// Sets retries and timeouts.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the circuit breaker.
    pub fn cooldown(mut self, cooldown: CooldownPolicy) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Sets the observer.
    pub fn observer(mut self, observer: RouterObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The router, once the routing names only added models.
    pub fn build(self) -> Result<LlmRouter, ConfigError> {
        let check = |field: String, id: &str| {
            if self.targets.contains_key(id) {
                Ok(())
            } else {
                Err(ConfigError {
                    file: "(builder)".into(),
                    field,
                    value: id.to_owned(),
                    reason: "unknown model".into(),
                })
            }
        };
        check("routing.default".into(), &self.routing.default)?;
        for (index, id) in self.routing.fallback.iter().enumerate() {
            check(format!("routing.fallback[{index}]"), id)?;
        }
        for (index, id) in self.routing.context_fallback.iter().enumerate() {
            check(format!("routing.context_fallback[{index}]"), id)?;
        }
        for (task, id) in &self.routing.tasks {
            check(format!("routing.tasks.\"{task}\""), id)?;
        }
        let model_ref = self.targets[&self.routing.default]
            .model
            .model_ref()
            .clone();
        Ok(LlmRouter {
            targets: self.targets,
            routing: self.routing,
            retry: self.retry,
            breaker: Breaker::new(self.cooldown),
            env: self.env,
            observer: self.observer,
            calls: AtomicU64::new(0),
            model_ref,
        })
    }
}
