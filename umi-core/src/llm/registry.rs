//! The wire formats a configured provider may speak, and the client for each: the one
//! place a new format registers (its module implements
//! [`crate::llm::client::ClientFormat`]; docs/adr/0009-one-seam-per-wire-format.md).

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::AnthropicConfig;
use super::client::WireClient;
use super::connection::Connection;
use super::gemini::GeminiConfig;
use super::ollama::OllamaConfig;
use super::openai::OpenAiConfig;
use super::provider::LanguageModel;
use super::response::ModelRef;
use super::responses::ResponsesConfig;
use super::router::{ProviderConfig, ProviderKind};
use super::secrets::ApiKey;
use super::transport::Transport;
use crate::env::Env;

/// The client for `model_ref` at `provider`, in the provider's format, with `timeout`
/// to the headers and between body chunks. The provider's headers go with every format.
pub fn client(
    provider: &ProviderConfig,
    model_ref: ModelRef,
    api_key: Option<ApiKey>,
    timeout: Duration,
    transport: Arc<dyn Transport>,
    env: Env,
) -> Arc<dyn LanguageModel> {
    let headers = provider
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut connection = Connection::new(provider.endpoint.clone())
        .with_timeout(timeout)
        .with_extra_headers(headers);
    connection.api_key = api_key;
    match provider.kind {
        ProviderKind::Openai => {
            let mut config = OpenAiConfig::new(connection, model_ref);
            config.max_tokens_field = provider.max_tokens_field;
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Ollama => {
            let config = OllamaConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Anthropic => {
            let config = AnthropicConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::OpenaiResponses => {
            let config = ResponsesConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Gemini => {
            let config = GeminiConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
    }
}
