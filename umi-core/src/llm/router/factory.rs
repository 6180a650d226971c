//! An [`LlmRouter`] from a [`RouterConfig`]: a real client per configured model, and the
//! resolution of `provider/model` ids against what the router holds.

use std::sync::Arc;
use std::time::Duration;

use super::{ConfigError, LlmRouter, RouterConfig};
use crate::env::Env;
use crate::llm::secrets::ApiKey;
use crate::llm::transport::Transport;
use crate::llm::{LanguageModel, ModelId, ModelRef};

/// A model that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The id is not `provider/model-id`.
    #[error("{id:?} is not a provider/model-id")]
    Malformed {
        /// The id.
        id: String,
    },
    /// No such provider.
    #[error("unknown provider {provider:?} in {id:?}; known providers: {known:?}")]
    UnknownProvider {
        /// The id.
        id: String,
        /// Its provider part.
        provider: String,
        /// The providers there are.
        known: Vec<String>,
    },
    /// The provider exists, the model does not.
    #[error("unknown model {id:?}; known models: {known:?}")]
    UnknownModel {
        /// The id.
        id: String,
        /// The models there are.
        known: Vec<String>,
    },
}

impl LlmRouter {
    /// A router with a real client per configured model, speaking through `transport`.
    /// API keys are read through `lookup` (pass `|name| std::env::var(name).ok()`).
    pub fn from_config(
        config: &RouterConfig,
        transport: &Arc<dyn Transport>,
        env: &Env,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        config.validate("(config)")?;
        let mut builder = Self::builder(env.clone())
            .retry(config.retry)
            .cooldown(config.cooldown);
        for (id, model) in &config.models {
            let ModelId {
                provider: provider_name,
                model: model_id,
            } = ModelId::parse(id).map_err(|error| ConfigError {
                file: "(config)".into(),
                field: format!("models.\"{id}\""),
                value: id.clone(),
                reason: error.to_string(),
            })?;
            let provider = &config.providers[provider_name];
            let model_ref = ModelRef::new(
                provider_name,
                model_id,
                model.context_window,
                model.max_output,
            );
            let timeout = Duration::from_millis(config.retry.request_timeout_ms);
            let api_key = match &provider.api_key_env {
                None => None,
                Some(variable) => {
                    let refused = |reason: String| ConfigError {
                        file: "(config)".into(),
                        field: format!("providers.{provider_name}.api_key_env"),
                        value: variable.clone(),
                        reason,
                    };
                    let raw = lookup(variable)
                        .ok_or_else(|| refused("the environment variable is not set".into()))?;
                    Some(ApiKey::parse(raw).map_err(|error| {
                        refused(format!(
                            "the environment variable's value is refused: {error}"
                        ))
                    })?)
                }
            };
            let client = crate::llm::registry::client(
                provider,
                model_ref,
                api_key,
                timeout,
                transport.clone(),
                env.clone(),
            );
            builder = builder.model(id, client);
        }
        builder.routing = config.routing.clone();
        builder.build()
    }

    /// The model behind `provider/model-id`.
    pub fn resolve(&self, id: &str) -> Result<ModelRef, ResolveError> {
        let Ok(ModelId { provider, .. }) = ModelId::parse(id) else {
            return Err(ResolveError::Malformed { id: id.to_owned() });
        };
        if let Some(target) = self.targets.get(id) {
            return Ok(target.model.model_ref().clone());
        }
        // Sorted and unique whatever order the targets come in.
        let providers: Vec<String> = self
            .targets
            .keys()
            .map(|k| ModelId::provider_of(k).to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !providers.iter().any(|p| p == provider) {
            return Err(ResolveError::UnknownProvider {
                id: id.to_owned(),
                provider: provider.to_owned(),
                known: providers,
            });
        }
        Err(ResolveError::UnknownModel {
            id: id.to_owned(),
            known: self.targets.keys().cloned().collect(),
        })
    }
}
