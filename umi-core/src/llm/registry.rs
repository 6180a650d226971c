//! The wire formats a configured provider may speak, and the client for each: the one
//! place a new format registers (its module implements
//! [`crate::llm::client::ClientFormat`]; docs/adr/0009-one-seam-per-wire-format.md).

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::AnthropicConfig;
use super::client::WireClient;
use super::ollama::OllamaConfig;
use super::openai::OpenAiConfig;
use super::provider::LanguageModel;
use super::response::ModelRef;
use super::responses::ResponsesConfig;
use super::router::{ProviderConfig, ProviderKind};
use super::secrets::ApiKey;
use super::transport::Transport;
use crate::env::Env;

fn headers(provider: &ProviderConfig) -> Vec<(String, String)> {
    provider
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The client for `model_ref` at `provider`, in the provider's format, with `timeout`
/// to the headers and between body chunks.
pub fn client(
    provider: &ProviderConfig,
    model_ref: ModelRef,
    api_key: Option<ApiKey>,
    timeout: Duration,
    transport: Arc<dyn Transport>,
    env: Env,
) -> Arc<dyn LanguageModel> {
    match provider.kind {
        ProviderKind::Openai => {
            let mut config = OpenAiConfig::new(provider.endpoint.clone(), model_ref);
            config.api_key = api_key;
            config.max_tokens_field = provider.max_tokens_field;
            config.extra_headers = headers(provider);
            config.timeout = timeout;
            config.idle_timeout = timeout;
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Ollama => {
            let mut config = OllamaConfig::new(provider.endpoint.clone(), model_ref);
            config.api_key = api_key;
            config.timeout = timeout;
            config.idle_timeout = timeout;
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Anthropic => {
            let mut config = AnthropicConfig::new(provider.endpoint.clone(), model_ref);
            config.api_key = api_key;
            config.extra_headers = headers(provider);
            config.timeout = timeout;
            config.idle_timeout = timeout;
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::OpenaiResponses => {
            let mut config = ResponsesConfig::new(provider.endpoint.clone(), model_ref);
            config.api_key = api_key;
            config.extra_headers = headers(provider);
            config.timeout = timeout;
            config.idle_timeout = timeout;
            Arc::new(WireClient::new(config, transport, env))
        }
    }
}
